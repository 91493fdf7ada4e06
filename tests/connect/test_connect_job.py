"""The batch job as ``python jobs/evaluate.py --config ...`` with ``SPARK_REMOTE`` set: the
same output tables, commits, run log and row accounting as the job in a classic session,
``--pending`` and the re-run of a partition included."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from chispa import assert_approx_df_equality
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from support.batch_support import (
    D27,
    D28,
    D29,
    PER_QUERY_ROWS_PER_DATE,
    config_at,
    history,
    read,
    write_config,
    write_inputs,
)

from releval.core import columns as S
from releval.evaluation.partitions import parse_selection
from releval.job.batch import run_job

pytestmark = pytest.mark.slow  # a Spark Connect server and client processes

ROOT = Path(__file__).resolve().parents[2]


def connect_job(url: str, config: Path, *args: str) -> str:
    """``python jobs/evaluate.py --config CONFIG ARGS`` with ``SPARK_REMOTE=url``: its output."""
    env = {**os.environ, "SPARK_REMOTE": url}
    done = subprocess.run(
        [sys.executable, str(ROOT / "jobs" / "evaluate.py"), "--config", str(config), "--show", "0",
         *args], cwd=config.parent, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done.stdout + done.stderr


def without_run_id(df: DataFrame) -> DataFrame:
    """``df`` without ``job_run_id``, its map columns as JSON text (a map cannot be sorted),
    ordered by its keys."""
    df = df.drop(S.JOB_RUN_ID)
    df = df.select(*[F.to_json(df[f.name]).alias(f.name) if isinstance(f.dataType, T.MapType)
                     else df[f.name] for f in df.schema.fields])
    return df.orderBy(*[c for c in df.columns if c != "value" and not c.startswith("ci_")])


def test_the_batch_job_on_spark_connect_writes_what_a_classic_session_writes(
    spark: SparkSession, connect_url: str, tmp_path: Path
) -> None:
    for folder in ("in", "classic", "connect"):
        (tmp_path / folder).mkdir()
    run, qrels = write_inputs(spark, tmp_path / "in")
    classic_path = write_config(tmp_path / "classic", run, qrels)
    connect_path = write_config(tmp_path / "connect", run, qrels)
    classic, connect = config_at(classic_path), config_at(connect_path)
    everything = parse_selection([], run_partition_columns=("system", "date"))
    done = run_job(spark, classic, everything, job_run_id="classic")

    out = connect_job(connect_url, connect_path, "--job-run-id", "first")
    # the config's master does not apply to a Connect session: one line says so
    assert ("releval: [spark] master = 'local[1]' is ignored: the session is a Spark Connect "
            f"client of {connect_url}") in out.splitlines()
    assert done.render().split("rows written:")[1].splitlines()[0] in out  # same row counts
    for name in ("per_query", "aggregate"):
        mine = read(spark, getattr(connect.output, f"{name}_path"))
        theirs = read(spark, getattr(classic.output, f"{name}_path"))
        assert mine.count() == theirs.count() > 0
        assert_approx_df_equality(without_run_id(mine), without_run_id(theirs), 1e-12,
                                  ignore_nullable=True)
    pq = connect.output.per_query_path or ""
    assert history(spark, pq) == [(0, "CREATE TABLE AS SELECT", "releval job_run_id=first")]
    log = read(spark, str(tmp_path / "connect" / "out" / "run_log")).collect()
    classic_log = read(spark, str(tmp_path / "classic" / "out" / "run_log")).collect()
    fields = ("status", "run_version", "qrels_version", "per_query_version", "aggregate_version",
              "per_query_rows", "aggregate_rows", "selection", "replace_predicate")
    assert [[r[f] for f in fields] for r in log] == [[r[f] for f in fields] for r in classic_log]
    assert log[0]["per_query_rows"] == 3 * PER_QUERY_ROWS_PER_DATE

    # nothing pending: no commit to the output tables, a run-log row saying so
    out = connect_job(connect_url, connect_path, "--pending", "--job-run-id", "none")
    assert "\n  rows written: none\n" in out
    assert len(history(spark, pq)) == 1
    # a partition run again is replaced, one commit, the same rows
    before = without_run_id(read(spark, pq)).collect()
    connect_job(connect_url, connect_path, "--partition", f"date={D28}", "--job-run-id", "again")
    assert [(v, meta) for v, _, meta in history(spark, pq)] == [
        (0, "releval job_run_id=first"), (1, "releval job_run_id=again")]
    assert without_run_id(read(spark, pq)).collect() == before
    by_date = dict(read(spark, pq).groupBy("date", S.JOB_RUN_ID).count()
                   .select("date", S.JOB_RUN_ID).collect())
    assert by_date == {D27: "first", D28: "again", D29: "first"}
    statuses = read(spark, str(tmp_path / "connect" / "out" / "run_log")).orderBy("started_at")
    assert [r[0] for r in statuses.select("status").collect()] == [
        "succeeded", "nothing_pending", "succeeded"]
    assert read(spark, pq).where(F.col("date") == D29).count() == PER_QUERY_ROWS_PER_DATE
