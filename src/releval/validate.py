"""Row-level validation: every input row is either used or quarantined, with a reason.

:func:`split_run` and :func:`split_qrels` are pure ``DataFrame -> (clean, quarantined)``
functions. ``clean`` is exactly what :func:`releval.pipeline.evaluate` receives (canonical,
typed columns); ``quarantined`` has one row per rejected input row in the shape of
:data:`releval.schemas.QUARANTINE_SCHEMA` (the quarantine table adds the run partition columns, ``qrels_key`` and
``job_run_id`` when written; see ``releval.quality.write_quarantine``).

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
fails on it (``releval.quality``), but counting it in the accounting's aggregation spares the
reader a scan of its own.

The job counts its inputs in the evaluation's own pass (the engine's ledger,
``releval.metrics.kernel``): :func:`account_ledger` and :func:`account_qrels_ledger` turn
those counts into the inputs' accounts and check the invariant ``input = used +
quarantined``, per run partition for the run.

The labelled frames carry no per-row ``raw`` map: :func:`_quarantine` builds it for the
rejected rows only, from the typed columns and the few original columns kept as ``_raw_*``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from releval import schemas as S
from releval.errors import AccountingError
from releval.ranking import ranking_order

#: Columns a raw reader may add (see ``releval.io.readers``); optional for these functions.
RAW_SOURCE = "_source"
RAW_LINE = "_line"
#: A TREC line's position before it is numbered: its file block's start and its row id
#: (``releval.io.readers``); with ``_source`` they order a file's lines as ``_line`` would.
RAW_BLOCK = "_block"
RAW_ROW = "_row"
#: True on a TREC line without the fields its format needs (``releval.io.readers``).
RAW_MALFORMED = "_malformed"
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
            "duplicate_doc", RUN,
            "the doc id appears again in this query of this run; its best-ranked occurrence is kept",
        ),
        Reason(
            "duplicate_rank", RUN,
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


def _file_order(df: DataFrame) -> list[Column]:
    """Where a row came from, as a sort order: file, then line or position in the file."""
    return [F.col(c).asc_nulls_last() for c in (RAW_SOURCE, RAW_LINE, RAW_BLOCK, RAW_ROW)
            if c in df.columns]


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


def row_labelled_run(run: DataFrame, *, partition_columns: Sequence[str]) -> DataFrame:
    """Run rows with the row rules' ``_reason`` only (``rank_by = "score"``): a projection.

    What the job's evaluation reads: the engine ranks the clean rows, drops a repeated
    document's other occurrences (``duplicate_doc``: its best-scored occurrence is kept,
    the very row :func:`label_run` keeps) and counts the rest in the same pass
    (:func:`account_ledger`).
    """
    return _typed_run(run, rank_by="score", partition_columns=partition_columns)


def label_run(run: DataFrame, *, rank_by: str, partition_columns: Sequence[str]) -> DataFrame:
    """Run rows with typed canonical columns, ``_reason`` (null = clean) and the original
    columns the typed ones cannot give back (``_raw_score``, ``_raw_rank``; see :func:`_kept_raw`).

    Args:
        run: partition columns, query_id, doc_id, score, rank (any atomic types, e.g. the
            raw strings of a TREC file), optionally ``_source`` and ``_line``.
        rank_by: "score" or "rank": which column must be valid and orders duplicates.
        partition_columns: the columns that identify one run.
    """
    parts = list(partition_columns)
    typed = _typed_run(run, rank_by=rank_by, partition_columns=parts)
    valid = F.col(REASON).isNull()
    query = [*parts, S.QUERY_ID]
    order = [*ranking_order(rank_by), F.col(S.SCORE).desc_nulls_last(), F.col(S.RANK).asc_nulls_last(),
             *_file_order(typed)]
    occurrence = F.row_number().over(Window.partitionBy(*query, S.DOC_ID, valid).orderBy(*order))
    labelled = typed.withColumn(
        REASON, F.when(valid & (occurrence > 1), F.lit("duplicate_doc")).otherwise(F.col(REASON))
    )
    if rank_by == "rank":
        valid = F.col(REASON).isNull()
        same_rank = Window.partitionBy(*query, S.RANK, valid).orderBy(*order)
        labelled = labelled.withColumn(
            REASON,
            F.when(valid & (F.row_number().over(same_rank) > 1), F.lit("duplicate_rank")).otherwise(
                F.col(REASON)
            ),
        )
    return labelled


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


def label_qrels(qrels: DataFrame) -> DataFrame:
    """Qrels rows with typed canonical columns, ``_reason`` (null = clean) and
    ``_raw_relevance`` (the original label): what the quarantine reads.

    ``conflicting_label``: a clean row with a lower label than another clean row of its
    (query, doc). The job's evaluation counts the same rule in its own pass (the engine's
    qrels ledger, ``releval.metrics.kernel``); this labelling gives the quarantine its rows.
    """
    typed = _typed_qrels(qrels)
    valid = F.col(REASON).isNull()
    judgments = Window.partitionBy(S.QUERY_ID, S.DOC_ID, valid)
    best = F.max(S.RELEVANCE).over(judgments)
    return typed.select(
        *[c for c in typed.columns if c != REASON],
        F.when(valid & (F.col(S.RELEVANCE) < best), F.lit("conflicting_label"))
        .otherwise(F.col(REASON)).alias(REASON),
    )


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
_DUPLICATE_TAG = "_exact_duplicate"


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
    for key in sorted(by_key):
        tags = by_key[key]
        quarantined = {c: n for c, n in tags.items() if c not in (_INPUT_TAG, _USED_TAG)}
        if tags[_INPUT_TAG] != tags[_USED_TAG] + sum(quarantined.values()):
            raise AccountingError(
                f"{name} {source}: partition {render_partition(key)}: input rows "
                f"{tags[_INPUT_TAG]} (received by the evaluation) != used {tags[_USED_TAG]} "
                f"(ranked) + quarantined {sum(quarantined.values())} "
                f"{dict(sorted(quarantined.items()))}; rows were lost or duplicated inside the "
                "evaluation; nothing was written"
            )
    return _input_account(name, source, by_key)


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
    quarantined = {c: n for c, n in tags.items() if n}
    if received != used + sum(quarantined.values()):
        raise AccountingError(
            f"{name} {source}: input rows {received} (received by the evaluation) != used "
            f"{used} + quarantined {sum(quarantined.values())} {dict(sorted(quarantined.items()))}; "
            "rows were lost or duplicated inside the evaluation; nothing was written"
        )
    by_key = {"{}": {_INPUT_TAG: received, _USED_TAG: used, **quarantined,
                     _DUPLICATE_TAG: duplicates}}
    return dataclasses.replace(_input_account(name, source, by_key), used_max=top)


def _input_account(name: str, source: str, by_key: dict[str, dict[str, int]]) -> InputAccount:
    """The :class:`InputAccount` of ``{partition key JSON: {tag: count}}``; checks the invariant."""
    partitions = []
    duplicates = 0
    for k in sorted(by_key):
        counts = dict(by_key[k])
        duplicates += counts.pop(_DUPLICATE_TAG, 0)
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
        raise AccountingError(
            f"{name} {source}: partition {p.partition}: input rows {p.input} != used {p.used} "
            f"+ quarantined {p.quarantined_total} {p.quarantined}; a row was lost or duplicated"
        )
    return result
