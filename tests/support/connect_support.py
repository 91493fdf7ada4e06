"""Running Spark Connect clients in subprocesses (tests/connect)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def run_client(url: str, script: str, *args: str, cwd: Path, timeout: float = 900
               ) -> subprocess.CompletedProcess[str]:
    """Run ``script`` (Python source) as a Spark Connect client of ``url``."""
    env = {**os.environ, "SPARK_REMOTE": url, "PYSPARK_PYTHON": sys.executable}
    return subprocess.run([sys.executable, "-c", script, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def last_json(done: subprocess.CompletedProcess[str]) -> dict:
    """The JSON object a client script printed last (asserting it succeeded)."""
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


TESTS = Path(__file__).resolve().parents[1]
#: a client script's first lines: the test support on the path, the session from SPARK_REMOTE
CLIENT_PROLOGUE = f"""
import json, os, sys
sys.path.insert(0, {str(TESTS)!r})
from pyspark.sql import SparkSession
spark = SparkSession.builder.getOrCreate()
"""

#: the API test's measures: cutoffs, graded, judged-only, ties, bounds
MEASURES = ["P@5", "R@10", "nDCG@10", "RR", "AP", "Hit@5", "P(rel=2)@5", "bpref",
            "nDCG@10[judged]", "AP[ties]", "P@5[best]", "Rprec"]


def api_inputs(spark):  # -> (run, qrels, answers) DataFrames
    """A small evaluation's inputs, the same in a classic and a Connect session: 3 systems x
    30 queries x 12 documents (tied scores, unjudged documents, a query without qrels) plus two
    rows the checks quarantine (a null doc id, a NaN score); graded qrels with a negative
    label; an answer score per (system, query)."""
    import random

    rng = random.Random(46)
    qrels = [(f"q{q:02d}", f"d{d}", rng.choice([-1, 0, 0, 1, 1, 2]))
             for q in range(30) for d in range(10) if (q, d) != (0, 0)]
    run = [(f"s{s}", f"q{q:02d}", f"d{d}", float(round(rng.gauss(0.3 * s, 1), 1)))
           for s in range(3) for q in range(31) for d in range(12)]
    run += [("s0", "q01", None, 1.0), ("s1", "q02", "d3", float("nan"))]
    answers = [(f"s{s}", f"q{q:02d}", rng.random()) for s in range(3) for q in range(30)]
    return (
        spark.createDataFrame(run, "system string, query_id string, doc_id string, score double"),
        spark.createDataFrame(qrels, "query_id string, doc_id string, relevance int"),
        spark.createDataFrame(answers, "system string, query_id string, answer_score double"),
    )
