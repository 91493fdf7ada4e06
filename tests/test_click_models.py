"""The click models' numpy core: hand-worked fits, a plain EM reference, recovery and coverage
from simulated logs of known truth (docs/clicks.md, "Models")."""

from __future__ import annotations

import doctest

import numpy as np
import pandas as pd
import pytest
from support.click_labels_support import reference_em

from releval.clicks.simulate import random_truth, rankings, simulate_pbm
from releval.stats import click_models as cm
from releval.stats import harvesting as hv


def cells_of(log: pd.DataFrame):
    """(pair, 0-based position, impressions, clicks) per (query, doc, position), and the pairs."""
    g = log.groupby(["query_id", "doc_id", "position"])["clicked"].agg(["size", "sum"])
    g = g.reset_index()
    pair = g.groupby(["query_id", "doc_id"]).ngroup().to_numpy()
    keys = g.drop_duplicates(["query_id", "doc_id"])[["query_id", "doc_id"]]
    return (
        pair,
        g["position"].to_numpy() - 1,
        g["size"].to_numpy().astype(float),
        g["sum"].to_numpy().astype(float),
        keys.reset_index(drop=True),
    )


def fit(pair, pos, n, c, k):
    return cm.pbm_fit(lambda th: cm.pbm_pass(pair, pos, n, c, th, k), positions=k)


@pytest.mark.parametrize("module", [cm, hv])
def test_docstring_examples_run(module):
    assert doctest.testmod(module, extraglobs={"np": np}).failed == 0


def test_a_saturated_log_is_fitted_exactly():
    # pair 0: 60/100 clicks at 1, 30/100 at 2; pair 1: 20/100, 10/100. theta_2 / theta_1 = 0.5
    # on both, so the PBM fits every cell: theta = (1, 0.5), alpha = (0.6, 0.2)
    pair, pos = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])
    n, c = np.full(4, 100.0), np.array([60.0, 30.0, 20.0, 10.0])
    got = fit(pair, pos, n, c, 2)  # to the fit's tolerance, 1e-7 in log theta
    assert got.theta == pytest.approx([1.0, 0.5], abs=1e-7)
    alpha, _ = cm.pbm_alpha(pair, got.theta[pos], n, c, 2)
    assert alpha == pytest.approx([0.6, 0.2], abs=1e-7)
    assert got.low[1] < 0.5 < got.high[1]


def test_fit_matches_the_reference_em():
    truth = random_truth(queries=4, docs=5, seed=3)
    log = simulate_pbm(
        truth,
        rankings(truth, depth=5, seed=3),
        shuffle=1.0,
        searches=3000,
        examination=[1.0, 0.6, 0.4, 0.3, 0.2],
        seed=5,
    )
    pair, pos, n, c, _ = cells_of(log)
    theta, alpha = reference_em(pair, pos, n, c, pair.max() + 1, 5)
    got = fit(pair, pos, n, c, 5)
    assert np.abs(got.theta - theta).max() < 1e-6
    assert np.abs(cm.pbm_alpha(pair, got.theta[pos], n, c, pair.max() + 1)[0] - alpha).max() < 1e-6


def test_the_last_step_is_taken_without_a_pass_when_the_steps_shrink_quadratically():
    truth = random_truth(queries=20, docs=8, seed=3)
    log = simulate_pbm(truth, rankings(truth, systems=3, seed=3),
                       examination=[1, 0.6, 0.45, 0.3, 0.25, 0.2], searches=3000, seed=3)
    pair, pos, n, c, _ = cells_of(log)
    seen = []

    def at(theta):
        seen.append(np.log(theta))
        return cm.pbm_pass(pair, pos, n, c, theta, 6)

    ctr = np.bincount(pos, c, 6) / np.bincount(pos, n, 6)
    got = cm.pbm_fit(at, positions=6, theta0=ctr / ctr[0])  # the click-rate ratio's start
    steps = [np.abs(b - a).max() for a, b in zip(seen, seen[1:], strict=False)]
    last = np.abs(np.log(got.theta) - seen[-1]).max()
    # the last step is predicted from the two before it, s^3 / s_previous^2, under tol (1e-7),
    # and is taken without a pass: it is not under tol itself
    assert got.iterations == len(seen) and last > 1e-7
    assert last**3 / steps[-1] ** 2 < 1e-7
    tight = cm.pbm_fit(at, positions=6, theta0=got.theta, tol=1e-13)
    assert np.abs(got.theta - tight.theta).max() < 1e-7


