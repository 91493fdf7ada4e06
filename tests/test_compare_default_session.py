"""releval.compare on the Result of releval.evaluate in a notebook's default session (1 GB
driver, 200 shuffle partitions, nothing of releval's tuning): it completes, its t-test agrees
with SciPy, and the plan it reads the per-query rows with grows slowly with the measures."""

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
    import numpy as np
    from pyspark.sql import SparkSession
    from scipy import stats
    import releval
    from releval.runtime.mode import explain_string
    from releval.frames import comparison

    spark = SparkSession.builder.master("local[2]").getOrCreate()
    rng = np.random.default_rng(3)
    queries, systems = 120, 5
    qrels = [(f"q{q:03d}", f"d{d}", int(g)) for q in range(queries) for d in range(12)
             for g in [rng.choice([0, 1, 2], p=[0.6, 0.3, 0.1])]]
    grade = {(q, d): g for q, d, g in qrels}
    run = [(f"s{s}", q, d, float(g * (0.3 + 0.2 * s) + rng.normal()))
           for s in range(systems) for (q, d), g in grade.items()]
    run = spark.createDataFrame(run, "system string, query_id string, doc_id string, score double")
    qrels = spark.createDataFrame(qrels, "query_id string, doc_id string, relevance int")
    measures = [f"{m}@{k}" for k in (1, 3, 5, 10) for m in ("P", "R", "nDCG", "Hit")]
    measures += ["P(rel=2)@5", "P(rel=2)@10", "RR", "AP"]
    result = releval.evaluate(run, qrels, measures=measures, partition_by=["system"])
    result.aggregate.collect()
    rows = releval.compare(result.per_query, baseline="system=s0",
                           candidates=[f"system=s{s}" for s in range(1, systems)],
                           test="t").collect()
    values = {(r.system, r.measure_key, r.query_id): r.value
              for r in result.per_query.collect()}
    worst, checked, same = 0.0, 0, []
    for r in rows:
        cand = r.candidate.split("=")[1]
        base = np.array([values[("s0", r.measure_key, f"q{q:03d}")] for q in range(queries)])
        other = np.array([values[(cand, r.measure_key, f"q{q:03d}")] for q in range(queries)])
        if np.array_equal(base, other):
            same.append((r.measure_key, r.t_p_value))
            continue
        expected = stats.ttest_rel(other, base).pvalue
        worst = max(worst, abs(r.t_p_value - expected) / expected)
        checked += 1

    def added(count):
        pq = releval.evaluate(run, qrels, measures=[f"P@{k}" for k in range(1, count + 1)],
                              partition_by=["system"]).per_query
        read = comparison.side_rows(pq, [{"system": f"s{s}"} for s in range(systems)], seed=1)
        spark.conf.set(comparison.CONSTRAINTS, "false")
        return len(explain_string(read, "extended")) - len(explain_string(pq, "extended"))

    print(json.dumps({"rows": len(rows), "measures": sorted({r.measure_key for r in rows}),
                      "checked": checked, "worst": worst, "same": same,
                      "driver": spark.conf.get("spark.driver.memory", "1g"),
                      "added": [added(5), added(40)]}))
''')


def test_compare_on_a_result_in_a_default_session(tmp_path):
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["driver"] == "1g"
    # 4 candidates x 20 measures and their Judged@1, @3, @5, @10
    assert got["rows"] == 4 * 24 and len(got["measures"]) == 24
    # every system retrieves all 12 judged documents of a query: Judged@k is 1 on both
    # sides (so is Hit@10 here); all-zero differences are all ties, p = 1
    # (docs/statistics.md; SciPy gives nan), every other pair agrees with SciPy
    assert got["checked"] + len(got["same"]) == 4 * 24 and got["worst"] < 1e-9
    assert {key for key, _ in got["same"]} >= {"Judged@1", "Judged@3", "Judged@5", "Judged@10"}
    assert got["checked"] >= 4 * 16 and all(p == 1.0 for _, p in got["same"]), got["same"]
    # the plan compare adds to the per-query rows' plan: about the same at 5 and at 40
    # measures (the per-query plan itself holds one literal per measure)
    at_5, at_40 = got["added"]
    assert 0 < at_40 < 2 * at_5, got["added"]
