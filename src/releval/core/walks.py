"""Statistics that walk each ranking in order: the trec_eval measures defined by a loop over
the ranked documents (interpolated precision, infAP, rbp, G, ndcg_rel, Rndcg).

A walker gets a :class:`Rankings` (one partition's rankings of one view) and returns one
value per ranking. Each follows trec_eval 10.0's own loop, edge cases included.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from releval.core.measures.stats import RunStat

#: trec_eval's floor of infAP's estimates
INFAP_EPSILON = 0.00001


class Rankings:
    """One view of a partition's rankings (all documents, or judged ones at condensed
    positions), in ranking order, with each ranking's judgments."""

    def __init__(self, ranked: Any, judged: bool) -> None:
        rows = ranked.judged if judged else np.ones(len(ranked.group), dtype=bool)
        self.group = ranked.group[rows]
        self.position = ranked.view_position(judged)[rows]
        self.label = ranked.label[rows]
        self.judged = ranked.judged[rows]
        self.pooled = ranked.pooled[rows]
        self.groups = ranked.groups
        self.starts = np.searchsorted(self.group, np.arange(self.groups + 1))
        self.num_ret = np.diff(self.starts)
        # each ranking's judgments: the labels of its query, best first
        judgments, group_query = ranked.judgments, ranked.group_query
        bounds = np.searchsorted(judgments.query, np.arange(judgments.queries + 1))
        self._labels = judgments.label
        self._from, self._to = bounds[group_query], bounds[group_query + 1]

    def per_group(self, weights: np.ndarray) -> np.ndarray:
        return np.bincount(self.group, weights=weights, minlength=self.groups)

    def running(self, values: np.ndarray) -> np.ndarray:
        """Running sum of ``values`` within each ranking, current row included."""
        total = np.cumsum(values)
        before = np.concatenate(([0], total))[self.starts[:-1]][self.group]
        return total - before

    def relevant(self, level: int) -> np.ndarray:
        return self.judged & (self.label >= level)

    def num_rel(self, level: int) -> np.ndarray:
        """Each ranking's query's judgments with label >= level."""
        labels = self._labels >= level
        counts = np.concatenate(([0], np.cumsum(labels)))
        return counts[self._to] - counts[self._from]

    def highest_label(self) -> np.ndarray:
        """Each ranking's query's highest label (0 with no judgments)."""
        if not len(self._labels):
            return np.zeros(len(self._from), dtype=np.float64)
        first = self._labels[np.minimum(self._from, len(self._labels) - 1)]
        return np.where(self._to > self._from, first, 0).astype(np.float64)

    def judgments(self, g: int) -> np.ndarray:
        """The labels of ranking g's query, best first."""
        return self._labels[self._from[g]:self._to[g]]

    def gains(self, g: int) -> np.ndarray:
        """Ranking g's gains in ranking order: the label if judged and > 0, else 0."""
        rows = slice(self.starts[g], self.starts[g + 1])
        return np.where(self.judged[rows] & (self.label[rows] > 0), self.label[rows], 0).astype(
            np.float64
        )


def _round_half_away(x: float) -> int:
    """C's ``lround`` for x >= 0."""
    floor = math.floor(x)
    return floor + (1 if x - floor >= 0.5 else 0)


def iprec(r: Rankings, spec: RunStat) -> np.ndarray:
    """Interpolated precision at recall ``param``: the best precision at any rank at or past
    the ``round(param * R)``-th relevant document; 0 when the run retrieves fewer relevant."""
    level = spec.level or 0
    relevant = r.relevant(level)
    group = r.group[relevant]
    k = r.running(relevant.astype(np.int64))[relevant]
    precision = k / r.position[relevant].astype(np.float64)
    # suffix maximum within each ranking: walk backwards, each ranking offset above the last
    offset = 2.0 * (r.groups - group[::-1])
    best = (np.maximum.accumulate(precision[::-1] + offset) - offset)[::-1]
    rel_ret = np.bincount(group, minlength=r.groups)
    first = np.concatenate(([0], np.cumsum(rel_ret)))[:-1]
    num_rel = r.num_rel(level)
    out = np.zeros(r.groups)
    for g in np.flatnonzero(rel_ret):
        cut = _round_half_away(float(spec.param or 0.0) * float(num_rel[g]))
        if cut <= rel_ret[g]:
            out[g] = best[first[g] + max(cut, 1) - 1]
    return out


