"""Pure NumPy statistics over one group of per-query values (no Spark here).

Randomness is derived from each query's 64-bit key and the draw number, so results do not
depend on partitioning or row order. See docs/design/aggregate.md and docs/statistics.md."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

#: Largest (draws x queries) matrix made at once (8 bytes each: 32 MB).
BLOCK_CELLS = 4_000_000
#: Hashes made at once by :func:`random_signs` (8 bytes each: 512 kB).
HASH_CELLS = 65_536
#: Differences within this of 0 are ties: they count as 0 in every statistic.
TIE_TOLERANCE = 1e-12

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
#: CDF of Poisson(1) at k = 0..19 (P(K > 19) is below a double's resolution).
_POISSON1_CDF = np.cumsum(
    np.exp(-1.0) / np.cumprod(np.concatenate([[1.0], np.arange(1.0, 20.0)]))
)


def _splitmix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer of each of ``x`` (uint64), computed in place: ``x`` is
    overwritten and returned."""
    shifted = np.empty_like(x)
    for shift, multiplier in ((30, _M1), (27, _M2)):
        np.right_shift(x, np.uint64(shift), out=shifted)
        np.bitwise_xor(x, shifted, out=x)
        np.multiply(x, multiplier, out=x)
    np.right_shift(x, np.uint64(31), out=shifted)
    np.bitwise_xor(x, shifted, out=x)
    return x


