"""The batch job's pipeline: read -> check -> evaluate -> write, and its summary.

:func:`releval.evaluation.evaluate.evaluate` is the pure part (DataFrames in, DataFrames out);
:func:`run` reads the inputs a config names, evaluates, checks the accounts, writes the quarantine and both
output tables, and returns a :class:`~releval.evaluation.summary.Summary`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import types as T

from releval.checks.accounts import QualityReport
from releval.checks.queries import CheckedQueries, check_queries
from releval.config import Config
from releval.core import columns as S
from releval.core.measures import Measure, check_window, parse_measures
from releval.core.measures.judged import with_judged_measures
from releval.evaluation.answers import job_answers, retrieval_measure, with_retrieval_measure
from releval.evaluation.counts import query_counts
from releval.evaluation.evaluate import Evaluation, evaluate_inputs
from releval.evaluation.inputs import JobInputs, finish_checks, job_inputs
from releval.evaluation.partitions import partition_sort_key
from releval.evaluation.persisted import keeper, materialize
from releval.evaluation.summary import Summary, aggregate_order
from releval.evaluation.windows import window_spreads
from releval.frames.aggregate import bootstrap
from releval.frames.aggregate import rows as aggregate_rows_of
from releval.io import tables
from releval.io.atomic import read_table
from releval.io.readers import read_queries, source_name
from releval.runtime.mode import explain_string
from releval.runtime.profile import Phases
from releval.runtime.testhooks import pause


@dataclass(frozen=True)
class WriteOptions:
    """How :func:`run` replaces rows of the output tables.

    Attributes:
        predicate: the ``replaceWhere`` predicate covering the evaluated partitions
            (see ``releval.evaluation.partitions``); None replaces the whole tables.
        job_run_id: written to every output row and the commits' ``userMetadata``.
    """

    predicate: str | None = None
    job_run_id: str | None = None


@dataclass(frozen=True)
class Results:
    """What :func:`run` computed and wrote, handed to its ``then`` while the engine's result
    is still persisted.

    Attributes:
        queries: the engine's wide rows (as :attr:`Evaluation.queries`), persisted.
        measures: the measures of ``queries``' array, in its order.
        partition_columns: the run partition columns.
        aggregate: the aggregate table's rows as written.
    """

    queries: DataFrame
    measures: tuple[Measure, ...]
    partition_columns: tuple[str, ...]
    aggregate: tuple[Row, ...]


@dataclass(frozen=True)
class Beside:
    """Work :func:`run` does beside its writes: ``call`` gets the per-query rows it writes
    and the evaluated run partitions (:func:`evaluated_partitions`); ``name`` is its
    thread's and the phase of the wait for it."""

    name: str
    call: Callable[[DataFrame, list[dict[str, str | None]]], object]


def evaluated_partitions(report: QualityReport, columns: Sequence[str]
                         ) -> list[dict[str, str | None]]:
    """The run partitions the accounts saw, sorted (null values last)."""
    return sorted(({c: p.values.get(c) for c in columns} for p in report.run.partitions),
                  key=partition_sort_key)


def _partition_fields(run: DataFrame, columns: Sequence[str]) -> list[T.StructField]:
    by_name = {f.name: f for f in run.schema.fields}
    return [by_name[c] for c in columns]


def job_measures(config: Config) -> list[Measure]:
    """The measures a job computes: the configured ones, the answers' retrieval measure
    (``answers.retrieved_by``) when answers are configured and it is not among them, and
    Judged@k for each cutoff."""
    level = config.evaluation.relevance_level
    measures = parse_measures(
        config.evaluation.measures, relevance_level=level,
        judged_only=config.evaluation.judged_only,
    )
    if config.answers is not None:
        measure = retrieval_measure(config.answers.retrieval_measure(config.run.window),
                                    relevance_level=level)
        measures = with_retrieval_measure(measures, measure)
    check_window(measures, config.run.window)
    return with_judged_measures(measures, relevance_level=level, window=bool(config.run.window))


def job_queries(spark: SparkSession, config: Config) -> CheckedQueries | None:
    """The job's checked queries input (``[queries]``); None without one."""
    src = config.queries
    if src is None:
        return None
    return check_queries(read_queries(spark, src), query_id=src.query_id, weight=src.weight,
                         slices=src.slices, name=source_name(src))


