"""One row per query in the config, the batch job and the CLI: Delta with arrays and
maps, JSON Lines with one object per query, the gold labels in the run's table or their
own, and ``[output] mlflow = true``."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import mlflow
import pytest
from pyspark.sql import functions as F

from releval.adhoc import read_runs
from releval.cli.evaluate import add_evaluate_arguments, config_from_args
from releval.config import config_from_dict
from releval.core import columns as S
from releval.errors import ConfigError
from releval.job.batch import available_partitions, run_job

GRADES = {"q1": {"d2": 2, "d4": 1}, "q2": {"d6": 1}}
ROWS = [("bm25", "q1", ["d1", "d2", "d3", "d4"]), ("bm25", "q2", ["d5", "d6"]),
        ("dense", "q1", ["d4", "d2"]), ("dense", "q2", [])]
# nDCG@10 by hand (gain = grade, discount log2(i + 1)); ideal: d2 (2) d4 (1) -> 2 + 1/log2(3)
IDEAL_Q1 = 2 + 1 / 1.5849625007
EXPECTED = {
    ("bm25", "q1"): (2 / 1.5849625007 + 1 / 2.3219280949) / IDEAL_Q1,  # d2 at 2, d4 at 4
    ("bm25", "q2"): 1 / 1.5849625007,                                    # d6 at 2
    ("dense", "q1"): (1 + 2 / 1.5849625007) / IDEAL_Q1,                 # d4 at 1, d2 at 2
    ("dense", "q2"): 0.0,                                                # retrieved nothing
}


def config(tmp_path: Path, run: str, qrels: str, **extra: str) -> dict:
    return {
        "run": {"path": run, "query_id": "question", "ranked": "retrieved",
                "partition_columns": ["system"], **extra},
        "qrels": qrels,
        "evaluation": {"measures": ["nDCG@10"]},
        "output": {"per_query_path": str(tmp_path / "out" / "per_query"),
                   "aggregate_path": str(tmp_path / "out" / "aggregate"), "mlflow": True},
    }


def ndcg(spark, cfg) -> dict:
    rows = spark.read.format("delta").load(cfg.output.per_query_path).where(
        F.col(S.MEASURE_KEY) == "nDCG@10").collect()
    return {(r.system, r.query_id): r.value for r in rows}


@pytest.mark.slow  # a whole batch job in this process
def test_delta_arrays_and_json_lines_run_through_the_job_and_mlflow(spark, tmp_path):
    mlflow.set_tracking_uri((tmp_path / "mlruns").as_uri())
    delta = str(tmp_path / "run_delta")
    spark.createDataFrame([(s, q, ids, GRADES[q]) for s, q, ids in ROWS],
                          "system string, question string, retrieved array<string>, "
                          "gold_grades map<string,int>").write.format("delta").save(delta)
    # the gold labels in the run's table: [qrels] without path or table (Parquet reads the
    # same way: only the format differs)
    cfg = config_from_dict(config(tmp_path, delta, {"graded": "gold_grades"}, format="delta"))
    assert (cfg.qrels.path, cfg.qrels.format, cfg.run.rank_by) == (delta, "delta", "rank")
    with mlflow.start_run() as active:
        run_job(spark, cfg, job_run_id="job-1")
    found = ndcg(spark, cfg)
    assert found == pytest.approx(EXPECTED, abs=1e-9)
    logged = mlflow.get_run(active.info.run_id).data
    # macro nDCG@10 of dense: (dense q1 + 0) / 2
    assert logged.metrics["dense/ndcg_at_10"] == pytest.approx(EXPECTED[("dense", "q1")] / 2)
    assert (logged.params["job_run_id"], logged.params["measures"]) == ("job-1", "nDCG@10")
    # both inputs are the one Delta table, pinned at its version
    assert (logged.params["run_version"], logged.params["qrels_version"]) == ("0", "0")
    # --pending lists the run partitions of a run given one row per query
    assert sorted(p["system"] for p in available_partitions(spark, cfg.run)) == ["bm25", "dense"]

    # JSON Lines, one object per query; the grades in a file of their own, as JSON objects
    jsonl, gold = tmp_path / "run.jsonl", tmp_path / "gold.jsonl"
    jsonl.write_text("".join(json.dumps({"system": s, "question": q, "retrieved": ids}) + "\n"
                             for s, q, ids in ROWS))
    gold.write_text("".join(json.dumps({"question": q, "grades": g}) + "\n"
                            for q, g in GRADES.items()))
    cfg = config_from_dict(config(
        tmp_path, str(jsonl), {"path": str(gold), "format": "jsonl", "query_id": "question",
                               "graded": "grades"}, format="jsonl"))
    with mlflow.start_run():
        run_job(spark, cfg, job_run_id="job-2")
    assert ndcg(spark, cfg) == pytest.approx(EXPECTED, abs=1e-9)


def test_compare_reads_json_lines_runs(spark, tmp_path):
    paths = []
    for name, docs in (("bm25", ["d1", "d2"]), ("dense", ["d2"])):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps({"query_id": "q1", "doc_id": d, "score": 2.0 - i})
                                + "\n" for i, d in enumerate(docs)))
        paths.append(str(path))
    run, tags = read_runs(spark, paths, run_format="jsonl")
    assert tags == ["bm25", "dense"]  # the file names: the rows carry no run_id
    assert sorted((r.run_id, r.doc_id) for r in run.collect()) == [
        ("bm25", "d1"), ("bm25", "d2"), ("dense", "d2")]


def test_config_keys_of_the_shapes(tmp_path):
    with pytest.raises(ConfigError, match=r"run.ranked .* replaces \['run.doc_id'\]"):
        config_from_dict(config(tmp_path, "r", {"relevant": "gold"}, doc_id="doc"))
    with pytest.raises(ConfigError, match="'relevant' .* or 'graded' .* not both"):
        config_from_dict(config(tmp_path, "r", {"relevant": "a", "graded": "b"}))
    with pytest.raises(ConfigError, match="not TREC text"):
        config_from_dict(config(tmp_path, "r", {"relevant": "gold"}, format="trec"))
    parser = argparse.ArgumentParser()
    add_evaluate_arguments(parser)
    args = parser.parse_args(["--run", "r.jsonl", "--format", "jsonl", "--ranked", "hits",
                              "--relevant", "gold", "--mlflow"])
    cfg = config_from_args(args, str(tmp_path))
    assert (cfg.run.ranked, cfg.run.rank_by, cfg.qrels.path, cfg.qrels.relevant,
            cfg.output.mlflow) == ("hits", "rank", "r.jsonl", "gold", True)


@pytest.mark.slow  # a subprocess with its own JVM
def test_the_cli_reads_json_lines_with_arrays_and_logs_to_mlflow(tmp_path):
    run = tmp_path / "rag.jsonl"
    run.write_text("".join(json.dumps({"system": s, "query_id": q, "retrieved": ids,
                                       "grades": GRADES[q]}) + "\n" for s, q, ids in ROWS))
    store = (tmp_path / "mlruns").as_uri()
    done = subprocess.run(
        [sys.executable, "-m", "releval.cli", "evaluate", "--run", str(run), "--format", "jsonl",
         "--ranked", "retrieved", "--graded", "grades", "--partition-columns", "system",
         "--measures", "nDCG@10", "--mlflow", "--master", "local[2]"],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "MLFLOW_TRACKING_URI": store})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "a row is an element of 'retrieved'" in done.stdout
    run_id = done.stdout.split("MLflow run: ")[1].split()[0]
    mlflow.set_tracking_uri(store)
    metrics = mlflow.get_run(run_id).data.metrics
    assert metrics["dense/ndcg_at_10"] == pytest.approx(EXPECTED[("dense", "q1")] / 2)
    assert metrics["bm25/ndcg_at_10"] == pytest.approx(
        (EXPECTED[("bm25", "q1")] + EXPECTED[("bm25", "q2")]) / 2)