def _hashes(keys: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """SplitMix64 of ``key + (draw + 1) * golden``, ``len(draws) x len(keys)``."""
    k = as_keys(keys) if keys.dtype != np.uint64 else keys
    d = (np.asarray(draws, dtype=np.uint64) + np.uint64(1)) * _GOLDEN
    return _splitmix(k[None, :] + d[:, None])


def as_keys(keys: np.ndarray) -> np.ndarray:
    """Spark's signed 64-bit hashes as uint64, bit for bit."""
    return np.ascontiguousarray(keys, dtype=np.int64).view(np.uint64)


def uniforms(keys: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """U[0, 1) per (draw, query) of ``keys`` (uint64 or Spark's int64): SplitMix64 of
    ``key + (draw + 1) * golden``, top 53 bits."""
    h = _hashes(keys, draws)
    return (h >> np.uint64(11)).astype(np.float64) * 2.0**-53


def poisson_weights(keys: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """Poisson(1) bootstrap weights, ``len(draws) x len(keys)``, by inverting the CDF."""
    return np.searchsorted(_POISSON1_CDF, uniforms(keys, draws), side="right").astype(np.float64)


def random_signs(keys: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """+1 or -1 with probability 1/2 each, ``len(draws) x len(keys)``: +1 where the
    :func:`uniforms` draw is below 1/2, that is where its hash's top bit is 0. The hashes
    are made :data:`HASH_CELLS` at a time (they stay in the processor's cache)."""
    k = as_keys(keys) if keys.dtype != np.uint64 else keys
    d = (np.asarray(draws, dtype=np.uint64) + np.uint64(1)) * _GOLDEN
    signs = np.empty((len(d), len(k)), dtype=np.float64)
    step = max(1, HASH_CELLS // max(len(k), 1))
    hashes = np.empty((min(step, len(d)), len(k)), dtype=np.uint64)
    for start in range(0, len(d), step):
        end = min(start + step, len(d))
        h = hashes[:end - start]
        np.add(k[None, :], d[start:end, None], out=h)
        np.right_shift(_splitmix(h), np.uint64(63), out=h)
        out = signs[start:end]
        np.multiply(h, -2.0, out=out, casting="unsafe")
        out += 1.0
    return signs


def _blocks(total: int, queries: int) -> list[np.ndarray]:
    rows = max(1, BLOCK_CELLS // max(queries, 1))
    return [np.arange(s, min(s + rows, total), dtype=np.uint64) for s in range(0, total, rows)]


def t_quantile(probability: float, df: np.ndarray | float) -> np.ndarray:
    """The ``probability`` quantile of Student's t with ``df`` degrees of freedom; NaN if df < 1."""
    df = np.asarray(df, dtype=np.float64)
    safe = np.where(df >= 1, df, 1.0)
    return np.where(df >= 1, special.stdtrit(safe, probability), np.nan)


def t_half_width(sd: np.ndarray, n: np.ndarray, level: float) -> np.ndarray:
    """Half-width of the Student t interval of a mean (t * sd / sqrt(n)); NaN when n < 2."""
    n = np.asarray(n, dtype=np.float64)
    sd = np.maximum(np.asarray(sd, dtype=np.float64), 0.0)
    ok = n >= 2
    root = np.sqrt(np.where(ok, n, 1.0))
    return np.where(ok, t_quantile((1.0 + level) / 2.0, n - 1) * sd / root, np.nan)


def wilson_interval(share: float, n: int, level: float) -> tuple[float, float]:
    """Wilson's score interval of a proportion: ``share`` of ``n`` values that are 0 or 1.

    ``(p + z²/2n ± z·√(p(1-p)/n + z²/4n²)) / (1 + z²/n)``, z the normal quantile at
    (1 + level) / 2: inside [0, 1] and around ``share`` however close to 0 or 1 it is.

    Returns:
        (low, high); (NaN, NaN) when n < 1.
    """
    if n < 1:
        return float("nan"), float("nan")
    p = min(max(float(share), 0.0), 1.0)
    z = float(special.ndtri((1.0 + level) / 2.0))
    z2n = z * z / n
    center = (p + z2n / 2.0) / (1.0 + z2n)
    half = z * np.sqrt(p * (1.0 - p) / n + z2n / (4.0 * n)) / (1.0 + z2n)
    # exact at the ends: p = 0 gives low = 0 and p = 1 high = 1 (not a rounding away)
    low = 0.0 if p == 0.0 else max(0.0, center - half)
    high = 1.0 if p == 1.0 else min(1.0, center + half)
    return low, high


def bootstrap_interval(
    values: np.ndarray, keys: np.ndarray, *, resamples: int, level: float
) -> tuple[float, float]:
    """Percentile interval of the mean over Poisson(1) bootstrap resamples of the queries.

    Returns:
        (low, high); (NaN, NaN) with fewer than 2 queries.
    """
    x = np.asarray(values, dtype=np.float64)
    if len(x) < 2:
        return float("nan"), float("nan")
    means = []
    for draws in _blocks(resamples, len(x)):
        w = poisson_weights(keys, draws)
        total = w.sum(axis=1)
        ok = total > 0
        means.append((w @ x)[ok] / total[ok])
    low, high = np.quantile(np.concatenate(means), [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    return float(low), float(high)


def randomization_p(differences: np.ndarray, keys: np.ndarray, *, permutations: int) -> float:
    """Two-sided p-value of the paired randomization (sign-flip permutation) test.

    ``p = (1 + #{b: |sum(s_b * d)| >= |sum(d)|}) / (1 + permutations)``, the comparison
    allowing a relative 1e-10 for rounding (IR differences often tie). All-zero d gives 1."""
    d = np.asarray(differences, dtype=np.float64)
    if len(d) == 0:
        return float("nan")
    observed = abs(d.sum())
    if observed == 0.0 and not d.any():
        return 1.0
    slack = 1e-10 * np.abs(d).sum()
    at_least = 0
    for draws in _blocks(permutations, len(d)):
        at_least += int((np.abs(random_signs(keys, draws) @ d) >= observed - slack).sum())
    return (1 + at_least) / (1 + permutations)


def randomization_ps(
    groups: list[np.ndarray], rows: list[np.ndarray], keys: np.ndarray, *, permutations: int
) -> np.ndarray:
    """:func:`randomization_p` of each group at once, the signs drawn once for all of them.

    Args:
        groups: each group's differences.
        rows: each group's positions in ``keys`` (the queries of all groups, each once).
        keys: the queries' keys; a query's sign in a draw is the same in every group.

    Returns:
        One p-value per group: as :func:`randomization_p` of (``groups[g]``,
        ``keys[rows[g]]``), since a query a group lacks adds 0 to each of its sums.
    """
    out = np.full(len(groups), np.nan)
    live = [g for g, d in enumerate(groups) if len(d)]
    dense = np.zeros((len(keys), len(live)))
    for j, g in enumerate(live):
        dense[rows[g], j] = groups[g]
    observed = np.array([abs(groups[g].sum()) for g in live])
    slack = 1e-10 * np.abs(dense).sum(axis=0)
    at_least = np.zeros(len(live), dtype=np.int64)
    for draws in _blocks(permutations, len(keys)):
        at_least += (np.abs(random_signs(keys, draws) @ dense) >= observed - slack).sum(axis=0)
    out[live] = (1 + at_least) / (1 + permutations)
    out[[g for j, g in enumerate(live) if not dense[:, j].any()]] = 1.0
    return out


@dataclass(frozen=True)
class Paired:
    """Paired statistics of candidate - baseline over one set of queries (NaN: undefined)."""

    pairs: int
    baseline_mean: float
    candidate_mean: float
    mean_diff: float
    diff_ci_low: float
    diff_ci_high: float
    relative_change: float
    wins: int
    ties: int
    losses: int
    effect_size: float
    t_p_value: float


def differences(baseline: np.ndarray, candidate: np.ndarray) -> np.ndarray:
    """candidate - baseline, with |difference| <= :data:`TIE_TOLERANCE` set to exactly 0."""
    d = np.asarray(candidate, dtype=np.float64) - np.asarray(baseline, dtype=np.float64)
    return np.where(np.abs(d) <= TIE_TOLERANCE, 0.0, d)


def paired(baseline: np.ndarray, candidate: np.ndarray, *, level: float) -> Paired:
    """Mean difference, its t interval, W/T/L, paired Cohen's d and the paired t-test.

    A standard deviation ``s`` <= :data:`TIE_TOLERANCE` counts as 0: then the effect size is
    NaN and the t-test's p is 1 (all differences 0) or 0 (a constant nonzero difference)."""
    b = np.asarray(baseline, dtype=np.float64)
    c = np.asarray(candidate, dtype=np.float64)
    d = differences(b, c)
    n = len(d)
    nan = float("nan")
    return from_moments(
        n, baseline_mean=float(b.mean()) if n else nan,
        candidate_mean=float(c.mean()) if n else nan, mean_diff=float(d.mean()) if n else nan,
        sd=float(d.std(ddof=1)) if n >= 2 else nan, wins=int((d > 0).sum()),
        ties=int((d == 0).sum()), losses=int((d < 0).sum()), level=level)


def from_moments(
    n: int, *, baseline_mean: float, candidate_mean: float, mean_diff: float, sd: float,
    wins: int, ties: int, losses: int, level: float,
) -> Paired:
    """:func:`paired` from the moments of the pairs (``sd``: of the differences, ddof 1,
    NaN below 2 pairs), as an aggregation in Spark gives them."""
    nan = float("nan")
    mean_b, mean_d = baseline_mean, mean_diff
    if sd <= TIE_TOLERANCE:
        sd = 0.0
    half = float(t_half_width(sd, n, level)) if n >= 2 else nan
    if n < 2:
        p = nan
    elif sd > 0:
        t = mean_d / (sd / np.sqrt(n))
        p = float(2.0 * special.stdtr(n - 1, -abs(t)))
    else:
        p = 1.0 if mean_d == 0.0 else 0.0
    return Paired(
        pairs=n,
        baseline_mean=mean_b,
        candidate_mean=candidate_mean,
        mean_diff=mean_d,
        diff_ci_low=mean_d - half,
        diff_ci_high=mean_d + half,
        relative_change=mean_d / mean_b if n and mean_b != 0 else nan,
        wins=wins,
        ties=ties,
        losses=losses,
        effect_size=mean_d / sd if n >= 2 and sd > 0 else nan,
        t_p_value=p,
    )


_SLOT = np.uint64(0xD1B54A32D192ED03)


def tukey_hsd_p(values: np.ndarray, keys: np.ndarray, *, permutations: int) -> np.ndarray:
    """Randomized Tukey HSD p-values of every pair of systems (Carterette, TOIS 2012).

    Each trial shuffles every query's row of ``values`` (queries x systems) across the
    systems; ``p_ij = (1 + #{trials: range of means >= |mean_i - mean_j|}) / (1 + permutations)``.

    Returns:
        A systems x systems matrix of p-values (1 on the diagonal).
    """
    x = np.asarray(values, dtype=np.float64)
    n, k = x.shape
    slots = (np.arange(1, k + 1, dtype=np.uint64) * _SLOT)[None, :]
    slot_keys = _splitmix((as_keys(keys) if keys.dtype != np.uint64 else keys)[:, None] + slots)
    means = x.mean(axis=0)
    observed = np.abs(means[:, None] - means[None, :])
    slack = 1e-10 * max(float(np.abs(x).mean()), 1e-300)
    at_least = np.zeros((k, k), dtype=np.int64)
    for draws in _blocks(permutations, n * k):
        order = np.argsort(uniforms(slot_keys.ravel(), draws).reshape(len(draws), n, k), axis=2)
        shuffled = np.take_along_axis(np.broadcast_to(x, (len(draws), n, k)), order, axis=2)
        trial_means = shuffled.mean(axis=1)
        spread = trial_means.max(axis=1) - trial_means.min(axis=1)
        at_least += (spread[:, None, None] >= observed[None, :, :] - slack).sum(axis=0)
    return (1 + at_least) / (1 + permutations)


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error); NaN entries are not in the family."""
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    idx = np.flatnonzero(~np.isnan(p))
    if len(idx) == 0:
        return out
    order = idx[np.argsort(p[idx], kind="stable")]
    m = len(order)
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out[order] = np.maximum.accumulate(scaled)
    return out


def benjamini_hochberg(p_values: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (false discovery rate); NaN entries left out."""
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    idx = np.flatnonzero(~np.isnan(p))
    if len(idx) == 0:
        return out
    order = idx[np.argsort(p[idx], kind="stable")]
    m = len(order)
    scaled = np.minimum(1.0, m / np.arange(1, m + 1) * p[order])
    out[order] = np.minimum.accumulate(scaled[::-1])[::-1]
    return out


#: correction name (config ``comparison.correction``) -> function
CORRECTIONS = {"holm": holm, "bh": benjamini_hochberg}
