"""The batch job as real processes: SIGKILL mid-run, exactly-once re-runs, concurrent jobs.

Each job is ``python jobs/evaluate.py`` in its own process group with its own JVM (a JVM
start and a whole job each, slow on a 2-core machine), so there are few of them: 2 in the
crash test (the killed job and the re-run after it; the seed and the second re-run run in
this process), 1 in the kill-during-write test, 2 (at once) in the concurrency test.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from support.batch_support import (
    AGGREGATE_ROWS_PER_DATE,
    D27,
    D28,
    D29,
    PER_QUERY_ROWS_PER_DATE,
    config_at,
    finish,
    history,
    read,
    sorted_rows,
    start_job,
    version,
    write_config,
    write_inputs,
)

from releval.core import columns as S
from releval.evaluation.partitions import parse_selection
from releval.io import tables
from releval.io.writers import ensure_table, with_comments
from releval.job import lineage
from releval.job.batch import run_job

pytestmark = pytest.mark.slow  # each job is a subprocess with its own JVM

PER_QUERY_KEY = ["system", "date", S.QUERY_ID, S.MEASURE_KEY]
AGGREGATE_KEY = ["system", "date", S.MEASURE_KEY, S.AVERAGING]


@pytest.fixture(scope="module")
def inputs(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    return write_inputs(spark, tmp_path_factory.mktemp("inputs"))


def kill_group(proc) -> None:  # noqa: ANN001
    """SIGKILL the job's process group (python and its JVM)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.communicate(timeout=60)


def dates(spark: SparkSession, path: str) -> dict[str, int]:
    return {r["date"]: r["count"] for r in read(spark, path).groupBy("date").count().collect()}


def assert_unique(spark: SparkSession, path: str, key: list[str]) -> None:
    table = read(spark, path)
    assert table.count() == table.select(*key).distinct().count(), f"duplicate rows in {path}"


def run_log_ids(spark: SparkSession, tmp_path: Path) -> list[tuple[str, str]]:
    log = read(spark, str(tmp_path / "out" / "run_log"))
    return sorted(tuple(r) for r in log.select(S.JOB_RUN_ID, "status").collect())


def test_killed_job_leaves_committed_versions_and_reruns_are_exactly_once_and_identical(
    spark: SparkSession, inputs: tuple[str, str], tmp_path: Path
) -> None:
    config_path = write_config(tmp_path, *inputs)
    config = config_at(config_path)
    pq, agg = config.output.per_query_path or "", config.output.aggregate_path or ""
    run_job(spark, config, parse_selection([f"date={D27}"], run_partition_columns=["system", "date"]),
            job_run_id="seed")
    pq_v0, agg_v0 = version(spark, pq), version(spark, agg)
    agg_before = sorted_rows(read(spark, agg), drop=())
    pq_27 = sorted_rows(read(spark, pq).where(F.col("date") == D27), drop=())

    # 1. killed after the per-query commit, before the aggregate write (test hook pauses there)
    marker = tmp_path / "paused"
    proc = start_job(config_path, "--partition", f"date={D28}", "--job-run-id", "killed",
                     pause_at=("between_tables", marker))
    deadline = time.monotonic() + 600
    while not marker.exists():
        assert proc.poll() is None, f"job ended before the pause:\n{proc.communicate()[0][-3000:]}"
        assert time.monotonic() < deadline, "job never reached the pause"
        time.sleep(0.2)
    kill_group(proc)
    assert proc.returncode == -signal.SIGKILL
    # the aggregate table is at its last committed version, content unchanged; the per-query
    # table holds the killed run's one complete commit; the run log has no row for it
    assert version(spark, agg) == agg_v0
    assert sorted_rows(read(spark, agg), drop=()) == agg_before
    assert version(spark, pq) == pq_v0 + 1
    assert dates(spark, pq) == {D27: PER_QUERY_ROWS_PER_DATE, D28: PER_QUERY_ROWS_PER_DATE}
    assert ("killed", lineage.SUCCEEDED) not in run_log_ids(spark, tmp_path)

    # 2. the re-run completes: each row exactly once, date 27 untouched
    finish(start_job(config_path, "--partition", f"date={D28}", "--job-run-id", "rerun-1"))
    for path, key, per_date in ((pq, PER_QUERY_KEY, PER_QUERY_ROWS_PER_DATE),
                                (agg, AGGREGATE_KEY, AGGREGATE_ROWS_PER_DATE)):
        assert dates(spark, path) == {D27: per_date, D28: per_date}
        assert_unique(spark, path, key)
        ids = read(spark, path).where(F.col("date") == D28).select(S.JOB_RUN_ID).distinct().collect()
        assert [r[0] for r in ids] == ["rerun-1"]
    assert sorted_rows(read(spark, pq).where(F.col("date") == D27), drop=()) == pq_27
    pq_rows, agg_rows = sorted_rows(read(spark, pq)), sorted_rows(read(spark, agg))
    pq_history, agg_history = history(spark, pq), history(spark, agg)

    # 3. the same job again: identical tables row by row (but for job_run_id), one commit
    # each (in this process: the re-run in a new process after the kill is step 2's)
    run_job(spark, config, parse_selection([f"date={D28}"], run_partition_columns=["system", "date"]),
            job_run_id="rerun-2")
    assert sorted_rows(read(spark, pq)) == pq_rows
    assert sorted_rows(read(spark, agg)) == agg_rows
    assert history(spark, pq) == [*pq_history, (pq_history[-1][0] + 1, "WRITE", "releval job_run_id=rerun-2")]
    assert history(spark, agg) == [*agg_history, (agg_history[-1][0] + 1, "WRITE", "releval job_run_id=rerun-2")]
    assert run_log_ids(spark, tmp_path) == [
        ("rerun-1", "succeeded"), ("rerun-2", "succeeded"), ("seed", "succeeded")
    ]


