"""The job's input checks: read raw, split into clean and quarantined rows, account, quarantine.

Order (so that job-level problems stop the job before anything is written):

1. read the run and the qrels raw (``releval.io.readers``): missing path/table/column, a
   column type that cannot be cast, a filter that does not match;
2. evaluate: the evaluation reads every run row and every qrels row with the row rules'
   reason and counts them in its own pass (the engine's ledger, ``releval.metrics.kernel``);
   no input is counted by a pass of its own;
3. after the evaluation, before the outputs are written (:func:`finish_checks`): the run's
   account from the ledger, with the invariant ``input = used + quarantined`` checked per
   partition (``input``: the rows the engine received, counted before and apart from the
   rows it ranked, dropped as repeated or found rejected), and the qrels' account the same
   way; a malformed TREC line (counted as ``releval.validate.MALFORMED``, then found and
   named with its ``file:line`` by a scan of its own) and an empty input (after its filter)
   are errors here; write the quarantine Delta table; in strict mode, fail with the
   reasons when any row was quarantined.

The quarantine follows the outputs' rule: its run rows are replaced for exactly the run
partitions the job evaluates (the outputs' ``replaceWhere`` predicate, over the run
partition columns the quarantine carries), and its qrels rows for the qrels key the job
read (source and filter, :func:`qrels_key`), so it never keeps rows of an input that a
later job re-read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from releval import schemas as S
from releval.config import Config
from releval.errors import InputError, QualityError
from releval.io.atomic import check_schema_version, read_table, replace_partitions
from releval.io.readers import RawInput, read_qrels_raw, read_run_raw, source_name
from releval.io.writers import with_comments
from releval.layout import by_query
from releval.lineage import source_label
from releval.partitions import quote_literal
from releval.validate import (
    MALFORMED,
    InputAccount,
    account_ledger,
    account_qrels_ledger,
    label_qrels,
    label_run,
    render_partition,
    row_labelled_qrels,
    row_labelled_run,
    split_labelled_qrels,
    split_labelled_run,
)


@dataclass(frozen=True)
class QualityReport:
    """What the input checks found: row accounting of both inputs and the quarantine."""

    run: InputAccount
    qrels: InputAccount
    quarantine: str | None
    strict: bool

    @property
    def quarantined(self) -> int:
        return self.run.quarantined_total + self.qrels.quarantined_total

    def render(self) -> str:
        """A small table: one line per input, partitions counted (named only when one does
        not balance); the per-partition counts are in ``InputAccount.render``."""
        where = f" -> {self.quarantine}" if self.quarantine else ""
        lines = [f"  row accounting   {'input':>10} {'used':>10} {'quarantined':>11}"]
        for account in (self.run, self.qrels):
            reasons = ", ".join(f"{c} {n}" for c, n in account.quarantined.items()) or "none"
            ok = sum(1 for p in account.partitions if p.balanced)
            dups = (f"; exact duplicate judgments (kept, counted once): {account.exact_duplicates}"
                    if account.exact_duplicates else "")
            lines.append(
                f"    {account.name:<15}{account.input:>10} {account.used:>10} "
                f"{account.quarantined_total:>11}  ({reasons}); input = used + quarantined in "
                f"{ok} of {len(account.partitions)} partition(s){dups}; {account.source}"
            )
            lines += [f"      MISMATCH {p.partition}: input {p.input} = used {p.used} + "
                      f"quarantined {p.quarantined_total}"
                      for p in account.partitions if not p.balanced]
        lines.append(f"  quarantined rows: {self.quarantined}{where}")
        return "\n".join(lines)


def quarantine_target(config: Config) -> tuple[str | None, str | None]:
    """(path, table) of the quarantine table: configured, or next to the per-query table."""
    return config.located("quarantine")


def qrels_key(config: Config) -> str:
    """The key of the qrels rows in the quarantine: the qrels source and its filter."""
    return f"{source_label(config.qrels)} | filter: {config.qrels.filter or '(none)'}"


def quarantine_predicate(*, run_predicate: str | None, qrels: str) -> str:
    """The quarantine rows a job replaces: the run rows of the evaluated partitions
    (``run_predicate``, the outputs' replaceWhere; None: every run row) and the qrels rows
    of the qrels key ``qrels`` it read."""
    run_rows = f"{S.INPUT} = 'run'" + (f" AND ({run_predicate})" if run_predicate else "")
    qrels_rows = f"{S.INPUT} = 'qrels' AND {S.QRELS_KEY} = {quote_literal(qrels)}"
    return f"({run_rows}) OR ({qrels_rows})"


def write_quarantine(
    rejected: DataFrame | None,
    *,
    spark: SparkSession,
    path: str | None,
    table: str | None,
    partition_fields: Sequence[T.StructField],
    output_partition_columns: Sequence[str],
    run_predicate: str | None,
    qrels: str,
    job_run_id: str | None = None,
) -> None:
    """Replace the job's rows of the quarantine Delta table with ``rejected``.

    The job's rows are those of :func:`quarantine_predicate`. The table carries the run
    partition columns (from each rejected run row's ``partition``; null on qrels rows) and
    is partitioned by ``input`` and the output partition columns. A re-run with no rejected
    rows (``rejected`` None) empties what it replaces, so the table never shows stale
    rejections; when those rows hold no files already, or the table does not exist,
    nothing is written (an empty replacement is a Delta write of its own, and creating an
    empty table took 8 Spark jobs of a small run).
    """
    predicate = quarantine_predicate(run_predicate=run_predicate, qrels=qrels)
    fields = list(partition_fields)
    if rejected is None:
        if not check_schema_version(spark, path=path, table=table):
            return  # no table and nothing to keep: none is created
        existing = read_table(spark, path=path, table=table)
        if not existing.where(predicate).inputFiles():
            return
        rejected = spark.createDataFrame([], S.QUARANTINE_SCHEMA)
    rows = rejected.select(
        *[F.col(S.PARTITION)[f.name].cast(f.dataType).alias(f.name) for f in fields],
        *S.QUARANTINE_SCHEMA.names,
        F.when(F.col(S.INPUT) == "qrels", F.lit(qrels)).alias(S.QRELS_KEY),
        F.lit(job_run_id).cast("string").alias(S.JOB_RUN_ID),
    )
    comments = {**S.QUARANTINE_COMMENTS, **{f.name: S.QUARANTINE_PARTITION_COMMENT for f in fields}}
    # retried like the output writes: two jobs starting at once both create the table
    replace_partitions(
        rows, path=path, table=table,
        schema=with_comments(S.quarantine_table_schema(fields), comments),
        partition_columns=[S.INPUT, *output_partition_columns],
        description="releval quarantine: one row per rejected input row, with the reason.",
        predicate=predicate,
        user_metadata=f"releval quarantine job_run_id={job_run_id}",
    )


def _empty_error(name: str, src_name: str, filter_: str | None) -> InputError:
    where = f" matching {name}.filter {filter_!r}" if filter_ else ""
    return InputError(f"{name} {src_name} has no rows{where}: nothing to evaluate")


@dataclass(frozen=True)
class JobInputs:
    """The lazy plans of a job's inputs (see :func:`job_inputs`).

    Attributes:
        labelled_run, labelled_qrels: every input row with its ``_reason`` (null = clean),
            laid out by query id: what the quarantine keeps.
        run: what the evaluation reads: every run row, with the row rules' ``_reason``
            (the engine ranks the clean ones and counts all of them).
        qrels: what the evaluation reads: every qrels row, with the row rules' ``_reason``
            (the engine reads the clean ones and counts all of them).
        laid_out_by_query: ``run`` and ``qrels`` are partitioned by query id.
        raw_run, raw_qrels: the raw reads, to name a malformed TREC line and to number
            the quarantined rows' lines.
    """

    labelled_run: DataFrame
    labelled_qrels: DataFrame
    run: DataFrame
    qrels: DataFrame
    laid_out_by_query: bool
    raw_run: RawInput
    raw_qrels: RawInput


def job_inputs(spark: SparkSession, config: Config) -> JobInputs:
    """The job's input plans: read raw once, labelled for the checks and the evaluation.

    Lazy: no action runs and nothing is persisted (reading still checks the paths, tables,
    columns and filter; TREC text's malformed lines are counted by the evaluation's
    ledger). The evaluation reads every row of both inputs labelled by the row rules only
    (a projection) and counts them in its own pass (the engine's ledger). With ``rank_by =
    "score"`` it reads them straight from the source (no shuffle, no sort): the engine
    drops a repeated document's other occurrences itself, keeping the very row the
    ``duplicate_doc`` rule keeps (its best-scored occurrence; see
    :func:`releval.validate.row_labelled_run`), so the engine's shuffle is the run's only
    one; the measures read a document's highest label, the one ``conflicting_label``
    keeps, and the engine counts the conflicting rows. With ``rank_by = "rank"`` the
    evaluation reads the run labelled by all rules (``duplicate_rank`` changes the
    ranking), laid out by query id, and the qrels in the same layout.
    """
    parts = list(config.run.partition_columns)
    raw_run = read_run_raw(spark, config.run)
    raw_qrels = read_qrels_raw(spark, config.qrels)
    # the quarantine's shuffle (releval.layout): duplicate rules are per query
    labelled_run = label_run(
        by_query(raw_run.rows), rank_by=config.run.rank_by, partition_columns=parts
    )
    labelled_qrels = label_qrels(by_query(raw_qrels.rows))
    if config.run.rank_by == "score":
        return JobInputs(
            labelled_run, labelled_qrels,
            run=row_labelled_run(raw_run.rows, partition_columns=parts),
            qrels=row_labelled_qrels(raw_qrels.rows),
            laid_out_by_query=False,
            raw_run=raw_run,
            raw_qrels=raw_qrels,
        )
    return JobInputs(
        labelled_run, labelled_qrels, run=labelled_run,
        qrels=row_labelled_qrels(by_query(raw_qrels.rows)),
        laid_out_by_query=True, raw_run=raw_run, raw_qrels=raw_qrels,
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
            partition column order): :func:`releval.validate.account_ledger`.
        qrels_ledger: the evaluation's qrels ledger rows as (tag without
            :data:`releval.validate.QRELS_LEDGER`, count):
            :func:`releval.validate.account_qrels_ledger`.
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
            _, run_quarantine = split_labelled_run(
                inputs.labelled_run, partition_columns=parts,
                number_lines=inputs.raw_run.number_lines,
            )
            _, qrels_quarantine = split_labelled_qrels(
                inputs.labelled_qrels, number_lines=inputs.raw_qrels.number_lines
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


__all__ = [
    "QualityReport",
    "finish_checks",
    "qrels_key",
    "quarantine_predicate",
    "JobInputs",
    "job_inputs",
    "quarantine_target",
    "render_partition",
    "write_quarantine",
]
