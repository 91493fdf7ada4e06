"""The phases of a run, their Spark jobs (counted with the status tracker), --profile."""

from __future__ import annotations

import io
from pathlib import Path

from pyspark.sql import SparkSession

from releval.config import Config, EvaluationSettings, OutputSettings, QrelsSource, RunSource
from releval.job import pipeline
from releval.runtime.profile import Phases

RUN = """\
q1 Q0 a 1 3.0 r
q1 Q0 b 2 2.0 r
q1 Q0 c 3 1.0 r
q2 Q0 a 1 1.0 r
"""
QRELS = """\
q1 0 a 1
q1 0 c 0
q2 0 b 1
"""

#: The Spark jobs of one small run, per phase, as measured (adaptive execution makes a
#: query several jobs); docs/performance.md lists them. A change that adds a pass over
#: the data or a Delta snapshot shows up here; one that removes some lowers the bound.
JOBS_AT_MOST = {
    "read inputs": 0,       # lazy: a malformed line is counted by the evaluation's ledger
    "evaluation": 10,       # the per-query statistics, persisted, with both inputs' ledgers
                            # (every row counted by the engine: no input has a pass of its
                            # own), the summary's counts, the unjudged shares and the
                            # aggregate's sums (one aggregation)
    "quarantine": 0,        # nothing rejected and no table: nothing is created
    "write per-query": 2,   # a new table: created and written by one commit (CTAS); the
                            # commit is found in the log files, not by a Spark job
    "write aggregate": 2,   # its rows made on the driver from the evaluation's sums: one
                            # CTAS of the collected rows
}


def test_a_small_run_reports_its_phases_and_their_spark_jobs(spark: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "run.txt").write_text(RUN, encoding="utf-8")
    (tmp_path / "qrels.txt").write_text(QRELS, encoding="utf-8")
    out = tmp_path / "out"
    config = Config(
        run=RunSource(path=str(tmp_path / "run.txt"), format="trec", partition_columns=("run_id",)),
        qrels=QrelsSource(path=str(tmp_path / "qrels.txt"), format="trec"),
        evaluation=EvaluationSettings(measures=("P@2", "RR")),
        output=OutputSettings(per_query_path=str(out / "per_query"),
                              aggregate_path=str(out / "aggregate")),
    )
    printed = io.StringIO()
    phases = Phases(spark, out=printed)
    summary = pipeline.run(spark, config, phases=phases)
    # q1: a (rel) b c -> P@2 = 1/2, RR = 1; q2: a (unjudged) -> P@2 = 0, RR = 0
    assert summary.queries_scored == 2

    names = [p.name for p in phases.done]
    assert names == list(JOBS_AT_MOST)
    # each phase's start is announced as it begins
    assert printed.getvalue().splitlines() == [f"releval: {n} ..." for n in names]
    jobs = {p.name: p.spark_jobs for p in phases.done}
    assert jobs["evaluation"] >= 1 and jobs["write per-query"] >= 1  # they ran Spark jobs
    over = {n: (jobs[n], most) for n, most in JOBS_AT_MOST.items() if jobs[n] > most}
    assert not over, f"phases with more Spark jobs than documented: {over}"
    assert phases.spark_jobs <= sum(JOBS_AT_MOST.values()) == 14
    # the aggregate rows the summary carries are the rows written (and printed from)
    written = pipeline.read_aggregate(spark, config).drop("job_run_id").collect()
    assert [r.asDict() for r in written] == [
        {k: v for k, v in r.asDict().items() if k != "job_run_id"} for r in summary.aggregate
    ]
    report = phases.render()
    assert report.splitlines()[0] == "releval profile (wall seconds, Spark jobs)"
    assert f"{phases.spark_jobs:4d} jobs" in report.splitlines()[-1]
