"""Input rows split by the row rules (:mod:`releval.checks.rules`) into the clean rows the
engine ranks and the quarantine's rows: input, source, line, partition, the raw values, the
reason code and its message."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from releval.checks.rules import (
    QRELS,
    QRELS_RAW_COLUMNS,
    RUN,
    RUN_RAW_COLUMNS,
    label_qrels,
    label_run,
    partition_map,
    raw_map,
    reason_messages,
)
from releval.core import columns as S
from releval.core.columns import RAW_LINE, RAW_SOURCE, REASON


def quarantined(
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
        raw_map(labelled, raw_columns).alias(S.RAW),
        F.col(REASON).alias(S.REASON_CODE),
        reason_messages()[F.col(REASON)].alias(S.MESSAGE),
    )


def split_run(
    run: DataFrame,
    *,
    rank_by: str,
    partition_columns: Sequence[str],
    number_lines: Callable[[DataFrame], DataFrame] | None = None,
    slices: Sequence[str] = (),
) -> tuple[DataFrame, DataFrame]:
    """Split run rows into (clean, quarantined) by every rule.

    Args:
        run: partition columns, query_id, doc_id, score, rank (any atomic types).
        rank_by: "score" or "rank": which column must be valid.
        number_lines: gives the quarantined rows their ``_line`` from their position.
        slices: run slice columns (:mod:`releval.core.run_slices`), kept on the clean rows.

    Returns:
        clean: partition columns, query_id, doc_id, score (double), rank (int).
        quarantined: input, source, line, partition, raw, reason_code, message.
    """
    parts = list(partition_columns)
    labelled = label_run(run, rank_by=rank_by, partition_columns=parts, slices=slices)
    window = [S.WINDOW] if S.WINDOW in run.columns else []
    clean = labelled.where(F.col(REASON).isNull()).select(
        *parts, S.QUERY_ID, S.DOC_ID, S.SCORE, S.RANK, *window, *slices
    )
    return clean, quarantined(
        labelled, input_name=RUN, partition_columns=parts,
        raw_columns=(*RUN_RAW_COLUMNS, *window, *slices), number_lines=number_lines,
    )


def split_qrels(
    qrels: DataFrame, *, number_lines: Callable[[DataFrame], DataFrame] | None = None
) -> tuple[DataFrame, DataFrame]:
    """Split qrels rows into (clean, quarantined) by every rule (``number_lines``: see
    :func:`split_run`).

    Returns:
        clean: query_id, doc_id, relevance (int); exact duplicate judgments are kept.
        quarantined: input, source, line, partition, raw, reason_code, message.
    """
    labelled = label_qrels(qrels)
    clean = labelled.where(F.col(REASON).isNull()).select(S.QUERY_ID, S.DOC_ID, S.RELEVANCE)
    return clean, quarantined(
        labelled, input_name=QRELS, partition_columns=(), raw_columns=QRELS_RAW_COLUMNS,
        number_lines=number_lines,
    )
