"""Retrieval and the answer, per run partition: each answered query's cell of retrieved x
correct, the cells' shares with Wilson intervals, Kendall's tau-b between the retrieval
measure and the answer score, and the mean answer score with and without the evidence.
The Spark side (the answered queries, their summaries in the executors, the rows) is
:mod:`releval.frames.attribution`. See docs/answers.md."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import kendalltau, norm

SUCCESS = "success"
GENERATION_MISS = "generation_miss"
RETRIEVAL_MISS = "retrieval_miss"
ANSWERED_WITHOUT_EVIDENCE = "answered_without_evidence"
NO_QRELS = "no_qrels"
#: The cells of retrieved x correct, whose sum is the shares' denominator; then no_qrels.
SHARED_CELLS = (SUCCESS, GENERATION_MISS, RETRIEVAL_MISS, ANSWERED_WITHOUT_EVIDENCE)
CELLS = (*SHARED_CELLS, NO_QRELS)

#: :func:`summarize`'s keys besides the cells' counts: tau-b, its p-value and the mean
#: answer score with and without the evidence
TAU, P, WITH, WITHOUT = "_tau", "_p", "_with", "_without"


def count_column(cell: str) -> str:
    """The key of a cell's count in :func:`summarize`."""
    return f"_n_{cell}"


def string_column(column: str) -> str:
    """A run partition column's value as a string, in a summary."""
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
    return {**{count_column(c): int(n) for c, n in zip(CELLS, counts, strict=True)},
            TAU: tau, P: p, WITH: _mean(y[retrieved]), WITHOUT: _mean(y[~retrieved])}
