"""The job's input checks: read raw, split into clean and quarantined rows, account, quarantine.

Order (so that job-level problems stop the job before anything is written):

1. read the run and the qrels raw (``releval.io.readers``): missing path/table/column, a
   column type that cannot be cast, a filter that does not match, a malformed TREC line;
2. split each input (``releval.validate``) and count it with one aggregation per input:
   an empty run or qrels (after the filter) is an error; so is a broken accounting invariant
   ``input = used + quarantined`` (per partition);
3. write the quarantine Delta table (the rows of this job's run partitions are replaced);
4. in strict mode, fail with the reasons when any row was quarantined.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from releval import schemas as S
from releval.layout import by_query
from releval.config import Config
from releval.errors import InputError, QualityError
from releval.io.readers import read_qrels_raw, read_run_raw, source_name
from releval.io.writers import absolute, conform, ensure_table, with_comments
from releval.validate import (
    InputAccount,
    account_labelled,
    label_qrels,
    label_run,
    render_partition,
    split_labelled_qrels,
    split_labelled_run,
)


@dataclass(frozen=True)
class QualityReport:
    """What the input checks found: row accounting of both inputs and the quarantine."""

    run: InputAccount
    qrels: InputAccount
    job_partition: str
    quarantine: str | None
    strict: bool

    @property
    def quarantined(self) -> int:
        return self.run.quarantined_total + self.qrels.quarantined_total

    def render(self) -> str:
        where = f" -> {self.quarantine}" if self.quarantine else ""
        lines = [
            f"  row accounting (input = used + quarantined), job partition {self.job_partition}:",
            *self.run.render(),
            *self.qrels.render(),
            f"  quarantined rows: {self.quarantined}{where}",
        ]
        return "\n".join(lines)


@dataclass(frozen=True)
class CheckedInputs:
    """The clean inputs the job evaluates, and the report of the checks."""

    run: DataFrame
    qrels: DataFrame
    report: QualityReport
    cached: tuple[DataFrame, ...] = ()

    def unpersist(self) -> None:
        for df in self.cached:
            df.unpersist()


def quarantine_target(config: Config) -> tuple[str | None, str | None]:
    """(path, table) of the quarantine table: configured, or next to the per-query table."""
    out = config.output
    if out.quarantine_path or out.quarantine_table:
        return out.quarantine_path, out.quarantine_table
    return config.sibling_table("quarantine")


def job_partition(run: InputAccount, output_partition_columns: Sequence[str]) -> str:
    """The output partitions the job evaluated, e.g. ``date=2024-05-01``, or ``all``."""
    wanted = list(output_partition_columns)
    if not wanted:
        return "all"
    values = set()
    for p in run.partitions:
        pairs = dict(kv.split("=", 1) for kv in p.partition.split("/") if "=" in kv)
        values.add("/".join(f"{c}={pairs.get(c)}" for c in wanted))
    return ";".join(sorted(values)) or "all"


def write_quarantine(
    quarantined: DataFrame, *, path: str | None, table: str | None, job_partition: str
) -> None:
    """Replace this job's rows of the quarantine Delta table (``replaceWhere job_partition``).

    The table is partitioned by ``job_partition``; a re-run of a job with no rejected rows
    empties its partition, so the table never shows stale rejections.
    """
    spark = quarantined.sparkSession
    schema = with_comments(S.QUARANTINE_SCHEMA, S.QUARANTINE_COMMENTS)
    ensure_table(
        spark, path=path, table=table, schema=schema, partition_columns=[S.JOB_PARTITION],
        description="releval quarantine: one row per rejected input row, with the reason.",
    )
    escaped = job_partition.replace("\\", "\\\\").replace("'", "\\'")
    writer = (
        conform(quarantined.withColumn(S.JOB_PARTITION, F.lit(job_partition)), schema)
        .write.format("delta")
        .mode("overwrite")
        .option("replaceWhere", f"{S.JOB_PARTITION} = '{escaped}'")
    )
    if table:
        writer.saveAsTable(table)
    else:
        writer.save(absolute(path or ""))


def _empty_error(name: str, src_name: str, filter_: str | None) -> InputError:
    where = f" matching {name}.filter {filter_!r}" if filter_ else ""
    return InputError(f"{name} {src_name} has no rows{where}: nothing to evaluate")


def labelled_inputs(spark: SparkSession, config: Config) -> tuple[DataFrame, DataFrame]:
    """The labelled (run, qrels) of a config: read raw, laid out by query, labelled; lazy.

    No action runs and nothing is persisted: this is the plan :func:`check_inputs` executes,
    for callers that only want to show it (e.g. ``explain()``). Reading still checks the
    paths, tables, columns and filter (and scans TREC text for malformed lines).

    Returns:
        (labelled run, labelled qrels), see :func:`releval.validate.label_run` and
        :func:`releval.validate.label_qrels`.
    """
    parts = list(config.run.partition_columns)
    # the job's one shuffle (releval.layout); evaluate() is told the inputs are laid out
    raw_run = by_query(read_run_raw(spark, config.run))
    raw_qrels = by_query(read_qrels_raw(spark, config.qrels))
    return (
        label_run(raw_run, rank_by=config.run.rank_by, partition_columns=parts),
        label_qrels(raw_qrels),
    )


def check_inputs(spark: SparkSession, config: Config, *, strict: bool | None = None) -> CheckedInputs:
    """Read, split, account and quarantine the inputs a config names.

    Args:
        spark: the session.
        config: the job config.
        strict: overrides ``evaluation.strict`` when given (the ``--strict`` flag).

    Returns:
        The clean run and qrels (exactly what :func:`releval.pipeline.evaluate` receives),
        with the report. Call ``unpersist()`` when done.

    Raises:
        InputError: a job-level problem (nothing is written).
        AccountingError: input != used + quarantined.
        QualityError: strict mode and rows were quarantined (after the quarantine is written).
    """
    strict = config.evaluation.strict if strict is None else strict
    parts = list(config.run.partition_columns)
    labelled_run, labelled_qrels = labelled_inputs(spark, config)
    # Not persisted: recomputing the labelled rows for the accounting, the quarantine write
    # and the evaluation measured faster than caching them (MEMORY_AND_DISK), on 1M and 10M
    # run rows, once the raw map and the per-row partition key were gone (issue 6).
    cached: tuple[DataFrame, ...] = ()
    try:
        run, run_quarantine = split_labelled_run(labelled_run, partition_columns=parts)
        qrels, qrels_quarantine = split_labelled_qrels(labelled_qrels)
        run_account = account_labelled(
            "run", source_name(config.run), labelled_run, partition_columns=parts
        )
        if run_account.input == 0:
            raise _empty_error("run", source_name(config.run), config.run.filter)
        qrels_account = account_labelled(
            "qrels", source_name(config.qrels), labelled_qrels, max_of=S.RELEVANCE
        )
        if qrels_account.input == 0:
            raise _empty_error("qrels", source_name(config.qrels), config.qrels.filter)
        job = job_partition(run_account, config.output_partition_columns)
        path, table = quarantine_target(config)
        if path or table:
            rejected = run_quarantine.unionByName(qrels_quarantine)
            if not run_account.quarantined_total + qrels_account.quarantined_total:
                # nothing to keep: replace this job's partition with no rows, without
                # reading the inputs a third time
                rejected = spark.createDataFrame([], rejected.schema)
            write_quarantine(rejected, path=path, table=table, job_partition=job)
        report = QualityReport(run_account, qrels_account, job, table or path, strict)
        if strict and report.quarantined:
            reasons = {**{f"run {k}": v for k, v in run_account.quarantined.items()},
                       **{f"qrels {k}": v for k, v in qrels_account.quarantined.items()}}
            listed = ", ".join(f"{k} {v}" for k, v in reasons.items())
            raise QualityError(
                f"strict mode: {report.quarantined} input row(s) quarantined ({listed}); "
                f"see {table or path or 'the quarantine'} (job_partition = '{job}')"
            )
    except BaseException:
        for df in cached:
            df.unpersist()
        raise
    return CheckedInputs(run=run, qrels=qrels, report=report, cached=cached)


__all__ = [
    "CheckedInputs",
    "QualityReport",
    "check_inputs",
    "job_partition",
    "labelled_inputs",
    "quarantine_target",
    "render_partition",
    "write_quarantine",
]
