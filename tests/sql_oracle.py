"""A second, independent computation of the run statistics: a test oracle only.

Production computes the run statistics with one engine, the Arrow kernel
(:func:`releval.metrics.kernel.arrow_run_stats`: NumPy over whole shuffle partitions).
This module computes the same statistics with Spark SQL alone: deduplication by
``groupBy``, a shuffled hash join for the labels, the ranking window with running sums
(the SQL expressions of :class:`releval.metrics.stats.Stats`), and a ``groupBy``. The
tests run every measure case, the trec_eval conformance and the judged-only oracle
through both (``query_measures(..., run_stats=sql_run_stats)``), so a bug in either shows
up as a disagreement. It was the ``sql`` value of the removed ``evaluation.engine``
option.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from releval import schemas as S
from releval.layout import by_query
from releval.metrics.compute import IN_RUN, REPEATED, prepare_qrels
from releval.metrics.kernel import arrow_run_stats
from releval.metrics.stats import Stats
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
    judged = judge(unique, prepare_qrels(qrels))
    rank = position(rank_by=stats.rank_by, partition_columns=parts).alias(S.POSITION)
    rows = judged.select("*", rank, *[c.alias(n) for n, c in stats.row.items()])
    return rows.groupBy(*parts, S.QUERY_ID).agg(
        F.first(F.lit(True)).alias(IN_RUN),
        F.sum(F.col(_OCCURRENCES) - 1).alias(REPEATED),
        *[c.alias(n) for n, c in stats.run.items()],
    )


#: The engines the tests compare: production's and the oracle.
ENGINES = {"arrow": arrow_run_stats, "sql": sql_run_stats}