def test_a_pair_without_clicks_or_only_clicks_sits_on_its_bound():
    pair = np.array([0, 1, 1])  # positions 1; 1 and 2
    n, c = np.array([10.0, 5.0, 4.0]), np.array([0.0, 5.0, 4.0])
    theta_cell = np.array([1.0, 1.0, 0.5])
    alpha, upper = cm.pbm_alpha(pair, theta_cell, n, c, 2)
    assert alpha.tolist() == [0.0, 1.0] and upper.tolist() == [1.0, 1.0]
    low, high = cm.pbm_alpha_interval(pair, theta_cell, n, c, alpha, upper)
    # 0 of 10 examined: loglik 10 log(1 - a) = -z^2/2 at a = 1 - exp(-1.9207/10) = 0.1747
    assert low[0] == 0.0 and high[0] == pytest.approx(1 - np.exp(-(cm.Z95**2) / 20), abs=1e-9)
    # 5 of 5 at theta 1 and 4 of 4 at 0.5: 5 log a + 4 log(a / 2) - 4 log(1 / 2) = 9 log a
    # = -1.9207 at a = 0.8078
    assert high[1] == 1.0 and low[1] == pytest.approx(np.exp(-(cm.Z95**2) / 18), abs=1e-9)


def test_wilson_by_hand():
    # 0 of 10: centre = z^2/20 / (1 + z^2/10) = 0.1388 (z^2 = 3.8415), half the same
    low, high = cm.wilson(np.array([0, 3]), np.array([10, 0]))
    assert low[0] == pytest.approx(0.0, abs=1e-12)
    assert high[0] == pytest.approx(3.8415 / 10 / (1 + 0.38415), abs=1e-4)
    assert np.isnan(low[1]) and np.isnan(high[1])


def test_harvesting_ratio_by_hand():
    # one pair at positions 1 and 2: rates 0.5 and 0.2 -> theta_2 = 0.2 / 0.5 = 0.4;
    # a second pair, 0.4 and 0.2, weight 100*100/200 = 50 each: (50*.2 + 50*.2)/(50*.5 + 50*.4)
    pair, pos = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])
    n, c = np.full(4, 100.0), np.array([50.0, 20.0, 40.0, 20.0])
    sums = hv.harvest_sums(pair, pos, n, c, 2)
    got = hv.harvest_theta(sums)
    assert got.theta[1] == pytest.approx(20 / 45, abs=1e-12)
    assert got.low[1] < got.theta[1] < got.high[1]
    assert got.impressions.tolist() == [200.0, 200.0]


def test_an_unlinked_position_has_no_estimate():
    # position 3 is only ever shown to pairs seen nowhere else: theta_3 is not identified
    pair, pos = np.array([0, 0, 1, 1, 2]), np.array([0, 1, 0, 1, 2])
    n, c = np.full(5, 100.0), np.array([50.0, 25.0, 40.0, 20.0, 10.0])
    got = fit(pair, pos, n, c, 3)
    assert got.theta[1] == pytest.approx(0.5, abs=1e-9) and np.isnan(got.theta[2])
    assert np.isnan(hv.harvest_theta(hv.harvest_sums(pair, pos, n, c, 3)).theta[2])


def _recovery_log(examination, searches, seed):
    truth = random_truth(queries=100, docs=12, seed=seed)
    runs = rankings(truth, systems=4, seed=seed)
    return truth, simulate_pbm(
        truth, runs, examination=examination, searches=searches, shuffle=0.1, seed=seed + 1
    )


def test_a_million_impressions_recover_the_bias_and_attractiveness():
    theta = np.array([1.0, 0.75, 0.55, 0.45, 0.35, 0.3, 0.25, 0.2, 0.17, 0.15])
    truth, log = _recovery_log(theta, 100_000, seed=11)  # 10 results a page: 1M impressions
    pair, pos, n, c, keys = cells_of(log)
    got = fit(pair, pos, n, c, 10)
    assert np.abs(got.theta - theta).max() < 0.02
    harvested = hv.harvest_theta(hv.harvest_sums(pair, pos, n, c, 10))
    assert np.abs(harvested.theta - theta).max() < 0.02
    alpha, upper = cm.pbm_alpha(pair, got.theta[pos], n, c, pair.max() + 1)
    true = keys.merge(truth, on=["query_id", "doc_id"])["attractiveness"].to_numpy()
    shown = np.bincount(pair, n)
    many = shown >= 200
    assert many.sum() > 500
    assert np.sqrt(np.mean((alpha[many] - true[many]) ** 2)) < 0.05
    # the likelihood-ratio interval, over every pair of one log: about 95% (measured 0.95)
    low, high = cm.pbm_alpha_interval(pair, got.theta[pos], n, c, alpha, upper)
    coverage = np.mean((low <= true) & (true <= high))
    assert 0.92 <= coverage <= 0.98, coverage


