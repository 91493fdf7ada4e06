"""Run + qrels -> one wide row per (run partition, query): every measure in one pass.

One shuffle by query id, one NumPy function per partition (:mod:`releval.core.kernel`);
each measure is a column expression over the statistics. See docs/design/engine.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from releval.core import columns as S
from releval.core.columns import (
    BEYOND_DEPTH,
    IN_QRELS,
    IN_RUN,
    IS_RUN,
    LEDGER,
    LEDGER_ROWS,
    MEASURES,
    NEGATIVE_LABEL_RULES,
    ORDER,
    REASON,
    REPEATED,
    RETRIEVED_BY,
    TIE_DEPENDENT,
    quote_identifier,
    quote_literal,
)
from releval.core.kernel import engine_rows, partition_stats, qrels_ddl, run_ddl
from releval.core.layout import by_query
from releval.core.measures.registry import WINDOW, Measure, check_window
from releval.core.measures.stats import Stats, safe_divide
from releval.core.ranking import check_depth
from releval.core.run_slices import UNRETRIEVED_SLICE
from releval.errors import MeasureError


def check_negative_labels(negative_labels: str) -> str:
    """``negative_labels`` when it is a rule the engine knows (``"unjudged"``: trec_eval's,
    a negative label is pooled, not judged; ``"judged"``: non-relevant at every level above
    the label; :func:`releval.core.kernel.engine_rows` applies it); else ValueError."""
    if negative_labels not in NEGATIVE_LABEL_RULES:
        raise ValueError(
            f"negative_labels must be one of {list(NEGATIVE_LABEL_RULES)}, got {negative_labels!r}"
        )
    return negative_labels


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
        qrels: canonical qrels rows, each label as read (``stats.negative_labels`` decides
            which are judgments; a null label is not one).
        laid_out_by_query: ignored: a union of two partitioned inputs is not partitioned.
        ledger: the inputs are every row with its ``_reason``; the result adds ledger rows.

    Returns:
        Partition columns, query_id, ``stats.slices`` (null on a qrels row), ``_in_run``,
        ``_repeated``, ``_beyond_depth``, ``_retrieved_by`` and the statistics; with
        ``ledger`` also ``_ledger`` and ``_rows``.
    """
    parts = list(partition_columns)
    order_column = S.SCORE if stats.rank_by == "score" else S.RANK
    # as few columns as the kernel needs: the shuffle costs per column and row (a qrels
    # row's label travels in _order; kernel.engine_rows gives it back)
    rows = run.select(
        *parts, S.QUERY_ID, S.DOC_ID,
        F.col(order_column).cast("double").alias(ORDER),
        F.lit(True).alias(IS_RUN),
        *([F.col(REASON)] if ledger else []),
        *([F.col(S.WINDOW).cast("long").alias(S.WINDOW)] if stats.window else []),
        *[F.col(c).cast("string").alias(c) for c in stats.slices],
    )
    judgments = qrels.select(
        *[F.lit(None).cast(run.schema[c].dataType).alias(c) for c in parts],
        S.QUERY_ID, S.DOC_ID,
        F.col(S.RELEVANCE).cast("int").cast("double").alias(ORDER),
        F.lit(False).alias(IS_RUN),
        *([F.col(REASON)] if ledger else []),
        *([F.lit(None).cast("long").alias(S.WINDOW)] if stats.window else []),
        *[F.lit(None).cast("string").alias(c) for c in stats.slices],
    )
    specs = dict(stats.run_spec)
    qrels_specs = dict(stats.qrels_spec)
    rank_by, depth, negative_labels = stats.rank_by, stats.depth, stats.negative_labels
    slices = stats.slices
    part_ddl = [f"{quote_identifier(c)} {run.schema[c].dataType.simpleString()}" for c in parts]
    schema = ", ".join([
        *part_ddl, f"`{S.QUERY_ID}` string", *[f"{quote_identifier(c)} string" for c in slices],
        f"`{IN_RUN}` boolean", f"`{IN_QRELS}` boolean",
        f"`{REPEATED}` bigint", f"`{BEYOND_DEPTH}` bigint", f"`{RETRIEVED_BY}` bigint",
        *[f"`{n}` {run_ddl(s)}" for n, s in specs.items()],
        *[f"`{n}` {qrels_ddl(s)}" for n, s in qrels_specs.items()],
        *([f"`{LEDGER}` string", f"`{LEDGER_ROWS}` bigint"] if ledger else []),
    ])

    def compute(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        collected = list(batches)
        if not collected or not any(b.num_rows for b in collected):
            return
        table = partition_stats(
            engine_rows(pa.Table.from_batches(collected), negative_labels=negative_labels),
            specs=specs, partition_columns=parts, rank_by=rank_by, qrels_specs=qrels_specs,
            depth=depth, slices=slices,
        )
        yield from table.to_batches()

    return by_query(rows.unionByName(judgments)).mapInArrow(compute, schema)


#: Computes the statistics like :func:`arrow_run_stats`; tests pass a SQL oracle instead.
RunStatsEngine = Callable[..., DataFrame]


def reads_result_twice(partition_columns: Sequence[str], missing_queries: str) -> bool:
    """Whether :func:`query_table`'s plan reads the engine's result more than once: with run
    partitions, the missing queries are the qrels queries less each partition's own."""
    return bool(partition_columns) and missing_queries == "zero"


def query_table(
    run_q: DataFrame,
    *,
    stats: Stats,
    partition_columns: Sequence[str],
    missing_queries: str,
    run_partitions: DataFrame | None = None,
) -> DataFrame:
    """One row per (run partition, query); with ``missing_queries == "zero"`` also the qrels
    queries a partition did not retrieve (``_in_run`` false), in each partition that ranked
    a row or is among ``run_partitions`` (those a run names though they ranked nothing)."""
    parts = list(partition_columns)
    qrels_only = ~F.col(IN_RUN) & F.col(IN_QRELS)
    if missing_queries == "zero" and not parts:
        # one run: the engine's qrels row of a query no run row retrieved is its missing
        # row as it stands (run statistics null, counts 0), so one filter reads it once
        table = run_q.where(~qrels_only | (F.col(RETRIEVED_BY) == 0))
    else:
        table = run_q.where(~qrels_only)
    if missing_queries == "zero" and parts:
        query_rows = run_q.where(qrels_only)
        kept = [S.QUERY_ID, IN_QRELS, *stats.qrels_spec.keys()]
        # each qrels query in each run partition less those retrieved; coalesce(1): no shuffle
        runs = run_q.where(F.col(IN_RUN)).select(*parts)
        if run_partitions is not None:
            runs = runs.unionByName(run_partitions.select(*parts))
        runs = runs.coalesce(1).distinct()
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
        *[F.coalesce(F.col(c), F.lit(UNRETRIEVED_SLICE)).alias(c) for c in stats.slices],
        F.coalesce(F.col(REPEATED), F.lit(0)).cast("long").alias(REPEATED),
        F.coalesce(F.col(BEYOND_DEPTH), F.lit(0)).cast("long").alias(BEYOND_DEPTH),
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
    depth: int | None = None,
    ledger: bool = False,
    keep: Callable[[DataFrame], DataFrame] | None = None,
    window: bool = False,
    run_partitions: DataFrame | None = None,
    slices: Sequence[str] = (),
) -> DataFrame:
    """Compute every measure for every (run partition, query), one wide row each.

    Args:
        run: canonical run rows; a repeated document keeps its best-ranked occurrence.
        qrels: canonical qrels rows; a document judged twice keeps its highest label.
        missing_queries: "zero" scores absent qrels queries 0 (trec_eval ``-c``); "skip" drops them.
        rank_by: the ranking rule (:mod:`releval.core.ranking`).
        run_stats: the statistics' engine; tests pass the SQL oracle.
        laid_out_by_query: both inputs are already partitioned by query (:mod:`.layout`).
        negative_labels: ``"unjudged"`` (trec_eval) or ``"judged"``
            (:func:`releval.core.kernel.engine_rows`); else ValueError.
        depth: evaluate each ranking's first ``depth`` documents (trec_eval ``-M``), after
            the tie-break and before the judged-only condensation; None: all; else
            ValueError (:func:`releval.core.ranking.check_depth`).
        ledger: the inputs are every row with its ``_reason``; the engine counts them.
        keep: applied to the engine's result, which is read more than once.
        window: the run rows carry each query's k_q (``window``); a ``@window`` measure
            without it is a MeasureError.
        run_partitions: run partitions that may have ranked no row (a run given one row per
            query whose arrays are empty): with ``"zero"`` their qrels queries score 0.
        slices: run columns (strings) constant per (run partition, query), carried to the
            result (:mod:`releval.core.run_slices`; a query not retrieved gets
            ``(not retrieved)``).

    Returns:
        Partition columns, query_id, the flags, ``_repeated``, ``_beyond_depth`` (rows past
        the depth), ``num_ret``, ``negative_labels``, ``depth`` and ``_measures`` (value,
        num_rel, num_rel_ret per measure, and ``_tie_dependent`` when a measure is
        ``[ties]``); with ``ledger`` the ledger; with ``window`` k_q and the recall of the
        whole ranking and of the window (:func:`window_columns`); the ``slices``.

    Raises:
        MeasureError: a ``[ties]`` measure with a depth; a ``@window`` measure without a window.
    """
    depth = check_depth(depth)
    check_window(measures, window)
    any_ties = any(m.tie_aware for m in measures)
    if depth is not None and any_ties:
        # the depth cuts a tie group by doc id before the statistics see it
        raise MeasureError(
            f"tie-aware measures ({', '.join(m.key for m in measures if m.tie_aware)}) cannot "
            f"be computed with a depth (depth={depth}): evaluate them without one"
        )
    stats = Stats(partition_columns=tuple(partition_columns), rank_by=rank_by, depth=depth,
                  window=window, negative_labels=check_negative_labels(negative_labels),
                  slices=tuple(slices))
    num_ret = stats.num_ret()
    extra = window_columns(stats, measures) if window else []
    entries = []
    for m in measures:
        spec = m.spec
        view = (stats.judged() if m.judged_only
                else stats.unjudged_relevant() if m.best else stats)
        ties = spec.ties if m.tie_aware else None
        value = ties.value if ties is not None else spec.value
        # names are the same in every row: long_format adds them from the order
        entries.append(
            F.struct(
                value(m, view).cast("double").alias(S.VALUE),
                stats.num_rel(level=m.rel_level).cast("long").alias(S.NUM_REL),
                # a [ties] measure's count is the one under the tie-break (not an expectation)
                spec.num_rel_ret(m, view).cast("long").alias(S.NUM_REL_RET),
                # only with a [ties] measure: the entries keep their fields otherwise
                *([(ties.depends(m, view) > 0 if ties is not None else F.lit(None))
                   .cast("boolean").alias(TIE_DEPENDENT)] if any_ties else []),
            )
        )
    run_q = run_stats(
        run, qrels, stats=stats,
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
        run_partitions=run_partitions,
    )
    return table.select(
        *partition_columns,
        S.QUERY_ID,
        IN_RUN,
        IN_QRELS,
        REPEATED,
        BEYOND_DEPTH,
        num_ret.alias(S.NUM_RET),
        F.lit(negative_labels).alias(S.NEGATIVE_LABELS),
        F.lit(depth).cast("int").alias(S.DEPTH),
        F.array(*entries).alias(MEASURES),
        *extra,
        *slices,
        *[c for c in (LEDGER, LEDGER_ROWS) if c in table.columns],
    )


