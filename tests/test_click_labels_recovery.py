"""click_labels from simulated logs of known truth, through the public API in Spark: the
position bias and attractiveness recovered at a million impressions, and ten rankers ordered
by nDCG@10 against the click labels as against the true relevance."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau

import releval
from releval.clicks.simulate import (
    random_truth,
    rankings,
    simulate_cascade,
    simulate_pbm,
)

pytestmark = pytest.mark.slow  # a million simulated impressions through Spark

THETA = np.array([1.0, 0.72, 0.55, 0.45, 0.36, 0.3, 0.25, 0.21, 0.18, 0.15])


def _read(spark, log, tmp_path):
    """The log through a Parquet file: a million rows are too many for a local relation."""
    path = tmp_path / "log.parquet"
    log.assign(dwell=log["dwell"].astype(float)).to_parquet(path)
    return spark.read.parquet(str(path)).drop("dwell")


def test_a_million_impressions_recover_the_bias_and_attractiveness(spark, tmp_path):
    truth = random_truth(queries=100, docs=12, seed=21)
    runs = rankings(truth, systems=4, seed=21)
    log = simulate_pbm(truth, runs, examination=THETA, searches=100_000, shuffle=0.1, seed=22)
    found = releval.click_labels(_read(spark, log, tmp_path), min_impressions=200)
    bias = found.position_bias.toPandas()
    for method in ("pbm_em", "intervention_harvesting"):
        got = bias[bias["method"] == method].sort_values("position")["examination"].to_numpy()
        assert np.abs(got - THETA).max() < 0.02, (method, got)
    labels = found.labels.toPandas().merge(truth, on=["query_id", "doc_id"], suffixes=("", "_t"))
    assert len(labels) > 500
    rmse = np.sqrt(np.mean((labels["attractiveness"] - labels["attractiveness_t"]) ** 2))
    assert rmse < 0.05, rmse
    covered = (labels["attractiveness_low"] <= labels["attractiveness_t"]) & (
        labels["attractiveness_t"] <= labels["attractiveness_high"]
    )
    assert 0.92 <= covered.mean() <= 0.98, covered.mean()


def _ndcg(spark, runs, qrels):
    run = spark.createDataFrame(runs.drop(columns="position"))
    result = releval.evaluate(run, qrels, measures=["nDCG@10"], partition_by=["system"])
    rows = result.aggregate.where(
        "averaging = 'macro' and slice is null and measure_key = 'nDCG@10'"
    ).collect()
    return {r["system"]: r["value"] for r in rows}


@pytest.mark.parametrize("model", ["pbm", "sdbn"])
def test_ten_rankers_ordered_by_click_labels_as_by_the_truth(spark, model, tmp_path):
    truth = random_truth(queries=150, docs=15, seed=31)
    runs = rankings(truth, systems=10, noise=np.linspace(0.2, 3.0, 10), seed=31)
    simulate = simulate_pbm if model == "pbm" else simulate_cascade
    extra = {"examination": THETA} if model == "pbm" else {"continuation": 1.0}
    log = simulate(truth, runs, searches=40_000, shuffle=0.1, seed=32, **extra)
    found = releval.click_labels(_read(spark, log, tmp_path), model=model, min_impressions=10)
    qrels = spark.createDataFrame(truth[["query_id", "doc_id", "relevance"]])
    by_truth = _ndcg(spark, runs, qrels)
    by_clicks = _ndcg(spark, runs, found.labels)
    systems = sorted(by_truth)
    tau = kendalltau([by_truth[s] for s in systems], [by_clicks[s] for s in systems]).statistic
    assert tau >= 0.9, (tau, by_truth, by_clicks)
