"""The answers' row rules: every answers row is used or quarantined with the first reason
that applies (:data:`releval.checks.rules.REASONS`). See docs/answers.md."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from releval.checks.rules import (
    ANSWERS,
    DUPLICATE_ANSWER,
    INVALID_ANSWER_SCORE,
    UNKNOWN_PARTITION,
    blank,
    first_reason,
    kept_raw,
    meta_columns,
)
from releval.checks.split import quarantined
from releval.core import columns as S
from releval.core.columns import REASON, UNCAST_PARTITION

#: The answers columns the quarantine's ``raw`` map keeps.
ANSWERS_RAW_COLUMNS = (S.QUERY_ID, S.ANSWER_SCORE)
_KNOWN = "_known"


def label_answers(
    answers: DataFrame, *, partition_columns: Sequence[str], known: DataFrame | None
) -> DataFrame:
    """Answers rows typed, with ``_reason`` (null: clean), in the order of the rules:
    ``missing_query_id``, ``invalid_answer_score``, ``unknown_partition``, then, among the rows
    that passed those, ``duplicate_answer`` on every row of a (run partition, query) scored
    more than once (which score is right is unknown, so none is used).

    Args:
        answers: the raw rows (:func:`releval.io.readers.raw_answers_input`).
        known: the run partitions the run has, one string column per partition column
            (a small frame, broadcast); None without partition columns.
    """
    parts = list(partition_columns)
    query = F.col(S.QUERY_ID).cast("string")
    score = F.col(S.ANSWER_SCORE).try_cast("double")
    rows, unknown = answers, F.col(UNCAST_PARTITION)
    if parts and known is not None:
        marks = known.select(*[F.col(c).alias(f"{_KNOWN}_{i}") for i, c in enumerate(parts)],
                             F.lit(True).alias(_KNOWN))
        same = [F.col(c).cast("string").eqNullSafe(F.col(f"{_KNOWN}_{i}"))
                for i, c in enumerate(parts)]
        rows = answers.join(F.broadcast(marks), on=same, how="left")
        unknown = unknown | F.col(_KNOWN).isNull()
    per_row = first_reason(
        (blank(query), "missing_query_id"),
        (score.isNull() | F.isnan(score) | (score < 0) | (score > 1), INVALID_ANSWER_SCORE),
        (unknown, UNKNOWN_PARTITION),
    )
    clean_in_group = F.count(F.when(per_row.isNull(), 1)).over(
        Window.partitionBy(*parts, query)
    )
    reason = F.when(per_row.isNull() & (clean_in_group > 1), F.lit(DUPLICATE_ANSWER))
    return rows.select(
        *parts,
        *meta_columns(rows),
        query.alias(S.QUERY_ID),
        score.alias(S.ANSWER_SCORE),
        *kept_raw(answers, S.ANSWER_SCORE, identity_for="double"),
        reason.otherwise(per_row).alias(REASON),
    )


def answers_quarantine(labelled: DataFrame, *, partition_columns: Sequence[str]) -> DataFrame:
    """The rejected answers rows (:data:`releval.io.tables.QUARANTINE_SCHEMA`), ``input``
    ``answers``."""
    return quarantined(labelled, input_name=ANSWERS, partition_columns=partition_columns,
                       raw_columns=ANSWERS_RAW_COLUMNS, number_lines=None)
