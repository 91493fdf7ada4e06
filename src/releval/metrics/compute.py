"""Run + qrels -> one row per (run partition, query, measure).

All measures are computed in one pass: the statistics they need are collected
by :class:`~releval.metrics.stats.Stats`, the run statistics are computed by an
engine (:data:`ENGINES`) as one row per (run partition, query), the qrels
statistics by one ``groupBy`` over the qrels, and each measure's value is a
column expression over those statistics.

The run statistics are computed by one engine: one shuffle of the run and qrels rows
together by query id, then a vectorized NumPy function per partition
(:mod:`releval.metrics.kernel`). A second implementation with Spark window functions
lives in the tests only (``tests/sql_oracle.py``), as an oracle; :func:`query_measures`
takes it through ``run_stats``.

The engine and the qrels statistics read the labels through :func:`judgment`, where
the negative-label rule (``evaluation.negative_labels``) is applied once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from releval import schemas as S
from releval.config import NEGATIVE_LABELS
from releval.layout import by_query
from releval.metrics.kernel import LEDGER, LEDGER_ROWS, QRELS_LABEL, arrow_run_stats
from releval.metrics.registry import Measure
from releval.metrics.stats import IDEAL_POSITION, Stats
from releval.quality import REASON

IN_RUN = "_in_run"
IN_QRELS = "_in_qrels"
#: Per (run partition, query): the run rows the engine dropped as a repeated document, its
#: best occurrence kept (what the input checks count as ``duplicate_doc``).
REPEATED = "_repeated"


def prepare_qrels(qrels: DataFrame) -> DataFrame:
    """One label per (query, doc): the highest, when a document was judged twice."""
    return qrels.groupBy(S.QUERY_ID, S.DOC_ID).agg(F.max(S.RELEVANCE).alias(S.RELEVANCE))


def judgment(negative_labels: str) -> Column:
    """The label the measures read: null when the qrels row is not a judgment.

    The one place where the negative-label rule is applied; the engine (and the tests' SQL
    oracle) and the qrels
    statistics read labels through it, so a null label is "not judged" everywhere
    (Judged@k, the condensed list of ``[judged]`` measures, bpref's non-relevant counts).

    Args:
        negative_labels: ``"unjudged"`` (trec_eval's rule, ``form_res_rels.c``: a negative
            label is in the pool but not judged, ``RELVALUE_UNJUDGED``; it is never relevant)
            or ``"judged"`` (a negative label is a judgment: the document is judged and
            non-relevant at every relevance level above its label).

    Raises:
        ValueError: any other value.
    """
    if negative_labels not in NEGATIVE_LABELS:
        raise ValueError(
            f"negative_labels must be one of {list(NEGATIVE_LABELS)}, got {negative_labels!r}"
        )
    label = F.col(S.RELEVANCE)
    return label if negative_labels == "judged" else F.when(label >= 0, label)


#: How the run statistics are computed: (run, qrels, stats=, partition_columns=,
#: laid_out_by_query=) -> one row per (run partition, query) with ``_in_run``,
#: ``_repeated`` and every statistic of ``stats.run``. Production has one:
#: :func:`releval.metrics.kernel.arrow_run_stats`; the tests pass a second, independent one
#: (``tests/sql_oracle.py``, Spark window functions) to check it.
RunStatsEngine = Callable[..., DataFrame]


def _query_qrels_stats(qrels: DataFrame, stats: Stats) -> DataFrame:
    ideal = Window.partitionBy(S.QUERY_ID).orderBy(F.col(S.RELEVANCE).desc(), F.col(S.DOC_ID).asc())
    return (
        qrels.withColumn(IDEAL_POSITION, F.row_number().over(ideal))
        .groupBy(S.QUERY_ID)
        .agg(F.first(F.lit(True)).alias(IN_QRELS), *[c.alias(n) for n, c in stats.qrels.items()])
    )


def query_table(
    run_q: DataFrame,
    qrels: DataFrame,
    *,
    stats: Stats,
    partition_columns: Sequence[str],
    missing_queries: str,
) -> DataFrame:
    """One row per (run partition, query) with every statistic of ``stats``.

    ``run_q`` is an engine's result (the run statistics); the qrels statistics
    are joined to it here.

    Rows are flagged ``_in_run`` / ``_in_qrels``: a query of the qrels that a run
    partition did not retrieve is present with ``_in_run`` false when
    ``missing_queries == "zero"`` (trec_eval ``-c``); a run query without qrels
    is present with ``_in_qrels`` false, so it can be counted, then dropped.
    The run partitions are those of ``run_q``'s query rows. The engine's ledger rows
    (``ledger``), if any, pass through with both flags false.
    """
    parts = list(partition_columns)
    qrels_q = _query_qrels_stats(qrels, stats)
    if missing_queries == "zero":
        if parts:
            # one task reads the few query rows' partition values: a distinct without a
            # shuffle (a single partition satisfies the aggregation's distribution)
            runs = run_q.where(F.col(IN_RUN)).select(*parts).coalesce(1).distinct()
            expected = F.broadcast(runs).crossJoin(qrels_q)
        else:
            expected = qrels_q
        table = _full_outer_null_safe(expected, run_q, keys=[*parts, S.QUERY_ID])
    else:
        table = run_q.join(qrels_q, on=S.QUERY_ID, how="left")
    filled = [
        (F.coalesce(F.col(n), d) if d is not None else F.col(n)).alias(n)
        for n, d in stats.run_default.items()
    ]
    return table.select(
        *parts,
        S.QUERY_ID,
        F.coalesce(F.col(IN_RUN), F.lit(False)).alias(IN_RUN),
        F.coalesce(F.col(IN_QRELS), F.lit(False)).alias(IN_QRELS),
        F.coalesce(F.col(REPEATED), F.lit(0)).cast("long").alias(REPEATED),
        *filled,
        *stats.qrels.keys(),
        *[c for c in (LEDGER, LEDGER_ROWS) if c in run_q.columns],
    )


def _full_outer_null_safe(left: DataFrame, right: DataFrame, *, keys: Sequence[str]) -> DataFrame:
    """A full outer join on ``keys`` where null equals null (a run partition may have a null
    value); the keys come once, from whichever side has the row. The right side's keys are
    renamed first: both sides may derive from one DataFrame (the runs from the run)."""
    renamed = {k: f"_right_{i}" for i, k in enumerate(keys)}
    right = right.select(*[F.col(c).alias(renamed.get(c, c)) for c in right.columns])
    condition = [F.col(k).eqNullSafe(F.col(renamed[k])) for k in keys]
    joined = left.join(right, on=condition, how="full_outer")
    return joined.select(
        *[F.coalesce(F.col(k), F.col(renamed[k])).alias(k) for k in keys],
        *[c for c in left.columns if c not in keys],
        *[c for c in right.columns if c not in renamed.values()],
    )


MEASURES = "_measures"


def query_measures(
    run: DataFrame,
    qrels: DataFrame,
    *,
    measures: Sequence[Measure],
    partition_columns: Sequence[str],
    missing_queries: str = "zero",
    rank_by: str = "score",
    run_stats: RunStatsEngine = arrow_run_stats,
    laid_out_by_query: bool = False,
    negative_labels: str = "unjudged",
    ledger: bool = False,
    keep: Callable[[DataFrame], DataFrame] | None = None,
) -> DataFrame:
    """Compute every measure for every (run partition, query), one wide row each.

    Args:
        run: canonical run rows (partition columns, query_id, doc_id, score, rank);
            a document repeated in a query keeps its best-ranked occurrence.
        qrels: canonical qrels rows (query_id, doc_id, relevance); a document judged
            twice keeps its highest label.
        measures: parsed measures.
        partition_columns: the run's partition columns.
        missing_queries: "zero" scores qrels queries absent from a run partition as 0
            (they count in means, trec_eval ``-c``); "skip" leaves them out.
        rank_by: the ranking rule (:mod:`releval.ranking`).
        run_stats: the run statistics' engine (:data:`RunStatsEngine`); the default is
            production's, tests pass the SQL oracle.
        laid_out_by_query: both inputs are already partitioned by
            :func:`releval.layout.by_query` (an engine may skip its shuffle).
        negative_labels: what a negative label means, ``"unjudged"`` (trec_eval) or
            ``"judged"`` (see :func:`judgment`).
        ledger: ``run`` is every run row and ``qrels`` every qrels row, each with the row
            rules' ``_reason``: the engine counts them and the rejected rows in its own
            pass (the ledger rows of :mod:`releval.metrics.kernel`) and uses the clean rows.
        keep: applied to the run statistics before they are read twice (the run
            partitions for ``missing_queries = "zero"``, then the join): the job persists
            them so that the engine runs once.

    Returns:
        Partition columns, query_id, the ``_in_run`` / ``_in_qrels`` flags, ``_repeated``
        (:data:`REPEATED`), ``num_ret``, ``negative_labels`` (the rule, the same on every
        row) and ``_measures``: an array with one struct per measure (measure, cutoff,
        rel_level, judged_only, measure_key, value, num_rel, num_rel_ret). See
        :func:`long_format`. With ``ledger`` also ``_ledger`` and ``_rows``, and the ledger
        rows (query id null, both flags false).
    """
    stats = Stats(partition_columns=tuple(partition_columns), rank_by=rank_by)
    num_ret = stats.num_ret()
    entries = []
    for m in measures:
        spec = m.spec
        view = stats.judged() if m.judged_only else stats
        entries.append(
            F.struct(
                F.lit(m.name).alias(S.MEASURE),
                F.lit(m.cutoff).cast("int").alias(S.CUTOFF),
                F.lit(m.rel_level).cast("int").alias(S.REL_LEVEL),
                F.lit(m.judged_only).alias(S.JUDGED_ONLY),
                F.lit(m.key).alias(S.MEASURE_KEY),
                spec.value(m, view).cast("double").alias(S.VALUE),
                stats.num_rel(level=m.rel_level).cast("long").alias(S.NUM_REL),
                spec.num_rel_ret(m, view).cast("long").alias(S.NUM_REL_RET),
            )
        )
    # every clean qrels row keeps its query in the query set; only judgments count
    if ledger:
        # every qrels row goes to the engine, which counts them (the qrels' ledger): the
        # label as read for the accounting, the judgment (null: none) for the measures
        labelled = qrels.withColumn(QRELS_LABEL, F.col(S.RELEVANCE)).withColumn(
            S.RELEVANCE, F.when(F.col(REASON).isNull(), judgment(negative_labels))
        )
        clean = labelled.where(F.col(REASON).isNull()).select(S.QUERY_ID, S.DOC_ID, S.RELEVANCE)
        to_engine = labelled
    else:
        clean = qrels.withColumn(S.RELEVANCE, judgment(negative_labels))
        to_engine = clean.where(F.col(S.RELEVANCE).isNotNull())
    # laid out by query id first: the per-document maximum, the ideal-ranking window and
    # the per-query aggregation then all run in that one layout (one shuffle, not two)
    judgments = prepare_qrels(clean if laid_out_by_query else by_query(clean))
    run_q = run_stats(
        run, to_engine, stats=stats,
        partition_columns=partition_columns, laid_out_by_query=laid_out_by_query,
        **({"ledger": True} if ledger else {}),
    )
    if keep is not None:
        run_q = keep(run_q)
    table = query_table(
        run_q,
        judgments,
        stats=stats,
        partition_columns=partition_columns,
        missing_queries=missing_queries,
    )
    return table.select(
        *partition_columns,
        S.QUERY_ID,
        IN_RUN,
        IN_QRELS,
        REPEATED,
        num_ret.alias(S.NUM_RET),
        F.lit(negative_labels).alias(S.NEGATIVE_LABELS),
        F.array(*entries).alias(MEASURES),
        *[c for c in (LEDGER, LEDGER_ROWS) if c in table.columns],
    )


def long_format(wide: DataFrame, *, partition_columns: Sequence[str]) -> DataFrame:
    """Scored queries only (those in the qrels), one row per measure.

    Returns:
        The columns of :func:`releval.schemas.per_query_schema`, in order, except
        ``job_run_id`` (the batch job adds it).
    """
    parts = list(partition_columns)
    m = F.explode(F.col(MEASURES)).alias("_m")
    return (
        wide.where(F.col(IN_QRELS))
        .select(*parts, S.QUERY_ID, S.NUM_RET, S.NEGATIVE_LABELS, m)
        .select(
            *parts,
            S.QUERY_ID,
            f"_m.{S.MEASURE}",
            f"_m.{S.CUTOFF}",
            f"_m.{S.REL_LEVEL}",
            f"_m.{S.JUDGED_ONLY}",
            f"_m.{S.MEASURE_KEY}",
            f"_m.{S.VALUE}",
            S.NUM_RET,
            f"_m.{S.NUM_REL}",
            f"_m.{S.NUM_REL_RET}",
            S.NEGATIVE_LABELS,
        )
    )