def window_columns(stats: Stats, measures: Sequence[Measure]) -> list[Column]:
    """k_q, and the recall of the whole ranking and of its window at the measures' relevance
    level (the summary's "what the window lost")."""
    level = next((m.rel_level for m in measures if not m.rel_explicit), 1)
    num_rel = stats.num_rel(level=level)
    return [
        stats.window_size().alias(S.WINDOW_K),
        safe_divide(stats.rel_ret(level=level, cutoff=None), num_rel).alias(S.RECALL_ALL),
        safe_divide(stats.rel_ret(level=level, cutoff=WINDOW), num_rel).alias(S.RECALL_WINDOW),
    ]


def measure_names(measures: Sequence[Measure]) -> Column:
    """The measures' columns (``measure``, ``cutoff``, ``rel_level``, ``judged_only``,
    ``measure_key``) as an array of structs in the order of ``measures``: one SQL
    expression, whatever the number of measures (a plan made with one driver call)."""
    def entry(m: Measure) -> str:
        cutoff = "NULL" if m.cutoff is None else str(int(m.cutoff))
        return (f"named_struct({quote_literal(S.MEASURE)}, {quote_literal(m.name)}, "
                f"{quote_literal(S.CUTOFF)}, CAST({cutoff} AS INT), "
                f"{quote_literal(S.REL_LEVEL)}, CAST({int(m.rel_level)} AS INT), "
                f"{quote_literal(S.JUDGED_ONLY)}, {'true' if m.judged_only else 'false'}, "
                f"{quote_literal(S.MEASURE_KEY)}, {quote_literal(m.key)})")

    return F.expr(f"array({', '.join(entry(m) for m in measures)})")


