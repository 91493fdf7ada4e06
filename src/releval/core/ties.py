"""Tie-aware statistics: expected values over every ordering of tied scores.

A tie group is a ranking's documents of equal score; each ordering of each group is equally
likely (McSherry and Najork, ECIR 2008). Closed forms per group, no sampling; a cutoff is an
int, None (all ranks) or one value per query (a NumPy array). See docs/which-measure.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import gammaln

from releval.core.arrays import gain_of
from releval.core.measures.stats import RunStat


def tie_groups(group: np.ndarray, order_value: np.ndarray, rank_by: str) -> np.ndarray:
    """Rows in ranking order -> a tie id per row: rows of one ranking with equal scores share it.

    With ``rank_by = "rank"`` every row is its own group: a logged rank holds one document
    (the others are quarantined as ``duplicate_rank``), so there are no ties.
    """
    if rank_by != "score" or not len(group):
        return np.arange(len(group), dtype=np.int64)
    new = np.concatenate(([True], (group[1:] != group[:-1]) | (order_value[1:] != order_value[:-1])))
    return np.cumsum(new) - 1


class TieRows:
    """One view's rows in ranking order, with each row's tie group's figures.

    Args:
        query: each row's ranking id (ascending), ``queries`` in all.
        tie: each row's tie id (non-decreasing; rows of one group are adjacent).
        position: each row's position in the view (a group holds positions s+1..s+n).
        relevant: each row's relevance; ``gain``: each row's gain (nDCG).
        cutoff: None (all ranks), an int, or an array with one cutoff per query.
    """

    def __init__(self, query: np.ndarray, tie: np.ndarray, position: np.ndarray,
                 relevant: np.ndarray, queries: int, cutoff: Any = None,
                 gain: np.ndarray | None = None) -> None:
        self.query, self.queries = query, queries
        self.position = position.astype(np.float64)
        rel = relevant.astype(np.float64)
        first = np.concatenate(([True], tie[1:] != tie[:-1])) if len(tie) else np.zeros(0, bool)
        self.starts = np.flatnonzero(first)
        self.of = np.cumsum(first) - 1  # each row's tie group, 0..groups-1
        self.n = np.bincount(self.of, minlength=len(self.starts)).astype(np.float64)
        self.r = np.bincount(self.of, weights=rel, minlength=len(self.starts))
        self.s = self.position[self.starts] - 1.0
        # relevant rows above each group within its query
        before = np.concatenate(([0.0], np.cumsum(rel)))
        query_start = np.searchsorted(query, np.arange(queries))
        group_query = query[self.starts]
        self.r_before = before[self.starts] - before[query_start[group_query]]
        self.slot = self.position - self.s[self.of]  # 1..n within the group
        limit = np.inf if cutoff is None else cutoff
        k = np.asarray(limit, dtype=np.float64)
        self.k = k[query] if k.ndim else np.full(len(query), float(k))
        self.k_group = self.k[self.starts]
        self.gain = np.zeros(len(query)) if gain is None else gain

    def per_query(self, weights: np.ndarray) -> np.ndarray:
        return np.bincount(self.query, weights=weights, minlength=self.queries)

    def any_group(self, flag: np.ndarray) -> np.ndarray:
        """Per query: 1.0 where one of its tie groups has ``flag``, else 0.0."""
        hits = np.bincount(self.query[self.starts], weights=flag.astype(np.float64),
                           minlength=self.queries)
        return (hits > 0).astype(np.float64)

    def mixed(self) -> np.ndarray:
        """Groups holding relevant and non-relevant documents."""
        return (self.r > 0) & (self.r < self.n)

    def first_at(self) -> np.ndarray:
        """Per row of a query's first group with a relevant document: the probability that the
        group's first relevant document is in this row's slot j, C(n-j, r-1) / C(n, r); 0
        elsewhere."""
        g = self.of
        n, r, j = self.n[g], self.r[g], self.slot
        possible = (self.r_before[g] == 0) & (r > 0) & (n - j >= r - 1)
        a, b = np.where(possible, n - j, 0.0), np.where(possible, r - 1, 0.0)
        log_p = _log_choose(a, b) - _log_choose(n, np.where(possible, r, 0.0))
        return np.where(possible, np.exp(log_p), 0.0)


def _log_choose(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return gammaln(a + 1.0) - gammaln(b + 1.0) - gammaln(a - b + 1.0)


def expected_rel_ret(t: TieRows) -> np.ndarray:
    """E[relevant at ranks 1..k]: each of a group's slots inside k holds r/n relevant."""
    g = t.of
    return t.per_query(np.where(t.position <= t.k, t.r[g] / t.n[g], 0.0))