def inf_ap(r: Rankings, spec: RunStat) -> np.ndarray:
    """infAP (Yilmaz and Aslam): at each relevant document, precision estimated from the judged
    documents above it, with unpooled documents counted as non-relevant; over R."""
    level = spec.level or 0
    relevant = r.relevant(level)
    nonrel = r.judged & (r.label < level)
    unjudged_in_pool = r.pooled & ~r.judged
    rel_before = r.running(relevant.astype(np.int64)) - relevant
    nonrel_before = r.running(nonrel.astype(np.int64)) - nonrel
    pool_before = r.running(unjudged_in_pool.astype(np.int64)) - unjudged_in_pool
    j = (r.position - 1).astype(np.float64)
    safe_j = np.maximum(j, 1.0)
    term = np.where(
        j == 0, 1.0,
        1.0 / (j + 1.0)
        + (j / (j + 1.0)) * ((rel_before + nonrel_before + pool_before) / safe_j)
        * ((rel_before + INFAP_EPSILON) / (rel_before + nonrel_before + 2 * INFAP_EPSILON)),
    )
    total = r.per_group(np.where(relevant, term, 0.0))
    num_rel = r.num_rel(level)
    return np.where(num_rel > 0, total / np.maximum(num_rel, 1), total)


def rbp(r: Rankings, spec: RunStat) -> np.ndarray:
    """Rank-biased precision: (1 - p) * sum of gain * p^(rank - 1), gains (the labels) scaled
    to [0, 1] by the query's highest label when it is above 1."""
    p = float(spec.param if spec.param is not None else 0.9)
    top = np.maximum(r.highest_label(), 1.0)
    gain = np.where(r.judged & (r.label > 0), r.label, 0) / top[r.group]
    weight = np.power(p, (r.position - 1).astype(np.float64))
    return (1.0 - p) * r.per_group(gain * weight)


def rbp_resid(r: Rankings, spec: RunStat) -> np.ndarray:
    """rbp's residual as trec_eval computes it (p = 0.9): p^n + (1 - p) * sum of p^(rank - 1)
    over the unjudged documents, n the documents retrieved; 0 when all are judged."""
    p = 0.9
    unjudged = ~r.judged
    weight = np.power(p, (r.position - 1).astype(np.float64))
    total = r.per_group(np.where(unjudged, weight, 0.0))
    any_unjudged = r.per_group(unjudged.astype(np.float64)) > 0
    return np.where(any_unjudged, np.power(p, r.num_ret.astype(np.float64)) + (1 - p) * total, 0.0)


def bin_g(r: Rankings, spec: RunStat) -> np.ndarray:
    """binG: sum over relevant retrieved documents of 1 / log2(2 + non-relevant above), / R."""
    level = spec.level or 0
    relevant = r.relevant(level)
    above = r.position - r.running(relevant.astype(np.int64))
    total = r.per_group(np.where(relevant, 1.0 / np.log2(2.0 + np.maximum(above, 0)), 0.0))
    num_rel = r.num_rel(level)
    return np.where(num_rel > 0, total / np.maximum(num_rel, 1), 0.0)


def _ideal(judgments: np.ndarray) -> Callable[[int], float]:
    """The ideal gain at 0-based rank i: the query's labels best first, then 0."""
    positive = judgments[judgments > 0].astype(np.float64)
    return lambda i: float(positive[i]) if i < len(positive) else 0.0


def _per_ranking(fn: Callable[[np.ndarray, np.ndarray, int], float]) -> Callable[..., np.ndarray]:
    def walker(r: Rankings, spec: RunStat) -> np.ndarray:
        level = spec.level or 0
        num_rel = r.num_rel(level)
        return np.array([fn(r.gains(g), r.judgments(g), int(num_rel[g])) for g in range(r.groups)],
                        dtype=np.float64)
    return walker


