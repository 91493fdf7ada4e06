"""The README's notebook code in a notebook's default session, classic (``master("local[2]")``:
1 GB driver, 200 shuffle partitions, no Delta) and Spark Connect (``remote("local[2]")``, a
local server without Delta): evaluate agrees with pytrec_eval query by query, compare's t-test
with SciPy, and ``result.write`` fails in one line naming what to configure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from releval.runtime.delta import CATALOG, EXTENSION

pytestmark = pytest.mark.slow  # a JVM of its own, with Spark's defaults

#: releval's measure -> pytrec_eval's
MEASURES = {"P@5": "P_5", "P@10": "P_10", "R@10": "recall_10", "nDCG@10": "ndcg_cut_10",
            "RR": "recip_rank", "AP": "map", "Rprec": "Rprec", "bpref": "bpref",
            "nDCG@5": "ndcg_cut_5", "R@100": "recall_100", "P@20": "P_20",
            "nDCG@20": "ndcg_cut_20"}

SCRIPT = textwrap.dedent('''
    import json, os, sys
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import numpy as np
    import pytrec_eval
    from pyspark.sql import SparkSession
    from scipy import stats
    import releval

    builder, queries, systems, measures = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \\
        json.loads(sys.argv[4])
    spark = (SparkSession.builder.remote("local[2]") if builder == "connect"
             else SparkSession.builder.master("local[2]")).getOrCreate()
    rng = np.random.default_rng(46)
    qrels = [(f"q{q:03d}", f"d{d}", int(rng.choice([0, 1, 2], p=[0.6, 0.3, 0.1])))
             for q in range(queries) for d in range(30)]
    grade = {(q, d): g for q, d, g in qrels}
    run = [(f"s{s}", q, d, float(np.round(g * (0.3 + 0.2 * s) + rng.normal(), 2)))
           for s in range(systems) for (q, d), g in grade.items()]
    result = releval.evaluate(
        spark.createDataFrame(run, "system string, query_id string, doc_id string, score double"),
        spark.createDataFrame(qrels, "query_id string, doc_id string, relevance int"),
        measures=list(measures), partition_by=["system"])
    aggregate = result.aggregate.collect()
    values = {(r.system, r.measure_key, r.query_id): r.value for r in result.per_query.collect()}
    judged = {}
    for q, d, g in qrels:
        judged.setdefault(q, {})[d] = g
    worst_trec = 0.0
    for s in range(systems):
        ranked = {}
        for name, q, d, score in run:
            if name == f"s{s}":
                ranked.setdefault(q, {})[d] = score
        oracle = pytrec_eval.RelevanceEvaluator(judged, set(measures.values()))
        for q, got in oracle.evaluate(ranked).items():
            for ours, theirs in measures.items():
                worst_trec = max(worst_trec, abs(values[(f"s{s}", ours, q)] - got[theirs]))
    rows = releval.compare(result.per_query, baseline="system=s0",
                           candidates=[f"system=s{s}" for s in range(1, systems)]).collect()
    worst_p = 0.0
    for r in rows:
        cand = r.candidate.split("=")[1]
        base = np.array([values[("s0", r.measure_key, f"q{q:03d}")] for q in range(queries)])
        other = np.array([values[(cand, r.measure_key, f"q{q:03d}")] for q in range(queries)])
        if not np.allclose(base, other):
            expected = stats.ttest_rel(other, base).pvalue
            worst_p = max(worst_p, abs(r.t_p_value - expected) / expected)
    try:
        result.write(per_query=os.path.abspath("per_query"))
        error = None
    except Exception as exc:
        error = [type(exc).__name__, str(exc)]
    print(json.dumps({"per_query": len(values), "aggregate": len(aggregate),
                      "compared": len(rows), "worst_trec": worst_trec, "worst_p": worst_p,
                      "shuffle": spark.conf.get("spark.sql.shuffle.partitions"),
                      "error": error, "written": os.path.exists("per_query")}))
''')


def notebook(kind: str, tmp_path, queries: int = 100, systems: int = 3) -> dict:
    """Run :data:`SCRIPT` in a ``kind`` ("classic" or "connect") default session; its JSON."""
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "RELEVAL_JARS")}
    done = subprocess.run([sys.executable, "-c", SCRIPT, kind, str(queries), str(systems),
                           json.dumps(MEASURES)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=1500)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("kind", ["classic", "connect"])
def test_the_readme_runs_in_a_default_session_and_a_write_says_what_delta_needs(kind, tmp_path):
    got = notebook(kind, tmp_path)
    assert got["shuffle"] == "200"  # Spark's default: nothing of releval's tuning
    # 3 systems x 100 queries x (12 measures + Judged@5, @10, @20, @100)
    assert got["per_query"] == 3 * 100 * 16
    assert got["compared"] == 2 * 16
    assert got["worst_trec"] < 1e-9 and got["worst_p"] < 1e-9
    kind_name, message = got["error"]
    assert kind_name == "DeltaUnavailableError" and not got["written"]
    assert message == message.splitlines()[0]  # one line
    assert f"spark.sql.extensions={EXTENSION}" in message
    assert f"spark.sql.catalog.spark_catalog={CATALOG}" in message
    assert "io.delta:delta-spark_2.13:4.0.1" in message
