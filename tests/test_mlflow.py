"""Result.log_mlflow on a local folder store, the metric names, and MLflow's own retriever
metrics against releval's on the same rankings."""

from __future__ import annotations

import warnings

import mlflow
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

import releval
from releval.core import columns as S
from releval.io.mlflow_log import (
    gate_metric_prefix,
    macro_metrics,
    metric_name,
    name_part,
    partition_prefix,
)

RANKED = {"q1": ["d1", "d2", "d3", "d4", "d5", "d6"], "q2": ["d7", "d8", "d9", "d10", "d11"],
          "q3": ["e1", "e2", "e3", "e4", "e5"]}
GOLD = {"q1": ["d2", "d5", "d9"], "q2": ["d7"], "q3": ["e5", "e9"]}


def test_metric_names_follow_mlflow_where_it_has_one():
    assert [metric_name(k) for k in ("P@5", "R@100", "nDCG@10", "Hit@10", "RR", "AP",
                                     "P(rel=2)@5", "nDCG@window", "P@10[best]", "map")] == [
        "precision_at_5", "recall_at_100", "ndcg_at_10", "hit_at_10", "rr", "ap",
        "precision_rel_2_at_5", "ndcg_at_window", "precision_at_10_best", "map"]
    assert partition_prefix({"system": "bm25", "day": "2026-11-28"}) == "bm25/2026-11-28/"
    assert partition_prefix({"system": "a=b/c", "x": None, "y": ".."}) == "a_b_c/null/_/"
    rows = [{"system": "bm25", S.MEASURE_KEY: "RR", S.AVERAGING: "macro", S.VALUE: 0.5},
            {"system": "bm25", S.MEASURE_KEY: "RR", S.AVERAGING: "micro", S.VALUE: 0.4},
            {"system": "bm25", S.MEASURE_KEY: "AP", S.AVERAGING: "macro", S.VALUE: None}]
    assert macro_metrics(rows, ["system"], "eval/") == {"eval/bm25/rr": 0.5}


def test_log_mlflow_logs_every_macro_mean_the_settings_and_the_tables(spark, tmp_path):
    mlflow.set_tracking_uri((tmp_path / "mlruns").as_uri())
    df = spark.createDataFrame(
        [("bm25", q, ids, GOLD[q]) for q, ids in RANKED.items()]
        + [("dense", "q1", ["d9", "d2"], GOLD["q1"])],
        "system string, q string, hits array<string>, gold array<string>")
    result = releval.evaluate(df, None, measures=["P@5", "nDCG@10", "RR"],
                              partition_by=["system"], depth=50,
                              columns={"query_id": "q", "ranked": "hits"},
                              qrels_columns={"relevant": "gold"})
    report = tmp_path / "report.html"
    report.write_text("<html>report</html>")
    with mlflow.start_run() as active:
        assert result.log_mlflow(prefix="retrieval/", report=str(report)) == active.info.run_id
    logged = mlflow.get_run(active.info.run_id).data
    macro = {(r.system, r.measure_key): r.value
             for r in result.aggregate.where(F.col(S.AVERAGING) == "macro").collect()}
    assert logged.metrics == pytest.approx(
        {f"retrieval/{s}/{metric_name(k)}": v for (s, k), v in macro.items()})
    # dense ranks d9 (relevant) d2 for q1 only; q2 and q3 it did not retrieve score 0:
    # RR = (1 + 0 + 0) / 3
    assert logged.metrics["retrieval/dense/rr"] == pytest.approx(1 / 3)
    assert logged.params["retrieval/measures"] == "P@5,nDCG@10,RR"
    assert (logged.params["retrieval/depth"], logged.params["retrieval/relevance_level"],
            logged.params["retrieval/judged_only"]) == ("50", "1", "False")
    assert logged.params["retrieval/releval_version"] == releval.__version__
    folder = mlflow.artifacts.download_artifacts(run_id=active.info.run_id,
                                                 artifact_path="releval", dst_path=str(tmp_path))
    per_query = pd.read_parquet(f"{folder}/per_query.parquet")
    assert len(per_query) == result.per_query.count() == 2 * 3 * 5  # P@5, Judged@5, ...
    assert (tmp_path / "releval" / "report.html").read_text() == "<html>report</html>"
    # no active run: one is started and ended
    run_id = result.log_mlflow()
    assert mlflow.active_run() is None
    assert set(mlflow.get_run(run_id).data.metrics) == {
        f"{s}/{metric_name(k)}" for s, k in macro}


