"""A gate rule's one-sided tests over one group of queries (pure NumPy and SciPy): the
bounded-mean test on a measure with a known range, Student's t otherwise, the weighted test,
and the queries a test needs to decide. :mod:`releval.stats.gate` reads them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import special

from releval.stats import kernel
from releval.stats.mean_bounds import MeanBounds, mean_bounds, needed
from releval.stats.power import pairs_needed
from releval.stats.weighted import weighted_mean

#: The bounded-mean test (valid at every n); Student's t (a measure with no known range:
#: its error rates hold only approximately, for many queries and a mild skew).
BOUNDED, STUDENT = "bounded", "t"
#: The chance that a test with :func:`queries_needed`'s count of queries decides a rule.
POWER = 0.8


@dataclass(frozen=True)
class Test:
    """A rule's one-sided tests over one group of queries (NaN: undefined)."""

    n: int
    estimate: float
    bound_low: float
    bound_high: float
    p_pass: float
    p_fail: float
    #: the standard deviation of one query's value the power analysis reads
    spread: float
    #: :data:`BOUNDED` or :data:`STUDENT`
    method: str = STUDENT
    #: the bounded test's statistics (None for Student's t)
    bounds: MeanBounds | None = field(default=None, compare=False, repr=False)


def nan_test(n: int, estimate: float = float("nan"), method: str = STUDENT) -> Test:
    """A test with nothing to test: ``n`` queries, every statistic NaN."""
    nan = float("nan")
    return Test(n, estimate, nan, nan, nan, nan, nan, method)


def bounded_test(x: np.ndarray, threshold: float, *, support: tuple[float, float],
                 greater: bool, alpha: float, weights: np.ndarray | None = None) -> Test:
    """The one-sided tests of the mean of ``x`` (each value in ``support``) against
    ``threshold`` by :func:`releval.stats.mean_bounds.mean_bounds`: ``p_pass`` is below
    alpha exactly when the bound on the rule's side is beyond the threshold.

    Example:
        >>> t = bounded_test(np.full(5, 0.5), -0.05, support=(-1.0, 1.0), greater=True,
        ...                  alpha=0.05)
        >>> round(t.p_pass, 4), round(t.bound_low, 4)  # five equal values prove little
        (0.1019, -0.1761)
    """
    x = np.asarray(x, dtype=np.float64)
    if len(x) == 0:
        return nan_test(0, method=BOUNDED)
    lo, hi = support
    b = mean_bounds(np.clip(x, lo, hi), lo=lo, hi=hi, weights=weights)
    p_above, p_below = b.p_below(threshold), b.p_above(threshold)
    p_pass, p_fail = (p_above, p_below) if greater else (p_below, p_above)
    return Test(len(x), b.estimate, b.low(alpha), b.high(alpha), p_pass, p_fail, b.spread,
                BOUNDED, b)


def _from_t(n: int, mean: float, se: float, threshold: float, *, greater: bool,
            alpha: float, spread: float) -> Test:
    """The one-sided t-tests of ``mean`` (standard error ``se``, n - 1 df) against
    ``threshold``; a standard error of 0 is no evidence (equal values of a quantity with no
    known range say nothing of the values not drawn): p 1 on both sides, no bounds (NaN)."""
    if se <= kernel.TIE_TOLERANCE:
        p_above = p_below = 1.0
        low = high = math.nan
    else:
        t = (mean - threshold) / se
        p_above = float(special.stdtr(n - 1, -t))  # H1: mean > threshold
        p_below = float(special.stdtr(n - 1, t))
        half = float(kernel.t_quantile(1.0 - alpha, n - 1)) * se
        low, high = mean - half, mean + half
    p_pass, p_fail = (p_above, p_below) if greater else (p_below, p_above)
    return Test(n, mean, low, high, p_pass, p_fail, spread)


def t_test(x: np.ndarray, threshold: float, *, greater: bool, alpha: float) -> Test:
    """Student's one-sided t-tests of the mean of ``x`` against ``threshold``: ``p_pass``
    is scipy's ``ttest_1samp(x, threshold, alternative="greater")`` for a ``>=`` rule
    (``"less"`` for ``<=``), ``p_fail`` the other; the bounds are the one-sided (1 - alpha)
    ones, ``mean -/+ t(1 - alpha, n - 1) * s / sqrt(n)``."""
    x = np.asarray(x, dtype=np.float64)
    n = len(x)
    if n < 2:
        return nan_test(n, float(x.mean()) if n else float("nan"))
    sd = float(x.std(ddof=1))
    return _from_t(n, float(x.mean()), sd / math.sqrt(n), threshold, greater=greater,
                   alpha=alpha, spread=sd)


def weighted_test(x: np.ndarray, weights: np.ndarray, threshold: float, *, greater: bool,
                  alpha: float) -> Test:
    """The one-sided tests of the traffic-weighted mean: ``t = (m - threshold) / sqrt(V)``
    with n - 1 df, V the linearized variance of :func:`releval.stats.weighted.weighted_mean`."""
    w = weighted_mean(x, weights, level=1.0 - 2.0 * alpha)
    if w.n < 2 or math.isnan(w.variance):
        return nan_test(w.n, w.mean)
    se = math.sqrt(max(w.variance, 0.0))
    return _from_t(w.n, w.mean, se, threshold, greater=greater, alpha=alpha,
                   spread=se * math.sqrt(w.n))


def queries_needed(test: Test, threshold: float, *, alpha: float, power: float = POWER
                   ) -> int | None:
    """The queries whose one-sided test at ``alpha`` decides the rule with probability
    ``power`` when the true mean is the observed one and a query's spread the observed
    one; None when the estimate is at the threshold or (Student's t) the spread is 0 or
    undefined. The bounded test's count inverts its bound in n (every value equal: exactly);
    a weighted test's counts queries at the observed spread of the weights."""
    if test.bounds is not None:
        n_eff = needed(test.bounds, threshold, alpha=alpha, power=power)
        if n_eff is None:
            return None
        return max(math.ceil(n_eff * test.n / test.bounds.n_eff - 1e-9), 1)
    if not test.spread > kernel.TIE_TOLERANCE or math.isnan(test.estimate):
        return None
    effect = abs(test.estimate - threshold) / test.spread
    return pairs_needed(effect, alpha=alpha, power=power, sides=1)
