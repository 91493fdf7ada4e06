"""Release gates over Spark Connect: ``releval.gate`` on the designed per-query rows gives the
classic session's tables, ``releval gate --remote`` its exit codes, and the nightly job with
``baseline = "previous"`` fails the designed regressing night and only it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from support import gate_support as D
from support.batch_support import read
from support.connect_support import CLIENT_PROLOGUE, last_json, run_client

import releval

pytestmark = pytest.mark.slow  # a Spark Connect server and client processes

ROOT = Path(__file__).resolve().parents[2]
CASES = [
    ("good", ["nDCG@10 change >= -0.01", "Hit@10 >= 0.8"], False),
    ("bad", ["nDCG@10 change >= -0.01", "nDCG@10 >= 0.3", "nDCG@10 change >= -2%"], False),
    ("small", ["nDCG@10 change > 0"], False),
    ("mixed", ["nDCG@10 change >= -0.01", "nDCG@10 change >= -0.01 per segment",
               "weighted nDCG@10 change >= -0.01"], True),
]
SCRIPT = CLIENT_PROLOGUE + f"""
import releval
from releval.runtime.mode import is_connect
from support import gate_support as D

per_query, queries = D.frames(spark)
out = []
for cand, rules, sliced in {CASES!r}:
    g = releval.gate(per_query, baseline="system=base", candidates=f"system={{cand}}", rules=rules,
                     **(dict(queries=queries, queries_columns={{"weight": "traffic"}}) if sliced
                        else {{}}))
    out.append({{"decision": g.decision, "rows": [r.asDict() for r in g.table.collect()],
                 "text": g.render()}})
print(json.dumps({{"connect": is_connect(spark), "gates": out}}))
"""


def test_gate_on_spark_connect_gives_the_classic_sessions_tables(spark: SparkSession,
                                                                 connect_url: str,
                                                                 tmp_path: Path) -> None:
    got = last_json(run_client(connect_url, SCRIPT, cwd=tmp_path))
    assert got["connect"] is True
    per_query, queries = D.frames(spark)
    decisions = []
    for (cand, rules, sliced), remote in zip(CASES, got["gates"], strict=True):
        g = releval.gate(per_query, baseline="system=base", candidates=f"system={cand}",
                         rules=rules, **(dict(queries=queries,
                                              queries_columns={"weight": "traffic"})
                                         if sliced else {}))
        assert remote["decision"] == g.decision
        assert remote["text"] == g.render()
        local = [r.asDict() for r in g.table.collect()]
        assert len(remote["rows"]) == len(local)
        for a, b in zip(remote["rows"], local, strict=True):
            for key, value in b.items():
                assert a[key] == (pytest.approx(value, rel=1e-12, nan_ok=True)
                                  if isinstance(value, float) else value), (cand, key)
        decisions.append(g.decision)
    assert decisions == ["pass", "fail", "inconclusive", "fail"]


def _cli(url: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SPARK_REMOTE": url}
    return subprocess.run([sys.executable, "-m", "releval.cli", "gate", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=900)


def test_cli_exit_codes_over_connect(connect_url: str, tmp_path: Path) -> None:
    queries = [f"q{i:02d}" for i in range(12)]
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{q} 0 r 1\n{q} 0 x 0\n" for q in queries))
    for tag, first in (("base", "rx"), ("worse", "xr")):
        (tmp_path / f"{tag}.run").write_text("".join(
            f"{q} Q0 {first[0]} 1 2.0 {tag}\n{q} Q0 {first[1]} 2 1.0 {tag}\n" for q in queries))
    files = ["--qrels", str(qrels), "--run", str(tmp_path / "base.run")]
    # worse: RR 1/2 where base has 1 on every query: a fail
    done = _cli(connect_url, *files, "--run", str(tmp_path / "worse.run"), "--rule",
                "RR change >= -0.01", cwd=tmp_path)
    assert done.returncode == 1, done.stderr[-3000:]
    assert done.stdout.startswith("gate: FAIL")
    # the same run twice: every difference 0, not above 0: inconclusive, or mapped
    same = [*files, "--run", str(tmp_path / "worse.run"), "--baseline", "worse", "--rule",
            "RR change > 0"]
    (tmp_path / "again.run").write_text((tmp_path / "worse.run").read_text()
                                        .replace(" worse\n", " again\n"))
    same[3] = str(tmp_path / "again.run")
    assert _cli(connect_url, *same, cwd=tmp_path).returncode == 3
    assert _cli(connect_url, *same, "--on-inconclusive", "pass", cwd=tmp_path).returncode == 0
    bad = _cli(connect_url, *files, "--run", str(tmp_path / "worse.run"), "--rule", "RR >> 0",
               cwd=tmp_path)
    assert bad.returncode == 2 and "rule 'RR >> 0'" in bad.stderr


def test_the_nightly_job_over_connect_fails_the_regressing_night_only(
    spark: SparkSession, connect_url: str, tmp_path: Path
) -> None:
    week = D.write_week(spark, tmp_path)
    config = D.week_config(tmp_path, *week)
    env = {**os.environ, "SPARK_REMOTE": connect_url}
    done = subprocess.run([sys.executable, str(ROOT / "jobs" / "evaluate.py"), "--config",
                           str(config), "--show", "0"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-3000:]
    gate = read(spark, str(tmp_path / "out" / "gate"))
    decisions = {r["date"]: r["decision"] for r in gate.select("date", "decision").distinct()
                 .collect()}
    assert decisions == {**{d: "pass" for d in D.WEEK}, D.WEEK[D.REGRESSING_DAY]: "fail"}
    log = read(spark, str(tmp_path / "out" / "run_log"))
    assert [r["status"] for r in log.collect()] == ["succeeded"]
    assert json.dumps(sorted(decisions)) == json.dumps(D.WEEK)


def test_the_jobs_gate_over_connect_reads_the_rows_attributes_as_in_classic(
    spark: SparkSession, connect_url: str, tmp_path: Path
) -> None:
    from test_job_carried_attributes import RULES, write_job

    from releval.config import load_config
    from releval.job.batch import run_job

    gated = {}
    for kind in ("classic", "connect"):
        folder = tmp_path / kind
        folder.mkdir()
        config = write_job(spark, folder, queries=True)
        if kind == "classic":
            run_job(spark, load_config(config))
        else:
            env = {**os.environ, "SPARK_REMOTE": connect_url}
            done = subprocess.run([sys.executable, str(ROOT / "jobs" / "evaluate.py"),
                                   "--config", str(config), "--show", "0"], cwd=folder, env=env,
                                  capture_output=True, text=True, timeout=900)
            assert done.returncode in (0, 3), done.stdout[-2000:] + done.stderr[-3000:]
        gated[kind] = sorted(
            (r["system"], r["rule"], r["slice_value"], r["num_queries"], round(r["estimate"], 12)
             if r["estimate"] is not None else None)
            for r in read(spark, str(folder / "out" / "gate")).collect())
    assert gated["connect"] == gated["classic"]
    assert ("dense", RULES[0], "phone", 3, 0.5) in gated["connect"]
