"""The answers in a job: labelled by their row rules, joined to the retrieval measure,
accounted (``input = used + quarantined`` per run partition) and made into the attribution
table's rows. The job and ``releval.evaluate`` both run :func:`evaluate_answers`.
See docs/answers.md."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from releval.checks.accounts import InputAccount, account_ledger
from releval.checks.answers import answers_quarantine, label_answers
from releval.config import AnswersSource, Config
from releval.core import columns as S
from releval.core.columns import LEDGER, REASON, RECEIVED, USED
from releval.core.frames import local_frame
from releval.core.measures import Measure, parse_measure
from releval.errors import ConfigError, InputError, MeasureError
from releval.frames import attribution
from releval.io.readers import source_name
from releval.io.trec import RawInput
from releval.stats.attribution import Thresholds

if TYPE_CHECKING:  # releval.evaluation.inputs imports this module
    from releval.evaluation.inputs import JobInputs


def retrieval_measure(retrieved_by: str, *, relevance_level: int) -> Measure:
    """The measure ``answers.retrieved_by`` names; a ConfigError naming the key if none."""
    try:
        return parse_measure(retrieved_by, relevance_level=relevance_level)
    except MeasureError as exc:
        raise ConfigError(f"answers.retrieved_by: {exc}") from None


def with_retrieval_measure(measures: Sequence[Measure], measure: Measure) -> list[Measure]:
    """``measures``, with the retrieval measure at the end unless one of them is it."""
    keys = {m.key for m in measures}
    return [*measures, *([] if measure.key in keys else [measure])]


def measure_index(measures: Sequence[Measure], measure: Measure) -> int:
    """The position of ``measure`` in the evaluation's measure list (its wide table's array)."""
    return next(i for i, m in enumerate(measures) if m.key == measure.key)


def thresholds(source: AnswersSource, measure: Measure, *, level: float) -> Thresholds:
    """The attribution's thresholds from the answers' settings; ``level``: the intervals'."""
    return Thresholds(retrieved_by=measure.key, retrieved_at=source.retrieved_at,
                      correct_at=source.correct_at, level=level)


@dataclass(frozen=True)
class Answers:
    """What :func:`evaluate_answers` found: the answers' account, the attribution table's
    rows and the labelled rows (persisted) the per-query table and the quarantine read."""

    account: InputAccount
    #: clean answers whose (run partition, query) the run retrieved or the qrels judge
    covered: int
    rows: tuple[dict[str, Any], ...]
    labelled: DataFrame
    partition_columns: tuple[str, ...]
    filter: str | None = None

    def check(self) -> None:
        """The answers' job-level errors: no rows, or no row that answers a query of the run.

        Raises:
            InputError: one line naming the answers, what was found and what to check.
        """
        name = self.account.source
        if self.account.input == 0:
            where = f" matching answers.filter {self.filter!r}" if self.filter else ""
            raise InputError(f"answers {name} has no rows{where} for the run partitions "
                             "evaluated: nothing to attribute")
        if self.covered == 0:
            reasons = ", ".join(f"{c} {n}" for c, n in self.account.quarantined.items())
            raise InputError(
                f"answers {name}: none of its {self.account.input} row(s) answers a query of "
                f"the run (quarantined: {reasons or 'none'}): no clean row has a run "
                "partition and query id that the run retrieved or the qrels judge; check "
                "answers.query_id, the run partition values and that scores are in [0, 1]"
            )

    @property
    def rejected(self) -> DataFrame:
        """The rejected answers rows as the quarantine holds them (``input`` answers)."""
        return answers_quarantine(self.labelled, partition_columns=self.partition_columns)

    def per_query(self, queries: DataFrame) -> DataFrame:
        """The evaluation's wide table with each query's ``answer_score``."""
        return attribution.with_answer_scores(queries, self.labelled,
                                              partition_columns=self.partition_columns)


