"""The job's checks, in order: read the inputs raw, evaluate (the engine counts every row),
then the accounts, the quarantine and strict mode before any output is written."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

from releval.checks.accounts import (
    InputAccount,
    QualityReport,
    account_ledger,
    account_qrels_ledger,
)
from releval.checks.rules import split_qrels, split_run, typed_qrels, typed_run
from releval.config import Config
from releval.core.columns import MALFORMED
from releval.errors import InputError, QualityError
from releval.io.readers import RawInput, read_qrels_raw, read_run_raw, source_name
from releval.io.tables import write_quarantine
from releval.job.lineage import source_label


def quarantine_target(config: Config) -> tuple[str | None, str | None]:
    """(path, table) of the quarantine table: configured, or next to the per-query table."""
    return config.located("quarantine")


def qrels_key(config: Config) -> str:
    """The key of the qrels rows in the quarantine: the qrels source and its filter."""
    return f"{source_label(config.qrels)} | filter: {config.qrels.filter or '(none)'}"


def _empty_error(name: str, src_name: str, filter_: str | None) -> InputError:
    where = f" matching {name}.filter {filter_!r}" if filter_ else ""
    return InputError(f"{name} {src_name} has no rows{where}: nothing to evaluate")


@dataclass(frozen=True)
class JobInputs:
    """The lazy plans of a job's inputs (see :func:`job_inputs`).

    Attributes:
        run: what the evaluation reads: every run row, with the row rules' ``_reason``
            (the engine ranks the clean ones and counts all of them).
        qrels: what the evaluation reads: every qrels row, with the row rules' ``_reason``
            (the engine reads the clean ones and counts all of them).
        raw_run, raw_qrels: the raw reads, to name a malformed TREC line and to number
            the quarantined rows' lines.
        rank_by, partition_columns: the run's ranking rule and partition columns.
    """

    run: DataFrame
    qrels: DataFrame
    raw_run: RawInput
    raw_qrels: RawInput
    rank_by: str
    partition_columns: tuple[str, ...]


def job_inputs(spark: SparkSession, config: Config) -> JobInputs:
    """The job's input plans: read raw once, labelled for the checks and the evaluation.

    Lazy: no action runs and nothing is persisted (reading still checks the paths, tables,
    columns and filter; TREC text's malformed lines are counted by the evaluation's
    ledger). The evaluation reads every row of both inputs labelled by the row rules only
    (a projection: no shuffle, no sort) straight from the source and counts them in its
    own pass (the engine's ledger). The engine applies the repeated-row rules itself
    (``releval.core.repeats``: a repeated document keeps its best-ranked occurrence; ranking by
    rank, a shared rank goes to the first in tie order; see :func:`row_labelled_run`), so
    its shuffle is each input's only one; the measures read a document's highest label,
    the one ``conflicting_label`` keeps, and the engine counts the conflicting rows.
    """
    parts = list(config.run.partition_columns)
    raw_run = read_run_raw(spark, config.run)
    raw_qrels = read_qrels_raw(spark, config.qrels)
    rank_by = config.run.rank_by
    return JobInputs(
        run=typed_run(raw_run.rows, rank_by=rank_by, partition_columns=parts),
        qrels=typed_qrels(raw_qrels.rows),
        raw_run=raw_run, raw_qrels=raw_qrels, rank_by=rank_by, partition_columns=tuple(parts),
    )


def _fail_on_malformed(account: InputAccount, raw: RawInput) -> None:
    """Name the first malformed TREC line when the accounting counted one (the error path)."""
    if account.quarantined.get(MALFORMED):
        raw.fail_on_malformed()
        # fail_on_malformed raises; this line only if its own scan found none
        raise InputError(f"{account.name} {account.source}: malformed TREC line(s)")


def finish_checks(
    spark: SparkSession,
    config: Config,
    inputs: JobInputs,
    *,
    ledger: Mapping[tuple[str | None, ...], Mapping[str, int]],
    qrels_ledger: Iterable[tuple[str, int]],
    strict: bool | None = None,
    replace: str | None = None,
    job_run_id: str | None = None,
) -> QualityReport:
    """Complete the accounting, write the quarantine, enforce strict mode.

    Args:
        spark: the session.
        config: the job config.
        inputs: the job's inputs.
        ledger: the evaluation's run counts per run partition (values as strings, in
            partition column order): :func:`account_ledger`.
        qrels_ledger: the evaluation's qrels ledger rows as (tag without
            :data:`QRELS_LEDGER`, count):
            :func:`account_qrels_ledger`.
        strict: overrides ``evaluation.strict`` when given (the ``--strict`` flag).
        replace: the outputs' replaceWhere predicate (None: whole tables); the quarantine's
            run rows are replaced by the same rule (:func:`quarantine_predicate`).
        job_run_id: written to the quarantine rows.

    Raises:
        AccountingError: input != used + quarantined (the rows the engine received against
            those it used, dropped and rejected: a row was lost or duplicated inside).
        InputError: a malformed TREC line (its ``file:line``); an input has no rows (after
            its filter).
        QualityError: strict mode and rows were quarantined (after the quarantine is written).
    """
    strict = config.evaluation.strict if strict is None else strict
    parts = list(config.run.partition_columns)
    run_account = account_ledger(
        "run", source_name(config.run), ledger, partition_columns=parts
    )
    qrels_account = account_qrels_ledger("qrels", source_name(config.qrels), qrels_ledger)
    _fail_on_malformed(qrels_account, inputs.raw_qrels)
    if qrels_account.input == 0:
        raise _empty_error("qrels", source_name(config.qrels), config.qrels.filter)
    _fail_on_malformed(run_account, inputs.raw_run)
    if run_account.input == 0:
        raise _empty_error("run", source_name(config.run), config.run.filter)
    path, table = quarantine_target(config)
    if path or table:
        rejected: DataFrame | None = None  # nothing to keep: the inputs are not read again
        if run_account.quarantined_total + qrels_account.quarantined_total:
            # the quarantined rows' line numbers: a scan of the text (TREC only), rows rejected
            _, run_quarantine = split_run(
                inputs.raw_run.rows, rank_by=inputs.rank_by, partition_columns=parts,
                number_lines=inputs.raw_run.number_lines,
            )
            _, qrels_quarantine = split_qrels(
                inputs.raw_qrels.rows, number_lines=inputs.raw_qrels.number_lines
            )
            rejected = run_quarantine.unionByName(qrels_quarantine)
        write_quarantine(
            rejected, spark=spark, path=path, table=table,
            partition_fields=[inputs.run.schema[c] for c in parts],
            output_partition_columns=config.output_partition_columns,
            run_predicate=replace, qrels=qrels_key(config), job_run_id=job_run_id,
        )
    report = QualityReport(run_account, qrels_account, table or path, strict)
    if strict and report.quarantined:
        reasons = {**{f"run {k}": v for k, v in run_account.quarantined.items()},
                   **{f"qrels {k}": v for k, v in qrels_account.quarantined.items()}}
        listed = ", ".join(f"{k} {v}" for k, v in reasons.items())
        raise QualityError(
            f"strict mode: {report.quarantined} input row(s) quarantined ({listed}); "
            f"see {table or path or 'the quarantine'}"
        )
    return report
