"""The row rules: every input row is used or quarantined, with the first reason that applies.

:func:`typed_run` (what the engine reads), :func:`label_run` (plus repeated-row reasons),
:func:`split_run` (clean and quarantined rows), the same for the qrels; :data:`REASONS`
declares every reason (the answers' rules are in :mod:`releval.checks.answers`). See
docs/design/checks.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from releval.checks.interaction_reasons import INTERACTION_REASONS, INTERACTIONS
from releval.core import columns as S
from releval.core.arrays import codes, sort_rank, to_numpy
from releval.core.columns import (
    GOLD_CONFLICT,
    MALFORMED,
    NULL_SLICE,
    RANKING_REPEATED,
    RAW_BLOCK,
    RAW_LINE,
    RAW_MALFORMED,
    RAW_ROW,
    RAW_SOURCE,
    REASON,
)
from releval.core.layout import by_query
from releval.core.repeats import DUPLICATE_DOC, DUPLICATE_RANK, highest_labels, mark_repeats
from releval.core.window import CONFLICTING_WINDOW, INVALID_WINDOW, mark_conflicting_windows

RUN = "run"
QRELS = "qrels"
ANSWERS = "answers"
QUERIES = "queries"
DUPLICATE_QUERY_ID = "duplicate_query_id"
INVALID_WEIGHT = "invalid_weight"
INVALID_ANSWER_SCORE = "invalid_answer_score"
UNKNOWN_PARTITION = "unknown_partition"
DUPLICATE_ANSWER = "duplicate_answer"
CONFLICTING_GOLD = "conflicting_gold"
DUPLICATE_RANKING = "duplicate_ranking"


@dataclass(frozen=True)
class Reason:
    """Why an input row was rejected."""

    code: str
    input: str
    message: str


REASONS: dict[str, Reason] = {
    r.code: r
    for r in (
        Reason("missing_query_id", "run, qrels, answers, queries", "the query id is null or empty"),
        Reason("missing_doc_id", "run, qrels", "the doc id is null or empty"),
        Reason("invalid_score", RUN, "ranking by score: the score is null, non-numeric, NaN or infinite"),
        Reason("invalid_rank", RUN, "ranking by rank: the rank is null, not an integer, zero or negative"),
        Reason(INVALID_WINDOW, RUN,
               "the window (the top documents the consumer used) is null or not a positive integer"),
        Reason(CONFLICTING_WINDOW, RUN,
               "the rows of this query of this run partition disagree on the window; none is used"),
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
        Reason(DUPLICATE_RANKING, RUN,
               "rankings given as arrays: this query has more than one in this run partition "
               "(a partition column missing?); none is used"),
        Reason(CONFLICTING_GOLD, QRELS,
               "gold labels given once per query: rows of this query disagree on them; "
               "none is used"),
        Reason(INVALID_ANSWER_SCORE, ANSWERS,
               "the answer score is null, non-numeric, NaN or outside [0, 1]"),
        Reason(UNKNOWN_PARTITION, ANSWERS,
               "the run has no such run partition (or the value does not cast to the run's type)"),
        Reason(DUPLICATE_ANSWER, ANSWERS,
               "another answers row scores this query of this run partition; none is used"),
        Reason(DUPLICATE_QUERY_ID, QUERIES,
               "another queries row has this query id; which attributes are right is unknown, "
               "so none is used"),
        Reason(INVALID_WEIGHT, QUERIES, "the weight is null, non-numeric, negative, NaN or infinite"),
        *(Reason(code, INTERACTIONS, message) for code, message in INTERACTION_REASONS),
    )
}

_INT_MAX = 2**31 - 1


def reason_messages() -> Column:
    """The reason code -> message map, as one literal map (a lookup, not a CASE chain)."""
    return F.create_map(*[F.lit(x) for r in REASONS.values() for x in (r.code, r.message)])


def partition_map(partition_columns: Sequence[str]) -> Column:
    """The partition columns as a ``map<string,string>`` (empty map without partitions)."""
    pairs = [x for c in partition_columns for x in (F.lit(c), F.col(c).cast("string"))]
    return F.create_map(*pairs).cast("map<string,string>")


def blank(col: Column) -> Column:
    """True when ``col`` is null or only white space."""
    return col.isNull() | (F.trim(col) == "")


def _bad_integer(value: Column, *, minimum: int) -> Column:
    """True when ``value`` (any type) is not an integer >= minimum that fits an int."""
    d = value.try_cast("double")
    return d.isNull() | F.isnan(d) | (d < minimum) | (d > _INT_MAX) | (d != F.floor(d))


def meta_columns(df: DataFrame) -> list[Column]:
    """``_source``, ``_line`` (null when absent) and the position columns ``df`` has."""
    source = F.col(RAW_SOURCE) if RAW_SOURCE in df.columns else F.lit(None)
    line = F.col(RAW_LINE) if RAW_LINE in df.columns else F.lit(None)
    position = [F.col(c) for c in (RAW_BLOCK, RAW_ROW) if c in df.columns]
    return [source.cast("string").alias(RAW_SOURCE), line.cast("long").alias(RAW_LINE), *position]


def _malformed_rule(df: DataFrame) -> list[tuple[Column, str]]:
    return [(F.col(RAW_MALFORMED), MALFORMED)] if RAW_MALFORMED in df.columns else []


def _ranking_rule(df: DataFrame) -> list[tuple[Column, str]]:
    """Ranked arrays (:mod:`releval.io.shapes`): a query with two in one run partition."""
    return ([(F.col(RANKING_REPEATED), DUPLICATE_RANKING)] if RANKING_REPEATED in df.columns
            else [])


def _gold_rule(df: DataFrame) -> list[tuple[Column, str]]:
    """Gold labels read one row per query (:mod:`releval.io.shapes`) whose rows disagree."""
    return [(F.col(GOLD_CONFLICT), CONFLICTING_GOLD)] if GOLD_CONFLICT in df.columns else []


#: Prefix of the original columns a labelled frame keeps for the quarantine's ``raw`` map.
_RAW_PREFIX = "_raw_"
RUN_RAW_COLUMNS = (S.QUERY_ID, S.DOC_ID, S.SCORE, S.RANK)
QRELS_RAW_COLUMNS = (S.QUERY_ID, S.DOC_ID, S.RELEVANCE)


def kept_raw(df: DataFrame, column: str, *, identity_for: str | None) -> list[Column]:
    """The original ``column`` as ``_raw_<column>``, unless its typed column renders the same.

    ``identity_for``: the source type (``"*"``: any) for which the typed column is the
    original unchanged; ``None``: always keep it (rank and relevance are nulled when invalid).
    """
    dtype = df.schema[column].dataType.simpleString()
    if identity_for is not None and identity_for in ("*", dtype):
        return []
    return [F.col(column).alias(_RAW_PREFIX + column)]


def raw_map(labelled: DataFrame, columns: Sequence[str]) -> Column:
    """``{column: original value as string}``, from ``_raw_<column>`` or the typed column."""
    def original(c: str) -> Column:
        return F.col(_RAW_PREFIX + c) if _RAW_PREFIX + c in labelled.columns else F.col(c)

    pairs = [x for c in columns for x in (F.lit(c), original(c).cast("string"))]
    return F.create_map(*pairs).cast("map<string,string>")


def first_reason(*rules: tuple[Column, str]) -> Column:
    """The code of the first rule that holds, else null (a short fixed chain)."""
    out: Column | None = None
    for cond, code in rules:
        out = F.when(cond, F.lit(code)) if out is None else out.when(cond, F.lit(code))
    assert out is not None
    return out.otherwise(F.lit(None).cast("string"))


def typed_run(run: DataFrame, *, rank_by: str, partition_columns: Sequence[str],
              slices: Sequence[str] = ()) -> DataFrame:
    """Run rows typed, with the row rules' ``_reason`` (a projection: no shuffle, no sort);
    each run slice column (:mod:`releval.core.run_slices`) as a string, null as ``(null)``."""
    parts = list(partition_columns)
    score = F.col(S.SCORE).try_cast("double")
    bad_rank = _bad_integer(F.col(S.RANK), minimum=1)
    bad_score = score.isNull() | F.isnan(score) | (F.abs(score) == float("inf"))
    rules = [
        *_malformed_rule(run),
        (blank(F.col(S.QUERY_ID).cast("string")), "missing_query_id"),
        *_ranking_rule(run),
        (blank(F.col(S.DOC_ID).cast("string")), "missing_doc_id"),
    ]
    rules.append((bad_score, "invalid_score") if rank_by == "score" else (bad_rank, "invalid_rank"))
    window: list[Column] = []
    if S.WINDOW in run.columns:  # a window is configured: k_q per query
        bad_window = _bad_integer(F.col(S.WINDOW), minimum=1)
        rules.append((bad_window, INVALID_WINDOW))
        window = [F.when(~bad_window, F.col(S.WINDOW).try_cast("double").cast("int")).alias(S.WINDOW),
                  *kept_raw(run, S.WINDOW, identity_for=None)]
    return run.select(
        *parts,
        *meta_columns(run),
        F.col(S.QUERY_ID).cast("string").alias(S.QUERY_ID),
        F.col(S.DOC_ID).cast("string").alias(S.DOC_ID),
        score.alias(S.SCORE),
        F.when(~bad_rank, F.col(S.RANK).try_cast("double").cast("int")).alias(S.RANK),
        *kept_raw(run, S.SCORE, identity_for="double"),
        *kept_raw(run, S.RANK, identity_for=None),
        *window,
        *[F.coalesce(F.col(c).cast("string"), F.lit(NULL_SLICE)).alias(c) for c in slices],
        *[raw for c in slices for raw in kept_raw(run, c, identity_for=None)],
        first_reason(*rules).alias(REASON),
    )


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
    table: pa.Table, *, rank_by: str, partition_columns: Sequence[str],
) -> pa.Table:
    """A partition's run rows with the repeated-row reasons; of occurrences tied in ranking
    order, the better by the other ordering column, then the earlier in the file, is kept."""
    reasons, rows = _clean_rows(table)
    if S.WINDOW in table.column_names and len(rows):  # whole queries, before the repeats
        if mark_conflicting_windows(reasons, rows, table.take(pa.array(rows)), partition_columns):
            table = _with_reasons(table, reasons)
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


def label_run(run: DataFrame, *, rank_by: str, partition_columns: Sequence[str],
              slices: Sequence[str] = ()) -> DataFrame:
    """Typed run rows with ``_reason`` (null = clean) and the ``_raw_`` columns the typed
    ones cannot give back, laid out by query id; repeats by the engine's own rules.

    Args:
        run: partition columns, query_id, doc_id, score, rank (any atomic types),
            optionally ``_source`` and ``_line``.
        rank_by: "score" or "rank": which column must be valid and orders duplicates.
        slices: run slice columns (:mod:`releval.core.run_slices`).
    """
    parts = list(partition_columns)
    typed = by_query(typed_run(run, rank_by=rank_by, partition_columns=parts, slices=slices))
    return _whole_partitions(
        typed,
        lambda t: _label_repeated_run_rows(t, rank_by=rank_by, partition_columns=parts),
    )


def typed_qrels(qrels: DataFrame) -> DataFrame:
    """Qrels rows typed, with the row rules' ``_reason`` (a projection: no shuffle, no sort)."""
    relevance = F.col(S.RELEVANCE)
    bad_label = _bad_integer(relevance, minimum=-_INT_MAX)
    return qrels.select(
        *meta_columns(qrels),
        F.col(S.QUERY_ID).cast("string").alias(S.QUERY_ID),
        F.col(S.DOC_ID).cast("string").alias(S.DOC_ID),
        F.when(~bad_label, relevance.try_cast("double").cast("int")).alias(S.RELEVANCE),
        *kept_raw(qrels, S.RELEVANCE, identity_for=None),
        first_reason(
            *_malformed_rule(qrels),
            (blank(F.col(S.QUERY_ID).cast("string")), "missing_query_id"),
            *_gold_rule(qrels),
            (blank(F.col(S.DOC_ID).cast("string")), "missing_doc_id"),
            (bad_label, "invalid_relevance"),
        ).alias(REASON),
    )


def _label_conflicting_qrels_rows(table: pa.Table) -> pa.Table:
    """A partition's qrels rows with ``conflicting_label`` on the clean rows set aside."""
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
    """Typed qrels rows with ``_reason`` (null = clean) and ``_raw_relevance``, laid out by
    query id; ``conflicting_label`` by the engine's own rule."""
    return _whole_partitions(by_query(typed_qrels(qrels)), _label_conflicting_qrels_rows)