def mlflow_scores(metric, k: int, ranked: dict, gold: dict) -> dict[str, float]:
    queries = sorted(ranked)
    with warnings.catch_warnings():  # MLflow 3 marks its retriever metrics deprecated
        warnings.simplefilter("ignore")
        value = metric(k).eval_fn(pd.Series([ranked[q] for q in queries]),
                                  pd.Series([gold[q] for q in queries]))
    return dict(zip(queries, value.scores, strict=True))


def releval_scores(spark, measure: str, ranked: dict, gold: dict) -> dict[str, float]:
    df = spark.createDataFrame([(q, ranked[q], gold[q]) for q in ranked],
                               "q string, hits array<string>, gold array<string>")
    result = releval.evaluate(df, None, measures=[measure],
                              columns={"query_id": "q", "ranked": "hits"},
                              qrels_columns={"relevant": "gold"})
    return {r.query_id: r.value
            for r in result.per_query.where(F.col(S.MEASURE_KEY) == measure).collect()}


@pytest.mark.parametrize("family", ["P", "R", "nDCG"])
def test_mlflow_retriever_metrics_agree_when_k_documents_are_retrieved(spark, family):
    metric = {"P": mlflow.metrics.precision_at_k, "R": mlflow.metrics.recall_at_k,
              "nDCG": mlflow.metrics.ndcg_at_k}[family]
    ours = releval_scores(spark, f"{family}@5", RANKED, GOLD)
    theirs = mlflow_scores(metric, 5, RANKED, GOLD)
    assert ours == pytest.approx(theirs, abs=1e-6)  # MLflow's nDCG sorts float32 scores
    # q1 ranks d1 d2 d3 d4 d5, relevant {d2, d5, d9}: P@5 = 2/5, R@5 = 2/3,
    # nDCG@5 = (1/log2(3) + 1/log2(6)) / (1 + 1/log2(3) + 1/2)
    hand = {"P": 2 / 5, "R": 2 / 3, "nDCG": (1 / 1.5849625 + 1 / 2.5849625) / (1 + 1 / 1.5849625 + 0.5)}
    assert ours["q1"] == pytest.approx(hand[family], abs=1e-6)


def test_mlflow_precision_and_ndcg_differ_by_definition_below_k(spark):
    # one document retrieved, gold {f1, f2}, k = 5
    ranked, gold = {"q": ["f1"]}, {"q": ["f1", "f2"]}
    # P@5: trec_eval divides by k (1/5); MLflow by the documents retrieved (1/1)
    assert releval_scores(spark, "P@5", ranked, gold)["q"] == pytest.approx(0.2)
    assert mlflow_scores(mlflow.metrics.precision_at_k, 5, ranked, gold)["q"] == 1.0
    # nDCG@5: the ideal ranking at 5 holds both (1 + 1/log2(3)); MLflow's is cut at the one
    # retrieved (1)
    assert releval_scores(spark, "nDCG@5", ranked, gold)["q"] == pytest.approx(
        1 / (1 + 1 / 1.5849625), abs=1e-6)
    assert mlflow_scores(mlflow.metrics.ndcg_at_k, 5, ranked, gold)["q"] == pytest.approx(1.0)


def test_gate_metric_names_stay_unique_for_any_slice_value():
    from mlflow.utils.validation import _validate_metric_name

    values = ["en-US", "en US", "en/US", "en_US", "en.US", "en__US", "", ".", "..", "(null)"]
    names = [gate_metric_prefix("RR change >= 0", "locale", v) for v in values]
    assert len(set(names)) == len(values)
    assert names[3] == "gate/RR_change_ge_0/locale/en_US/"  # nothing to replace: as it is
    # the slice column and its value stay apart
    assert gate_metric_prefix("RR > 0", "a_b", "c") != gate_metric_prefix("RR > 0", "a", "b_c")
    for name in names:
        _validate_metric_name(name + "estimate")  # a name MLflow accepts


@settings(max_examples=15, deadline=None)
@given(st.text(max_size=6), st.text(max_size=6))
def test_distinct_texts_give_distinct_name_parts(a, b):
    assert (name_part(a) == name_part(b)) == (a == b)
