"""read -> rank -> judge -> measures -> per-query and aggregate Delta tables.

:func:`evaluate` is the pure part (DataFrames in, DataFrames out); :func:`run`
reads the inputs a config names, evaluates, writes, and returns a
:class:`Summary` that accounts for the rows and queries.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from releval import schemas as S
from releval.aggregate import ENTRY as AGGREGATE_ENTRY
from releval.aggregate import INDEX as AGGREGATE_INDEX
from releval.aggregate import (
    aggregate,
    bootstrap,
    by_measure,
    group_columns,
    render_overview,
    sums,
)
from releval.aggregate import rows as aggregate_rows_of
from releval.config import Config, IntervalSettings
from releval.coverage import JUDGED, UnjudgedRate, render_lines, with_judged_measures
from releval.io.atomic import read_table, replace_partitions
from releval.io.writers import local_frame, with_comments
from releval.metrics import Measure, parse_measures
from releval.metrics.compute import (
    IN_QRELS,
    IN_RUN,
    REPEATED,
    RunStatsEngine,
    long_format,
    query_measures,
)
from releval.metrics.kernel import LEDGER, LEDGER_ROWS, arrow_run_stats
from releval.profile import Phases
from releval.quality import (
    QRELS_LEDGER,
    USED,
    QualityReport,
    finish_checks,
    job_inputs,
)
from releval.repeats import DUPLICATE_DOC
from releval.testhooks import pause


@dataclass(frozen=True)
class Evaluation:
    """The lazily evaluated results of :func:`evaluate`.

    Attributes:
        queries: one row per (run partition, query) with the ``_in_run`` / ``_in_qrels``
            flags and the measures in an array (the wide table the aggregate reads).
        per_query: the per-query table's rows.
        measures, partition_columns, intervals: what :attr:`aggregate` needs.
    """

    queries: DataFrame
    per_query: DataFrame
    measures: tuple[Measure, ...]
    partition_columns: tuple[str, ...]
    intervals: IntervalSettings

    @property
    def aggregate(self) -> DataFrame:
        """The aggregate table's rows (computed, and collected, when read:
        :func:`releval.aggregate.aggregate`)."""
        return aggregate(
            self.queries, measures=self.measures, partition_columns=self.partition_columns,
            intervals=self.intervals,
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
    intervals: IntervalSettings = IntervalSettings(),
    ledger: bool = False,
    keep: Callable[[DataFrame], DataFrame] | None = None,
) -> Evaluation:
    """Evaluate a run against qrels.

    Args:
        run: canonical run rows (partition columns, query_id, doc_id, score, rank).
        qrels: canonical qrels rows (query_id, doc_id, relevance).
        measures: parsed measures.
        rank_by: "score" (trec_eval's order) or "rank" (the given positions).
        partition_columns: the columns that identify one run.
        missing_queries: "zero" or "skip" (see :func:`releval.metrics.compute.query_measures`).
        laid_out_by_query: both inputs are already partitioned by :func:`releval.layout.by_query`
            (the job's checked inputs).
        run_stats: the run statistics' engine; production has one (the default), the
            tests pass their SQL oracle (``releval.metrics.compute.RunStatsEngine``).
        negative_labels: what a negative label means, "unjudged" (trec_eval) or "judged"
            (:func:`releval.metrics.compute.judgment`); recorded in both tables.
        intervals: the confidence intervals of the aggregate's macro values.
        ledger: ``run`` holds every run row with the row rules' ``_reason``; the engine
            ranks the clean ones and counts all of them in the same pass (the job's input
            accounting; :func:`releval.metrics.compute.query_measures`).
        keep: applied to the engine's result before it is read more than once (the job
            persists it).
    """
    parts = list(partition_columns)
    queries = query_measures(
        run,
        qrels,
        measures=measures,
        partition_columns=parts,
        missing_queries=missing_queries,
        rank_by=rank_by,
        run_stats=run_stats,
        laid_out_by_query=laid_out_by_query,
        negative_labels=negative_labels,
        ledger=ledger,
        keep=keep,
    )
    return Evaluation(
        queries=queries,
        per_query=long_format(queries, partition_columns=parts, measures=measures),
        measures=tuple(measures),
        partition_columns=tuple(parts),
        intervals=intervals,
    )


@dataclass(frozen=True)
class WriteOptions:
    """How :func:`run` replaces rows of the output tables.

    Attributes:
        predicate: the ``replaceWhere`` predicate covering the evaluated partitions
            (see ``releval.partitions``); None replaces the whole tables.
        job_run_id: written to every output row and the commits' ``userMetadata``.
    """

    predicate: str | None = None
    job_run_id: str | None = None


#: Below this many queries a mean (or a comparison) gets a warning.
FEW_QUERIES = 50

#: About this many per-query rows go to one file of the per-query table (a few MB).
ROWS_PER_FILE = 1_000_000


@dataclass(frozen=True)
class Summary:
    """What a job read, scored and wrote."""

    run_rows: int
    qrels_rows: int
    run_partitions: int
    queries_scored: int
    queries_without_qrels: int
    queries_missing_from_run: int
    missing_queries: str
    per_query_rows: int
    aggregate_rows: int
    per_query_version: int = 0
    aggregate_version: int = 0
    unjudged: tuple[UnjudgedRate, ...] = ()
    unjudged_warning_share: float = 0.2
    binary_labels: bool = False
    measures: tuple[Measure, ...] = ()
    quality: QualityReport | None = None
    #: (fewest, most) queries the means of one run partition rest on
    queries_per_mean: tuple[int, int] = (0, 0)
    #: run partitions whose means rest on fewer than FEW_QUERIES queries
    partitions_with_few_queries: int = 0
    intervals: IntervalSettings = IntervalSettings()
    #: the aggregate table's rows this job wrote (a few per run partition), as written
    aggregate: tuple[Row, ...] = ()

    def overview(self, measure_keys: Sequence[str], partition_columns: Sequence[str]) -> str:
        """The rows written as a table for people (:func:`releval.aggregate.render_overview`)."""
        return render_overview(
            self.aggregate, measure_keys=measure_keys, partition_columns=partition_columns
        )

    def render(self) -> str:
        missing_rule = "scored 0, in means" if self.missing_queries == "zero" else "skipped"
        lines = [
            "releval job summary",
            f"  input rows: run {self.run_rows}, qrels {self.qrels_rows}; rows written: "
            f"per-query {self.per_query_rows}, aggregate {self.aggregate_rows}",
            f"  run partitions evaluated: {self.run_partitions}; queries scored (run partition "
            f"x query): {self.queries_scored}",
            f"  run queries without qrels (not scored): {self.queries_without_qrels}; qrels "
            f"queries missing from a run ({missing_rule}): {self.queries_missing_from_run}",
        ]
        low, high = self.queries_per_mean
        spread = f"{low}" if low == high else f"{low} to {high}"
        lines.append(
            f"  queries per mean: {spread} per run partition; each macro value has a "
            f"{self.intervals.level:.0%} {self.intervals.method} interval (ci_low, ci_high)"
        )
        if self.partitions_with_few_queries:
            lines.append(
                f"  WARNING: {self.partitions_with_few_queries} run partition(s) rest on fewer "
                f"than {FEW_QUERIES} queries: their intervals are wide, and differences between "
                "systems there are weak evidence"
            )
        if self.quality is not None:
            lines.append(self.quality.render())
        lines += render_lines(
            self.unjudged,
            warning_share=self.unjudged_warning_share,
            binary_labels=self.binary_labels,
            measures=self.measures,
        )
        return "\n".join(lines)


def _aggregate_order(parts: Sequence[str]) -> Callable[[Row], tuple[tuple[bool, object], ...]]:
    """Sort key of aggregate rows: as :func:`read_aggregate` orders them (nulls first)."""
    keys = [*parts, S.MEASURE, S.CUTOFF, S.MEASURE_KEY, S.AVERAGING]
    return lambda row: tuple((row[k] is not None, row[k] if row[k] is not None else "") for k in keys)


def _partition_fields(run: DataFrame, columns: Sequence[str]) -> list[T.StructField]:
    by_name = {f.name: f for f in run.schema.fields}
    return [by_name[c] for c in columns]


def job_measures(config: Config) -> list[Measure]:
    """The measures a job computes: the configured ones plus Judged@k for each cutoff."""
    measures = parse_measures(
        config.evaluation.measures,
        relevance_level=config.evaluation.relevance_level,
        judged_only=config.evaluation.judged_only,
    )
    return with_judged_measures(measures, relevance_level=config.evaluation.relevance_level)


def _judged_cutoffs(measures: Sequence[Measure]) -> dict[int, int]:
    """cutoff k -> the index of its Judged@k entry in the wide table's measure array."""
    found: dict[int, int] = {}
    for i, m in enumerate(measures):
        if m.name == JUDGED and m.cutoff is not None and not m.judged_only:
            found.setdefault(int(m.cutoff), i)
    return found


@dataclass(frozen=True)
class _Counts:
    """What :func:`_query_counts` reads from the persisted per-query table."""

    #: the summary's query and partition counts
    queries: dict[str, int]
    #: the run's ledger, by partition values as strings
    run_ledger: dict[tuple[str | None, ...], dict[str, int]]
    #: the qrels' ledger rows as (tag without ``qrels:``, count), one per engine partition
    qrels_ledger: tuple[tuple[str, int], ...]
    unjudged: tuple[UnjudgedRate, ...]
    #: the aggregate's sums, one row per run partition and measure
    #: (:func:`releval.aggregate.rows`)
    sums: tuple[Row, ...] = ()


def _query_counts(
    queries: DataFrame,
    parts: Sequence[str],
    *,
    missing_queries: str,
    measures: Sequence[Measure],
    intervals: IntervalSettings = IntervalSettings(),
) -> _Counts:
    """The summary's query counts, both inputs' ledgers, the unjudged shares and the
    aggregate's sums.

    One aggregation over the persisted per-query table by run partition and measure
    (:func:`releval.aggregate.by_measure`; a few rows per run partition come back): the
    scored / without-qrels / missing query counts, the number of run
    partitions and the fewest / most queries a partition's means rest on for the summary;
    the run's ledger, keyed by the partition values as strings
    (:func:`releval.quality.account_ledger`): the rows the engine received and the rows the row
    rules rejected per reason (the engine's ledger rows), the repeated documents it dropped
    (``duplicate_doc``) and the rows it ranked (``used``, the sum of ``num_ret``); the
    qrels' ledger rows (their tags start with ``qrels:``; they belong to no run partition,
    :func:`releval.quality.account_qrels_ledger` folds them); and per
    cutoff k, 1 - the mean Judged@k over the scored queries with retrieved documents (what
    the per-query table's Judged@k rows give); and the sums the aggregate table is made of
    (:func:`releval.aggregate.sums`), so that the aggregate needs no pass of its own.
    """
    # grouped by the typed values (the aggregate's rows) and named by their strings (the
    # ledger's keys and the messages)
    as_string = [F.col(c).cast("string").alias(_as_string(c)) for c in parts]
    judged = _judged_cutoffs(measures)
    with_results = F.col(IN_QRELS) & (F.col(S.NUM_RET) > 0)
    # one row per (query row, measure) (releval.aggregate.by_measure): the aggregate's sums
    # are then the same few columns for every measure, so Spark compiles the aggregation
    # (one set of columns per measure was more than it compiles; issue 11); the counts
    # take each wide row once, at its first measure (a null index: an array that were
    # null or empty, by_measure's one row for it)
    once = F.col(AGGREGATE_INDEX).isNull() | (F.col(AGGREGATE_INDEX) == 0)
    # grouped by the ledger columns too (null on the queries' rows): each distinct ledger
    # row comes back with its multiplicity, and every aggregate stays declarative (a
    # collect_list of the ledger rows made Spark run the whole aggregation interpreted,
    # 3x slower with the aggregate's sums)
    found = by_measure(queries).groupBy(
        *group_columns(parts), *as_string, LEDGER, LEDGER_ROWS
    ).agg(
        F.count_if(once).alias("items"),
        F.count_if(once & F.col(IN_RUN)).alias("run_queries"),
        F.count_if(once & F.col(IN_RUN) & F.col(IN_QRELS)).alias("scored"),
        F.count_if(once & F.col(IN_RUN) & ~F.col(IN_QRELS)).alias("without_qrels"),
        F.count_if(once & ~F.col(IN_RUN) & F.col(IN_QRELS)).alias("missing"),
        F.sum(F.when(once, F.col(REPEATED))).alias("repeated"),
        F.sum(F.when(once & F.col(IN_RUN), F.col(S.NUM_RET))).alias("evaluated"),
        # per measure: the same for each; Judged@k's mean is the judged share of the top k
        F.count_if(with_results).alias("with_results"),
        F.avg(F.when(with_results, F.col(AGGREGATE_ENTRY)[S.VALUE])).alias("judged"),
        *sums(intervals=intervals),
    ).collect()
    by_index = [r for r in found if r[LEDGER] is None]  # a row per (partition, measure)
    rows = [r for r in by_index if r[AGGREGATE_INDEX] in (None, 0)]  # a row per partition
    counts = {k: sum(int(r[k]) for r in rows) for k in ("scored", "without_qrels", "missing")}
    # the queries each partition's means rest on: scored ones, plus the missing ones when
    # they are scored 0 (partitions with no qrels query at all have no means)
    in_means = [
        int(r["scored"]) + (int(r["missing"]) if missing_queries == "zero" else 0) for r in rows
    ]
    in_means = [n for n in in_means if n > 0]
    counts["min_queries"] = min(in_means, default=0)
    counts["max_queries"] = max(in_means, default=0)
    counts["few_queries"] = sum(1 for n in in_means if n < FEW_QUERIES)
    # the partitions with a ranked row (as count_distinct(*parts) counted them: partitions
    # with a null value are not counted); a partition whose rows were all rejected is only
    # in the ledger
    counts["partitions"] = (
        sum(1 for r in rows if r["run_queries"] and all(r[c] is not None for c in parts))
        if parts else 1
    )
    by_partition: dict[tuple[str | None, ...], dict[str, int]] = {}
    qrels: list[tuple[str, int]] = []
    for r in found:
        key = tuple(r[_as_string(c)] for c in parts)
        if r[LEDGER] is not None:
            tag, n = r[LEDGER], int(r[LEDGER_ROWS])
            if tag.startswith(QRELS_LEDGER):
                qrels += [(tag.removeprefix(QRELS_LEDGER), n)] * int(r["items"])
            else:
                entry = by_partition.setdefault(key, {})
                entry[tag] = entry.get(tag, 0) + n * int(r["items"])
            continue
        if r["repeated"]:
            entry = by_partition.setdefault(key, {})
            entry[DUPLICATE_DOC] = entry.get(DUPLICATE_DOC, 0) + int(r["repeated"])
        if r["evaluated"]:
            by_partition.setdefault(key, {})[USED] = int(r["evaluated"])
    judged_of = {
        (tuple(r[c] for c in parts), r[AGGREGATE_INDEX]): r for r in by_index
    }
    rates = tuple(
        UnjudgedRate(
            partition=tuple((c, str(r[_as_string(c)])) for c in parts),
            cutoff=k,
            share=1.0 - float(j["judged"]),
            queries=int(j["with_results"]),
        )
        for r in rows
        for k, i in judged.items()
        if (j := judged_of.get((tuple(r[c] for c in parts), i))) is not None
        and j["judged"] is not None
    )
    return _Counts(counts, by_partition, tuple(qrels), rates, tuple(by_index))


def _as_string(column: str) -> str:
    return f"_string_{column}"


def _evaluate_job(
    config: Config,
    run: DataFrame,
    qrels: DataFrame,
    keep: Callable[[DataFrame], DataFrame] | None = None,
) -> Evaluation:
    """:func:`evaluate` with the job's settings: what :func:`run` executes, :func:`explain`
    shows. The run rows carry the row rules' reasons: the engine counts them (``ledger``)."""
    return evaluate(
        run,
        qrels,
        measures=job_measures(config),
        rank_by=config.run.rank_by,
        partition_columns=list(config.run.partition_columns),
        missing_queries=config.evaluation.missing_queries,
        negative_labels=config.evaluation.negative_labels,
        intervals=config.intervals,
        ledger=True,
        keep=keep,
    )


def explain(spark: SparkSession, config: Config, *, mode: str = "formatted") -> str:
    """The physical plan of the job's per-query measures, as Spark explains it; runs nothing.

    The plan is the one :func:`run` executes: the inputs (:func:`releval.quality.job_inputs`;
    both labelled by the row rules, counted by the engine's ledger in the same pass) and the
    engine's computation of the per-query table. The quarantine (written from a pass of its
    own only when a row was rejected) is not shown; the job persists the engine's result,
    which this plan reads more than once (the queries' rows, and for the missing queries the
    run partitions, the qrels' query rows and the retrieved queries).

    Args:
        spark: the session.
        config: the job config.
        mode: ``simple``, ``extended``, ``codegen``, ``cost`` or ``formatted``.
    """
    inputs = job_inputs(spark, config)
    result = _evaluate_job(config, inputs.run, inputs.qrels)
    plan = result.queries._sc._jvm.PythonSQLUtils.explainString(
        result.queries._jdf.queryExecution(), mode
    )
    return str(plan)


def run(
    spark: SparkSession,
    config: Config,
    *,
    strict: bool | None = None,
    write: WriteOptions = WriteOptions(),
    phases: Phases | None = None,
) -> Summary:
    """Run the evaluation job a config describes; write both Delta tables.

    The inputs are read raw; the per-query statistics are computed and persisted in one
    pass that also counts every input row (the engine's ledger); the inputs' accounts are
    checked, the quarantine written and
    strict mode enforced (:func:`releval.quality.finish_checks`, ``strict`` overrides
    ``evaluation.strict``) before anything else is written. Each output table gets one
    atomic commit replacing ``write.predicate`` (the whole table when None); a concurrent
    job's conflicting commit is retried.

    ``phases`` (default: a new :class:`releval.profile.Phases`) times each phase.

    Returns:
        The job summary.
    """
    phases = phases if phases is not None else Phases(spark)
    measures = job_measures(config)
    parts = list(config.run.partition_columns)
    with phases.phase("read inputs"):
        inputs = job_inputs(spark, config)
    part_fields = _partition_fields(inputs.run, parts)
    kept: list[DataFrame] = []

    def keep(df: DataFrame) -> DataFrame:
        # the engine's result is persisted as its stage made it, one partition per shuffle
        # partition (adaptive execution materializes the cache in a job of its own, with
        # as many tasks); what reads it after (a row or two per query) reads it as one
        # partition per core: at 10M run rows each of those stages took 1.4-3.2 s for
        # 100k rows in 40-80 tasks, the tasks' fixed cost (docs/performance.md)
        kept.append(df.persist(StorageLevel.MEMORY_AND_DISK))
        return kept[-1].coalesce(spark.sparkContext.defaultParallelism)

    out_parts = config.output_partition_columns
    try:
        with phases.phase("evaluation"):
            # planned inside the phase: persisting a DataFrame plans its query (Spark's
            # optimizer and the inputs' file listing run on the driver, seconds for a
            # small run), which is the evaluation's time as much as its Spark jobs are
            result = _evaluate_job(
                config, inputs.run, inputs.qrels, keep=keep
            )
            queries = result.queries.persist(StorageLevel.MEMORY_AND_DISK)
            kept.append(queries)
            found = _query_counts(
                queries, parts, missing_queries=config.evaluation.missing_queries,
                measures=measures, intervals=config.intervals,
            )
        counts = found.queries
        with phases.phase("quarantine"):
            report = finish_checks(
                spark, config, inputs, strict=strict, ledger=found.run_ledger,
                qrels_ledger=found.qrels_ledger, replace=write.predicate,
                job_run_id=write.job_run_id,
            )
        # files of about ROWS_PER_FILE rows: the persisted table keeps the evaluation's
        # shuffle partitions (hundreds at scale), and a file per partition made the write
        # spend its time on small files and their Delta statistics
        # (the table's rows: its queries in the qrels, scored or missing, times the measures)
        per_query_rows = (found.queries["scored"] + found.queries["missing"]) * len(measures)
        per_query = long_format(queries, partition_columns=parts, measures=measures).coalesce(
            max(1, -(-per_query_rows // ROWS_PER_FILE))
        )
        lineage = F.lit(write.job_run_id).cast("string").alias(S.JOB_RUN_ID)
        metadata = f"releval job_run_id={write.job_run_id}"
        pause("before_write")
        with phases.phase("write per-query"):
            per_query_written = replace_partitions(
                per_query.select("*", lineage),
                path=config.output.per_query_path,
                table=config.output.per_query_table,
                schema=with_comments(S.per_query_schema(part_fields), S.PER_QUERY_COMMENTS),
                partition_columns=out_parts,
                description="releval per-query measures: one row per run partition, query, measure.",
                predicate=write.predicate,
                user_metadata=metadata,
                properties=S.per_query_properties(parts, out_parts),
            )
        pause("between_tables")
        with phases.phase("write aggregate"):
            # from the sums the evaluation's aggregation collected (a few rows per run
            # partition; the bootstrap, if asked, is a pass of its own), then written and
            # shown from the same rows (the table is not read back to print it)
            aggregate_schema = with_comments(S.aggregate_schema(part_fields), S.AGGREGATE_COMMENTS)
            boot = (
                bootstrap(queries, measures=measures, partition_columns=parts,
                          intervals=config.intervals)
                if config.intervals.method == "bootstrap" else None
            )
            made = aggregate_rows_of(
                found.sums, measures=measures, partition_columns=parts,
                intervals=config.intervals, bootstrap=boot,
            )
            aggregate_rows = tuple(
                Row(**{f.name: write.job_run_id if f.name == S.JOB_RUN_ID else r[f.name]
                       for f in aggregate_schema.fields})
                for r in made
            )
            aggregate_written = replace_partitions(
                local_frame(spark, [tuple(r) for r in aggregate_rows], aggregate_schema),
                path=config.output.aggregate_path,
                table=config.output.aggregate_table,
                schema=aggregate_schema,
                partition_columns=out_parts,
                description="releval aggregate measures: one row per run partition, measure, averaging.",
                predicate=write.predicate,
                user_metadata=metadata,
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
        per_query_rows=per_query_written.rows,
        aggregate_rows=aggregate_written.rows,
        per_query_version=per_query_written.version,
        aggregate_version=aggregate_written.version,
        unjudged=found.unjudged,
        unjudged_warning_share=config.evaluation.unjudged_warning_share,
        binary_labels=binary_labels,
        measures=tuple(measures),
        quality=report,
        aggregate=tuple(sorted(aggregate_rows, key=_aggregate_order(parts))),
    )


def read_per_query(spark: SparkSession, config: Config) -> DataFrame:
    """The per-query table the config writes to."""
    return read_table(spark, path=config.output.per_query_path, table=config.output.per_query_table)


def read_aggregate(spark: SparkSession, config: Config) -> DataFrame:
    """The aggregate table the config writes to, sorted for reading."""
    keys = [*config.run.partition_columns, S.MEASURE, S.CUTOFF, S.MEASURE_KEY, S.AVERAGING]
    table = read_table(spark, path=config.output.aggregate_path, table=config.output.aggregate_table)
    return table.orderBy(*keys)