def test_sigkill_while_writing_leaves_all_or_nothing(
    spark: SparkSession, inputs: tuple[str, str], tmp_path: Path
) -> None:
    config_path = write_config(tmp_path, *inputs)
    config = config_at(config_path)
    pq = Path(config.output.per_query_path or "")
    proc = start_job(config_path, "--partition", f"date={D29}", "--job-run-id", "killed")
    # kill as soon as the first data file of the write appears (before or just after the commit)
    deadline = time.monotonic() + 600
    while not list(pq.glob(f"date={D29}/*.parquet")):
        assert proc.poll() is None, f"job ended before writing:\n{proc.communicate()[0][-3000:]}"
        assert time.monotonic() < deadline, "job never started writing"
        time.sleep(0.02)
    kill_group(proc)
    # a new table is created and written by one commit (CREATE TABLE AS SELECT): there is
    # no table yet (no commit: the files written so far are not part of any version), or
    # version 0 holds the whole date (3 systems x 20 queries x 3 measures = 180 rows),
    # never part of it
    if not DeltaTable.isDeltaTable(spark, str(pq)):
        assert not list(pq.glob("_delta_log/*.json")), "a commit file but no Delta table"
        return
    committed = version(spark, str(pq))
    rows = read(spark, str(pq)).count()
    assert (committed, rows) == (0, PER_QUERY_ROWS_PER_DATE)


def test_two_jobs_on_disjoint_dates_run_at_once_and_both_commit(
    spark: SparkSession, inputs: tuple[str, str], tmp_path: Path
) -> None:
    config_path = write_config(tmp_path, *inputs)
    config = config_at(config_path)
    pq, agg = config.output.per_query_path or "", config.output.aggregate_path or ""
    # the nightly case: the tables exist (created here empty, as a first run would)
    parts = [T.StructField("system", T.StringType()), T.StructField("date", T.StringType())]
    for path, schema, comments in ((pq, tables.per_query_schema(parts), tables.PER_QUERY_COMMENTS),
                                   (agg, tables.aggregate_schema(parts), tables.AGGREGATE_COMMENTS)):
        ensure_table(spark, path=path, table=None, schema=with_comments(schema, comments),
                     partition_columns=["date"], description="test")

    jobs = {d: start_job(config_path, "--partition", f"date={d}", "--job-run-id", f"job-{d}")
            for d in (D28, D29)}
    outputs = {d: finish(proc) for d, proc in jobs.items()}

    for path, key, per_date in ((pq, PER_QUERY_KEY, PER_QUERY_ROWS_PER_DATE),
                                (agg, AGGREGATE_KEY, AGGREGATE_ROWS_PER_DATE)):
        assert dates(spark, path) == {D28: per_date, D29: per_date}
        assert_unique(spark, path, key)
        by_date = read(spark, path).select("date", S.JOB_RUN_ID).distinct().collect()
        assert sorted(tuple(r) for r in by_date) == [(D28, f"job-{D28}"), (D29, f"job-{D29}")]
        writes = sorted(meta for _, op, meta in history(spark, path) if op == "WRITE")
        assert writes == [f"releval job_run_id=job-{D28}", f"releval job_run_id=job-{D29}"]
    # disjoint output partitions: Delta saw no conflict, neither job had to retry a commit
    # (both jobs may create the quarantine table and the run log at once: that is retried)
    for out in outputs.values():
        assert "concurrent commit conflicts" not in out
    assert run_log_ids(spark, tmp_path) == [(f"job-{D28}", "succeeded"), (f"job-{D29}", "succeeded")]