def long_format(
    wide: DataFrame, *, partition_columns: Sequence[str], measures: Sequence[Measure],
    slices: Sequence[str] = (),
) -> DataFrame:
    """Scored queries only (those in the qrels), one row per measure.

    Args:
        wide: the wide table; with an ``answer_score`` column when answers were given,
            k_q (``_window``) when the run has a window, and ``weight`` and the ``slices``
            columns when the evaluation has them.
        measures: the measures of ``wide``'s array, in its order (it holds no names).
        slices: the slice columns of ``wide``, carried in the ``slices`` map (none: null).

    Returns:
        The columns of :func:`releval.io.tables.per_query_schema` but ``job_run_id``.
    """
    parts = list(partition_columns)
    names = measure_names(measures)
    m = F.posexplode(F.col(MEASURES)).alias("_i", "_m")
    answer = (F.col(S.ANSWER_SCORE) if S.ANSWER_SCORE in wide.columns
              else F.lit(None)).cast("double").alias(S.ANSWER_SCORE)
    window = (F.col(S.WINDOW_K) if S.WINDOW_K in wide.columns
              else F.lit(None)).cast("int").alias(S.WINDOW_SIZE)
    weight = (F.col(S.WEIGHT) if S.WEIGHT in wide.columns
              else F.lit(None)).cast("double").alias(S.WEIGHT)
    attributes = (F.create_map(*[x for s in slices for x in (F.lit(s), F.col(s).cast("string"))])
                  if slices else F.lit(None)).cast("map<string,string>").alias(S.SLICES)
    return (
        wide.where(F.col(IN_QRELS))
        .select(*parts, S.QUERY_ID, S.NUM_RET, S.NEGATIVE_LABELS, S.DEPTH, answer, window,
                weight, attributes, m)
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
            S.DEPTH,
            S.ANSWER_SCORE,
            S.WINDOW_SIZE,
            S.WEIGHT,
            S.SLICES,
        )
    )
