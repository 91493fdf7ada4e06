"""Run + qrels -> one wide row per (run partition, query): every measure in one pass.

The measures' statistics are collected by :class:`~releval.core.measures.stats.Stats`;
:func:`arrow_run_stats` computes them all in one shuffle of the run and qrels rows by
query id and one NumPy function per partition (:mod:`releval.core.kernel`); each measure
is a column expression over them. The design is in docs/design/engine.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from releval.core import columns as S
from releval.core.columns import (
    IN_QRELS,
    IN_RUN,
    IS_RUN,
    LEDGER,
    LEDGER_ROWS,
    MEASURES,
    NEGATIVE_LABEL_RULES,
    ORDER,
    QRELS_LABEL,
    REASON,
    REPEATED,
    RETRIEVED_BY,
    quote_identifier,
)
from releval.core.kernel import partition_stats, qrels_ddl, run_ddl
from releval.core.layout import by_query
from releval.core.measures.registry import Measure
from releval.core.measures.stats import Stats


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
    if negative_labels not in NEGATIVE_LABEL_RULES:
        raise ValueError(
            f"negative_labels must be one of {list(NEGATIVE_LABEL_RULES)}, got {negative_labels!r}"
        )
    label = F.col(S.RELEVANCE)
    return label if negative_labels == "judged" else F.when(label >= 0, label)


def arrow_run_stats(
    run: DataFrame,
    qrels: DataFrame,
    *,
    stats: Stats,
    partition_columns: Sequence[str],
    laid_out_by_query: bool = False,
    ledger: bool = False,
) -> DataFrame:
    """One row per (run partition, query) with every run statistic of ``stats``.

    Args:
        run: canonical run rows.
        qrels: canonical qrels rows (a null relevance: not a judgment).
        stats: the collector the measures filled.
        partition_columns: the run's partition columns.
        laid_out_by_query: ignored: the union of both inputs is shuffled by query id here
            (a union of two partitioned inputs is not partitioned).
        ledger: ``run`` holds every run row with the row rules' ``_reason``, ``qrels``
            every qrels row with its ``_reason`` and ``_qrels_label``; the result gets the
            ledger rows of both (see the module docstring).

    Returns:
        Partition columns, query_id, ``_in_run``, ``_repeated``, ``_retrieved_by`` and the
        statistics, like the SQL oracle; with ``ledger`` also ``_ledger`` and ``_rows``.
    """
    parts = list(partition_columns)
    order_column = S.SCORE if stats.rank_by == "score" else S.RANK
    rows = run.select(
        *parts, S.QUERY_ID, S.DOC_ID,
        F.col(order_column).cast("double").alias(ORDER),
        F.lit(None).cast("int").alias(S.RELEVANCE),
        F.lit(True).alias(IS_RUN),
        *([F.col(REASON), F.lit(None).cast("int").alias(QRELS_LABEL)] if ledger else []),
    )
    judgments = qrels.select(
        *[F.lit(None).cast(run.schema[c].dataType).alias(c) for c in parts],
        S.QUERY_ID, S.DOC_ID,
        F.lit(None).cast("double").alias(ORDER),
        F.col(S.RELEVANCE).cast("int").alias(S.RELEVANCE),
        F.lit(False).alias(IS_RUN),
        *([F.col(REASON), F.col(QRELS_LABEL).cast("int").alias(QRELS_LABEL)] if ledger else []),
    )
    specs = dict(stats.run_spec)
    qrels_specs = dict(stats.qrels_spec)
    rank_by = stats.rank_by
    part_ddl = [f"{quote_identifier(c)} {run.schema[c].dataType.simpleString()}" for c in parts]
    schema = ", ".join([
        *part_ddl, f"`{S.QUERY_ID}` string", f"`{IN_RUN}` boolean", f"`{IN_QRELS}` boolean",
        f"`{REPEATED}` bigint", f"`{RETRIEVED_BY}` bigint",
        *[f"`{n}` {run_ddl(s)}" for n, s in specs.items()],
        *[f"`{n}` {qrels_ddl(s)}" for n, s in qrels_specs.items()],
        *([f"`{LEDGER}` string", f"`{LEDGER_ROWS}` bigint"] if ledger else []),
    ])

    def compute(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        collected = list(batches)
        if not collected or not any(b.num_rows for b in collected):
            return
        table = partition_stats(
            pa.Table.from_batches(collected), specs=specs, partition_columns=parts, rank_by=rank_by,
            qrels_specs=qrels_specs,
        )
        yield from table.to_batches()

    return by_query(rows.unionByName(judgments)).mapInArrow(compute, schema)


#: How the statistics are computed: (run, qrels, stats=, partition_columns=,
#: laid_out_by_query=) -> one row per (run partition, query) with ``_in_run``,
#: ``_in_qrels``, ``_repeated``, every statistic of ``stats.run_spec`` and of
#: ``stats.qrels_spec`` (null when the query has no qrels), and one row per query of the
#: qrels (``_in_run`` false, ``_in_qrels`` true, null partition columns and run
#: statistics) with its qrels statistics and ``_retrieved_by`` (:data:`RETRIEVED_BY`). Production has one:
#: :func:`releval.core.kernel.arrow_run_stats`; the tests pass a second, independent one
#: (``tests/support/sql_oracle.py``, Spark window functions) to check it.
RunStatsEngine = Callable[..., DataFrame]


def query_table(
    run_q: DataFrame,
    *,
    stats: Stats,
    partition_columns: Sequence[str],
    missing_queries: str,
) -> DataFrame:
    """One row per (run partition, query) with every statistic of ``stats``.

    ``run_q`` is an engine's result: a row per (run partition, query) of the run with the
    run and the qrels statistics, and a row per query of the qrels (``_in_run`` false, null
    partition columns) with its qrels statistics.

    Rows are flagged ``_in_run`` / ``_in_qrels``: a query of the qrels that a run
    partition did not retrieve is present with ``_in_run`` false when
    ``missing_queries == "zero"`` (trec_eval ``-c``; without partition columns, the
    queries whose engine row says no run row retrieved them); a run query without qrels
    is present with ``_in_qrels`` false, so it can be counted, then dropped.
    The run partitions are those of ``run_q``'s query rows. The engine's ledger rows
    (``ledger``), if any, pass through with both flags false.
    """
    parts = list(partition_columns)
    qrels_only = ~F.col(IN_RUN) & F.col(IN_QRELS)
    table = run_q.where(~qrels_only)
    if missing_queries == "zero":
        query_rows = run_q.where(qrels_only)
        kept = [S.QUERY_ID, IN_QRELS, *stats.qrels_spec.keys()]
        if not parts:
            # one run: a query of the qrels is missing when no run row retrieved it, which
            # the engine's row for it says (no join: the anti join below took two stages
            # and a broadcast of every retrieved query, 3 s at 10M run rows)
            missing = query_rows.where(F.col(RETRIEVED_BY) == 0).select(*kept)
        else:
            # run partitions: each query of the qrels in each run partition, less the
            # (partition, query) pairs retrieved. One task reads the few query rows'
            # partition values: a distinct without a shuffle (a single partition satisfies
            # the aggregation's distribution)
            runs = run_q.where(F.col(IN_RUN)).select(*parts).coalesce(1).distinct()
            expected = F.broadcast(runs).crossJoin(query_rows.select(*kept))
            retrieved = run_q.where(F.col(IN_RUN)).select(
                *[F.col(c).alias(f"_right_{i}") for i, c in enumerate([*parts, S.QUERY_ID])]
            )
            condition = [F.col(c).eqNullSafe(F.col(f"_right_{i}"))
                         for i, c in enumerate([*parts, S.QUERY_ID])]
            missing = expected.join(retrieved, on=condition, how="left_anti")
        table = table.unionByName(missing, allowMissingColumns=True)
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
        *stats.qrels_spec.keys(),
        *[c for c in (LEDGER, LEDGER_ROWS) if c in run_q.columns],
    )


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
        rank_by: the ranking rule (:mod:`releval.core.ranking`).
        run_stats: the run statistics' engine (:data:`RunStatsEngine`); the default is
            production's, tests pass the SQL oracle.
        laid_out_by_query: both inputs are already partitioned by
            :func:`releval.core.layout.by_query` (an engine may skip its shuffle).
        negative_labels: what a negative label means, ``"unjudged"`` (trec_eval) or
            ``"judged"`` (see :func:`judgment`).
        ledger: ``run`` is every run row and ``qrels`` every qrels row, each with the row
            rules' ``_reason``: the engine counts them and the rejected rows in its own
            pass (the ledger rows of :mod:`releval.core.kernel`) and uses the clean rows.
        keep: applied to the engine's result before it is read more than once (the
            queries' rows, and for ``missing_queries = "zero"`` the run partitions, the
            qrels' query rows and the retrieved queries): the job persists it so that the
            engine runs once.

    Returns:
        Partition columns, query_id, the ``_in_run`` / ``_in_qrels`` flags, ``_repeated``
        (:data:`REPEATED`), ``num_ret``, ``negative_labels`` (the rule, the same on every
        row) and ``_measures``: an array with one struct per measure, in the order of
        ``measures`` (value, num_rel, num_rel_ret). See :func:`long_format`. With
        ``ledger`` also ``_ledger`` and ``_rows``, and the ledger rows (query id null,
        both flags false).
    """
    stats = Stats(partition_columns=tuple(partition_columns), rank_by=rank_by)
    num_ret = stats.num_ret()
    entries = []
    for m in measures:
        spec = m.spec
        view = stats.judged() if m.judged_only else stats
        # the measure's names are not stored here: they are the same in every row (the
        # persisted wide table was 2 KB a row with them, 100k rows at 10M run rows);
        # long_format adds them from the measures' order
        entries.append(
            F.struct(
                spec.value(m, view).cast("double").alias(S.VALUE),
                stats.num_rel(level=m.rel_level).cast("long").alias(S.NUM_REL),
                spec.num_rel_ret(m, view).cast("long").alias(S.NUM_REL_RET),
            )
        )
    # every clean qrels row keeps its query in the query set; only judgments count
    # (a null relevance: not a judgment)
    if ledger:
        # every qrels row goes to the engine, which counts them (the qrels' ledger): the
        # label as read for the accounting, the judgment (null: none) for the measures
        to_engine = qrels.withColumn(QRELS_LABEL, F.col(S.RELEVANCE)).withColumn(
            S.RELEVANCE, F.when(F.col(REASON).isNull(), judgment(negative_labels))
        )
    else:
        # every clean row keeps its query in the query set, a judgment (label) or not
        to_engine = qrels.withColumn(S.RELEVANCE, judgment(negative_labels))
    run_q = run_stats(
        run, to_engine, stats=stats,
        partition_columns=partition_columns, laid_out_by_query=laid_out_by_query,
        **({"ledger": True} if ledger else {}),
    )
    if keep is not None:
        run_q = keep(run_q)
    table = query_table(
        run_q,
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


def long_format(
    wide: DataFrame, *, partition_columns: Sequence[str], measures: Sequence[Measure]
) -> DataFrame:
    """Scored queries only (those in the qrels), one row per measure.

    Args:
        wide: the wide table (:func:`query_measures`).
        partition_columns: the run's partition columns.
        measures: the measures of ``wide``'s array, in its order: their names, cutoffs,
            levels and keys (the array holds only the values and counts).

    Returns:
        The columns of :func:`releval.core.columns.per_query_schema`, in order, except
        ``job_run_id`` (the batch job adds it).
    """
    parts = list(partition_columns)
    names = F.array(*[
        F.struct(
            F.lit(m.name).alias(S.MEASURE),
            F.lit(m.cutoff).cast("int").alias(S.CUTOFF),
            F.lit(m.rel_level).cast("int").alias(S.REL_LEVEL),
            F.lit(m.judged_only).alias(S.JUDGED_ONLY),
            F.lit(m.key).alias(S.MEASURE_KEY),
        )
        for m in measures
    ])
    m = F.posexplode(F.col(MEASURES)).alias("_i", "_m")
    return (
        wide.where(F.col(IN_QRELS))
        .select(*parts, S.QUERY_ID, S.NUM_RET, S.NEGATIVE_LABELS, m)
        .select("*", names[F.col("_i")].alias("_name"))
        .select(
            *parts,
            S.QUERY_ID,
            f"_name.{S.MEASURE}",
            f"_name.{S.CUTOFF}",
            f"_name.{S.REL_LEVEL}",
            f"_name.{S.JUDGED_ONLY}",
            f"_name.{S.MEASURE_KEY}",
            f"_m.{S.VALUE}",
            S.NUM_RET,
            f"_m.{S.NUM_REL}",
            f"_m.{S.NUM_REL_RET}",
            S.NEGATIVE_LABELS,
        )
    )
