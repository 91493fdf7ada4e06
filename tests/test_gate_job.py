"""The batch job's ``[gate]``: a week of one system's nightly partitions with one designed
regressing day, gated against the previous day and against the last pass; the gate table,
the exit code after every table is committed, and the errors before anything runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pyspark.sql import functions as F
from support import gate_support as D
from support.batch_support import read

from releval.config import load_config
from releval.errors import ConfigError
from releval.evaluation.partitions import parse_selection
from releval.job import lineage
from releval.job.batch import run_job
from releval.job.migrations import migrate_table
from releval.stats import gate as G

pytestmark = pytest.mark.slow  # whole batch jobs in this process: reads, checks, Delta commits

PARTS = ["system", "date"]


@pytest.fixture(scope="module")
def week(spark, tmp_path_factory) -> tuple[str, str]:
    return D.write_week(spark, tmp_path_factory.mktemp("week"))


def gate_rows(spark, config):
    path = str(Path(config.output.per_query_path).parent / "gate")
    return read(spark, path), path


def decisions(spark, config) -> dict[str, str]:
    table, _ = gate_rows(spark, config)
    return {r["date"]: r["decision"] for r in table.select("date", "decision").distinct()
            .collect()}


def test_previous_flags_the_regressing_day_and_only_that_day(spark, week, tmp_path):
    config = load_config(D.week_config(tmp_path, *week))
    # five nights at once, then two nights one by one
    first = run_job(spark, config, parse_selection([f"date={D.WEEK[0]}..{D.WEEK[4]}"],
                                                   run_partition_columns=PARTS),
                    job_run_id="week-1")
    assert first.exit_code() == 1 and first.gate is not None
    for i, date in enumerate(D.WEEK[5:], start=2):
        later = run_job(spark, config, parse_selection([f"date={date}"],
                                                       run_partition_columns=PARTS),
                        job_run_id=f"week-{i}")
        assert later.exit_code() == 0  # the day after a pass, against it: a pass
    # every table is committed: the run log has the three succeeded runs, the per-query
    # table every day
    log = read(spark, str(Path(config.output.per_query_path).parent / "run_log"))
    assert sorted((r["job_run_id"], r["status"]) for r in log.collect()) == [
        (f"week-{i}", lineage.SUCCEEDED) for i in (1, 2, 3)]
    assert sorted(r["date"] for r in read(spark, config.output.per_query_path)
                  .select("date").distinct().collect()) == D.WEEK
    got = decisions(spark, config)
    assert got == {D.WEEK[0]: "pass", **{d: "pass" for d in D.WEEK[1:]},
                   D.WEEK[D.REGRESSING_DAY]: "fail"}
    table, _ = gate_rows(spark, config)
    rows = {(r["date"], r["rule"]): r for r in table.collect()}
    # the first night: no baseline for the change rule, the level rule decides
    first_day = rows[(D.WEEK[0], "RR change >= -0.05")]
    assert first_day["outcome"] == "no_baseline" and first_day["baseline"] is None
    assert rows[(D.WEEK[0], "RR >= 0.6")]["outcome"] == "pass"
    # the regressing night against the one before: the pure path's test of the differences
    bad = rows[(D.WEEK[D.REGRESSING_DAY], "RR change >= -0.05")]
    d = (np.array(D.nightly_rr(D.REGRESSING_DAY)) - np.array(D.nightly_rr(D.REGRESSING_DAY - 1)))
    assert bad["baseline"] == f"system=prod/date={D.WEEK[D.REGRESSING_DAY - 1]}"
    assert bad["num_queries"] == 120 and bad["estimate"] == pytest.approx(-59 * 0.5 / 120)
    want = G.bounded_test(d, -0.05, support=(-1.0, 1.0), greater=True, alpha=0.05)
    assert bad["p_fail"] == pytest.approx(want.p_fail)
    assert bad["outcome"] == "fail" and bad["job_run_id"] == "week-1"
    # each later night against its previous one
    assert rows[(D.WEEK[6], "RR change >= -0.05")]["baseline"] == f"system=prod/date={D.WEEK[5]}"
    assert "gate: FAIL" in first.render() and D.WEEK[D.REGRESSING_DAY] in first.render()

    # re-running a night replaces its rows: the same rows, the new job run id
    before = sorted((r["date"], r["rule"], r["outcome"], r["estimate"]) for r in table.collect())
    again = run_job(spark, config, parse_selection([f"date={D.WEEK[D.REGRESSING_DAY]}"],
                                                   run_partition_columns=PARTS),
                    job_run_id="again")
    assert again.exit_code() == 1
    table, path = gate_rows(spark, config)
    assert sorted((r["date"], r["rule"], r["outcome"], r["estimate"])
                  for r in table.collect()) == before
    assert {r[0] for r in table.where(F.col("date") == D.WEEK[D.REGRESSING_DAY])
            .select("job_run_id").collect()} == {"again"}
    assert migrate_table(spark, kind="gate", path=path, table=None, config=config) == ["12"]


def test_last_pass_compares_with_the_latest_passing_night(spark, week, tmp_path):
    config = load_config(D.week_config(tmp_path, *week, baseline="last_pass",
                                       on_inconclusive="pass"))
    result = run_job(spark, config, parse_selection([f"date={D.WEEK[0]}..{D.WEEK[6]}"],
                                                    run_partition_columns=PARTS),
                     job_run_id="week")
    assert result.exit_code() == 1
    table, _ = gate_rows(spark, config)
    baselines = {r["date"]: r["baseline"] for r in table.where(F.col("rule") == D.NIGHTLY_RULES[0])
                 .collect()}
    # the night after the regression is compared with the night before it, the last pass
    assert baselines[D.WEEK[D.REGRESSING_DAY + 1]] == f"system=prod/date={D.WEEK[D.REGRESSING_DAY - 1]}"
    assert baselines[D.WEEK[D.REGRESSING_DAY]] == f"system=prod/date={D.WEEK[D.REGRESSING_DAY - 1]}"
    assert decisions(spark, config) == {
        **{d: "pass" for d in D.WEEK}, D.WEEK[D.REGRESSING_DAY]: "fail"}
    # a later run reads the last pass from the gate table
    later = load_config(D.week_config(tmp_path, *week, baseline="last_pass"))
    run_job(spark, later, parse_selection([f"date={D.WEEK[6]}"], run_partition_columns=PARTS),
            job_run_id="later")
    table, _ = gate_rows(spark, later)
    row = table.where((F.col("date") == D.WEEK[6]) & (F.col("rule") == D.NIGHTLY_RULES[0])).first()
    assert row["baseline"] == f"system=prod/date={D.WEEK[5]}" and row["job_run_id"] == "later"
    # the report opens with the latest gate run's verdict (the regressing night was gated
    # by the earlier run: the latest, "later", passed)
    from releval.report import build

    page = build(later)
    assert page.index('id="gate"') < page.index("<ul>")
    assert "Gate: PASS" in page and "1 pass of 1 gated run partitions" in page


def test_a_rule_on_a_measure_not_evaluated_fails_before_anything_runs(spark, week, tmp_path):
    path = D.week_config(tmp_path, *week)
    path.write_text(path.read_text().replace('"RR >= 0.6"', '"nDCG@10 >= 0.6"'))
    config = load_config(path)
    with pytest.raises(ConfigError, match=r"\['nDCG@10'\].*evaluated measures are \['Judged@1', 'P@1', "
                                          r"'RR'\]"):
        run_job(spark, config, job_run_id="never")
    assert not Path(config.output.per_query_path).exists()


def test_gate_config_errors_name_the_key(tmp_path, week):
    path = D.week_config(tmp_path, *week)
    path.write_text(path.read_text().replace('order_by = "date"', ""))
    assert load_config(path).gate.order_by is None  # date, a run partition column, orders
    path.write_text(path.read_text().replace('order_by = "date"', "")
                    .replace('baseline = "previous"', 'baseline = "previous"\norder_by = "day"'))
    with pytest.raises(ConfigError, match="gate.order_by"):
        load_config(path)
    path = D.week_config(tmp_path, *week, on_inconclusive="maybe")
    with pytest.raises(ConfigError, match="gate.on_inconclusive"):
        load_config(path)


@pytest.mark.slow  # the job as a process, killed
def test_killed_after_its_commits_then_rerun(spark, week, tmp_path):
    import signal
    import time

    from support.batch_support import start_job

    config_path = D.week_config(tmp_path, *week)
    config = load_config(config_path)
    marker = tmp_path / "paused"
    proc = start_job(config_path, "--job-run-id", "killed", pause_at=("before_exit", marker))
    deadline = time.monotonic() + 600
    while not marker.exists():
        assert proc.poll() is None, f"job ended before the pause:\n{proc.communicate()[0][-3000:]}"
        assert time.monotonic() < deadline, "job never reached the pause"
        time.sleep(0.2)
    os_killpg(proc, signal.SIGKILL)
    # every table was committed before the exit: the gate table holds the fail, the run log
    # the succeeded run
    assert decisions(spark, config)[D.WEEK[D.REGRESSING_DAY]] == "fail"
    log = read(spark, str(Path(config.output.per_query_path).parent / "run_log"))
    assert [(r["job_run_id"], r["status"]) for r in log.collect()] == [
        ("killed", lineage.SUCCEEDED)]
    table, _ = gate_rows(spark, config)
    kept = sorted((r["date"], r["rule"], r["outcome"], r["estimate"], r["p_fail"])
                  for r in table.collect())
    rerun = start_job(config_path, "--job-run-id", "rerun")
    out, _ = rerun.communicate(timeout=600)
    assert rerun.returncode == 1, out[-3000:]  # the fail, once every table is committed
    assert "gate: FAIL" in out
    table, _ = gate_rows(spark, config)
    assert sorted((r["date"], r["rule"], r["outcome"], r["estimate"], r["p_fail"])
                  for r in table.collect()) == kept
    assert {r[0] for r in table.select("job_run_id").distinct().collect()} == {"rerun"}


def os_killpg(proc, sig) -> None:  # noqa: ANN001
    import os

    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass
    proc.communicate(timeout=60)


def test_the_summary_names_a_baseline_that_shares_no_query():
    import pandas as pd

    from releval.config import GateSettings
    from releval.job.gate import GateRun, PartitionGate
    from releval.stats import gate as G

    # the candidate scored q1, q2; its baseline q3: no pair, inconclusive, 0 queries
    pairs = pd.DataFrame({"measure_key": "RR", "query_id": ["q1", "q2", "q3"],
                          G.BASE: [np.nan, np.nan, 0.5], G.CAND: [1.0, 0.5, np.nan],
                          "weight": np.nan})
    rows = G.gate_rows(pairs, [G.parse_rule("RR change >= -0.05")])
    assert (rows.outcome[0], rows.num_queries[0]) == ("inconclusive", 0)
    found = GateRun((PartitionGate({"system": "new", "date": "2026-11-28"},
                                   {"system": "new", "date": "2026-11-27"}, G.decide(rows.outcome),
                                   rows, shares_no_query=True),),
                    GateSettings(rules=("RR change >= -0.05",), order_by="date"),
                    ("system", "date"), version=3)
    lines = found.render()
    assert lines[0].startswith("  gate: INCONCLUSIVE (1 inconclusive; baseline previous")
    assert lines[1] == ("    system=new/date=2026-11-28 against system=new/date=2026-11-27: "
                        "inconclusive (shares no query with its baseline)")
    assert found.exit_code() == 3
