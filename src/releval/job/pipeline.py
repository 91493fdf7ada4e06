"""The batch job's pipeline: read -> check -> evaluate -> write, and its summary.

:func:`evaluate` is the pure part (DataFrames in, DataFrames out); :func:`run` reads the
inputs a config names, evaluates, checks the accounts, writes the quarantine and both
output tables, and returns a :class:`~releval.job.summary.Summary`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import types as T

from releval.checks.queries import CheckedQueries, check_queries, with_attributes
from releval.config import Config, IntervalSettings
from releval.core import columns as S
from releval.core.engine import RunStatsEngine, arrow_run_stats, long_format, query_measures
from releval.core.frames import local_frame
from releval.core.measures import Measure, check_window, parse_measures
from releval.core.measures.judged import with_judged_measures
from releval.frames.aggregate import aggregate, bootstrap
from releval.frames.aggregate import rows as aggregate_rows_of
from releval.io import tables
from releval.io.atomic import read_table
from releval.io.readers import read_queries, source_name
from releval.job.answers import job_answers, retrieval_measure, with_retrieval_measure
from releval.job.counts import query_counts
from releval.job.inputs import JobInputs, finish_checks, job_inputs
from releval.job.persisted import keeper, materialize
from releval.job.summary import Summary, aggregate_order
from releval.job.windows import window_spreads
from releval.runtime.mode import explain_string
from releval.runtime.profile import Phases
from releval.runtime.testhooks import pause


@dataclass(frozen=True)
class Evaluation:
    """The lazily evaluated results of :func:`evaluate`.

    Attributes:
        queries: one row per (run partition, query) with the ``_in_run`` / ``_in_qrels``
            flags and the measures in an array (the wide table the aggregate reads).
        measures, partition_columns, intervals: what :attr:`per_query` and
            :attr:`aggregate` need.
        attributes: the checked queries input (slices, weight); None without one.
        run_slices: run columns :attr:`queries` carries per (run partition, query), sliced
            by as the queries input's slices are (:mod:`releval.core.run_slices`).
    """

    queries: DataFrame
    measures: tuple[Measure, ...]
    partition_columns: tuple[str, ...]
    intervals: IntervalSettings
    attributes: CheckedQueries | None = None
    run_slices: tuple[str, ...] = ()

    @property
    def attributed(self) -> DataFrame:
        """:attr:`queries` with the queries' slices, weight and ``_listed``
        (:func:`releval.checks.queries.with_attributes`); :attr:`queries` without them."""
        if self.attributes is None:
            return self.queries
        return with_attributes(self.queries, self.attributes, listed=True)

    @property
    def slices(self) -> tuple[str, ...]:
        """The run slices, then the queries input's."""
        return (*self.run_slices,
                *(self.attributes.slices if self.attributes is not None else ()))

    @property
    def weighted(self) -> bool:
        return self.attributes is not None and self.attributes.weighted

    @property
    def per_query(self) -> DataFrame:
        """The per-query table's rows, without ``job_run_id`` (planned when read)."""
        return self.long(self.queries)

    def long(self, wide: DataFrame) -> DataFrame:
        """``wide`` (:attr:`queries`, or it with the answer scores) as the per-query table's
        rows, with each query's ``weight`` and ``slices`` (planned when read)."""
        if self.attributes is not None:
            wide = with_attributes(wide, self.attributes)
        return long_format(wide, partition_columns=self.partition_columns,
                           measures=self.measures, slices=self.slices)

    @property
    def aggregate(self) -> DataFrame:
        """The aggregate table's rows, without ``job_run_id`` (computed and collected when
        read: :func:`releval.frames.aggregate.aggregate`)."""
        found = aggregate(
            self.attributed, measures=self.measures, partition_columns=self.partition_columns,
            intervals=self.intervals, slices=self.slices, weighted=self.weighted,
        )
        fields = [self.queries.schema[c] for c in self.partition_columns]
        schema = T.StructType(
            [f for f in tables.aggregate_schema(fields).fields if f.name != S.JOB_RUN_ID]
        )
        return local_frame(
            self.queries.sparkSession, [tuple(r[f.name] for f in schema.fields) for r in found],
            schema,
        )