def expected_hit(t: TieRows) -> np.ndarray:
    """P(a relevant document at ranks 1..k): the first relevant group's first relevant slot
    falls inside k."""
    return t.per_query(np.where(t.position <= t.k, t.first_at(), 0.0))


def expected_rr(t: TieRows) -> np.ndarray:
    """E[1 / rank of the first relevant document] (0 past k): sum over the first relevant
    group's slots j of P(first at j) / (s + j)."""
    return t.per_query(np.where(t.position <= t.k, t.first_at() / t.position, 0.0))


def expected_prec_sum(t: TieRows) -> np.ndarray:
    """E[sum of precision at each relevant document inside k]: a group's r relevant documents
    are each at slot i with probability 1/n, with (i-1)(r-1)/(n-1) other relevant ones of the
    group above (hypergeometric): r/n * (R_before + 1 + (i-1)(r-1)/(n-1)) / (s+i) per slot."""
    g = t.of
    n, r = t.n[g], t.r[g]
    above = (t.slot - 1.0) * (r - 1.0) / np.maximum(n - 1.0, 1.0)
    term = r / n * (t.r_before[g] + 1.0 + above) / t.position
    return t.per_query(np.where((t.position <= t.k) & (r > 0), term, 0.0))


def expected_dcg(t: TieRows) -> np.ndarray:
    """E[DCG@k]: the group's mean gain times the discount of each of its slots inside k."""
    g = t.of
    mean = np.bincount(g, weights=t.gain, minlength=len(t.starts)) / t.n
    return t.per_query(np.where(t.position <= t.k, mean[g] / np.log2(t.position + 1.0), 0.0))


def _straddles(t: TieRows) -> np.ndarray:
    return (t.s < t.k_group) & (t.k_group < t.s + t.n)


def depends_set(t: TieRows) -> np.ndarray:
    """P@k, R@k: a group with mixed relevance straddles k."""
    return t.any_group(t.mixed() & _straddles(t))


def depends_hit(t: TieRows) -> np.ndarray:
    """Hit@k: a group with mixed relevance straddles k, no relevant document above it, and
    its slots inside k can all hold non-relevant ones (n - r >= k - s)."""
    room = t.n - t.r >= t.k_group - t.s
    return t.any_group(t.mixed() & _straddles(t) & (t.r_before == 0) & room)


def depends_rr(t: TieRows) -> np.ndarray:
    """RR: the first group with a relevant document is mixed and starts inside k."""
    return t.any_group(t.mixed() & (t.r_before == 0) & (t.s < t.k_group))


def depends_ap(t: TieRows) -> np.ndarray:
    """AP: a group with mixed relevance starts inside k (it holds a relevant document, so it
    is at or above the last relevant one)."""
    return t.any_group(t.mixed() & (t.s < t.k_group))


def depends_dcg(t: TieRows) -> np.ndarray:
    """nDCG@k: a group whose gains differ starts inside k."""
    if not len(t.starts):
        return np.zeros(t.queries)
    low = np.minimum.reduceat(t.gain, t.starts)
    high = np.maximum.reduceat(t.gain, t.starts)
    return t.any_group((low != high) & (t.s < t.k_group))


_EXPECTED = {
    "rel_ret": expected_rel_ret, "hit": expected_hit, "rr": expected_rr,
    "prec_sum": expected_prec_sum, "dcg": expected_dcg,
    "dep_set": depends_set, "dep_hit": depends_hit, "dep_rr": depends_rr,
    "dep_ap": depends_ap, "dep_dcg": depends_dcg,
}
#: The kernel kind of each tie-aware statistic: ``ties_`` and its key in the table above.
TIE_PREFIX = "ties_"


def tie_stat(r: Any, spec: RunStat) -> np.ndarray:
    """A tie-aware statistic of the kernel's ranked rows (``releval.core.ranked.Ranked``), per ranking."""
    rows = r.judged if spec.judged else np.ones(len(r.group), dtype=bool)
    what = spec.kind.removeprefix(TIE_PREFIX)
    gain = None
    if what in ("dcg", "dep_dcg"):
        gain = gain_of(np.where(r.judged, r.label, 0), spec.gain)[rows]
    # a window: each ranking's own k_q (the judged view's window is refused at parsing)
    cutoff = r.cutoffs(spec.cutoff) if isinstance(spec.cutoff, str) else spec.cutoff
    t = TieRows(r.group[rows], r.tie[rows], r.view_position(spec.judged)[rows],
                r.relevant(spec.level or 0)[rows], r.groups, cutoff, gain)
    return _EXPECTED[what](t)


#: The kernel's tie-aware kinds (:data:`releval.core.kernel.KINDS`).
TIE_KINDS = {TIE_PREFIX + name: tie_stat for name in _EXPECTED}

__all__ = ["TIE_KINDS", "TieRows", "tie_groups", "tie_stat"]
