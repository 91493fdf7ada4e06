"""The ``releval`` command on a Spark Connect server: ``SPARK_REMOTE`` as PySpark reads it, and
``--remote``; the files and the printed comparison are those of a classic session."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from releval.cli import main

pytestmark = pytest.mark.slow  # a Spark Connect server and a client process

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def releval(*args: str, cwd: Path, remote_env: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SPARK_REMOTE"}
    if remote_env:
        env["SPARK_REMOTE"] = remote_env
    return subprocess.run([sys.executable, "-m", "releval.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)


def test_evaluate_with_spark_remote_writes_the_trec_eval_file_of_a_classic_session(
    shared_session, connect_url: str, tmp_path: Path
) -> None:
    args = ["evaluate", "--run", str(EXAMPLES / "bm25.txt"), "--qrels", str(EXAMPLES / "qrels.txt"),
            "--measures", "P@5,nDCG@10,RR,AP,bpref"]
    # a relative output path: the client's working folder, not the server's
    done = releval(*args, "--trec-eval-output", "connect.trec_eval", "--master", "local[2]",
                   "--profile", cwd=tmp_path, remote_env=connect_url)
    assert done.returncode == 0, done.stderr[-3000:]
    # the master does not apply to a Connect session: one line says so
    assert (f"releval: [spark] master = 'local[2]' is ignored: the session is a Spark Connect "
            f"client of {connect_url}") in done.stderr.splitlines()
    assert "releval: the count of Spark jobs is not available on Spark Connect" in done.stdout
    assert main([*args, "--trec-eval-output", str(tmp_path / "classic.trec_eval")]) == 0
    connect = (tmp_path / "connect.trec_eval").read_text()
    assert connect == (tmp_path / "classic.trec_eval").read_text()
    assert "bpref" in connect and len(connect.splitlines()) > 40 * 5


def test_compare_with_remote_prints_the_comparison_of_a_classic_session(
    shared_session, connect_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["compare", "--qrels", str(EXAMPLES / "qrels.txt"), "--measures", "P@5,AP",
            "--run", str(EXAMPLES / "bm25.txt"), "--run", str(EXAMPLES / "dense.txt")]
    done = releval(*args, "--remote", connect_url, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ignored" not in done.stderr  # no master given: no note
    assert main(args) == 0
    classic = capsys.readouterr().out
    shown = [line for line in done.stdout.splitlines() if not line.startswith("releval: ")]
    assert shown == [line for line in classic.splitlines() if not line.startswith("releval: ")]
    assert any("dense" in line for line in shown)


def test_a_remote_that_is_no_connect_url_is_an_error(tmp_path: Path) -> None:
    done = releval("evaluate", "--run", str(EXAMPLES / "bm25.txt"), "--qrels",
                   str(EXAMPLES / "qrels.txt"), "--remote", "localhost:15002", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == ("releval: error: --remote = 'localhost:15002'; expected a Spark "
                                   "Connect URL, sc://host:port (e.g. sc://localhost:15002)")
