"""The traffic-weighted mean and its linearized interval (releval.stats.weighted)."""

from __future__ import annotations

import doctest

import numpy as np
import pytest
from scipy import stats

from releval.stats import weighted
from releval.stats.weighted import weighted_mean


def test_the_docstring_example_runs():
    assert doctest.testmod(weighted, extraglobs={"np": np}).failed == 0


def test_hand_worked_weighted_mean_and_interval():
    # x = (1, 0, 0.5), w = (2, 1, 1): m = (2 + 0 + 0.5) / 4 = 0.625
    # sum w^2 (x - m)^2 = 4 * 0.140625 + 0.390625 + 0.015625 = 0.96875
    # V = 3 / 2 * 0.96875 / 16 = 0.0908203125; half = t(2, 0.975) * sqrt(V)
    w = weighted_mean(np.array([1.0, 0.0, 0.5]), np.array([2.0, 1.0, 1.0]), level=0.95)
    half = 4.302652729749462 * 0.0908203125**0.5
    assert w.n == 3
    assert w.mean == pytest.approx(0.625, abs=1e-15)
    assert w.variance == pytest.approx(0.0908203125, abs=1e-15)
    assert (w.ci_low, w.ci_high) == pytest.approx((0.625 - half, 0.625 + half), abs=1e-12)


def test_equal_weights_give_the_t_interval_of_the_mean():
    x = np.random.default_rng(7).random(40)
    w = weighted_mean(x, np.full(40, 3.0), level=0.9)
    low, high = stats.t.interval(0.9, 39, loc=x.mean(), scale=stats.sem(x))
    assert (w.ci_low, w.ci_high) == pytest.approx((low, high), abs=1e-12)


def test_undefined_without_weight_or_a_second_query():
    assert np.isnan(weighted_mean(np.array([1.0, 2.0]), np.zeros(2), level=0.95).mean)
    one = weighted_mean(np.array([0.5]), np.array([2.0]), level=0.95)
    assert one.mean == 0.5 and np.isnan(one.ci_low)


@pytest.mark.parametrize("seed, n", [(1, 2), (2, 7), (3, 500)])
def test_the_interval_from_sums_equals_the_one_from_values(seed, n):
    # the aggregate computes the weighted rows from five sums (weighted.weighted_from_sums)
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, n)
    w = rng.integers(0, 10_000, n).astype(float)
    direct = weighted_mean(x, w, level=0.9)
    summed = weighted.weighted_from_sums(n, w.sum(), w @ x, (w * w).sum(), (w * w) @ x,
                                         (w * w) @ (x * x), level=0.9)
    assert summed.n == direct.n
    for field in ("mean", "variance", "ci_low", "ci_high"):
        assert getattr(summed, field) == pytest.approx(getattr(direct, field), rel=1e-12, abs=1e-12)
