"""The scheduled batch job: incremental, idempotent, crash-safe, concurrent, with lineage.

:func:`run_job` replaces exactly the selected run partitions in the output tables, one Delta
commit per table, then appends a row to the run log. See docs/batch_jobs.md.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import unquote

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from releval.config import Config, RunSource
from releval.core.frames import local_frame
from releval.errors import ConfigError
from releval.evaluation.inputs import source_label
from releval.evaluation.partitions import (
    NULL_VALUE,
    PartitionSelection,
    partition_label,
    partition_sort_key,
    partitions_predicate,
    pending_partitions,
    selection_predicate,
)
from releval.evaluation.summary import Summary
from releval.io import run_log, views
from releval.io.atomic import read_table, table_exists
from releval.io.readers import read_run, run_partition_fields
from releval.job import gate as job_gate
from releval.job import lineage, pipeline
from releval.job.mlflow_out import log_summary
from releval.runtime.delta import require_delta
from releval.runtime.profile import Phases
from releval.runtime.testhooks import pause

#: The partitions the job summary names (the run log holds them all).
SHOWN_PARTITIONS = 4


@dataclass(frozen=True)
class JobResult:
    """What one job run did (the run-log row it wrote)."""

    record: lineage.RunRecord
    summary: Summary | None = None
    #: the ``[gate]``'s decisions (None: no gate, or nothing evaluated)
    gate: job_gate.GateRun | None = None

    def exit_code(self) -> int:
        """The job's exit code once every table is committed: 0, or the gate's (1 fail, 3
        inconclusive unless ``[gate] on_inconclusive`` maps it)."""
        return self.gate.exit_code() if self.gate is not None else 0

    def render(self) -> str:
        r = self.record
        evaluated = [self.summary.render()] if self.summary else []
        labels = [partition_label(p, sorted(p)) for p in r.partitions]
        s = self.summary
        attribution = (f", attribution {s.attribution_rows} (v{s.attribution_version})"
                       if s is not None and s.attribution_rows is not None else "")
        parts = ", ".join(labels[:SHOWN_PARTITIONS]) or "none"
        if len(labels) > SHOWN_PARTITIONS:  # all of them are in the run log
            parts = f"{len(labels)}: {parts} and {len(labels) - SHOWN_PARTITIONS} more (run log)"
        written = (
            f"per-query {r.per_query_rows} (v{r.per_query_version}), "
            f"aggregate {r.aggregate_rows} (v{r.aggregate_version}){attribution}"
            if r.per_query_rows is not None else "none"
        )
        return "\n".join(
            [
                "releval batch job",
                f"  job_run_id: {r.job_run_id} ({r.status})",
                f"  inputs: run {r.run_source} @v{r.run_version}, "
                f"qrels {r.qrels_source} @v{r.qrels_version}",
                f"  selection: {r.selection}",
                f"  partitions evaluated: {parts}",
                f"  rows written: {written}",
                *(self.gate.render() if self.gate is not None else []),
                *evaluated,
            ]
        )


def _and(*predicates: str | None) -> str | None:
    present = [p for p in predicates if p]
    if len(present) <= 1:
        return present[0] if present else None
    return " AND ".join(f"({p})" for p in present)


def check_partition_filter(spark: SparkSession, config: Config) -> None:
    """Refuse a ``run.filter`` that references anything but the run's partition columns.

    The filter joins the outputs' replaceWhere predicate, so it must select whole partitions;
    it is analysed against an empty frame of the partition columns (no data is read).

    Raises:
        ConfigError: naming the filter, the partition columns and Spark's reason.
    """
    if not config.run.filter:
        return
    parts = list(config.run.partition_columns)
    probe = local_frame(spark, [], T.StructType(run_partition_fields(spark, config.run)))
    try:
        probe.where(config.run.filter)
    except Exception as exc:  # noqa: BLE001 - AnalysisException / ParseException: a user error
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(
            f"run.filter {config.run.filter!r} must reference run partition columns only "
            f"({parts}): a batch job replaces exactly the run partitions it evaluates, so a "
            f"filter on other columns would widen or narrow what it replaces; select "
            f"partitions with the filter or --partition, rows upstream ({reason})"
        ) from None


def _distinct_partitions(df: DataFrame, columns: Sequence[str]) -> list[dict[str, str]]:
    """The distinct values of ``columns`` in ``df`` as string maps (a small collect)."""
    if not columns:
        return [{}]
    rows = df.select(*[F.col(c).cast("string").alias(c) for c in columns]).distinct().collect()
    return [{c: row[c] for c in columns} for row in rows]


def partitions_of_files(
    files: Sequence[str], columns: Sequence[str]
) -> list[dict[str, str | None]] | None:
    """The distinct run partitions of a table's data files, from their Hive-style folders.

    Values are ``%XX``-escaped, a null is ``__HIVE_DEFAULT_PARTITION__``. None when a file is
    not under ``col=value/`` folders (e.g. Delta column mapping).
    """
    found: set[tuple[tuple[str, str | None], ...]] = set()
    for file in files:
        folders = file.split("/")[-1 - len(columns) : -1]
        pairs = dict(f.split("=", 1) for f in folders if "=" in f)
        if set(pairs) != set(columns):
            return None
        found.add(
            tuple(
                (c, None if pairs[c] == NULL_VALUE else unquote(pairs[c])) for c in columns
            )
        )
    return sorted((dict(p) for p in found), key=partition_sort_key)


def available_partitions(spark: SparkSession, run: RunSource) -> list[dict[str, str | None]]:
    """The run partitions a (filtered, pinned) run holds.

    Delta and Parquet: from the paths of the data files the filter selects (no data read).
    TREC runs, or files not in partition folders: one scan of the partition columns.
    """
    parts = list(run.partition_columns)
    frame = read_run(spark, run)
    if run.format != "trec" and parts:
        listed = partitions_of_files(frame.inputFiles(), parts)
        if listed is not None:
            return listed
    return _distinct_partitions(frame, parts)


def done_partitions(spark: SparkSession, config: Config) -> list[dict[str, str]]:
    """Run partitions the outputs already hold: in the aggregate table or a succeeded run-log row."""
    parts = list(config.run.partition_columns)
    done: list[dict[str, str]] = []
    out = config.output
    if table_exists(spark, path=out.aggregate_path, table=out.aggregate_table):
        table = read_table(spark, path=out.aggregate_path, table=out.aggregate_table)
        done.extend(_distinct_partitions(table, parts))
    log_path, log_table = lineage.run_log_location(config)
    if table_exists(spark, path=log_path, table=log_table):
        log = read_table(spark, path=log_path, table=log_table)
        logged = log.where(F.col("status") == lineage.SUCCEEDED).select(
            F.explode("partitions").alias("p")
        )
        done.extend({c: row["p"].get(c) for c in parts} for row in logged.collect())
    return done


def run_job(
    spark: SparkSession,
    config: Config,
    selection: PartitionSelection = PartitionSelection(),
    *,
    job_run_id: str | None = None,
    strict: bool | None = None,
    phases: Phases | None = None,
) -> JobResult:
    """Evaluate the selected run partitions and replace them in the output tables.

    Args:
        selection: which run partitions (default: all, replacing the whole tables).
        job_run_id: the run's id (default: a new uuid4).
        strict: overrides ``evaluation.strict`` (quarantined rows fail the job).
        phases: times the job's phases (``--profile``); default: a new one.

    Returns:
        The run-log record the job appended.

    Raises:
        RelevalError: a user error; the run log gets a ``failed`` row unless it failed itself.
    """
    require_delta(spark, "the evaluation job")
    check_partition_filter(spark, config)  # before anything is read or written
    rules = (job_gate.check(config, [m.key for m in pipeline.job_measures(config)])
             if config.gate is not None else None)
    phases = phases if phases is not None else Phases(spark)
    job_run_id = job_run_id or str(uuid.uuid4())
    started = datetime.now(UTC)
    parts = list(config.run.partition_columns)
    out_parts = list(config.output_partition_columns)
    log_path, log_table = lineage.run_log_location(config)
    # pin the inputs' Delta versions (loading each log is driver work: a phase of its own)
    with phases.phase("input versions"):
        run_version = lineage.input_version(spark, config.run)
        qrels_version = lineage.input_version(spark, config.qrels)
        answers = config.answers
        if answers is not None:
            answers = dataclasses.replace(answers, version=lineage.input_version(spark, answers))
    run_filter = _and(config.run.filter, selection_predicate(selection))
    base = dict(
        job_run_id=job_run_id,
        started_at=started,
        releval_version=lineage.releval_version(),
        config_hash=lineage.config_hash(config),
        config_json=lineage.canonical_config(config),
        run_source=source_label(config.run),
        run_version=run_version,
        run_filter=run_filter,
        qrels_source=source_label(config.qrels),
        qrels_version=qrels_version,
        qrels_filter=config.qrels.filter,
        selection=selection.describe(),
    )

    def log(status: str, **fields: object) -> lineage.RunRecord:
        record = lineage.RunRecord(
            **base, status=status, finished_at=datetime.now(UTC), **fields  # type: ignore[arg-type]
        )
        with phases.phase("run log"):
            run_log.write_run_log(record.to_frame(spark), path=log_path, table=log_table,
                                 job_run_id=job_run_id)
        return record

    replace: str | None = None
    todo: list[dict[str, str]] = []
    try:
        if selection.pending:
            with phases.phase("pending partitions"):
                selected = dataclasses.replace(config.run, filter=run_filter, version=run_version)
                available = available_partitions(spark, selected)
                todo = pending_partitions(available, done_partitions(spark, config))
            if not todo:
                return JobResult(log(lineage.NOTHING_PENDING, replace_predicate=None, partitions=[]))
            replace = partitions_predicate(todo, output_partition_columns=out_parts)
            run_filter = _and(run_filter, partitions_predicate(todo, output_partition_columns=parts))
        else:
            # replace what is evaluated (None: the whole tables); the evaluated partitions
            # come from the input accounting, not an extra pass
            replace = run_filter
        pinned = dataclasses.replace(
            config,
            run=dataclasses.replace(config.run, filter=run_filter, version=run_version),
            qrels=dataclasses.replace(config.qrels, version=qrels_version),
            answers=answers,
        )
        held: dict[str, job_gate.GateRun] = {}

        def gate(rows: DataFrame, evaluated: list[dict[str, str | None]]) -> None:
            gated = todo if selection.pending else evaluated
            if gated:
                held["gate"] = job_gate.run(spark, pinned, gated, rules=rules,
                                            job_run_id=job_run_id, predicate=replace,
                                            rows=rows)

        summary = pipeline.run(
            spark, pinned, strict=strict,
            write=pipeline.WriteOptions(predicate=replace, job_run_id=job_run_id),
            phases=phases,
            beside=pipeline.Beside("gate", gate) if rules is not None else None,
        )
        if not selection.pending and summary.quality is not None:
            todo = pipeline.evaluated_partitions(summary.quality, parts)
        # catalog tables: create or replace their wide views (docs/warehouse.md); paths: nothing
        views.refresh_views(spark, config, measure_keys=[m.key for m in summary.measures],
                                replaced_all=replace is None, phases=phases)
        gated = held.get("gate")
        pause("before_run_log")
    except Exception as exc:
        try:
            log(lineage.FAILED, replace_predicate=replace, partitions=todo,
                error=str(exc).splitlines()[0][:1000] if str(exc) else type(exc).__name__)
        except Exception:  # noqa: BLE001 - the original error matters more (e.g. no run log)
            pass
        raise
    record = log(
        lineage.SUCCEEDED,
        replace_predicate=replace,
        partitions=todo,
        per_query_version=summary.per_query_version,
        aggregate_version=summary.aggregate_version,
        per_query_rows=summary.per_query_rows,
        aggregate_rows=summary.aggregate_rows,
    )
    if config.output.mlflow:  # after the run log: the tables are written whatever MLflow does
        with phases.phase("mlflow"):
            mlflow_run = log_summary(spark, pinned, summary, job_run_id=job_run_id,
                                     extra={"run_version": run_version,
                                            "qrels_version": qrels_version})
            if gated is not None:
                job_gate.log_mlflow(gated, run_id=mlflow_run)
    return JobResult(record, summary, gated)

