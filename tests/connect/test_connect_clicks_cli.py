"""``releval clicks`` on a Spark Connect server: the tables it prints are a classic session's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from releval.cli import main
from releval.job.sample import SampleShape, generate, generate_queries
from releval.job.sample_clicks import generate_interactions

pytestmark = pytest.mark.slow  # a Spark Connect server and a client process

SHAPE = SampleShape(queries=20, docs_per_query=12, judged_per_query=6, corpus=500,
                    dates=("2026-11-22",))


def releval(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SPARK_REMOTE"}
    return subprocess.run([sys.executable, "-m", "releval.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def log_file(spark, tmp_path_factory) -> str:
    run, qrels = generate(SHAPE)
    log = generate_interactions(run, qrels, generate_queries(SHAPE), seed=3)
    path = str(tmp_path_factory.mktemp("connect_clicks") / "log.parquet")
    # through Arrow, as the sample is written: a missing dwell (NaN in pandas) is null
    spark.createDataFrame(pa.Table.from_pandas(log, preserve_index=False)).write.parquet(path)
    return path


@pytest.mark.parametrize("action", [
    ["measures", "--partition-by", "system", "--measures", "CTR@5,Abandonment,Clicks"],
    ["labels", "--min-impressions", "3"],
], ids=["measures", "labels"])
def test_clicks_with_remote_prints_what_a_classic_session_prints(
    shared_session, connect_url: str, log_file: str, tmp_path: Path,
    capsys: pytest.CaptureFixture[str], action: list[str],
) -> None:
    args = ["clicks", action[0], "--events", log_file, "--column", "doc_id=item_id", *action[1:]]
    done = releval(*args, "--remote", connect_url, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert main(args) == 0
    classic = capsys.readouterr().out
    shown = [line for line in done.stdout.splitlines() if not line.startswith("releval: ")]
    assert shown == [line for line in classic.splitlines() if not line.startswith("releval: ")]
    assert "quarantined 0" in classic and len(shown) > 5
