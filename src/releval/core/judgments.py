"""A partition's judgments by query, and the statistics of the qrels alone (R, N, the ideal
DCG), at a fixed cutoff per query or at each ranking's window."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from releval.core.arrays import gain_of as gain
from releval.core.measures.stats import QrelsStat
from releval.core.window import window_sums


class Judgments:
    """One partition's judgments grouped by query: one label per (query, doc), the highest,
    each query's labels best first (the ideal ranking)."""

    def __init__(self, query: np.ndarray, label: np.ndarray, queries: int) -> None:
        order = np.lexsort((-label, query))
        self.query, self.label, self.queries = query[order], label[order], queries
        starts = np.searchsorted(self.query, np.arange(queries))
        self.position = np.arange(len(order), dtype=np.int64) - starts[self.query] + 1

    def per_query(self, weights: np.ndarray) -> np.ndarray:
        return np.bincount(self.query, weights=weights, minlength=self.queries)


def _num_rel(j: Judgments, spec: QrelsStat) -> np.ndarray:
    return j.per_query(j.label >= (spec.level or 0)).astype(np.int64)


def _num_nonrel(j: Judgments, spec: QrelsStat) -> np.ndarray:
    return j.per_query(j.label < (spec.level or 0)).astype(np.int64)


def _idcg(j: Judgments, spec: QrelsStat) -> np.ndarray:
    within = np.ones(len(j.label), dtype=bool) if spec.cutoff is None else j.position <= spec.cutoff
    term = gain(j.label, spec.gain) / np.log2(j.position.astype(np.float64) + 1.0)
    return j.per_query(np.where(within, term, 0.0))


def qrels_ddl(spec: QrelsStat) -> str:
    """The Spark type of a qrels statistic: the ideal DCG is a double, the counts bigints."""
    return "double" if spec.kind == "idcg" else "bigint"


#: How the kernel computes each kind of :class:`QrelsStat` (one entry per kind).
QRELS_KINDS: dict[str, Callable[[Judgments, QrelsStat], np.ndarray]] = {
    "num_rel": _num_rel,
    "num_nonrel": _num_nonrel,
    "idcg": _idcg,
}


def ideal_at_window(
    j: Judgments | None, group_query: np.ndarray, window: np.ndarray, kind: str
) -> np.ndarray:
    """Per ranking: the ideal DCG of its query cut at its own k_q (``kind``: the gain)."""
    if j is None:
        raise ValueError("the judgments are set before any statistic is computed")
    term = gain(j.label, kind) / np.log2(j.position.astype(np.float64) + 1.0)
    return window_sums(j.query, j.queries, term, group_query, window)


__all__ = ["QRELS_KINDS", "Judgments", "ideal_at_window", "qrels_ddl"]
