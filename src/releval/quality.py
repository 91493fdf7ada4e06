"""The input checks, top to bottom: the row rules, the inputs' accounts, the quarantine,
and the job's order of checks.

**The row rules.** Every input row is either used or quarantined, with a reason.
:func:`split_run` and :func:`split_qrels` are pure ``DataFrame -> (clean, quarantined)``
functions. ``clean`` is exactly what :func:`releval.pipeline.evaluate` receives (canonical,
typed columns); ``quarantined`` has one row per rejected input row in the shape of
:data:`releval.schemas.QUARANTINE_SCHEMA` (the quarantine table adds the run partition
columns, ``qrels_key`` and ``job_run_id`` when written; :func:`write_quarantine`).

The reasons are declared once, in :data:`REASONS`. The rules:

* run: a null or empty query id or doc id; when ranking by score, a score that is null,
  non-numeric, NaN or infinite; when ranking by rank, a rank that is null, non-integer, zero
  or negative; the same doc id twice in one query of one run (the best-ranked occurrence is
  kept, the others are ``duplicate_doc``); when ranking by rank, two documents at the same
  rank of one query (the first in the tie order, doc id descending, is kept; the others are
  ``duplicate_rank``).
* qrels: a null or empty query id or doc id; a relevance that is null, non-numeric or not an
  integer; the same (query, doc) judged with different labels: the **highest label is used**
  and the rows with a lower label are ``conflicting_label`` (strict mode fails the job).
  Exact duplicate judgments (same query, doc and label) are all kept (they are one judgment
  for the measures) and counted, not quarantined.

A row gets only the first reason that applies, in the order of :data:`REASONS`; duplicates are
looked for among the rows that passed the per-row checks. A TREC line its reader flagged
``_malformed`` gets :data:`MALFORMED` before any of them: not a quarantine reason, the job
fails on it (:func:`finish_checks`), but counting it in the accounting's aggregation spares the
reader a scan of its own.

**The accounts.** The job counts its inputs in the evaluation's own pass (the engine's
ledger, ``releval.metrics.kernel``): :func:`account_ledger` and :func:`account_qrels_ledger`
turn those counts into the inputs' accounts and check the invariant ``input = used +
quarantined``, per run partition for the run.

The labelled frames carry no per-row ``raw`` map: :func:`_quarantine` builds it for the
rejected rows only, from the typed columns and the few original columns kept as ``_raw_*``.

**The job's checks** (:func:`job_inputs`, then :func:`finish_checks`), in an order where
job-level problems stop the job before anything is written:

1. read the run and the qrels raw (``releval.io.readers``): missing path/table/column, a
   column type that cannot be cast, a filter that does not match;
2. evaluate: the evaluation reads every run row and every qrels row with the row rules'
   reason and counts them in its own pass (the engine's ledger, ``releval.metrics.kernel``);
   no input is counted by a pass of its own;
3. after the evaluation, before the outputs are written (:func:`finish_checks`): the run's
   account from the ledger, with the invariant ``input = used + quarantined`` checked per
   partition (``input``: the rows the engine received, counted before and apart from the
   rows it ranked, dropped as repeated or found rejected), and the qrels' account the same
   way; a malformed TREC line (counted as :data:`MALFORMED`, then found and
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

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from releval import schemas as S
from releval.arrays import codes, sort_rank, to_numpy
from releval.config import Config
from releval.errors import AccountingError, InputError, QualityError
from releval.io.atomic import check_schema_version, read_table, replace_partitions
from releval.io.readers import (
    RAW_BLOCK,
    RAW_LINE,
    RAW_MALFORMED,
    RAW_ROW,
    RAW_SOURCE,
    RawInput,
    read_qrels_raw,
    read_run_raw,
    source_name,
)
from releval.io.writers import local_frame, with_comments
from releval.layout import by_query
from releval.lineage import source_label
from releval.partitions import quote_literal
from releval.repeats import DUPLICATE_DOC, DUPLICATE_RANK, highest_labels, mark_repeats

#: The pseudo-reason of a ``_malformed`` row: counted, never quarantined (the job fails).
MALFORMED = "malformed_line"
#: The row rules' reason of a labelled row (null = clean); the engine's ledger counts it.
REASON = "_reason"

RUN = "run"
QRELS = "qrels"


@dataclass(frozen=True)
class Reason:
    """Why an input row was rejected."""

    code: str
    input: str
    message: str


REASONS: dict[str, Reason] = {
    r.code: r
    for r in (
        Reason("missing_query_id", "run, qrels", "the query id is null or empty"),
        Reason("missing_doc_id", "run, qrels", "the doc id is null or empty"),
        Reason("invalid_score", RUN, "ranking by score: the score is null, non-numeric, NaN or infinite"),
        Reason("invalid_rank", RUN, "ranking by rank: the rank is null, not an integer, zero or negative"),
        Reason(
            DUPLICATE_DOC, RUN,
            "the doc id appears again in this query of this run; its best-ranked occurrence is kept",
        ),
        Reason(
            DUPLICATE_RANK, RUN,
            "ranking by rank: another document of this query has the same rank and comes first "
            "in the tie order (doc id descending)",
        ),
        Reason("invalid_relevance", QRELS, "the relevance label is null, non-numeric or not an integer"),
        Reason(
            "conflicting_label", QRELS,
            "the (query, doc) is judged again with a higher label; the highest label is used",
        ),
    )
}

_INT_MAX = 2**31 - 1


def _messages() -> Column:
    """The reason code -> message map, as one literal map (a lookup, not a CASE chain)."""
    return F.create_map(*[F.lit(x) for r in REASONS.values() for x in (r.code, r.message)])


def partition_map(partition_columns: Sequence[str]) -> Column:
    """The partition columns as a ``map<string,string>`` (empty map without partitions)."""
    pairs = [x for c in partition_columns for x in (F.lit(c), F.col(c).cast("string"))]
    return F.create_map(*pairs).cast("map<string,string>")


def _blank(col: Column) -> Column:
    return col.isNull() | (F.trim(col) == "")


def _bad_integer(value: Column, *, minimum: int) -> Column:
    """True when ``value`` (any type) is not an integer >= minimum that fits an int."""
    d = value.try_cast("double")
    return d.isNull() | F.isnan(d) | (d < minimum) | (d > _INT_MAX) | (d != F.floor(d))


def _meta(df: DataFrame) -> list[Column]:
    """``_source``, ``_line`` (null when absent) and the position columns ``df`` has."""
    source = F.col(RAW_SOURCE) if RAW_SOURCE in df.columns else F.lit(None)
    line = F.col(RAW_LINE) if RAW_LINE in df.columns else F.lit(None)
    position = [F.col(c) for c in (RAW_BLOCK, RAW_ROW) if c in df.columns]
    return [source.cast("string").alias(RAW_SOURCE), line.cast("long").alias(RAW_LINE), *position]


def _malformed_rule(df: DataFrame) -> list[tuple[Column, str]]:
    """The :data:`MALFORMED` rule when a reader flagged malformed lines, else none."""
    return [(F.col(RAW_MALFORMED), MALFORMED)] if RAW_MALFORMED in df.columns else []


#: Prefix of the original columns a labelled frame keeps for the quarantine's ``raw`` map.
_RAW_PREFIX = "_raw_"
RUN_RAW_COLUMNS = (S.QUERY_ID, S.DOC_ID, S.SCORE, S.RANK)
QRELS_RAW_COLUMNS = (S.QUERY_ID, S.DOC_ID, S.RELEVANCE)


def _kept_raw(df: DataFrame, column: str, *, identity_for: str | None) -> list[Column]:
    """The original ``column`` as ``_raw_<column>``, unless its typed column renders the same.

    The quarantine's ``raw`` map is built from the few rejected rows only (see
    :func:`_raw_map`), so a labelled frame keeps an original column only when the typed one
    cannot give back its string: ``identity_for`` names the source type (``"*"``: any) for
    which the typed column is the original unchanged; ``None``: always keep it (rank and
    relevance are nulled when invalid).
    """
    dtype = df.schema[column].dataType.simpleString()
    if identity_for is not None and identity_for in ("*", dtype):
        return []
    return [F.col(column).alias(_RAW_PREFIX + column)]


def _raw_map(labelled: DataFrame, columns: Sequence[str]) -> Column:
    """``{column: original value as string}``, from ``_raw_<column>`` or the typed column."""
    def original(c: str) -> Column:
        return F.col(_RAW_PREFIX + c) if _RAW_PREFIX + c in labelled.columns else F.col(c)

    pairs = [x for c in columns for x in (F.lit(c), original(c).cast("string"))]
    return F.create_map(*pairs).cast("map<string,string>")


def _first_reason(*rules: tuple[Column, str]) -> Column:
    """The code of the first rule that holds, else null (a short fixed chain)."""
    out: Column | None = None
    for cond, code in rules:
        out = F.when(cond, F.lit(code)) if out is None else out.when(cond, F.lit(code))
    assert out is not None
    return out.otherwise(F.lit(None).cast("string"))


def _typed_run(run: DataFrame, *, rank_by: str, partition_columns: Sequence[str]) -> DataFrame:
    """Run rows typed, with the row rules' ``_reason`` (a projection: no shuffle, no sort)."""
    parts = list(partition_columns)
    score = F.col(S.SCORE).try_cast("double")
    bad_rank = _bad_integer(F.col(S.RANK), minimum=1)
    bad_score = score.isNull() | F.isnan(score) | (F.abs(score) == float("inf"))
    rules = [
        *_malformed_rule(run),
        (_blank(F.col(S.QUERY_ID).cast("string")), "missing_query_id"),
        (_blank(F.col(S.DOC_ID).cast("string")), "missing_doc_id"),
    ]
    rules.append((bad_score, "invalid_score") if rank_by == "score" else (bad_rank, "invalid_rank"))
    return run.select(
        *parts,
        *_meta(run),
        F.col(S.QUERY_ID).cast("string").alias(S.QUERY_ID),
        F.col(S.DOC_ID).cast("string").alias(S.DOC_ID),
        score.alias(S.SCORE),
        F.when(~bad_rank, F.col(S.RANK).try_cast("double").cast("int")).alias(S.RANK),
        *_kept_raw(run, S.SCORE, identity_for="double"),
        *_kept_raw(run, S.RANK, identity_for=None),
        _first_reason(*rules).alias(REASON),
    )


