"""Paired statistics, the randomization test and the corrections, in NumPy (no Spark)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from releval.stats import kernel


def keys_for(n: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).integers(-(2**63), 2**63 - 1, size=n, dtype=np.int64)


def test_paired_by_hand():
    # d = candidate - baseline = 0.2, 0, 0.2, 0.3: mean 0.175, W/T/L 3/1/0
    # deviations 0.025, -0.175, 0.025, 0.125; squares sum 0.0475; s = sqrt(0.0475 / 3) = 0.125831
    # d_z = 0.175 / 0.125831 = 1.390759; relative = 0.175 / mean(baseline) = 0.175 / 0.3
    # t = 0.175 / (0.125831 / 2) = 2.781518, 3 df: p = 0.068904; t_{0.975,3} = 3.182446
    got = kernel.paired([0.2, 0.5, 0.1, 0.4], [0.4, 0.5, 0.3, 0.7], level=0.95)
    s = math.sqrt(0.0475 / 3)
    assert (got.pairs, got.wins, got.ties, got.losses) == (4, 3, 1, 0)
    assert got.mean_diff == pytest.approx(0.175)
    assert got.baseline_mean == pytest.approx(0.3) and got.candidate_mean == pytest.approx(0.475)
    assert got.relative_change == pytest.approx(0.175 / 0.3)
    assert got.effect_size == pytest.approx(0.175 / s) == pytest.approx(1.390759, abs=1e-6)
    assert got.t_p_value == pytest.approx(0.068904, abs=1e-6)
    half = 3.182446 * s / 2
    assert (got.diff_ci_low, got.diff_ci_high) == pytest.approx((0.175 - half, 0.175 + half), abs=1e-6)


def test_t_test_and_interval_agree_with_scipy():
    rng = np.random.default_rng(7)
    for n in (2, 3, 10, 57, 300):
        b = rng.uniform(size=n)
        c = np.clip(b + rng.normal(0.03, 0.1, size=n), 0, 1)
        got = kernel.paired(b, c, level=0.9)
        ref = stats.ttest_rel(c, b)
        assert got.t_p_value == pytest.approx(ref.pvalue, rel=1e-9)
        d = c - b
        low, high = stats.t.interval(0.9, n - 1, loc=d.mean(), scale=d.std(ddof=1) / math.sqrt(n))
        assert (got.diff_ci_low, got.diff_ci_high) == pytest.approx((low, high), rel=1e-9)
        assert got.effect_size == pytest.approx(d.mean() / d.std(ddof=1), rel=1e-9)


def test_all_differences_zero():
    values = np.array([0.1, 0.5, 0.0, 1.0, 0.3])
    got = kernel.paired(values, values.copy(), level=0.95)
    assert (got.mean_diff, got.wins, got.ties, got.losses, got.t_p_value) == (0.0, 0, 5, 0, 1.0)
    assert math.isnan(got.effect_size)  # 0 / 0
    assert (got.diff_ci_low, got.diff_ci_high) == (0.0, 0.0)
    assert kernel.randomization_p(np.zeros(5), keys_for(5), permutations=1000) == 1.0
    # rounding noise below 1e-12 is a tie, not a difference
    noisy = kernel.paired([0.1 + 0.2] * 3, [0.3] * 3, level=0.95)
    assert (noisy.ties, noisy.t_p_value) == (3, 1.0)


def test_constant_nonzero_difference_and_single_pair():
    # 0.55 - 0.3 = 0.25000000000000006: s = 3e-17, below 1e-12, counts as 0
    got = kernel.paired([0.1, 0.2, 0.3], [0.35, 0.45, 0.55], level=0.95)
    # s = 0: t infinite, p = 0 (as scipy's ttest_rel); d_z has no spread to scale by: null
    assert got.t_p_value == 0.0 and math.isnan(got.effect_size) and got.wins == 3
    one = kernel.paired([0.5], [0.7], level=0.95)
    assert one.mean_diff == pytest.approx(0.2)
    assert all(math.isnan(v) for v in (one.t_p_value, one.diff_ci_low, one.effect_size))


def exact_randomization_p(d: np.ndarray) -> float:
    """Every one of the 2^n sign vectors (the identity among them)."""
    observed = abs(d.sum())
    signs = np.array(list(itertools.product([1.0, -1.0], repeat=len(d))))
    return float((np.abs(signs @ d) >= observed - 1e-12).mean())


def test_randomization_test_agrees_with_exact_enumeration_and_numpy():
    rng = np.random.default_rng(6)
    d = np.round(rng.normal(0.08, 0.2, size=12), 2)  # ties of |sum| are possible: rounded
    exact = exact_randomization_p(d)
    permutations = 10_000
    got = kernel.randomization_p(d, keys_for(12), permutations=permutations)
    # Monte Carlo bound: the estimate (1 + count) / (1 + B) has standard error
    # sqrt(p (1 - p) / B) around p (+ a bias below 1 / B); allowed: 3 SE + 1 / B
    se = math.sqrt(exact * (1 - exact) / permutations)
    assert 0.01 < exact < 0.5  # a p-value where the bound means something
    assert abs(got - exact) <= 3 * se + 1 / permutations
    # a NumPy reference with its own generator: two estimates differ by sqrt(2) SE
    signs = rng.choice([-1.0, 1.0], size=(permutations, len(d)))
    reference = (1 + (np.abs(signs @ d) >= abs(d.sum()) - 1e-12).sum()) / (1 + permutations)
    assert abs(got - reference) <= 3 * math.sqrt(2) * se + 1 / permutations
    # the same seed (keys), the same p-value, in any order of the queries
    order = rng.permutation(12)
    assert kernel.randomization_p(d[order], keys_for(12)[order], permutations=permutations) == got


def test_randomization_test_is_small_for_a_candidate_better_everywhere():
    # 12 positive differences: only the 2 all-equal sign vectors of 4096 reach |sum|,
    # exact p = 2 / 4096 = 0.000488
    d = np.linspace(0.01, 0.12, 12)
    assert exact_randomization_p(d) == pytest.approx(2 / 4096)
    assert kernel.randomization_p(d, keys_for(12), permutations=20_000) < 0.002


P = np.array([0.01, 0.04, 0.03, 0.005])


def test_holm_by_hand():
    # sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04;
    # running max 0.02, 0.03, 0.06, 0.06 -> back in the original order:
    np.testing.assert_allclose(kernel.holm(P), [0.03, 0.06, 0.06, 0.02])
    np.testing.assert_allclose(kernel.holm(np.array([0.5, np.nan, 0.4])), [0.8, np.nan, 0.8])
    np.testing.assert_allclose(kernel.holm(np.array([0.9, 0.8])), [1.0, 1.0])  # capped at 1


def test_benjamini_hochberg_by_hand():
    # sorted 0.005, 0.01, 0.03, 0.04 times 4/1, 4/2, 4/3, 4/4 = 0.02, 0.02, 0.04, 0.04;
    # running min from the end: unchanged -> back in the original order:
    np.testing.assert_allclose(kernel.benjamini_hochberg(P), [0.02, 0.04, 0.04, 0.02])
    # 0.02, 0.03 (m = 2): 0.04, 0.03 -> min from the end 0.03, 0.03
    np.testing.assert_allclose(kernel.benjamini_hochberg(np.array([0.02, 0.03])), [0.03, 0.03])


def test_corrections_agree_with_statsmodels():
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    p = np.random.default_rng(9).uniform(0, 0.2, size=40)
    p[5] = p[6]  # a tie
    for ours, theirs in (("holm", "holm"), ("bh", "fdr_bh")):
        expected = multitest.multipletests(p, method=theirs)[1]
        np.testing.assert_allclose(kernel.CORRECTIONS[ours](p), expected, rtol=1e-12)


def test_tukey_hsd_against_exact_enumeration_and_numpy():
    # 4 queries x 3 systems: (3!)^4 = 1296 shuffles, enumerated exactly
    x = np.array([[0.2, 0.5, 0.6], [0.1, 0.3, 0.2], [0.4, 0.6, 0.9], [0.0, 0.2, 0.3]])
    means = x.mean(axis=0)
    observed = np.abs(means[:, None] - means[None, :])
    rows = [list(itertools.permutations(r)) for r in x]
    spreads = []
    for choice in itertools.product(*rows):
        m = np.array(choice).mean(axis=0)
        spreads.append(m.max() - m.min())
    spreads = np.array(spreads)
    exact = (spreads[None, None, :] >= observed[:, :, None] - 1e-12).mean(axis=2)
    permutations = 10_000
    got = kernel.tukey_hsd_p(x, keys_for(4), permutations=permutations)
    np.testing.assert_allclose(np.diag(got), 1.0)
    np.testing.assert_allclose(got, got.T)
    # Monte Carlo bound as for the randomization test: 3 SE + 1 / B
    se = np.sqrt(exact * (1 - exact) / permutations)
    assert (np.abs(got - exact) <= 3 * se + 1 / permutations).all(), (got, exact)
    assert exact[0, 2] < 0.1  # the extremes differ; the bound is checked where it matters
    # NumPy reference: rows shuffled by the generator's permuted()
    rng = np.random.default_rng(0)
    ref_spreads = np.empty(permutations)
    for b in range(permutations):  # the reference may loop: it checks, it is not the code
        m = rng.permuted(x, axis=1).mean(axis=0)
        ref_spreads[b] = m.max() - m.min()
    reference = (1 + (ref_spreads[None, None, :] >= observed[:, :, None] - 1e-12).sum(axis=2)) / (
        1 + permutations)
    assert (np.abs(got - reference) <= 3 * np.sqrt(2) * se + 1 / permutations).all()


def test_tukey_hsd_with_equal_systems_and_row_order():
    x = np.tile(np.array([[0.3], [0.5], [0.1]]), (1, 4))  # 4 identical systems
    np.testing.assert_array_equal(kernel.tukey_hsd_p(x, keys_for(3), permutations=500), 1.0)
    rng = np.random.default_rng(2)
    y = rng.uniform(size=(30, 3)) + np.array([0.0, 0.02, 0.3])
    keys = keys_for(30)
    order = rng.permutation(30)
    p = kernel.tukey_hsd_p(y, keys, permutations=2000)
    np.testing.assert_allclose(kernel.tukey_hsd_p(y[order], keys[order], permutations=2000), p,
                               rtol=0, atol=0)
    assert p[0, 2] < 0.001 and p[0, 1] > 0.05  # 0.3 apart: clear; 0.02: not