def _g(gains: np.ndarray, judgments: np.ndarray, num_rel: int) -> float:
    ideal = _ideal(judgments)
    ideal_gain = ideal(0)
    results_g = sum_results = sum_ideal = sum_cost = 0.0
    i, n = 0, len(gains)
    while i < n and ideal_gain > 0.0:
        sum_results += gains[i]
        ideal_gain = ideal(i)
        sum_ideal += ideal_gain
        sum_cost += max(ideal_gain, 1.0)
        if gains[i] != 0:
            results_g += gains[i] / math.log2(2 + sum_cost - sum_results)
        i += 1
    while i < n:
        sum_results += gains[i]
        sum_cost += 1.0
        if gains[i] != 0:
            results_g += gains[i] / math.log2(2 + sum_cost - sum_results)
        i += 1
    while ideal_gain > 0.0:
        ideal_gain = ideal(i)
        sum_ideal += ideal_gain
        i += 1
    return results_g / sum_ideal if sum_ideal > 0.0 else 0.0


def _ndcg_rel(gains: np.ndarray, judgments: np.ndarray, num_rel: int) -> float:
    ideal = _ideal(judgments)
    ideal_gain = ideal(0)
    results_dcg = ideal_dcg = total = 0.0
    rel_ret = rel = 0
    i, n = 0, len(gains)
    while i < n and ideal_gain > 0.0:
        if gains[i] != 0:
            results_dcg += gains[i] / math.log2(i + 2)
        ideal_gain = ideal(i)
        if ideal_gain > 0.0:
            rel += 1
            ideal_dcg += ideal_gain / math.log2(i + 2)
        if gains[i] > 0:
            total += results_dcg / ideal_dcg
            rel_ret += 1
        i += 1
    while i < n:
        if gains[i] != 0:
            results_dcg += gains[i] / math.log2(i + 2)
        if gains[i] > 0:
            total += results_dcg / ideal_dcg
            rel_ret += 1
        i += 1
    while ideal_gain > 0.0:
        ideal_gain = ideal(i)
        if ideal_gain > 0.0:
            rel += 1
            ideal_dcg += ideal_gain / math.log2(i + 2)
        i += 1
    if ideal_dcg > 0.0:
        total += (rel - rel_ret) * results_dcg / ideal_dcg
    return total / rel if total > 0.0 else 0.0


def _rndcg(gains: np.ndarray, judgments: np.ndarray, num_rel: int) -> float:
    if num_rel == 0:
        return 0.0
    ideal = _ideal(judgments)
    ideal_gain = old = ideal(0)
    results_dcg = ideal_dcg = total = 0.0
    changed = 0
    i, n = 0, len(gains)
    while i < n and ideal_gain > 0.0:
        ideal_gain = ideal(i)
        if old != ideal_gain:
            if ideal_dcg > 0.0:
                total += results_dcg / ideal_dcg
                changed += 1
            old = ideal_gain
        if gains[i] != 0:
            results_dcg += gains[i] / math.log2(i + 2)
        if ideal_gain > 0.0:
            ideal_dcg += ideal_gain / math.log2(i + 2)
        i += 1
    if i < n:
        results_dcg += float(np.sum(gains[i:] / np.log2(np.arange(i, n) + 2.0)))
        if ideal_dcg > 0.0:
            total += results_dcg / ideal_dcg
            changed += 1
        i = n
    while ideal_gain > 0.0:
        ideal_gain = ideal(i)
        if old != ideal_gain:
            if ideal_dcg > 0.0:
                total += results_dcg / ideal_dcg
                changed += 1
            old = ideal_gain
        if ideal_gain > 0.0:
            ideal_dcg += ideal_gain / math.log2(i + 2)
        i += 1
    return total / changed if changed else 0.0


#: walker name -> one value per ranking (``RunStat.walker``)
WALKERS: dict[str, Callable[[Rankings, RunStat], np.ndarray]] = {
    "iprec": iprec,
    "infAP": inf_ap,
    "rbp": rbp,
    "rbp_resid": rbp_resid,
    "binG": bin_g,
    "G": _per_ranking(_g),
    "ndcg_rel": _per_ranking(_ndcg_rel),
    "Rndcg": _per_ranking(_rndcg),
}


def walk(ranked: Any, spec: RunStat) -> np.ndarray:
    """The walker ``spec.walker`` over ranked's view (``spec.judged``)."""
    return WALKERS[spec.walker or ""](Rankings(ranked, spec.judged), spec)
