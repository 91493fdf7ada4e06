"""Agreement of two sets of relevance labels, and of the system orderings they give.

Labels: Cohen's kappa (plain, and linearly weighted on the label values), its bootstrap
interval over queries, the share of pairs agreeing on relevance. Orderings: Kendall's tau-b
and tau_AP (Yilmaz, Aslam and Robertson, SIGIR 2008). Pure NumPy; docs/agreement.md."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: Why kappa is null: no pair judged by both, or one label used by both sides.
NO_PAIRS = "no (query, document) pair judged by both"
ONE_LABEL = "one label on both sides"


@dataclass(frozen=True)
class Kappa:
    """Cohen's kappa, plain and linear-weighted; both None with ``reason`` when undefined."""

    plain: float | None
    linear: float | None
    reason: str | None = None


def confusion(reference: np.ndarray, other: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Counts ``[i, j]`` of pairs labelled ``labels[i]`` by the reference and ``labels[j]``
    by the other; ``labels`` sorted, holding every label of both sides."""
    i = np.searchsorted(labels, reference)
    j = np.searchsorted(labels, other)
    k = len(labels)
    return np.bincount(i * k + j, minlength=k * k).reshape(k, k)


def kappa(table: np.ndarray, labels: np.ndarray) -> Kappa:
    """Cohen's kappa of a confusion table (reference rows, other columns).

    kappa = (p_o - p_e) / (1 - p_e): p_o the share on the diagonal, p_e = sum_i r_i c_i
    from the margins' shares r, c. Linear-weighted, w_ij = |labels[i] - labels[j]| (the
    label values, not their positions): kappa_w = 1 - sum w_ij o_ij / sum w_ij r_i c_j.
    Undefined (None, with the reason) without pairs or when p_e = 1: both sides use
    one and the same label.
    """
    n = int(table.sum())
    if n == 0:
        return Kappa(None, None, NO_PAIRS)
    # in counts, exact integers: kappa = (n trace - E) / (n^2 - E), E = sum_i rows_i cols_i
    rows, cols = table.sum(axis=1).astype(np.int64), table.sum(axis=0).astype(np.int64)
    expected = int(rows @ cols)
    if expected == n * n:
        label = labels[int(np.argmax(rows))]
        return Kappa(None, None, f"{ONE_LABEL} (label {label})")
    plain = (n * int(np.trace(table)) - expected) / (n * n - expected)
    values = labels.astype(np.float64)
    weights = np.abs(values[:, None] - values[None, :])
    linear = 1.0 - n * float((weights * table).sum()) / float(rows @ weights @ cols)
    return Kappa(plain, linear)


def binary_agreement(table: np.ndarray, labels: np.ndarray, level: int) -> float | None:
    """The share of pairs on which both sides agree that a document is relevant (label >=
    ``level``) or not; None without pairs."""
    n = table.sum()
    if n == 0:
        return None
    relevant = labels >= level
    same = relevant[:, None] == relevant[None, :]
    return float(table[same].sum()) / float(n)


def kappa_interval(
    tables: np.ndarray, labels: np.ndarray, *, resamples: int, seed: int, level: float
) -> tuple[float | None, float | None]:
    """Percentile bootstrap interval of kappa, resampling queries (their pairs are not
    independent): each resample draws as many queries as there are, with replacement, and
    sums their tables.

    Args:
        tables: one confusion table per query, shape (queries, labels, labels).
        resamples: the number of resamples; those where kappa is undefined are left out.
        seed: of NumPy's default generator (same seed, same interval).
        level: the interval's coverage, e.g. 0.95.

    Returns:
        (low, high); (None, None) below 2 queries or when no resample defines kappa.
    """
    queries = len(tables)
    if queries < 2:
        return None, None
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(queries, np.full(queries, 1.0 / queries), size=resamples)
    summed = (weights @ tables.reshape(queries, -1)).reshape(resamples, *tables.shape[1:])
    values = np.array([kappa(t, labels).plain for t in summed], dtype=object)
    found = np.array([v for v in values if v is not None], dtype=np.float64)
    if not len(found):
        return None, None
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(found, [tail, 1.0 - tail])
    return float(low), float(high)


def ordering(scores: np.ndarray, names: Sequence[str]) -> np.ndarray:
    """Indices of the systems best first: score descending, ties by name ascending."""
    return np.array(sorted(range(len(names)), key=lambda i: (-scores[i], names[i])),
                    dtype=np.int64)


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float | None:
    """Kendall's tau-b: (concordant - discordant) / sqrt((n0 - t_x)(n0 - t_y)), n0 = n(n-1)/2
    pairs, t_x and t_y the pairs tied in x and in y; None below 2 items or when either side
    is constant."""
    n = len(x)
    if n < 2:
        return None
    upper = np.triu_indices(n, k=1)
    dx = np.sign(x[:, None] - x[None, :])[upper]
    dy = np.sign(y[:, None] - y[None, :])[upper]
    n0 = len(dx)
    denominator = np.sqrt(float(n0 - np.sum(dx == 0)) * float(n0 - np.sum(dy == 0)))
    if denominator == 0:
        return None
    return float(np.sum(dx * dy)) / denominator


def tau_ap(truth: np.ndarray, estimate: np.ndarray, names: Sequence[str]) -> float | None:
    """tau_AP of the ordering by ``estimate`` against the ordering by ``truth`` (both
    :func:`ordering`: ties broken by name).

    tau_AP = 2 / (N - 1) * sum_{i=2..N} C(i) / (i - 1) - 1, where C(i) counts the systems
    above rank i in the estimated ordering that the true ordering also ranks above the
    system at rank i. None below 2 systems.
    """
    n = len(names)
    if n < 2:
        return None
    true_rank = np.empty(n, dtype=np.int64)
    true_rank[ordering(truth, names)] = np.arange(n)
    ranks = true_rank[ordering(estimate, names)]  # true rank of each estimated position
    total = sum(float(np.sum(ranks[:i] < ranks[i])) / i for i in range(1, n))
    return 2.0 / (n - 1) * total - 1.0
