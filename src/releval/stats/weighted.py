"""Traffic-weighted means over queries and their linearized interval (pure NumPy).

The queries are the sampled units and a weight multiplies a query's value, not its count:
the mean is the ratio estimator ``m = sum(w x) / sum(w)``, its variance the linearized
``V = n / (n - 1) * sum(w^2 (x - m)^2) / sum(w)^2``, and the interval
``m -/+ t(n - 1, (1 + level) / 2) * sqrt(V)``. See docs/statistics.md."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from releval.stats.kernel import t_quantile


@dataclass(frozen=True)
class Weighted:
    """A weighted mean, its linearized variance and interval (NaN: undefined)."""

    n: int
    mean: float
    variance: float
    ci_low: float
    ci_high: float


def weighted_mean(values: np.ndarray, weights: np.ndarray, *, level: float) -> Weighted:
    """The weighted mean of ``values`` with its two-sided interval at ``level``.

    Undefined (NaN) without a positive total weight; the interval needs 2 queries.

    Example:
        >>> w = weighted_mean(np.array([1.0, 0.0, 0.5]), np.array([2.0, 1.0, 1.0]), level=0.95)
        >>> round(w.mean, 6)  # (2 * 1 + 0 + 0.5) / 4
        0.625
        >>> round(w.variance, 8)  # 3/2 * (4 * 0.375^2 + 0.625^2 + 0.125^2) / 4^2 = 3/2 * 0.96875 / 16
        0.09082031
    """
    x = np.asarray(values, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    n, total = len(x), float(w.sum())
    if n == 0 or not total > 0.0:
        return Weighted(n, float("nan"), float("nan"), float("nan"), float("nan"))
    m = float(w @ x) / total
    if n < 2:
        return Weighted(n, m, float("nan"), float("nan"), float("nan"))
    v = n / (n - 1.0) * float(np.sum(w * w * (x - m) ** 2)) / (total * total)
    half = float(t_quantile((1.0 + level) / 2.0, n - 1)) * np.sqrt(v)
    return Weighted(n, m, v, m - half, m + half)


def weighted_from_sums(
    n: int, s_w: float, s_wx: float, s_w2: float, s_w2x: float, s_w2x2: float, *, level: float
) -> Weighted:
    """:func:`weighted_mean` from the sums one aggregation collects over ``n`` queries:
    ``sum w``, ``sum w x``, ``sum w^2``, ``sum w^2 x``, ``sum w^2 x^2``.

    ``sum w^2 (x - m)^2 = S_w2x2 - 2 m S_w2x + m^2 S_w2`` (cut at 0 against rounding).

    Example:
        >>> w = weighted_from_sums(3, 4.0, 2.5, 6.0, 4.5, 4.25, level=0.95)  # as weighted_mean's
        >>> round(w.mean, 6), round(w.variance, 8)
        (0.625, 0.09082031)
    """
    if n == 0 or not s_w > 0.0:
        return Weighted(n, float("nan"), float("nan"), float("nan"), float("nan"))
    m = s_wx / s_w
    if n < 2:
        return Weighted(n, m, float("nan"), float("nan"), float("nan"))
    spread = max(s_w2x2 - 2.0 * m * s_w2x + m * m * s_w2, 0.0)
    v = n / (n - 1.0) * spread / (s_w * s_w)
    half = float(t_quantile((1.0 + level) / 2.0, n - 1)) * float(np.sqrt(v))
    return Weighted(n, float(m), float(v), float(m - half), float(m + half))
