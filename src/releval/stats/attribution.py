"""Retrieval and the answer, per run partition: each answered query's cell of retrieved x
correct, the cells' shares with Wilson intervals, Kendall's tau-b between the retrieval
measure and the answer score, and the mean answer score with and without the evidence.
See docs/answers.md."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql import types as T
from scipy.stats import kendalltau, norm

from releval.core import columns as S
from releval.core.columns import COVERED, IN_RUN, MEASURES, REASON, RETRIEVAL

SUCCESS = "success"
GENERATION_MISS = "generation_miss"
RETRIEVAL_MISS = "retrieval_miss"
ANSWERED_WITHOUT_EVIDENCE = "answered_without_evidence"
NO_QRELS = "no_qrels"
#: The cells of retrieved x correct, whose sum is the shares' denominator; then no_qrels.
SHARED_CELLS = (SUCCESS, GENERATION_MISS, RETRIEVAL_MISS, ANSWERED_WITHOUT_EVIDENCE)
CELLS = (*SHARED_CELLS, NO_QRELS)

_TAU, _P, _WITH, _WITHOUT = "_tau", "_p", "_with", "_without"


def _count(cell: str) -> str:
    return f"_n_{cell}"


def _string(column: str) -> str:
    return f"_string_{column}"


@dataclass(frozen=True)
class Thresholds:
    """When an answered query's evidence counts as retrieved (the measure ``retrieved_by``
    >= ``retrieved_at``) and its answer as correct (score >= ``correct_at``); ``level`` is the
    Wilson intervals' coverage."""

    retrieved_by: str
    retrieved_at: float = 1.0
    correct_at: float = 0.5
    level: float = 0.95


def wilson_interval(k: int, n: int, level: float) -> tuple[float | None, float | None]:
    """The Wilson score interval of the share ``k / n``; (None, None) when n = 0.

    With p = k / n and z the (1 + level) / 2 quantile of the standard normal:
    ``(p + z²/2n ± z·sqrt(p(1 - p)/n + z²/4n²)) / (1 + z²/n)``. Unlike p ± z·sqrt(p(1-p)/n)
    it stays within [0, 1] and has a width at k = 0 and k = n.
    """
    if n <= 0:
        return None, None
    z = float(norm.ppf((1 + level) / 2))
    p, z2 = k / n, z * z
    center = p + z2 / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return max(0.0, (center - half) / (1 + z2 / n)), min(1.0, (center + half) / (1 + z2 / n))


def cell_codes(retrieval: np.ndarray, score: np.ndarray, t: Thresholds) -> np.ndarray:
    """Each answered query's index in :data:`CELLS`; a NaN retrieval value: no qrels."""
    retrieved = retrieval >= t.retrieved_at
    correct = score >= t.correct_at
    codes = np.where(retrieved, np.where(correct, 0, 1), np.where(correct, 3, 2))
    return np.where(np.isnan(retrieval), CELLS.index(NO_QRELS), codes)


def _mean(values: np.ndarray) -> float | None:
    return float(values.mean()) if len(values) else None


def summarize(retrieval: np.ndarray, score: np.ndarray, t: Thresholds) -> dict[str, Any]:
    """One run partition's figures: the queries in each cell; over the attributed queries
    (those with qrels), Kendall's tau-b of (retrieval value, answer score) and its p-value
    (``scipy.stats.kendalltau``; None below 2 queries or when either side is constant),
    and the mean answer score with and without the evidence retrieved (None when empty)."""
    counts = np.bincount(cell_codes(retrieval, score, t), minlength=len(CELLS))
    judged = ~np.isnan(retrieval)
    x, y = retrieval[judged], score[judged]
    tau = p = None
    if len(x) >= 2 and np.ptp(x) > 0 and np.ptp(y) > 0:
        found = kendalltau(x, y)
        tau, p = float(found.statistic), float(found.pvalue)
    retrieved = x >= t.retrieved_at
    return {**{_count(c): int(n) for c, n in zip(CELLS, counts, strict=True)},
            _TAU: tau, _P: p, _WITH: _mean(y[retrieved]), _WITHOUT: _mean(y[~retrieved])}


def _join_null_safe(left: DataFrame, right: DataFrame, keys: Sequence[str]) -> DataFrame:
    """``left`` LEFT JOIN ``right`` on ``keys``, nulls equal (a partition value may be null);
    ``right``'s key columns are dropped."""
    renamed = right.select(*[F.col(k).alias(f"_right_{i}") for i, k in enumerate(keys)],
                           *[c for c in right.columns if c not in keys])
    same = [F.col(k).eqNullSafe(F.col(f"_right_{i}")) for i, k in enumerate(keys)]
    joined = left.join(renamed, on=same, how="left")
    return joined.drop(*[f"_right_{i}" for i in range(len(keys))])


def with_answer_scores(
    queries: DataFrame, labelled: DataFrame, *, partition_columns: Sequence[str]
) -> DataFrame:
    """The evaluation's wide table with each (run partition, query)'s clean ``answer_score``
    (null: not answered), which :func:`releval.core.engine.long_format` writes on every row."""
    keys = [*partition_columns, S.QUERY_ID]
    clean = labelled.where(F.col(REASON).isNull()).select(*keys, S.ANSWER_SCORE)
    return _join_null_safe(queries, clean, keys)


