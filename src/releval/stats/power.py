"""Power of the paired t-test: the smallest true difference it detects, the pairs it needs.

Two-sided at level ``alpha`` (or one-sided, ``sides=1``: the gate's tests), from the
noncentral t distribution: with ``n`` pairs and a true mean difference ``delta``, t has
``n - 1`` degrees of freedom and noncentrality ``(delta / sigma) * sqrt(n)``. Pure NumPy and
SciPy; see docs/statistics.md."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import optimize, stats

from releval.stats.kernel import TIE_TOLERANCE

#: Above this many pairs :func:`pairs_needed` gives up (None): no comparison gets there.
#: Also the largest standardized difference :func:`detectable_effect` tries.
MAX_PAIRS = 2.0**53


def t_power(effect: float, n: float, *, alpha: float, sides: int = 2) -> float:
    """Probability that the two-sided paired t-test at ``alpha`` rejects, with ``n`` pairs
    and a true standardized difference ``effect`` (delta / sigma):
    ``P(T > c) + P(T < -c)``, T ~ nct(n - 1, effect * sqrt(n)), c = t(1 - alpha/2, n - 1).
    With ``sides=1``, the one-sided test in the direction of ``effect``: ``P(T > c)``,
    c = t(1 - alpha, n - 1), for ``|effect|``."""
    df = n - 1.0
    shift = effect * math.sqrt(n)
    if sides == 1:
        return float(stats.nct.sf(stats.t.isf(alpha, df), df, abs(shift)))
    critical = stats.t.isf(alpha / 2.0, df)
    # the lower tail as the upper one of -shift: nct.cdf is NaN far out in its left tail
    return float(stats.nct.sf(critical, df, shift) + stats.nct.sf(critical, df, -shift))


@lru_cache(maxsize=256)
def detectable_effect(n: int, *, alpha: float, power: float) -> float:
    """d_min: the standardized difference the test detects with probability ``power`` at
    ``n`` pairs (:func:`t_power` = ``power``, solved with Brent's method).

    Returns:
        d_min >= 0; 0 when ``power`` <= ``alpha`` (no difference at all is rejected that
        often); NaN when n < 2.
    """
    if n < 2:
        return float("nan")
    if power <= alpha:
        return 0.0
    high = 1.0
    while t_power(high, n, alpha=alpha) < power:
        high *= 2.0
        if high > MAX_PAIRS:  # power not below 1: nothing reaches it
            return float("nan")
    return float(optimize.brentq(lambda d: t_power(d, n, alpha=alpha) - power, 0.0, high,
                                 xtol=1e-14, rtol=1e-12))


def t_powers(effect: np.ndarray, n: np.ndarray, *, alpha: float, sides: int = 2
             ) -> np.ndarray:
    """:func:`t_power` of each (``effect``, ``n``), in one call of each SciPy distribution
    (element by element the same values)."""
    n = np.asarray(n, dtype=np.float64)
    df = n - 1.0
    shift = np.asarray(effect, dtype=np.float64) * np.sqrt(n)
    if sides == 1:
        return np.asarray(stats.nct.sf(stats.t.isf(alpha, df), df, np.abs(shift)),
                          dtype=np.float64)
    critical = stats.t.isf(alpha / 2.0, df)
    return np.asarray(stats.nct.sf(critical, df, shift) + stats.nct.sf(critical, df, -shift),
                      dtype=np.float64)


def pairs_needed(effect: float, *, alpha: float, power: float, sides: int = 2) -> int | None:
    """The fewest pairs (at least 2) whose test (two-sided, or one-sided with ``sides=1``)
    detects the standardized difference ``effect`` with probability ``power``; None when
    ``effect`` is not > 0 or it would take more than :data:`MAX_PAIRS`."""
    return pairs_needed_each([effect], alpha=alpha, power=power, sides=sides)[0]


def pairs_needed_each(effects: Sequence[float], *, alpha: float, power: float,
                      sides: int = 2) -> list[int | None]:
    """:func:`pairs_needed` of each of ``effects``, their power evaluated together: a few
    calls of SciPy's distributions for the whole family, not a few per effect."""
    e = np.asarray(effects, dtype=np.float64)
    out: list[int | None] = [None] * len(e)
    live = np.flatnonzero(e > 0.0)
    if not len(live):
        return out

    def reaches(effect: np.ndarray, n: np.ndarray) -> np.ndarray:
        return t_powers(effect, n, alpha=alpha, sides=sides) >= power

    at_two = reaches(e[live], np.full(len(live), 2.0))
    for i in live[at_two]:
        out[i] = 2
    # the normal approximation ((z_{alpha/sides} + z_power) / effect)^2 is within a pair or
    # two of the answer for the sizes a comparison has: a few steps from it find the
    # smallest integer that reaches the power; else Brent's method finds the root first
    z = stats.norm.isf(alpha / sides) + stats.norm.ppf(power)
    starts = {int(i): (z / float(e[i])) ** 2 for i in live[~at_two]}
    by_root = [i for i, start in starts.items() if not start <= MAX_PAIRS]
    pending = np.array([i for i, start in starts.items() if start <= MAX_PAIRS], dtype=np.int64)
    needed = np.zeros(len(e), dtype=np.int64)
    needed[pending] = [max(2, math.ceil(starts[i])) for i in pending.tolist()]
    for _ in range(STEPS):
        if not len(pending):
            break
        at, effect = needed[pending], e[pending]
        lower = np.zeros(len(pending), dtype=bool)
        above = at > 2
        lower[above] = reaches(effect[above], at[above] - 1)
        reached = reaches(effect, at)
        needed[pending[lower]] -= 1
        needed[pending[~lower & ~reached]] += 1
        for i in pending[~lower & reached].tolist():
            out[i] = int(needed[i])
        pending = pending[lower | ~reached]
    for i in [*by_root, *pending.tolist()]:
        out[i] = _pairs_by_root(float(e[i]), alpha=alpha, power=power, sides=sides)
    return out


#: Steps :func:`pairs_needed` takes from the normal approximation before it solves instead.
STEPS = 6


def _pairs_by_root(effect: float, *, alpha: float, power: float, sides: int) -> int | None:
    def excess(n: float) -> float:
        return t_power(effect, n, alpha=alpha, sides=sides) - power

    high = 4.0
    while excess(high) < 0:
        high *= 2.0
        if high > MAX_PAIRS:
            return None
    real = optimize.brentq(excess, 2.0, high, xtol=1e-9, rtol=1e-12)
    needed = max(2, math.ceil(real))
    # the root's last bits: the smallest integer that reaches the power
    while needed > 2 and excess(needed - 1) >= 0:
        needed -= 1
    while excess(needed) < 0:
        needed += 1
    return needed


@dataclass(frozen=True)
class Power:
    """What the paired t-test can detect over one set of pairs (NaN, None: undefined)."""

    min_detectable_diff: float
    queries_needed: int | None


def paired_power(
    differences: np.ndarray, *, alpha: float, power: float, effect_of_interest: float
) -> Power:
    """The smallest true mean difference detected with ``power`` at these pairs' count,
    ``d_min * s``, and the pairs needed to detect ``effect_of_interest`` (an absolute
    difference) with the same ``s``: the standard deviation of ``differences`` (ddof 1).

    An ``s`` <= :data:`releval.stats.kernel.TIE_TOLERANCE` counts as 0 (as the t-test's):
    then, and below 2 pairs, both are undefined."""
    d = np.asarray(differences, dtype=np.float64)
    sd = float(d.std(ddof=1)) if len(d) >= 2 else float("nan")
    return power_of(len(d), sd, alpha=alpha, power=power, effect_of_interest=effect_of_interest)


def power_of(n: int, sd: float, *, alpha: float, power: float,
             effect_of_interest: float) -> Power:
    """:func:`paired_power` from the pairs' count and the differences' standard deviation."""
    return powers_of([n], [sd], alpha=alpha, power=power,
                     effect_of_interest=effect_of_interest)[0]


def powers_of(ns: Sequence[int], sds: Sequence[float], *, alpha: float, power: float,
              effect_of_interest: float) -> list[Power]:
    """:func:`power_of` of each (pairs' count, standard deviation) of a family at once
    (:func:`pairs_needed_each`; :func:`detectable_effect` once per count)."""
    spread = [bool(sd > TIE_TOLERANCE) for sd in sds]
    needed = pairs_needed_each(
        [effect_of_interest / sd if ok else math.nan for sd, ok in zip(sds, spread, strict=True)],
        alpha=alpha, power=power)
    return [Power(detectable_effect(n, alpha=alpha, power=power) * sd, k) if ok
            else Power(float("nan"), None)
            for n, sd, ok, k in zip(ns, sds, spread, needed, strict=True)]
