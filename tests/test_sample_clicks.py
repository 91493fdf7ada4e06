"""The sample's interactions log: one row per impression, clicks drawn by the documented PBM."""

from __future__ import annotations

import numpy as np
import pytest

from releval.job.sample import SampleShape, generate, generate_queries
from releval.job.sample_clicks import (
    ATTRACTIVENESS,
    COLUMNS,
    SHOWN,
    generate_interactions,
    true_examination,
)

SHAPE = SampleShape(queries=30, dates=("2026-11-22", "2026-11-23"))


@pytest.fixture(scope="module")
def sample():
    run, qrels = generate(SHAPE)
    return run, qrels, generate_interactions(run, qrels, generate_queries(SHAPE), seed=7)


def test_each_search_shows_one_result_page_of_its_system(sample):
    run, _, log = sample
    assert list(log.columns) == COLUMNS
    pages = log.groupby("search_id")
    assert all(sorted(p) == list(range(1, SHOWN + 1)) for _, p in pages["position"])
    assert (pages["system"].nunique() == 1).all() and (pages["query_id"].nunique() == 1).all()
    # the shown documents are the system's top 10 of the day, in its order
    first = log.iloc[:SHOWN]
    served = run[(run["system"] == first["system"].iloc[0]) & (run["date"] == first["date"].iloc[0])
                 & (run["query_id"] == first["query_id"].iloc[0])].sort_values("position")
    assert list(first["item_id"]) == list(served["item_id"].iloc[:SHOWN])


def test_clicks_follow_the_documented_model(sample):
    _, qrels, log = sample
    grades = qrels.set_index(["query_id", "doc_id"])["relevance"]
    grade = grades.reindex(list(zip(log["query_id"], log["item_id"], strict=True))).fillna(0)
    chance = true_examination()[log["position"] - 1] * grade.map(ATTRACTIVENESS).to_numpy()
    # E[clicks] = sum of examination(k) * attractiveness(grade); the count is within 4 of its
    # standard deviations sqrt(sum p (1 - p)) of that expectation
    clicks = log["clicked"].sum()
    assert abs(clicks - chance.sum()) < 4 * np.sqrt((chance * (1 - chance)).sum())
    assert set(log["clicked"]) <= {0, 1}
    # a dwell on every click and on no other row, never negative
    assert log["dwell"].notna().equals(log["clicked"] == 1)
    assert (log["dwell"].dropna() >= 0).all()


def test_the_true_bias_is_one_at_the_top_and_falls():
    # 2 ** -0.8 = 0.5743, 10 ** -0.8 = 0.1585
    assert true_examination()[[0, 1, 9]] == pytest.approx([1.0, 0.5743, 0.1585], abs=1e-4)
    assert (np.diff(true_examination()) < 0).all()


def test_same_seed_same_log(sample):
    run, qrels, log = sample
    again = generate_interactions(run, qrels, generate_queries(SHAPE), seed=7)
    assert again.equals(log)