def answered(
    labelled: DataFrame, queries: DataFrame, qrels_queries: DataFrame, *,
    partition_columns: Sequence[str], measure_index: int,
) -> DataFrame:
    """The clean answers with their query's retrieval value (``_retrieval``: the measure at
    ``measure_index`` of the wide table; 0 for a judged query the run partition did not
    retrieve; null when the qrels do not judge the query) and ``_covered`` (the run
    retrieved the query or the qrels judge it).

    Args:
        labelled: :func:`releval.checks.answers.label_answers`.
        queries: the evaluation's wide table (one row per run partition and query).
        qrels_queries: the qrels' query ids (``query_id``), each once.
    """
    keys = [*partition_columns, S.QUERY_ID]
    clean = labelled.where(F.col(REASON).isNull()).select(*keys, S.ANSWER_SCORE)
    value = F.col(MEASURES)[measure_index][S.VALUE]
    wide = queries.select(*keys, F.col(IN_RUN).alias("_in_run"), value.alias("_value"))
    judged = qrels_queries.select(F.col(S.QUERY_ID).alias("_judged_query"),
                                  F.lit(True).alias("_judged"))
    joined = _join_null_safe(clean, wide, keys).join(
        judged, on=F.col(S.QUERY_ID) == F.col("_judged_query"), how="left")
    is_judged = F.coalesce(F.col("_judged"), F.lit(False))
    in_run = F.coalesce(F.col("_in_run"), F.lit(False))
    return joined.select(
        *keys, S.ANSWER_SCORE,
        F.when(is_judged, F.when(in_run, F.col("_value")).otherwise(F.lit(0.0)))
        .cast("double").alias(RETRIEVAL),
        (is_judged | in_run).alias(COVERED),
    )


def summaries(
    answered_rows: DataFrame, *, partition_columns: Sequence[str], thresholds: Thresholds
) -> list[Row]:
    """:func:`summarize` per run partition, in the executors (``applyInPandas``), collected:
    one row per run partition with answers, with its values as strings (``_string_<c>``,
    the ledger's keys) and ``_covered``, the answered queries the run retrieved or the qrels
    judge."""
    parts = list(partition_columns)
    keys = [*parts, *(_string(c) for c in parts)]
    schema = T.StructType([
        *[answered_rows.schema[c] for c in parts],
        *[T.StructField(_string(c), T.StringType()) for c in parts],
        *[T.StructField(_count(c), T.LongType()) for c in CELLS],
        *[T.StructField(c, T.DoubleType()) for c in (_TAU, _P, _WITH, _WITHOUT)],
        T.StructField(COVERED, T.LongType()),
    ])

    def one(pdf: pd.DataFrame) -> pd.DataFrame:
        ordered = pdf.sort_values(S.QUERY_ID)  # the means' rounding does not depend on row order
        figures = summarize(ordered[RETRIEVAL].to_numpy(np.float64),
                            ordered[S.ANSWER_SCORE].to_numpy(np.float64), thresholds)
        row = {k: pdf[k].iloc[0] for k in keys}
        return pd.DataFrame([{**row, **figures, COVERED: int(pdf[COVERED].sum())}])

    rows = answered_rows.select(*parts, *[F.col(c).cast("string").alias(_string(c)) for c in parts],
                                S.QUERY_ID, RETRIEVAL, S.ANSWER_SCORE, COVERED)
    grouped = rows.groupBy(*keys) if keys else rows.groupBy(F.lit(0).alias("_all"))
    return grouped.applyInPandas(one, schema).collect()


def partition_key(summary: Row, partition_columns: Sequence[str]) -> tuple[str | None, ...]:
    """A summary's run partition as the ledger keys it: its values as strings."""
    return tuple(summary[_string(c)] for c in partition_columns)


def answered_queries(summary: Row) -> int:
    """The answers a summary counts, in every cell (the rows the attribution used)."""
    return sum(int(summary[_count(c)]) for c in CELLS)


def rows(
    found: Sequence[Row], *, partition_columns: Sequence[str], thresholds: Thresholds
) -> list[dict[str, Any]]:
    """The attribution table's rows (no ``job_run_id``) from the :func:`summaries`: per run
    partition, one per cell, each with the partition's figures; ``no_qrels`` has no share."""
    out = []
    for summary in found:
        attributed = sum(int(summary[_count(c)]) for c in SHARED_CELLS)
        for cell in CELLS:
            n = int(summary[_count(cell)])
            shared = cell != NO_QRELS and attributed > 0
            low, high = wilson_interval(n, attributed, thresholds.level) if shared else (None, None)
            out.append({
                **{c: summary[c] for c in partition_columns},
                S.CELL: cell, S.QUERIES: n, S.SHARE: n / attributed if shared else None,
                S.SHARE_CI_LOW: low, S.SHARE_CI_HIGH: high, S.ATTRIBUTED: attributed,
                S.RETRIEVED_BY_MEASURE: thresholds.retrieved_by,
                S.RETRIEVED_AT: thresholds.retrieved_at, S.CORRECT_AT: thresholds.correct_at,
                S.KENDALL_TAU_B: summary[_TAU], S.KENDALL_P_VALUE: summary[_P],
                S.MEAN_SCORE_WITH_EVIDENCE: summary[_WITH],
                S.MEAN_SCORE_WITHOUT_EVIDENCE: summary[_WITHOUT], S.CI_LEVEL: thresholds.level,
            })
    return out
