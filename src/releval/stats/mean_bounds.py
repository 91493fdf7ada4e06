"""One-sided bounds on the mean of values known to lie in [lo, hi], at every sample size.

The bound is Learned-Miller and Thomas's (2019): the Bayesian bootstrap of the sample with one
more point at the end of the range the bound moves towards. The lower bound is the alpha
quantile of ``U_0 lo + sum_i U_i x_i``, U ~ Dirichlet(1, ..., 1) over n + 1 points; the upper
bound puts the extra point at ``hi``. On two-valued data (0/1 values on [0, 1]) it is the
Clopper-Pearson bound, computed exactly; otherwise it is a seeded Monte Carlo quantile over
:data:`DRAWS` draws, a function of the multiset of values alone (the values are sorted first).
A weighted sample has Dirichlet weights ``n_eff w_i / sum(w)`` (Kish's n_eff), so five queries
that carry most of the weight count as about five. See docs/statistics.md ("Release gates")."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import special, stats

#: Monte Carlo draws of the Dirichlet weights; the smallest p-value is 1 / (DRAWS + 1).
DRAWS = 3999
SEED = 20190515


@dataclass(frozen=True)
class MeanBounds:
    """The draws of the mean's lower and upper bounding statistics (or their exact laws).

    Example:
        >>> b = mean_bounds(np.array([0.2, 0.4, 0.4, 0.6]), lo=0.0, hi=1.0)
        >>> round(b.estimate, 2), b.low(0.05) < 0.4 < b.high(0.05)
        (0.4, True)
    """

    estimate: float
    #: Kish's effective number of values (n when unweighted)
    n_eff: float
    #: the weighted population standard deviation of the values
    spread: float
    lo: float
    hi: float
    #: sorted draws of the lower and the upper statistic (None when exact)
    s_low: np.ndarray | None = None
    s_high: np.ndarray | None = None
    #: exact: the distinct values and their Dirichlet concentrations
    values: tuple[float, ...] = ()
    weights: tuple[float, ...] = ()

    def p_below(self, m: float) -> float:
        """The p-value of H0: mean <= m against mean > m: below alpha exactly when the
        lower bound is above m."""
        if self.s_low is None:
            return _exact_cdf(self.values, self.weights, self.lo, m)
        count = int(np.searchsorted(self.s_low, m, side="right"))
        return min(1.0, (count + 1) / (len(self.s_low) + 1))

    def p_above(self, m: float) -> float:
        """The p-value of H0: mean >= m against mean < m: below alpha exactly when the
        upper bound is below m."""
        if self.s_high is None:
            return _exact_sf(self.values, self.weights, self.hi, m)
        count = len(self.s_high) - int(np.searchsorted(self.s_high, m, side="left"))
        return min(1.0, (count + 1) / (len(self.s_high) + 1))

    def low(self, alpha: float) -> float:
        """The one-sided (1 - alpha) lower bound: above m exactly when ``p_below(m) < alpha``."""
        if self.s_low is None:
            return _exact_quantile(self.values, self.weights, self.lo, alpha)
        return _draw_quantile(self.s_low, alpha, lower=True, lo=self.lo, hi=self.hi)

    def high(self, alpha: float) -> float:
        """The one-sided (1 - alpha) upper bound: below m exactly when ``p_above(m) < alpha``."""
        if self.s_high is None:
            return _exact_quantile(self.values, self.weights, self.hi, 1.0 - alpha)
        return _draw_quantile(self.s_high, alpha, lower=False, lo=self.lo, hi=self.hi)


def _draw_quantile(draws: np.ndarray, alpha: float, *, lower: bool, lo: float, hi: float
                   ) -> float:
    """The draw whose order makes the bound agree with the p-value ``(count + 1) / (D + 1)``."""
    d = len(draws)
    allowed = math.ceil(alpha * (d + 1) - 1) - 1  # the largest count with p < alpha
    if allowed < 0:
        return lo if lower else hi
    return float(draws[allowed] if lower else draws[d - 1 - allowed])


def _mix(values: tuple[float, ...], weights: tuple[float, ...], atom: float
         ) -> tuple[float, float, float, float]:
    """The two-valued law ``v1 + (v2 - v1) Beta(a2, a1)`` of the sample with its atom."""
    pooled: dict[float, float] = {}
    for v, a in zip((*values, atom), (*weights, 1.0), strict=True):
        pooled[v] = pooled.get(v, 0.0) + a
    (v1, a1), *rest = sorted(pooled.items())
    v2, a2 = rest[0] if rest else (v1, 0.0)
    return v1, v2, a1, a2


def _exact_cdf(values, weights, atom, m) -> float:
    v1, v2, a1, a2 = _mix(values, weights, atom)
    if m >= v2:
        return 1.0
    if m < v1:
        return 0.0
    return float(special.betainc(a2, a1, (m - v1) / (v2 - v1))) if a2 > 0 else 1.0


def _exact_sf(values, weights, atom, m) -> float:
    v1, v2, a1, a2 = _mix(values, weights, atom)
    if m <= v1:
        return 1.0
    if m > v2:
        return 0.0
    return float(special.betaincc(a2, a1, (m - v1) / (v2 - v1))) if a2 > 0 else 0.0


def _exact_quantile(values, weights, atom, q) -> float:
    v1, v2, a1, a2 = _mix(values, weights, atom)
    if a2 <= 0 or v2 == v1:
        return v1
    return float(v1 + (v2 - v1) * stats.beta.ppf(q, a2, a1))


#: Draws of one block of values at a time (memory: about 8 x this many bytes).
BLOCK = 1 << 22
#: Up to this many distinct values, a sample's exponential draws are kept for the next one.
CACHED = 1000
#: Beyond this many distinct values, values are pooled in this many cells (see mean_bounds).
GRID = 8192


@lru_cache(maxsize=2)
def _exponentials(n: int, draws: int) -> tuple[np.ndarray, np.ndarray]:
    """Seeded exponential draws for n values and the atom."""
    rng = np.random.default_rng([SEED, n])
    return rng.standard_exponential((draws, n)), rng.standard_exponential(draws)


def _masses(values: np.ndarray, conc: np.ndarray, draws: int, *, ones: bool
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per draw: ``G @ values.T`` (one column per row of ``values``), ``sum G_i``
    (G_i ~ Gamma(conc_i)) and the atom's Exp(1); ``ones``: every concentration is 1."""
    k = values.shape[1]
    if ones and k <= CACHED:
        e, atom = _exponentials(k, draws)
        return e @ values.T, e.sum(axis=1), atom
    rng = np.random.default_rng([SEED, k, int(ones)])
    atom = rng.standard_exponential(draws)
    mass, total = np.zeros((draws, len(values))), np.zeros(draws)
    step = max(1, BLOCK // draws)
    for start in range(0, k, step):
        part = slice(start, start + step)
        width = values[:, part].shape[1]
        g = (rng.standard_exponential((draws, width)) if ones
             else rng.standard_gamma(conc[part], size=(draws, width)))
        mass += g @ values[:, part].T
        total += g.sum(axis=1)
    return mass, total, atom


def mean_bounds(x: np.ndarray, *, lo: float, hi: float, weights: np.ndarray | None = None,
                draws: int = DRAWS) -> MeanBounds:
    """The bounding statistics of the mean of ``x`` (values in [lo, hi]).

    Equal values are pooled (a sum of Gamma draws is one Gamma draw of the summed
    concentration), so the result depends on the multiset of (value, weight) alone. Beyond
    :data:`GRID` distinct values, each value counts as the end of its cell of a grid of
    :data:`GRID` cells over [lo, hi] that is further from the bound's side (the lower end
    for the lower bound): each draw, so each bound, only moves outwards.

    Args:
        weights: traffic weights (positive; the caller drops zero and unlisted ones).
    """
    x = np.asarray(x, dtype=np.float64)
    if weights is None:
        conc = np.ones(len(x))
    else:
        w = np.asarray(weights, dtype=np.float64)
        w = w / w.max()  # tiny weights: w @ w would underflow
        n_eff = w.sum() ** 2 / float(w @ w)
        conc = n_eff * w / w.sum()
    n_eff = float(conc.sum())
    distinct, inverse = np.unique(x, return_inverse=True)
    pooled = np.bincount(inverse.ravel(), weights=conc, minlength=len(distinct))
    estimate = float(pooled @ distinct) / n_eff
    spread = math.sqrt(max(float(pooled @ (distinct - estimate) ** 2) / n_eff, 0.0))
    base = dict(estimate=estimate, n_eff=n_eff, spread=spread, lo=lo, hi=hi)
    if len(distinct) == 1 or (len(distinct) == 2 and distinct[0] == lo and distinct[1] == hi):
        return MeanBounds(**base, values=tuple(float(v) for v in distinct),
                          weights=tuple(float(a) for a in pooled))
    ones = weights is None and len(distinct) == len(x)
    if len(distinct) > GRID:
        cell = np.minimum(((distinct - lo) / (hi - lo) * GRID).astype(np.int64), GRID - 1)
        pooled = np.bincount(cell, weights=pooled, minlength=GRID)
        used = np.flatnonzero(pooled)
        edges = lo + (hi - lo) * np.arange(GRID + 1) / GRID
        pooled, ends = pooled[used], np.stack([edges[used], edges[used + 1]])
        ones = False
    else:
        ends = distinct[None, :]
    mass, total, atom = _masses(ends, pooled, draws, ones=ones)
    total = total + atom
    s_low = np.sort((mass[:, 0] + atom * lo) / total)
    s_high = np.sort((mass[:, -1] + atom * hi) / total)
    return MeanBounds(**base, s_low=s_low, s_high=s_high)


def needed(bounds: MeanBounds, threshold: float, *, alpha: float, power: float) -> int | None:
    """The effective number of values at which the bound on the estimate's side of
    ``threshold`` passes it with probability ``power``, the mean and spread being the
    observed ones; None when the estimate is at the threshold.

    The bound at n values is ``M - U (M - end)``, M the Bayesian bootstrap mean and U ~
    Beta(1, n) the range end's share, independent; its alpha quantile is taken as M's
    normal one plus U's exact one (exact when every value is equal), and M is the observed
    mean moved towards the threshold by the ``power`` quantile of its standard error."""
    m, s = bounds.estimate, bounds.spread
    if not math.isfinite(m) or m == threshold:
        return None
    up = m > threshold
    sign, end = (1.0, bounds.lo) if up else (-1.0, bounds.hi)
    z, zp = stats.norm.isf(alpha), stats.norm.ppf(power)

    def decides(n: int) -> bool:
        v = m - sign * zp * s / math.sqrt(n)
        share = -math.expm1(math.log(alpha) / n)  # the 1 - alpha quantile of Beta(1, n)
        bound = v - sign * z * s / math.sqrt(n + 1) - share * (v - end)
        return (bound > threshold) if up else (bound < threshold)

    high = 1
    while not decides(high):
        high *= 2
        if high > 2**40:
            return None
    low = high // 2
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if decides(mid) else (mid, high)
    return high
