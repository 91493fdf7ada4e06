"""The click benchmarks' data and floors: the drawn logs have the stated shape, the online
floor computes releval's values, the gate bench's large data is a valid run and qrels."""

import numpy as np
import pyarrow.parquet as pq
import pytest

import releval
from bench import click_labels, clicks_online, gate


def test_the_labels_log_is_ten_positions_a_search_with_clicks_falling_by_position(tmp_path):
    path = tmp_path / "log.parquet"
    click_labels.generate(path, 20_000)  # 2,000 searches, 100 queries of 30 documents
    log = pq.read_table(path).to_pandas()
    assert len(log) == 20_000 and log["search_id"].nunique() == 2_000
    # every search shows positions 1..10 once, 10 documents of its own query
    by_search = log.groupby("search_id")
    assert (by_search["position"].apply(sorted).map(tuple) == tuple(range(1, 11))).all()
    assert (by_search["doc_id"].nunique() == 10).all()
    assert ((log["doc_id"] // 30) == log["query_id"]).all()
    rate = log.groupby("position")["clicked"].mean()
    # THETA falls from 1.0 to 0.15: the click rate at 1 is several times the one at 10
    assert rate[1] > 3 * rate[10]


@pytest.mark.parametrize("text", [False, True])
def test_the_online_floor_gives_releval_s_per_query_values(spark, tmp_path, text):
    path = tmp_path / "impressions.parquet"
    pq.write_table(clicks_online.impressions(500, text=text), path)
    log = spark.read.parquet(str(path))
    assert dict(log.dtypes)["query_id"] == ("string" if text else "bigint")
    found = releval.evaluate_clicks(log, measures=clicks_online.MEASURES, partition_by="bucket")
    assert clicks_online.floor_gap(found, clicks_online.floor_plan(log)) < 1e-9


def test_the_gate_bench_s_large_data_is_a_ranked_run_and_its_qrels(spark, tmp_path, monkeypatch):
    monkeypatch.setattr(gate, "LARGE_CHUNK", 20)  # 3 chunks of 20, 20 and 10 queries
    run, qrels = str(tmp_path / "run"), str(tmp_path / "qrels")
    gate.write_large(spark, tmp_path, run_path=run, qrels_path=qrels, queries=50)
    r = spark.read.format("delta").load(run).toPandas()
    q = spark.read.format("delta").load(qrels).toPandas()
    # 50 queries x 10 documents x 1 system x 2 dates; 5 judged documents a query
    assert len(r) == 50 * 10 * 2 and len(q) == 50 * 5
    assert r["query_id"].nunique() == 50 and set(r["date"]) == set(gate.LARGE_DATES)
    ranks = r.groupby(["date", "query_id"])["position"].apply(sorted).map(tuple)
    assert (ranks == tuple(range(1, 11))).all()
    # the rank follows the score within a query and date
    top = r.loc[r.groupby(["date", "query_id"])["score"].idxmax()]
    assert (top["position"] == 1).all()
    assert set(q["relevance"]) <= {0, 1, 2, 3} and np.isin(q["doc_id"], r["item_id"]).all()