def row_labelled_run(run: DataFrame, *, rank_by: str, partition_columns: Sequence[str]) -> DataFrame:
    """Run rows with the row rules' ``_reason`` only: a projection.

    What the job's evaluation reads: the engine applies the repeated-row rules of
    ``releval.repeats`` itself (the same functions :func:`label_run` applies, so it sets
    aside the very rows the quarantine names: a repeated document's other occurrences and,
    ranking by rank, the documents that share a rank), ranks the clean rows and counts all
    of them in the same pass (:func:`account_ledger`).
    """
    return _typed_run(run, rank_by=rank_by, partition_columns=partition_columns)


def _whole_partitions(df: DataFrame, label: Callable[[pa.Table], pa.Table]) -> DataFrame:
    """``label`` applied to each Spark partition of ``df`` as one Arrow table (same schema)."""

    def apply(batches: Iterable[pa.RecordBatch]) -> Iterable[pa.RecordBatch]:
        collected = [b for b in batches if b.num_rows]
        if collected:
            yield from label(pa.Table.from_batches(collected)).to_batches()

    return df.mapInArrow(apply, df.schema)


def _with_reasons(table: pa.Table, reasons: np.ndarray) -> pa.Table:
    return table.set_column(
        table.schema.get_field_index(REASON), REASON, pa.array(reasons, pa.string())
    )


