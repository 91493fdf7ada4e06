"""The search-log simulators: their logs follow the model they document (pure pandas/numpy;
the docstring examples run in tests/test_click_labels.py, with a session)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from releval.clicks.simulate import random_truth, rankings, simulate_cascade, simulate_pbm


def _one_pair_truth(alpha: float, sigma: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    truth = pd.DataFrame(
        {
            "query_id": ["q", "q"],
            "doc_id": ["a", "b"],
            "relevance": [1, 0],
            "attractiveness": [alpha, alpha],
            "satisfaction": [sigma, sigma],
        }
    )
    runs = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "position": [1, 2]})
    return truth, runs


def test_pbm_click_rate_is_examination_times_attractiveness():
    truth, runs = _one_pair_truth(0.6, 0.5)
    log = simulate_pbm(truth, runs, examination=[0.9, 0.5], searches=40_000, seed=3)
    rate = log.groupby("position")["clicked"].mean()
    # P(click) = theta_k * alpha: 0.9 * 0.6 = 0.54, 0.5 * 0.6 = 0.30; sd <= 0.0025 at 40k
    assert abs(rate[1] - 0.54) < 0.01
    assert abs(rate[2] - 0.30) < 0.01
    assert log["dwell"].isna().eq(log["clicked"] == 0).all()


def test_cascade_second_click_needs_an_unsatisfied_first():
    truth, runs = _one_pair_truth(0.6, 0.5)
    log = simulate_cascade(truth, runs, searches=40_000, continuation=0.8, depth=2, seed=4)
    rate = log.groupby("position")["clicked"].mean()
    # position 2 examined: no click above (0.4) * gamma 0.8, or a click (0.6) not satisfied
    # (0.5) * 0.8: 0.32 + 0.24 = 0.56; clicked 0.56 * 0.6 = 0.336
    assert abs(rate[1] - 0.6) < 0.01
    assert abs(rate[2] - 0.336) < 0.01


def test_same_seed_same_log_and_systems_show_pairs_at_other_positions():
    truth = random_truth(queries=20, docs=10, seed=0)
    runs = rankings(truth, systems=3, seed=0)
    a = simulate_pbm(truth, runs, examination=[1.0, 0.5, 0.3], searches=500, seed=9)
    b = simulate_pbm(truth, runs, examination=[1.0, 0.5, 0.3], searches=500, seed=9)
    pd.testing.assert_frame_equal(a, b)
    positions = a.groupby(["query_id", "doc_id"])["position"].nunique()
    assert (positions > 1).mean() > 0.3
    assert a.groupby("search_id")["position"].apply(lambda p: sorted(p) == [1, 2, 3]).all()
    assert set(a["system"]) == {"s00", "s01", "s02"}


def test_shuffle_puts_every_document_everywhere():
    truth = random_truth(queries=1, docs=3, seed=0)
    runs = rankings(truth, systems=1, depth=3, seed=0)
    log = simulate_pbm(truth, runs, examination=[1, 1, 1], searches=300, shuffle=1.0, seed=1)
    counts = log.groupby(["doc_id", "position"]).size()
    assert len(counts) == 9 and counts.min() > 60  # 100 expected per cell
    assert np.array_equal(np.sort(log["position"].unique()), [1, 2, 3])
