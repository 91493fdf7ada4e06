"""The paired t-test's power: the smallest detectable difference and the pairs it needs (no
Spark), against statsmodels' TTestPower."""

from __future__ import annotations

import math

import numpy as np
import pytest

from releval.stats import power as P

smp = pytest.importorskip("statsmodels.stats.power")
T_POWER = smp.TTestPower()


def sm_power(effect: float, n: float, alpha: float) -> float:
    """statsmodels' two-sided power; where it is NaN (SciPy's nct.cdf far in its left
    tail), the sum of its two one-sided powers at alpha / 2, upper tail and lower tail."""
    two = float(T_POWER.power(effect_size=effect, nobs=n, alpha=alpha, alternative="two-sided"))
    if not math.isnan(two):
        return two
    return sum(float(T_POWER.power(effect_size=e, nobs=n, alpha=alpha / 2, alternative="larger"))
               for e in (effect, -effect))


def test_power_of_no_difference_is_alpha_and_rises_with_the_difference():
    # with no true difference the test rejects exactly as often as its level, both tails
    for n, alpha in [(2, 0.05), (10, 0.01), (500, 0.1)]:
        assert P.t_power(0.0, n, alpha=alpha) == pytest.approx(alpha, rel=1e-12)
    powers = [P.t_power(d, 20, alpha=0.05) for d in (0.0, 0.2, 0.5, 1.0, 2.0)]
    assert powers == sorted(powers) and powers[-1] > 0.999
    for n, d, alpha in [(2, 3.0, 0.05), (10, 1.0, 0.05), (34, 0.5, 0.05), (200, 0.1, 0.01),
                        (5, 0.0, 0.05), (1e6, 0.003, 0.05)]:
        assert P.t_power(d, n, alpha=alpha) == pytest.approx(sm_power(d, n, alpha), abs=1e-12)


def test_detectable_effect_against_statsmodels():
    # normal approximation (many pairs): d_min ~ (z_{0.975} + z_{0.8}) / sqrt(n)
    # = (1.959964 + 0.841621) / 10 = 0.280159 at n = 100; the t distribution's heavier
    # tails make it a little larger
    d100 = P.detectable_effect(100, alpha=0.05, power=0.8)
    assert 0.280159 < d100 < 0.280159 * 1.02
    for n in (2, 3, 5, 10, 30, 100, 1000):
        for alpha, power in [(0.05, 0.8), (0.01, 0.9), (0.1, 0.5)]:
            d = P.detectable_effect(n, alpha=alpha, power=power)
            # d is where statsmodels' power function reaches the power
            assert sm_power(d, n, alpha) == pytest.approx(power, abs=1e-9), (n, alpha, power)
    for n in (3, 5, 10, 30, 100, 1000):  # where statsmodels' own solver converges
        want = T_POWER.solve_power(effect_size=None, nobs=n, alpha=0.05, power=0.8,
                                   alternative="two-sided")
        assert P.detectable_effect(n, alpha=0.05, power=0.8) == pytest.approx(
            float(np.squeeze(want)), rel=1e-4)
    assert math.isnan(P.detectable_effect(1, alpha=0.05, power=0.8))
    # a power the test has without any difference: d_min = 0
    assert P.detectable_effect(10, alpha=0.05, power=0.05) == 0.0


def test_pairs_needed_against_statsmodels():
    # normal approximation: n ~ ((z_{0.975} + z_{0.8}) / d)^2 = (2.801585 / 0.5)^2 = 31.4 at
    # d = 0.5; with the t distribution 33.37, so 34 pairs
    assert P.pairs_needed(0.5, alpha=0.05, power=0.8) == 34
    for d in (0.02, 0.05, 0.1, 0.3, 0.5, 1.0, 2.0, 3.0):
        for alpha, power in [(0.05, 0.8), (0.01, 0.9)]:
            n = P.pairs_needed(d, alpha=alpha, power=power)
            real = T_POWER.solve_power(effect_size=d, nobs=None, alpha=alpha, power=power,
                                       alternative="two-sided")
            assert n == max(2, math.ceil(float(np.squeeze(real)))), (d, alpha, power)
            # the fewest: one pair less falls short
            assert sm_power(d, n, alpha) >= power
            assert n == 2 or sm_power(d, n - 1, alpha) < power
    assert P.pairs_needed(20.0, alpha=0.05, power=0.8) == 2  # 2 pairs are enough
    assert P.pairs_needed(0.0, alpha=0.05, power=0.8) is None
    assert P.pairs_needed(float("nan"), alpha=0.05, power=0.8) is None
    assert P.pairs_needed(1e-9, alpha=0.05, power=0.8) is None  # about 8e18 pairs


def test_paired_power_by_hand():
    # d = 0.1, -0.1, 0.2, 0: mean 0.05, deviations 0.05, -0.15, 0.15, -0.05,
    # s = sqrt((0.0025 + 0.0225 + 0.0225 + 0.0025) / 3) = sqrt(0.05 / 3) = 0.1290994
    s = math.sqrt(0.05 / 3)
    got = P.paired_power(np.array([0.1, -0.1, 0.2, 0.0]), alpha=0.05, power=0.8,
                         effect_of_interest=0.02)
    d4 = P.detectable_effect(4, alpha=0.05, power=0.8)
    assert sm_power(d4, 4, 0.05) == pytest.approx(0.8, abs=1e-9)
    assert got.min_detectable_diff == pytest.approx(d4 * s, rel=1e-12)
    # 0.02 / 0.1290994 = 0.154919 standard deviations
    assert got.queries_needed == P.pairs_needed(0.02 / s, alpha=0.05, power=0.8)
    want = T_POWER.solve_power(effect_size=0.02 / s, nobs=None, alpha=0.05, power=0.8,
                               alternative="two-sided")
    assert got.queries_needed == math.ceil(float(np.squeeze(want)))


def test_paired_power_is_undefined_without_spread_or_pairs():
    for d in ([0.1, 0.1, 0.1], [0.0, 0.0], [0.3], [], [0.2, 0.2 + 1e-13]):
        got = P.paired_power(np.array(d), alpha=0.05, power=0.8, effect_of_interest=0.02)
        assert math.isnan(got.min_detectable_diff) and got.queries_needed is None, d
