"""The job's checks, in order: read the inputs raw, evaluate (the engine counts every row),
then the accounts, the quarantine and strict mode before any output is written."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import DataFrame, SparkSession

from releval.checks.accounts import (
    InputAccount,
    QualityReport,
    account_ledger,
    account_qrels_ledger,
)
from releval.checks.queries import CheckedQueries
from releval.checks.rules import typed_qrels, typed_run
from releval.checks.split import split_qrels, split_run
from releval.config import AnswersSource, Config, QrelsSource, RunSource
from releval.core.columns import MALFORMED, WINDOW
from releval.core.run_slices import check_slice_names
from releval.errors import InputError, QualityError
from releval.evaluation.answers import Answers
from releval.evaluation.counts import Counts
from releval.io.readers import (
    RawInput,
    read_answers_raw,
    read_qrels_raw,
    read_run_raw,
    source_name,
)
from releval.io.shapes import counted
from releval.io.tables import write_quarantine


def source_label(src: RunSource | QrelsSource | AnswersSource) -> str:
    """``delta:/abs/path`` or ``delta:table:db.name``."""
    if src.table:
        return f"{src.format}:table:{src.table}"
    path = src.path or ""
    return f"{src.format}:{path if '://' in path else os.path.abspath(path)}"


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
    """The lazy plans of a job's inputs: ``run`` and ``qrels`` hold every row with the row
    rules' ``_reason``; ``raw_run``/``raw_qrels`` name malformed TREC lines and number lines;
    ``answers``, when given, the answers as read (labelled after the evaluation, which
    tells the run partitions the run has)."""

    run: DataFrame
    qrels: DataFrame
    raw_run: RawInput
    raw_qrels: RawInput
    rank_by: str
    partition_columns: tuple[str, ...]
    answers: RawInput | None = None
    #: the run has each query's window k_q (``run.window``)
    window: bool = False
    #: the run's slice columns (:mod:`releval.core.run_slices`)
    slices: tuple[str, ...] = ()


def checked_inputs(
    raw_run: RawInput, raw_qrels: RawInput, *, rank_by: str, partition_columns: Sequence[str],
    slices: Sequence[str] = (),
) -> JobInputs:
    """Both inputs labelled by the per-row rules (a projection; the engine applies the
    repeated-row rules: docs/design/checks.md), ``slices`` naming the run's slice columns.
    Lazy: no action runs.

    Raises:
        ConfigError: a slice has a name releval uses itself
            (:func:`releval.core.run_slices.check_slice_names`).
    """
    parts = tuple(partition_columns)
    slices = check_slice_names(slices)
    return JobInputs(
        run=typed_run(raw_run.rows, rank_by=rank_by, partition_columns=parts, slices=slices),
        qrels=typed_qrels(raw_qrels.rows),
        raw_run=raw_run, raw_qrels=raw_qrels, rank_by=rank_by, partition_columns=parts,
        window=WINDOW in raw_run.rows.columns, slices=tuple(slices),
    )


def job_inputs(spark: SparkSession, config: Config) -> JobInputs:
    """The inputs a config names, read raw once and labelled (:func:`checked_inputs`); the
    answers of the run partitions the run filter selects, when configured."""
    inputs = checked_inputs(
        read_run_raw(spark, config.run), read_qrels_raw(spark, config.qrels),
        rank_by=config.run.rank_by, partition_columns=config.run.partition_columns,
        slices=config.run.slices,
    )
    if config.answers is None:
        return inputs
    fields = [inputs.run.schema[c] for c in inputs.partition_columns]
    answers = read_answers_raw(spark, config.answers, partition_fields=fields,
                               run_filter=config.run.filter)
    return dataclasses.replace(inputs, answers=answers)


def _fail_on_malformed(account: InputAccount, raw: RawInput) -> None:
    """Name the first malformed TREC line when the accounting counted one (the error path)."""
    if account.quarantined.get(MALFORMED):
        raw.fail_on_malformed()
        # reached only if fail_on_malformed's own scan found none
        raise InputError(f"{account.name} {account.source}: malformed TREC line(s)")


def account(
    inputs: JobInputs,
    counts: Counts,
    *,
    run_name: str,
    qrels_name: str,
    run_filter: str | None = None,
    qrels_filter: str | None = None,
    quarantine: str | None = None,
    strict: bool = False,
) -> QualityReport:
    """Both inputs' accounts from the evaluation's ledger, with ``input = used + quarantined``
    checked per run partition.

    Raises:
        AccountingError: input != used + quarantined (a row was lost or duplicated).
        InputError: a malformed TREC line (its ``file:line``), or an input has no rows.
    """
    run = account_ledger("run", run_name, counts.run_ledger,
                         partition_columns=inputs.partition_columns)
    qrels = account_qrels_ledger("qrels", qrels_name, counts.qrels_ledger)
    _fail_on_malformed(qrels, inputs.raw_qrels)
    if qrels.input == 0:
        raise _empty_error("qrels", qrels_name, qrels_filter)
    _fail_on_malformed(run, inputs.raw_run)
    if run.input == 0:
        raise _empty_error("run", run_name, run_filter)
    return QualityReport(run, qrels, quarantine, strict)


def rejected_rows(inputs: JobInputs) -> DataFrame:
    """Every rejected input row with its reason, lines numbered (a scan of its own)."""
    _, run = split_run(
        inputs.raw_run.rows, rank_by=inputs.rank_by, partition_columns=inputs.partition_columns,
        number_lines=inputs.raw_run.number_lines, slices=inputs.slices,
    )
    _, qrels = split_qrels(inputs.raw_qrels.rows, number_lines=inputs.raw_qrels.number_lines)
    return run.unionByName(qrels)


def rejected_inputs(
    inputs: JobInputs, report: QualityReport, answers: Answers | None = None,
    queries: CheckedQueries | None = None,
) -> DataFrame | None:
    """Every rejected row of the inputs, for the quarantine; None when none was rejected (an
    input without rejected rows is not read again)."""
    found = []
    if report.run.quarantined_total or report.qrels.quarantined_total:
        found.append(rejected_rows(inputs))
    if answers is not None and answers.account.quarantined_total:
        found.append(answers.rejected)
    if queries is not None and report.queries is not None and report.queries.quarantined_total:
        found.append(queries.rejected)
    return reduce(DataFrame.unionByName, found) if found else None


def finish_checks(
    spark: SparkSession,
    config: Config,
    inputs: JobInputs,
    counts: Counts,
    *,
    strict: bool | None = None,
    replace: str | None = None,
    job_run_id: str | None = None,
    answers: Answers | None = None,
    queries: CheckedQueries | None = None,
) -> QualityReport:
    """The job's checks after the evaluation: the accounts, the quarantine, strict mode.

    Args:
        counts: the evaluation's counts (:func:`releval.evaluation.counts.query_counts`).
        strict: overrides ``evaluation.strict`` (``--strict``).
        replace: the outputs' replaceWhere predicate (None: whole tables), the quarantine's too.
        answers: the answers' evaluation, when the job reads answers.
        queries: the checked queries input, when the job reads one.

    Raises:
        AccountingError, InputError: as :func:`account`, and :meth:`Answers.check`.
        QualityError: strict mode and rows were quarantined (after the quarantine is written).
    """
    strict = config.evaluation.strict if strict is None else strict
    path, table = quarantine_target(config)
    report = account(
        inputs, counts, run_name=counted(source_name(config.run), config.run.ranked),
        qrels_name=counted(source_name(config.qrels), config.qrels.gold),
        run_filter=config.run.filter, qrels_filter=config.qrels.filter,
        quarantine=table or path, strict=strict,
    )
    if answers is not None:
        answers.check()
        report = dataclasses.replace(report, answers=answers.account)
    if queries is not None:
        report = dataclasses.replace(report, queries=queries.account(),
                                     unlisted=int(counts.queries["unlisted"]))
    if path or table:
        write_quarantine(
            # nothing rejected: the inputs are not read again
            rejected_inputs(inputs, report, answers, queries),
            spark=spark, path=path, table=table,
            partition_fields=[inputs.run.schema[c] for c in inputs.partition_columns],
            output_partition_columns=config.output_partition_columns,
            run_predicate=replace, qrels=qrels_key(config), job_run_id=job_run_id,
            answers=answers is not None, queries=queries is not None,
        )
    if strict and report.quarantined:
        reasons = {f"{a.name} {k}": v for a in report.inputs for k, v in a.quarantined.items()}
        listed = ", ".join(f"{k} {v}" for k, v in reasons.items())
        raise QualityError(
            f"strict mode: {report.quarantined} input row(s) quarantined ({listed}); "
            f"see {table or path or 'the quarantine'}"
        )
    return report