def _ledger(raw: DataFrame, labelled: DataFrame, parts: Sequence[str]
            ) -> dict[tuple[str | None, ...], dict[str, int]]:
    """Per run partition (values as strings): the rows read (``received``, counted on the
    rows as read, before any rule) and the rejected rows per reason, in one aggregation."""
    key = [F.col(c).cast("string").alias(c) for c in parts]
    read = raw.select(*key, F.lit(RECEIVED).alias(LEDGER))
    rejected = labelled.where(F.col(REASON).isNotNull()).select(*key, F.col(REASON).alias(LEDGER))
    found: dict[tuple[str | None, ...], dict[str, int]] = {}
    for row in read.unionByName(rejected).groupBy(*parts, LEDGER).count().collect():
        found.setdefault(tuple(row[c] for c in parts), {})[row[LEDGER]] = int(row["count"])
    return found


def evaluate_answers(
    raw: RawInput,
    *,
    name: str,
    queries: DataFrame,
    qrels: DataFrame,
    run_partitions: Iterable[tuple[str | None, ...]],
    partition_columns: Sequence[str],
    index: int,
    settings: Thresholds,
    kept: list[DataFrame],
    filter: str | None = None,
) -> Answers:
    """Label the answers, join them to the retrieval measure, account and attribute them.

    Args:
        raw: the answers as read (:func:`releval.io.readers.raw_answers_input`).
        name: how the answers are named in the account and messages.
        queries: the evaluation's wide table (persisted).
        qrels: the qrels rows with the row rules' ``_reason`` (the job's inputs).
        run_partitions: the run partitions the run has, values as strings (its ledger's keys).
        index: the retrieval measure's position in the wide table's measure array.
        settings: the attribution's thresholds.
        kept: the labelled answers, persisted, are appended (to be unpersisted when done).

    Raises:
        AccountingError: the answers' input != used + quarantined in a run partition.
    """
    parts = list(partition_columns)
    spark = queries.sparkSession
    known = (local_frame(spark, [tuple(k) for k in run_partitions],
                         T.StructType([T.StructField(c, T.StringType()) for c in parts]))
             if parts else None)
    labelled = label_answers(raw.rows, partition_columns=parts, known=known)
    labelled = labelled.persist(StorageLevel.MEMORY_AND_DISK)
    kept.append(labelled)
    judged = qrels.where(F.col(REASON).isNull()).select(S.QUERY_ID).distinct()
    found = attribution.summaries(
        attribution.answered(labelled, queries, judged, partition_columns=parts,
                             measure_index=index),
        partition_columns=parts, thresholds=settings,
    )
    ledger = _ledger(raw.rows, labelled, parts)
    for summary in found:  # used: the answers the attribution counted, in any cell
        key = attribution.partition_key(summary, parts)
        ledger.setdefault(key, {})[USED] = attribution.answered_queries(summary)
    account = account_ledger("answers", name, ledger, partition_columns=parts,
                             used_as=" (attributed)")
    rows = attribution.rows(found, partition_columns=parts, thresholds=settings)
    covered = sum(int(s[S.COVERED]) for s in found)
    return Answers(account, covered, tuple(rows), labelled, tuple(parts), filter)


def job_answers(
    config: Config, inputs: JobInputs, queries: DataFrame,
    run_ledger: Mapping[tuple[str | None, ...], Any], measures: Sequence[Measure],
    kept: list[DataFrame],
) -> Answers | None:
    """:func:`evaluate_answers` of a job's answers (None when it has none), with the run
    partitions of the run's ledger and the retrieval measure among ``measures``."""
    if config.answers is None or inputs.answers is None:
        return None
    measure = retrieval_measure(config.answers.retrieval_measure(config.run.window),
                                relevance_level=config.evaluation.relevance_level)
    return evaluate_answers(
        inputs.answers, name=source_name(config.answers), queries=queries, qrels=inputs.qrels,
        run_partitions=run_ledger.keys(), partition_columns=inputs.partition_columns,
        index=measure_index(measures, measure),
        settings=thresholds(config.answers, measure, level=config.intervals.level),
        kept=kept, filter=config.answers.filter,
    )
