"""A second, independent computation of the statistics: a test oracle only.

Production computes the run and the qrels statistics with one engine, the Arrow kernel
(:func:`releval.metrics.kernel.arrow_run_stats`: NumPy over whole shuffle partitions).
This module computes the same statistics with Spark SQL alone: deduplication by
``groupBy``, a shuffled hash join for the labels, the ranking window with running sums
(the SQL expressions of :class:`releval.metrics.stats.Stats`), and a ``groupBy``; the
qrels statistics by the ideal ranking's window and a ``groupBy`` over the qrels. The
tests run every measure case, the trec_eval conformance and the judged-only oracle
through both (``query_measures(..., run_stats=sql_run_stats)``), so a bug in either shows
up as a disagreement. It was the ``sql`` value of the removed ``evaluation.engine``
option.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from releval import schemas as S
from releval.layout import by_query
from releval.metrics.compute import IN_QRELS, IN_RUN, REPEATED
from releval.metrics.kernel import arrow_run_stats
from releval.metrics.stats import IDEAL_POSITION, Stats
from releval.ranking import position

_OCCURRENCES = "_occurrences"


def deduplicate(
    run: DataFrame, *, rank_by: str, partition_columns: Sequence[str], count_as: str | None = None
) -> DataFrame:
    """One row per (run partition, query, doc): its best-ranked occurrence (an aggregation).

    With ``count_as``, also that column: how many rows the document had.
    """
    keys = [*partition_columns, S.QUERY_ID, S.DOC_ID]
    best = F.max(S.SCORE).alias(S.SCORE) if rank_by == "score" else F.min(S.RANK).alias(S.RANK)
    counted = [F.count(F.lit(1)).alias(count_as)] if count_as else []
    return run.groupBy(*keys).agg(best, *counted)


def prepare_qrels(qrels: DataFrame) -> DataFrame:
    """One label per (query, doc): the highest, when a document was judged twice (a null
    label: not a judgment, kept so that its query is in the query set)."""
    return qrels.groupBy(S.QUERY_ID, S.DOC_ID).agg(F.max(S.RELEVANCE).alias(S.RELEVANCE))


def qrels_stats(judgments: DataFrame, stats: Stats) -> DataFrame:
    """One row per query of the qrels: ``_in_qrels`` and every qrels statistic of ``stats``,
    from its SQL aggregate over the ideal ranking (labels best first, then doc id)."""
    ideal = Window.partitionBy(S.QUERY_ID).orderBy(F.col(S.RELEVANCE).desc(), F.col(S.DOC_ID).asc())
    return (
        judgments.withColumn(IDEAL_POSITION, F.row_number().over(ideal))
        .groupBy(S.QUERY_ID)
        .agg(F.first(F.lit(True)).alias(IN_QRELS), *[c().alias(n) for n, c in stats.qrels.items()])
    )


def judge(run: DataFrame, qrels: DataFrame) -> DataFrame:
    """Attach each retrieved document's label; unjudged documents get a null ``relevance``."""
    return run.join(qrels.hint("shuffle_hash"), on=[S.QUERY_ID, S.DOC_ID], how="left")


def sql_run_stats(
    run: DataFrame,
    qrels: DataFrame,
    *,
    stats: Stats,
    partition_columns: Sequence[str],
    laid_out_by_query: bool = False,
) -> DataFrame:
    """One row per (run partition, query) with every run statistic, by window functions."""
    parts = list(partition_columns)
    if not laid_out_by_query:
        run, qrels = by_query(run), by_query(qrels)
    unique = deduplicate(run, rank_by=stats.rank_by, partition_columns=parts, count_as=_OCCURRENCES)
    judgments = prepare_qrels(qrels)
    judged = judge(unique, judgments)
    rank = position(rank_by=stats.rank_by, partition_columns=parts).alias(S.POSITION)
    # the aggregates first: building them registers the row columns they read
    aggregates = [c().alias(n) for n, c in stats.run.items()]
    rows = judged.select("*", rank, *[c().alias(n) for n, c in stats.row.items()])
    run_q = rows.groupBy(*parts, S.QUERY_ID).agg(
        F.first(F.lit(True)).alias(IN_RUN),
        F.sum(F.col(_OCCURRENCES) - 1).alias(REPEATED),
        *aggregates,
    )
    per_query = qrels_stats(judgments, stats)
    retrieved = run_q.join(per_query, on=S.QUERY_ID, how="left").withColumn(
        IN_QRELS, F.coalesce(F.col(IN_QRELS), F.lit(False))
    )
    queries = per_query.select(
        *[F.lit(None).cast(run.schema[c].dataType).alias(c) for c in parts],
        S.QUERY_ID, F.lit(False).alias(IN_RUN), IN_QRELS, F.lit(0).cast("long").alias(REPEATED),
        *stats.qrels.keys(),
    )
    return retrieved.unionByName(queries, allowMissingColumns=True)


#: The engines the tests compare: production's and the oracle.
ENGINES = {"arrow": arrow_run_stats, "sql": sql_run_stats}