@pytest.mark.slow
def test_the_intervals_cover_the_truth_about_95_percent():
    """200 simulated logs: coverage of theta's interval per position and of alpha's, measured
    (docs/clicks.md, "Models", records the numbers)."""
    theta = np.array([1.0, 0.6, 0.4, 0.3, 0.2])
    hits_theta, hits_alpha, harvest_hits = np.zeros(5), [], np.zeros(5)
    reps = 200
    for seed in range(reps):
        truth = random_truth(queries=30, docs=8, seed=1000 + seed)
        log = simulate_pbm(
            truth,
            rankings(truth, systems=3, depth=5, seed=seed),
            examination=theta,
            searches=4000,
            shuffle=0.2,
            seed=seed,
        )
        pair, pos, n, c, keys = cells_of(log)
        got = fit(pair, pos, n, c, 5)
        hits_theta += (got.low <= theta) & (theta <= got.high)
        harvested = hv.harvest_theta(hv.harvest_sums(pair, pos, n, c, 5))
        harvest_hits += (harvested.low <= theta) & (theta <= harvested.high)
        alpha, upper = cm.pbm_alpha(pair, got.theta[pos], n, c, pair.max() + 1)
        low, high = cm.pbm_alpha_interval(pair, got.theta[pos], n, c, alpha, upper)
        true = keys.merge(truth, on=["query_id", "doc_id"])["attractiveness"].to_numpy()
        hits_alpha.append(np.mean((low <= true) & (true <= high)))
    rate = hits_theta[1:] / reps
    harvest_rate = harvest_hits[1:] / reps
    # 95% nominal; 3 Monte Carlo standard errors at 200 replicates: 3 * 0.0154 = 0.046
    assert (rate >= 0.95 - 0.046).all() and (rate <= 0.95 + 0.046).all(), rate
    # harvesting's sandwich interval (measured 0.935, 0.925, 0.945, 0.910): the ratio of sums
    # is biased at small counts, so the deepest positions fall a little short
    assert (harvest_rate >= 0.88).all(), harvest_rate
    print("coverage theta", rate, "harvesting", harvest_rate, "alpha", np.mean(hits_alpha))
    assert 0.92 <= np.mean(hits_alpha) <= 0.98, np.mean(hits_alpha)


def test_the_pass_is_the_profile_likelihood_s_derivative_with_pairs_on_their_bound():
    # a simulated log, plus pairs never shown at position 1 whose clicks push alpha to its
    # bound 1 / theta_m: their likelihood moves with log theta_k - log theta_m
    truth = random_truth(queries=20, docs=5, seed=3)
    log = simulate_pbm(
        truth,
        rankings(truth, depth=4, seed=3),
        shuffle=1.0,
        searches=400,
        examination=[1.0, 0.6, 0.4, 0.3],
        seed=5,
    )
    pair, pos, n, c, _ = cells_of(log)
    extra = pair.max() + 1
    # 3 of 3 at position 2 and 0 of 1 at 4; 4 of 4 at 3 and 1 of 2 at 4
    pair = np.r_[pair, extra, extra, extra + 1, extra + 1]
    pos, n, c = np.r_[pos, 1, 3, 2, 3], np.r_[n, 3, 1, 4, 2], np.r_[c, 3, 0, 4, 1]
    theta = np.array([1.0, 0.6, 0.4, 0.3])
    alpha, upper = cm.pbm_alpha(pair, theta[pos], n, c, extra + 2)
    assert alpha[extra:].tolist() == pytest.approx(upper[extra:].tolist())  # both on the bound

    def at(phi):
        return cm.pbm_pass(pair, pos, n, c, np.exp(phi), 4)

    phi, e = np.log(theta), 1e-5
    got = at(phi)
    for j in range(1, 4):
        up, down = phi.copy(), phi.copy()
        up[j] += e
        down[j] -= e
        assert got.gradient[j] == pytest.approx(
            (at(up).loglik - at(down).loglik) / (2 * e), rel=1e-5
        )
        numeric = (at(up).gradient - at(down).gradient) / (2 * e)
        assert got.hessian[j, 1:] == pytest.approx(numeric[1:], rel=1e-4, abs=1e-3)
    # the fit is the maximum: no step along any axis gains
    fitted = fit(pair, pos, n, c, 4)
    best = np.log(fitted.theta)
    for j in range(1, 4):
        for step in (1e-4, -1e-4):
            moved = best.copy()
            moved[j] += step
            assert at(moved).loglik <= fitted.loglik + 1e-9