def _evaluate_job(
    config: Config, inputs: JobInputs, keep: Callable[[DataFrame], DataFrame] | None = None,
    queries: CheckedQueries | None = None,
) -> Evaluation:
    return dataclasses.replace(evaluate_inputs(
        inputs, measures=job_measures(config), missing_queries=config.evaluation.missing_queries,
        negative_labels=config.evaluation.negative_labels, depth=config.evaluation.depth,
        intervals=config.intervals, keep=keep,
    ), attributes=queries)


def explain(spark: SparkSession, config: Config, *, mode: str = "formatted") -> str:
    """The physical plan of the job's per-query measures, as Spark explains it; runs nothing.

    The plan is the one :func:`run` executes: the inputs (:func:`releval.evaluation.inputs.job_inputs`,
    counted by the engine's ledger in the same pass) and the engine's per-query computation.
    The quarantine (a pass of its own when a row was rejected) is not shown.

    Args:
        spark: the session.
        config: the job config.
        mode: ``simple``, ``extended``, ``codegen``, ``cost`` or ``formatted``.
    """
    inputs = job_inputs(spark, config)
    result = _evaluate_job(config, inputs)
    return explain_string(result.queries, mode)


def run(
    spark: SparkSession,
    config: Config,
    *,
    strict: bool | None = None,
    write: WriteOptions = WriteOptions(),
    phases: Phases | None = None,
    then: Callable[[Results], None] | None = None,
    beside: Beside | None = None,
) -> Summary:
    """Run the evaluation job a config describes; write both Delta tables.

    The inputs are read raw; the per-query statistics are computed and persisted in one
    pass that also counts every input row (the engine's ledger); the accounts are checked,
    the quarantine written and strict mode enforced (:func:`releval.evaluation.inputs.finish_checks`,
    ``strict`` overrides ``evaluation.strict``) before anything else is written. Each output table gets one
    atomic commit replacing ``write.predicate`` (the whole table when None); a concurrent
    job's conflicting commit is retried.

    ``phases`` (default: a new :class:`releval.runtime.profile.Phases`) times each phase.
    ``then``, when given, is called with the :class:`Results` once both tables are written
    (e.g. to write another output from the persisted rows without reading the tables back).
    ``beside``, when given, runs in a thread of its own once the checks pass, on the
    per-query rows as they are written (planned from the persisted evaluation), while the
    tables are written; ``run`` waits for it (its phase: the wall time it adds) and raises
    what it raised once every table is written.

    Returns:
        The job summary.
    """
    phases = phases if phases is not None else Phases(spark)
    measures = job_measures(config)
    parts = list(config.run.partition_columns)
    with phases.phase("read inputs"):
        inputs = job_inputs(spark, config)
        attributes = job_queries(spark, config)
    part_fields = _partition_fields(inputs.run, parts)
    kept: list[DataFrame] = []
    keep = keeper(kept)
    pending: Future | None = None

    out_parts = config.output_partition_columns
    try:
        with phases.phase("evaluation"):
            # planned inside the phase: persisting plans the query on the driver (Spark's
            # optimizer, the inputs' file listing), the evaluation's time as its jobs are
            result = _evaluate_job(config, inputs, keep=keep, queries=attributes)
            materialize(kept, partition_columns=parts,
                        missing_queries=config.evaluation.missing_queries)
            queries = result.queries.persist(StorageLevel.MEMORY_AND_DISK)
            kept.append(queries)
            found = query_counts(
                dataclasses.replace(result, queries=queries).attributed, parts,
                missing_queries=config.evaluation.missing_queries,
                measures=measures, intervals=config.intervals, slices=result.slices,
                weighted=result.weighted,
            )
            windows = window_spreads(queries, parts)
        counts = found.queries
        answers = None
        if inputs.answers is not None:
            with phases.phase("answers"):
                answers = job_answers(config, inputs, queries, found.run_ledger, measures, kept)
        with phases.phase("quarantine"):
            report = finish_checks(
                spark, config, inputs, found, strict=strict, replace=write.predicate,
                job_run_id=write.job_run_id, answers=answers, queries=attributes,
            )
        per_query = result.long(answers.per_query(queries) if answers else queries)
        if beside is not None:
            running = ThreadPoolExecutor(max_workers=1, thread_name_prefix=beside.name)
            pending = running.submit(beside.call, per_query, evaluated_partitions(report, parts))
        pause("before_write")
        with phases.phase("write per-query"):
            per_query_written = tables.write_per_query(
                per_query,
                rows=(counts["scored"] + counts["missing"]) * len(measures),
                path=config.output.per_query_path, table=config.output.per_query_table,
                partition_fields=part_fields, output_partition_columns=out_parts,
                predicate=write.predicate, job_run_id=write.job_run_id,
            )
        pause("between_tables")
        with phases.phase("write aggregate"):
            # from the sums the evaluation's aggregation collected (the bootstrap, if asked,
            # is a pass of its own), then written and shown from the same rows
            boot = (
                bootstrap(queries, measures=measures, partition_columns=parts,
                          intervals=config.intervals)
                if config.intervals.method == "bootstrap" else None
            )
            made = aggregate_rows_of(
                found.sums, measures=measures, partition_columns=parts,
                intervals=config.intervals, bootstrap=boot,
            )
            aggregate_rows, aggregate_written = tables.write_aggregate(
                spark, made, path=config.output.aggregate_path,
                table=config.output.aggregate_table, partition_fields=part_fields,
                output_partition_columns=out_parts, predicate=write.predicate,
                job_run_id=write.job_run_id,
            )
        if then is not None:
            then(Results(queries, tuple(measures), tuple(parts), aggregate_rows))
        attribution: tuple[Row, ...] = ()
        attribution_written = None
        path, table = config.located("attribution")
        if answers is not None and (path or table):
            with phases.phase("write attribution"):
                attribution, attribution_written = tables.write_attribution(
                    spark, answers.rows, path=path, table=table, partition_fields=part_fields,
                    output_partition_columns=out_parts, predicate=write.predicate,
                    job_run_id=write.job_run_id,
                )
        if pending is not None:
            with phases.phase(beside.name):
                pending.result()
        # the qrels' highest used label, from the engine's qrels ledger
        binary_labels = (report.qrels.used_max or 0) <= 1
    finally:
        if pending is not None:  # a write failed: the thread reads the persisted rows
            wait([pending])
            running.shutdown()
        # together at the end: unpersisting the engine's result earlier would drop the
        # persisted table built from it (Spark re-caches what depends on an uncached plan)
        for df in reversed(kept):
            df.unpersist()
    return Summary(
        run_rows=report.run.input,
        qrels_rows=report.qrels.input,
        run_partitions=int(counts["partitions"]),
        queries_scored=int(counts["scored"]),
        queries_without_qrels=int(counts["without_qrels"]),
        queries_missing_from_run=int(counts["missing"]),
        queries_per_mean=(counts["min_queries"], counts["max_queries"]),
        partitions_with_few_queries=counts["few_queries"],
        intervals=config.intervals,
        missing_queries=config.evaluation.missing_queries,
        depth=config.evaluation.depth,
        rows_beyond_depth=int(counts["beyond_depth"]),
        windows=windows,
        per_query_rows=per_query_written.rows,
        aggregate_rows=aggregate_written.rows,
        per_query_version=per_query_written.version,
        aggregate_version=aggregate_written.version,
        unjudged=found.unjudged,
        tie_dependent=found.tie_dependent,
        unjudged_warning_share=config.evaluation.unjudged_warning_share,
        binary_labels=binary_labels,
        measures=tuple(measures),
        quality=report,
        aggregate=tuple(sorted(aggregate_rows, key=aggregate_order(parts))),
        attribution=attribution,
        attribution_rows=attribution_written.rows if attribution_written else None,
        attribution_version=attribution_written.version if attribution_written else None,
    )


def read_per_query(spark: SparkSession, config: Config) -> DataFrame:
    """The per-query table the config writes to."""
    return read_table(spark, path=config.output.per_query_path, table=config.output.per_query_table)


def read_aggregate(spark: SparkSession, config: Config) -> DataFrame:
    """The aggregate table the config writes to, sorted for reading."""
    keys = [*config.run.partition_columns, S.MEASURE, S.CUTOFF, S.MEASURE_KEY, S.AVERAGING]
    table = read_table(spark, path=config.output.aggregate_path, table=config.output.aggregate_table)
    return table.orderBy(*keys)