def _clean_rows(table: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """The ``_reason`` column (an object array) and the positions of the clean rows."""
    reasons = to_numpy(table.column(REASON)).astype(object)
    return reasons, np.flatnonzero(to_numpy(pc.is_null(table.column(REASON))).astype(bool))


def _label_repeated_run_rows(
    table: pa.Table, *, rank_by: str, partition_columns: Sequence[str]
) -> pa.Table:
    """A partition's run rows (laid out by query) with ``duplicate_doc`` and, ranking by
    rank, ``duplicate_rank`` on the clean rows the rules of ``releval.repeats`` set aside.

    Among occurrences that tie in ranking order, the better by the other ordering column
    (ranking by score: the lower rank; by rank: the higher score), then the earlier in the
    file, is kept.
    """
    reasons, rows = _clean_rows(table)
    if not len(rows):
        return table
    clean = table.take(pa.array(rows))
    # the tie-break after the ranking order: best_first's sort is stable
    ties = [sort_rank(clean.column(c)) for c in (RAW_ROW, RAW_BLOCK, RAW_LINE, RAW_SOURCE)
            if c in clean.column_names]
    ties.append(sort_rank(clean.column(S.RANK)) if rank_by == "score"
                else sort_rank(clean.column(S.SCORE), descending=True))
    before = np.lexsort(ties)
    clean, rows = clean.take(pa.array(before)), rows[before]
    if rank_by == "score":
        primary = -to_numpy(clean.column(S.SCORE)).astype(np.float64)
    else:
        primary = to_numpy(clean.column(S.RANK)).astype(np.float64)
    mark_repeats(reasons, rows, clean, primary, rank_by=rank_by, partition_columns=partition_columns)
    return _with_reasons(table, reasons)


def label_run(run: DataFrame, *, rank_by: str, partition_columns: Sequence[str]) -> DataFrame:
    """Run rows with typed canonical columns, ``_reason`` (null = clean) and the original
    columns the typed ones cannot give back (``_raw_score``, ``_raw_rank``; see :func:`_kept_raw`),
    laid out by query id (``releval.layout``).

    The repeated rows' reasons (``duplicate_doc``, ``duplicate_rank``) come from the rules
    of ``releval.repeats``, the engine's own, applied to each partition with NumPy.

    Args:
        run: partition columns, query_id, doc_id, score, rank (any atomic types, e.g. the
            raw strings of a TREC file), optionally ``_source`` and ``_line``.
        rank_by: "score" or "rank": which column must be valid and orders duplicates.
        partition_columns: the columns that identify one run.
    """
    parts = list(partition_columns)
    typed = by_query(_typed_run(run, rank_by=rank_by, partition_columns=parts))
    return _whole_partitions(
        typed,
        lambda t: _label_repeated_run_rows(t, rank_by=rank_by, partition_columns=parts),
    )


def _typed_qrels(qrels: DataFrame) -> DataFrame:
    """Qrels rows typed, with the row rules' ``_reason`` (a projection: no shuffle, no sort)."""
    relevance = F.col(S.RELEVANCE)
    bad_label = _bad_integer(relevance, minimum=-_INT_MAX)
    return qrels.select(
        *_meta(qrels),
        F.col(S.QUERY_ID).cast("string").alias(S.QUERY_ID),
        F.col(S.DOC_ID).cast("string").alias(S.DOC_ID),
        F.when(~bad_label, relevance.try_cast("double").cast("int")).alias(S.RELEVANCE),
        *_kept_raw(qrels, S.RELEVANCE, identity_for=None),
        _first_reason(
            *_malformed_rule(qrels),
            (_blank(F.col(S.QUERY_ID).cast("string")), "missing_query_id"),
            (_blank(F.col(S.DOC_ID).cast("string")), "missing_doc_id"),
            (bad_label, "invalid_relevance"),
        ).alias(REASON),
    )


def row_labelled_qrels(qrels: DataFrame) -> DataFrame:
    """Qrels rows typed, with the row rules' ``_reason`` only: a projection.

    What the job's evaluation reads: the engine counts every row and, over the clean
    ones, the ``conflicting_label`` rows and the exact duplicates in its own pass (the
    qrels ledger, :func:`account_qrels_ledger`); the measures read a document's highest
    label, the one :func:`label_qrels` keeps.
    """
    return _typed_qrels(qrels)


def _label_conflicting_qrels_rows(table: pa.Table) -> pa.Table:
    """A partition's qrels rows (laid out by query) with ``conflicting_label`` on the clean
    rows :func:`releval.repeats.highest_labels` sets aside."""
    reasons, rows = _clean_rows(table)
    if not len(rows):
        return table
    clean = table.take(pa.array(rows))
    query, _ = codes(clean.column(S.QUERY_ID))
    doc, docs = codes(clean.column(S.DOC_ID))
    label = to_numpy(clean.column(S.RELEVANCE)).astype(np.int64)
    order, _, best = highest_labels(query * max(len(docs), 1) + doc, label)
    reasons[rows[order[label[order] < best]]] = "conflicting_label"
    return _with_reasons(table, reasons)


def label_qrels(qrels: DataFrame) -> DataFrame:
    """Qrels rows with typed canonical columns, ``_reason`` (null = clean) and
    ``_raw_relevance`` (the original label), laid out by query id: what the quarantine reads.

    ``conflicting_label``: a clean row with a lower label than another clean row of its
    (query, doc), by the rule of ``releval.repeats`` (the engine's own, which counts the
    same rows in the evaluation's pass).
    """
    return _whole_partitions(by_query(_typed_qrels(qrels)), _label_conflicting_qrels_rows)


def _quarantine(
    labelled: DataFrame,
    *,
    input_name: str,
    partition_columns: Sequence[str],
    raw_columns: Sequence[str],
    number_lines: Callable[[DataFrame], DataFrame] | None,
) -> DataFrame:
    rejected = labelled.where(F.col(REASON).isNotNull())
    if number_lines is not None:
        rejected = number_lines(rejected)
    return rejected.select(
        F.lit(input_name).alias(S.INPUT),
        F.col(RAW_SOURCE).alias(S.SOURCE),
        F.col(RAW_LINE).alias(S.LINE),
        partition_map(partition_columns).alias(S.PARTITION),
        _raw_map(labelled, raw_columns).alias(S.RAW),
        F.col(REASON).alias(S.REASON_CODE),
        _messages()[F.col(REASON)].alias(S.MESSAGE),
    )


def split_labelled_run(
    labelled: DataFrame,
    *,
    partition_columns: Sequence[str],
    number_lines: Callable[[DataFrame], DataFrame] | None = None,
) -> tuple[DataFrame, DataFrame]:
    """(clean, quarantined) of a :func:`label_run` result.

    ``number_lines`` gives the rejected rows their ``_line`` from their position
    (``releval.io.readers.RawInput.number_lines``), for the quarantined rows only.
    """
    parts = list(partition_columns)
    clean = labelled.where(F.col(REASON).isNull()).select(
        *parts, S.QUERY_ID, S.DOC_ID, S.SCORE, S.RANK
    )
    return clean, _quarantine(
        labelled, input_name=RUN, partition_columns=parts, raw_columns=RUN_RAW_COLUMNS,
        number_lines=number_lines,
    )


def split_labelled_qrels(
    labelled: DataFrame, *, number_lines: Callable[[DataFrame], DataFrame] | None = None
) -> tuple[DataFrame, DataFrame]:
    """(clean, quarantined) of a :func:`label_qrels` result (``number_lines``: as for the run)."""
    clean = labelled.where(F.col(REASON).isNull()).select(S.QUERY_ID, S.DOC_ID, S.RELEVANCE)
    return clean, _quarantine(
        labelled, input_name=QRELS, partition_columns=(), raw_columns=QRELS_RAW_COLUMNS,
        number_lines=number_lines,
    )


def split_run(run: DataFrame, *, rank_by: str, partition_columns: Sequence[str]) -> tuple[DataFrame, DataFrame]:
    """Split run rows into (clean, quarantined); see the module docstring for the rules.

    Returns:
        clean: partition columns, query_id, doc_id, score (double), rank (int).
        quarantined: input, source, line, partition, raw, reason_code, message.
    """
    labelled = label_run(run, rank_by=rank_by, partition_columns=partition_columns)
    return split_labelled_run(labelled, partition_columns=partition_columns)


def split_qrels(qrels: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Split qrels rows into (clean, quarantined); see the module docstring for the rules.

    Returns:
        clean: query_id, doc_id, relevance (int); exact duplicate judgments are kept.
        quarantined: input, source, line, partition, raw, reason_code, message.
    """
    return split_labelled_qrels(label_qrels(qrels))


# --- accounting ------------------------------------------------------------------------------

_INPUT_TAG = "_input"
_USED_TAG = "_used"
#: The ledger's tags (:func:`account_ledger`): the run rows the engine received, the rows
#: it ranked.
RECEIVED = "received"
USED = "used"
#: Before the tag of a qrels ledger row (the run's rows carry the bare tags).
QRELS_LEDGER = "qrels:"
#: The qrels ledger's own tags: the rows with a lower label than another row of their
#: (query, doc), the exact duplicate judgments (kept), the highest label used.
CONFLICTING = "conflicting_label"
EXACT_DUPLICATE = "exact_duplicate"
MAX_LABEL = "max_label"


def render_partition(key: str) -> str:
    """``{"date":"2024-05-01"}`` -> ``date=2024-05-01``; ``{}`` -> ``all``."""
    values = json.loads(key) if key else {}
    return "/".join(f"{k}={v}" for k, v in values.items()) or "all"


@dataclass(frozen=True)
class PartitionAccount:
    """Row counts of one input partition."""

    partition: str
    input: int
    used: int
    quarantined: dict[str, int] = field(default_factory=dict)
    #: The partition's column values as strings (the key ``partition`` renders).
    values: dict[str, str | None] = field(default_factory=dict)

    @property
    def quarantined_total(self) -> int:
        return sum(self.quarantined.values())

    @property
    def balanced(self) -> bool:
        return self.input == self.used + self.quarantined_total


@dataclass(frozen=True)
class InputAccount:
    """Row counts of one input (run or qrels), per partition."""

    name: str
    source: str
    partitions: tuple[PartitionAccount, ...]
    exact_duplicates: int = 0
    #: The highest label of the used rows (qrels; from the engine's ledger), None for the run.
    used_max: int | None = None

    @property
    def input(self) -> int:
        return sum(p.input for p in self.partitions)

    @property
    def used(self) -> int:
        return sum(p.used for p in self.partitions)

    @property
    def quarantined(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in self.partitions:
            for code, n in p.quarantined.items():
                out[code] = out.get(code, 0) + n
        return dict(sorted(out.items()))

    @property
    def quarantined_total(self) -> int:
        return sum(self.quarantined.values())

    def render(self) -> list[str]:
        reasons = ", ".join(f"{c} {n}" for c, n in self.quarantined.items()) or "none"
        lines = [
            f"  {self.name} ({self.source}): input {self.input} = used {self.used} "
            f"+ quarantined {self.quarantined_total} ({reasons})"
        ]
        for p in self.partitions:
            mark = "ok" if p.balanced else "MISMATCH"
            lines.append(
                f"    {p.partition}: input {p.input} = used {p.used} + quarantined "
                f"{p.quarantined_total} [{mark}]"
            )
        if self.exact_duplicates:
            lines.append(f"    exact duplicate judgments (kept, counted once): {self.exact_duplicates}")
        return lines


def account_ledger(
    name: str,
    source: str,
    ledger: Mapping[tuple[str | None, ...], Mapping[str, int]],
    *,
    partition_columns: Sequence[str],
) -> InputAccount:
    """The run's account from the evaluation's ledger, with the invariant checked.

    The ledger comes out of the evaluation's one pass (``releval.metrics.kernel``): per
    run partition, the run rows the engine received (``received``: counted first, before
    anything drops a row; nothing between the scan and the engine filters), the rows the
    row rules rejected per reason, the repeated documents the engine dropped
    (``duplicate_doc``) and the rows it ranked (``used``, the sum of the per-query
    ``num_ret``). ``input`` is counted apart from the others, so ``input = used +
    quarantined`` per partition is a real check: a row the engine loses (or adds) between
    receiving and ranking breaks it.

    Args:
        name: ``run``.
        source: the run's source, for messages.
        ledger: (partition values as strings, in ``partition_columns`` order) -> counts
            by tag: ``received``, ``used``, ``duplicate_doc`` and the reason codes.
        partition_columns: the run's partition columns.

    Raises:
        AccountingError: naming the first partition whose counts disagree.
    """
    parts = list(partition_columns)
    by_key: dict[str, dict[str, int]] = {}
    for values, counts in ledger.items():
        key = json.dumps(dict(zip(parts, values, strict=True)), separators=(",", ":"),
                         ensure_ascii=False)
        tags = {_INPUT_TAG: int(counts.get(RECEIVED, 0)), _USED_TAG: int(counts.get(USED, 0))}
        tags.update({c: int(n) for c, n in counts.items() if c not in (RECEIVED, USED) and n})
        by_key[key] = tags
    return _input_account(name, source, by_key, used_as=" (ranked)")


def account_qrels_ledger(name: str, source: str, ledger: Iterable[tuple[str, int]]) -> InputAccount:
    """The qrels' account from the evaluation's qrels ledger, with the invariant checked.

    The engine counts every qrels row it received (``received``) and those the row rules
    rejected per reason; then, over the clean rows it kept, those with a lower label than
    another row of their (query, doc) (``conflicting_label``), the exact duplicates (kept,
    counted once), the rows used and the highest used label (``max_label``). ``input`` is
    counted before anything drops a row and ``used`` after, so ``input = used +
    quarantined`` is a real check.

    Args:
        name: ``qrels``.
        source: the qrels' source, for messages.
        ledger: the engine's qrels ledger rows as (tag, count), the tag without
            :data:`QRELS_LEDGER` (``received``, ``used``, ``exact_duplicate``,
            ``max_label`` and the reason codes), one per shuffle partition and tag: the
            counts are summed over the partitions, ``max_label`` is the highest.

    Raises:
        AccountingError: input != used + quarantined.
    """
    tags: dict[str, int] = {}
    for tag, n in ledger:
        n = int(n)
        tags[tag] = max(tags.get(tag, n), n) if tag == MAX_LABEL else tags.get(tag, 0) + n
    received, used = tags.pop(RECEIVED, 0), tags.pop(USED, 0)
    duplicates, top = tags.pop(EXACT_DUPLICATE, 0), tags.pop(MAX_LABEL, None)
    by_key = {"{}": {_INPUT_TAG: received, _USED_TAG: used, **{c: n for c, n in tags.items() if n}}}
    account = _input_account(name, source, by_key, duplicates=duplicates)
    return dataclasses.replace(account, used_max=top)


def _input_account(
    name: str, source: str, by_key: dict[str, dict[str, int]], *, duplicates: int = 0,
    used_as: str = "",
) -> InputAccount:
    """The :class:`InputAccount` of ``{partition key JSON: {tag: count}}`` (``"{}"``: an
    input without partitions); checks the invariant ``input = used + quarantined`` of each
    partition, the one place it is checked.

    Args:
        duplicates: the exact duplicate judgments (kept, counted once; the qrels').
        used_as: what ``used`` counted, for the message (the run's: `` (ranked)``).

    Raises:
        AccountingError: naming the first partition whose counts disagree.
    """
    partitions = []
    for k in sorted(by_key):
        counts = dict(by_key[k])
        partitions.append(
            PartitionAccount(
                partition=render_partition(k),
                input=counts.pop(_INPUT_TAG, 0),
                used=counts.pop(_USED_TAG, 0),
                quarantined=dict(sorted(counts.items())),
                values=json.loads(k) if k else {},
            )
        )
    result = InputAccount(name, source, tuple(partitions), duplicates)
    broken = [p for p in partitions if not p.balanced]
    if broken:
        p = broken[0]
        where = f"partition {p.partition}: " if p.values else ""
        raise AccountingError(
            f"{name} {source}: {where}input rows {p.input} (received by the evaluation) != "
            f"used {p.used}{used_as} + quarantined {p.quarantined_total} {p.quarantined}; "
            "rows were lost or duplicated inside the evaluation; nothing was written"
        )
    return result


# --- the job: its inputs, the quarantine, the checks before anything is written ---


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
        rejected = local_frame(spark, [], S.QUARANTINE_SCHEMA)
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

    @cached_property
    def labelled_run(self) -> DataFrame:
        """Every run row with its ``_reason`` by all rules, laid out by query id: what the
        quarantine keeps. Planned when first asked for: only when a row was rejected."""
        # the quarantine's shuffle (releval.layout): the repeated-row rules are per query
        return label_run(self.raw_run.rows, rank_by=self.rank_by,
                         partition_columns=list(self.partition_columns))

    @cached_property
    def labelled_qrels(self) -> DataFrame:
        """Every qrels row with its ``_reason`` by all rules, laid out by query id (planned
        when first asked for, like :attr:`labelled_run`)."""
        return label_qrels(self.raw_qrels.rows)


def job_inputs(spark: SparkSession, config: Config) -> JobInputs:
    """The job's input plans: read raw once, labelled for the checks and the evaluation.

    Lazy: no action runs and nothing is persisted (reading still checks the paths, tables,
    columns and filter; TREC text's malformed lines are counted by the evaluation's
    ledger). The evaluation reads every row of both inputs labelled by the row rules only
    (a projection: no shuffle, no sort) straight from the source and counts them in its
    own pass (the engine's ledger). The engine applies the repeated-row rules itself
    (``releval.repeats``: a repeated document keeps its best-ranked occurrence; ranking by
    rank, a shared rank goes to the first in tie order; see :func:`row_labelled_run`), so
    its shuffle is each input's only one; the measures read a document's highest label,
    the one ``conflicting_label`` keeps, and the engine counts the conflicting rows.
    """
    parts = list(config.run.partition_columns)
    raw_run = read_run_raw(spark, config.run)
    raw_qrels = read_qrels_raw(spark, config.qrels)
    rank_by = config.run.rank_by
    return JobInputs(
        run=row_labelled_run(raw_run.rows, rank_by=rank_by, partition_columns=parts),
        qrels=row_labelled_qrels(raw_qrels.rows),
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