def evaluate(
    run: DataFrame,
    qrels: DataFrame,
    *,
    measures: Sequence[Measure],
    rank_by: str = "score",
    partition_columns: Sequence[str] = (),
    missing_queries: str = "zero",
    laid_out_by_query: bool = False,
    run_stats: RunStatsEngine = arrow_run_stats,
    negative_labels: str = "unjudged",
    depth: int | None = None,
    intervals: IntervalSettings = IntervalSettings(),
    ledger: bool = False,
    keep: Callable[[DataFrame], DataFrame] | None = None,
    window: bool = False,
    run_partitions: DataFrame | None = None,
    slices: Sequence[str] = (),
) -> Evaluation:
    """Evaluate a run against qrels.

    Args:
        run: canonical run rows (partition columns, query_id, doc_id, score, rank).
        qrels: canonical qrels rows (query_id, doc_id, relevance).
        measures: parsed measures.
        rank_by: "score" (trec_eval's order) or "rank" (the given positions).
        partition_columns: the columns that identify one run.
        missing_queries: "zero" or "skip" (see :func:`releval.core.engine.query_measures`).
        laid_out_by_query: both inputs are already partitioned by :func:`releval.core.layout.by_query`
            (the job's checked inputs).
        run_stats: the run statistics' engine; production has one (the default), the
            tests pass their SQL oracle (``releval.core.engine.RunStatsEngine``).
        negative_labels: what a negative label means, "unjudged" (trec_eval) or "judged"
            (:func:`releval.core.kernel.engine_rows`); recorded in both tables.
        depth: evaluate each ranking's first ``depth`` documents (trec_eval ``-M``); None:
            all; recorded in both tables.
        intervals: the confidence intervals of the aggregate's macro values.
        ledger: ``run`` holds every run row with the row rules' ``_reason``; the engine
            ranks the clean ones and counts all of them in the same pass (the job's input
            accounting; :func:`releval.core.engine.query_measures`).
        keep: applied to the engine's result before it is read more than once (the job
            persists it).
        window: ``run`` has each query's k_q (``window``), read by the ``@window`` measures.
        run_partitions: run partitions that may have ranked no row (see
            :func:`releval.core.engine.query_measures`).
        slices: run columns constant per (run partition, query) to slice the aggregate by.
    """
    parts = list(partition_columns)
    queries = query_measures(
        run, qrels, measures=measures, partition_columns=parts, missing_queries=missing_queries,
        rank_by=rank_by, run_stats=run_stats, laid_out_by_query=laid_out_by_query,
        negative_labels=negative_labels, depth=depth, ledger=ledger, keep=keep, window=window,
        run_partitions=run_partitions, slices=slices,
    )
    return Evaluation(
        queries=queries,
        measures=tuple(measures),
        partition_columns=tuple(parts),
        intervals=intervals,
        run_slices=tuple(slices),
    )


@dataclass(frozen=True)
class WriteOptions:
    """How :func:`run` replaces rows of the output tables.

    Attributes:
        predicate: the ``replaceWhere`` predicate covering the evaluated partitions
            (see ``releval.job.partitions``); None replaces the whole tables.
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


def evaluate_inputs(
    inputs: JobInputs,
    *,
    measures: Sequence[Measure],
    missing_queries: str = "zero",
    negative_labels: str = "unjudged",
    depth: int | None = None,
    intervals: IntervalSettings = IntervalSettings(),
    keep: Callable[[DataFrame], DataFrame] | None = None,
) -> Evaluation:
    """:func:`evaluate` of checked inputs: the engine ranks the clean rows and counts every
    row in the same pass (its ledger). What the job and ``releval.evaluate`` both run."""
    return evaluate(
        inputs.run,
        inputs.qrels,
        measures=measures,
        rank_by=inputs.rank_by,
        partition_columns=inputs.partition_columns,
        missing_queries=missing_queries,
        negative_labels=negative_labels,
        depth=depth,
        intervals=intervals,
        ledger=True,
        keep=keep,
        window=inputs.window,
        run_partitions=inputs.raw_run.partitions,
        slices=inputs.slices,
    )


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

    The plan is the one :func:`run` executes: the inputs (:func:`releval.job.inputs.job_inputs`,
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
) -> Summary:
    """Run the evaluation job a config describes; write both Delta tables.

    The inputs are read raw; the per-query statistics are computed and persisted in one
    pass that also counts every input row (the engine's ledger); the accounts are checked,
    the quarantine written and strict mode enforced (:func:`releval.job.inputs.finish_checks`,
    ``strict`` overrides ``evaluation.strict``) before anything else is written. Each output table gets one
    atomic commit replacing ``write.predicate`` (the whole table when None); a concurrent
    job's conflicting commit is retried.

    ``phases`` (default: a new :class:`releval.runtime.profile.Phases`) times each phase.
    ``then``, when given, is called with the :class:`Results` once both tables are written
    (e.g. to write another output from the persisted rows without reading the tables back).

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
        pause("before_write")
        with phases.phase("write per-query"):
            per_query_written = tables.write_per_query(
                result.long(answers.per_query(queries) if answers else queries),
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
        # the qrels' highest used label, from the engine's qrels ledger
        binary_labels = (report.qrels.used_max or 0) <= 1
    finally:
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
