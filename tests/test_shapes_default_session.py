"""One row per (system, question) in a notebook's default session (1 GB driver, no Delta,
nothing of releval's tuning): arrays and a grade map evaluated as trec_eval does, and the
macro means logged to MLflow on a local folder store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow  # a JVM of its own, with Spark's defaults

SCRIPT = textwrap.dedent('''
    import json, os, sys
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import mlflow
    import numpy as np
    import pytrec_eval
    from pyspark.sql import SparkSession
    import releval

    spark = SparkSession.builder.master("local[2]").getOrCreate()
    rng = np.random.default_rng(7)
    grades = {f"q{q:02d}": {f"d{d}": int(rng.choice([1, 1, 2, 3]))
                            for d in rng.choice(30, size=4, replace=False)} for q in range(40)}
    rows, runs = [], {}
    for system in ("bm25", "dense", "hybrid"):
        for q, labels in grades.items():
            ids = [f"d{d}" for d in rng.choice(30, size=int(rng.integers(0, 12)), replace=False)]
            rows.append((system, q, ids, sorted(labels), labels))
            if ids:  # position i scores n - i: trec_eval's order is the array's
                runs.setdefault(system, {})[q] = {d: float(len(ids) - i) for i, d in enumerate(ids)}
    df = spark.createDataFrame(rows, "system string, question string, retrieved array<string>, "
                               "gold array<string>, gold_grades map<string,int>")
    names = {"P@5": "P_5", "R@10": "recall_10", "nDCG@10": "ndcg_cut_10", "AP": "map",
             "RR": "recip_rank"}
    worst, compared = 0.0, 0
    for gold in ({"relevant": "gold"}, {"graded": "gold_grades"}):
        graded = "graded" in gold
        result = releval.evaluate(df, None, measures=list(names), partition_by=["system"],
                                  columns={"query_id": "question", "ranked": "retrieved"},
                                  qrels_columns=gold)
        qrels = {q: {d: (g if graded else 1) for d, g in labels.items()}
                 for q, labels in grades.items()}
        found = {(r.system, r.query_id, r.measure_key): r.value
                 for r in result.per_query.collect() if r.measure_key in names}
        for system in ("bm25", "dense", "hybrid"):
            oracle = pytrec_eval.RelevanceEvaluator(qrels, set(names.values())).evaluate(
                runs.get(system, {}))
            for q in grades:
                for key, name in names.items():
                    expected = oracle[q][name] if q in oracle else 0.0  # -c: missing is 0
                    worst = max(worst, abs(found[(system, q, key)] - expected))
                    compared += 1
    mlflow.set_tracking_uri("file://" + os.path.abspath("mlruns"))
    run_id = result.log_mlflow()
    macro = result.aggregate.where("averaging = 'macro'").count()
    print(json.dumps({"worst": worst, "compared": compared, "macro": macro,
                      "logged": len(mlflow.get_run(run_id).data.metrics),
                      "driver": spark.conf.get("spark.driver.memory", "1g")}))
''')


def test_arrays_in_a_default_session_agree_with_trec_eval_and_log_to_mlflow(tmp_path):
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["driver"] == "1g"
    # 2 label forms x 3 systems x 40 questions x 5 measures
    assert got["compared"] == 2 * 3 * 40 * 5 and got["worst"] < 1e-12
    # 3 systems x (5 measures + Judged@5, Judged@10)
    assert got["logged"] == got["macro"] == 3 * 7
