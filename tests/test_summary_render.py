"""The job summary's compact parts, rendered from hand-made accounts and run records
(no Spark): a screen long however many partitions a job evaluates."""

from __future__ import annotations

from datetime import datetime

from releval.checks.accounts import InputAccount, PartitionAccount, QualityReport
from releval.job.batch import JobResult
from releval.job.lineage import RunRecord

DATES = [f"2026-12-{d:02d}" for d in range(1, 9)]
SYSTEMS = ["bm25", "dense", "hybrid"]


def test_the_accounting_is_one_line_per_input_and_names_only_a_mismatch():
    parts = tuple(PartitionAccount(f"system={s}/date={d}", 100, 99, {"duplicate_doc": 1})
                  for s in SYSTEMS for d in DATES)
    broken = PartitionAccount("system=x/date=2026-12-09", 10, 8, {"invalid_score": 1})
    run = InputAccount("run", "delta runs", (*parts, broken))
    qrels = InputAccount("qrels", "delta qrels", (PartitionAccount("all", 50, 50),),
                         exact_duplicates=2)
    lines = QualityReport(run, qrels, "out/quarantine", False).render().splitlines()
    # header, run, the mismatch, qrels, quarantined: 5 lines for 25 run partitions
    assert len(lines) == 5
    # 24 x 100 + 10 = 2410 input; 24 x 99 + 8 = 2384 used; 24 + 1 quarantined
    assert lines[1].split()[:4] == ["run", "2410", "2384", "25"]
    assert "(duplicate_doc 24, invalid_score 1); input = used + quarantined in 24 of 25 " \
        "partition(s); delta runs" in lines[1]
    assert lines[2].strip() == ("MISMATCH system=x/date=2026-12-09: input 10 = used 8 + "
                                "quarantined 1")
    assert "exact duplicate judgments (kept, counted once): 2" in lines[3]
    assert lines[4] == "  quarantined rows: 25 -> out/quarantine"


def test_the_batch_job_names_four_partitions_and_counts_the_rest():
    now = datetime(2026, 12, 9)
    record = RunRecord(
        job_run_id="j", status="succeeded", started_at=now, finished_at=now,
        releval_version="0", config_hash="h", config_json="{}", run_source="delta:/r",
        run_version=1, run_filter=None, qrels_source="delta:/q", qrels_version=2,
        qrels_filter=None, selection="all partitions", replace_predicate=None,
        partitions=[{"system": s, "date": d} for d in DATES for s in SYSTEMS],
        per_query_version=3, aggregate_version=3, per_query_rows=10, aggregate_rows=5)
    text = JobResult(record).render()
    line = next(x for x in text.splitlines() if "partitions evaluated" in x)
    assert line == ("  partitions evaluated: 24: date=2026-12-01/system=bm25, "
                    "date=2026-12-01/system=dense, date=2026-12-01/system=hybrid, "
                    "date=2026-12-02/system=bm25 and 20 more (run log)")
    assert len(text.splitlines()) == 6


def test_the_attribution_is_one_line_per_run_partition_up_to_a_screen():
    from pyspark.sql import Row

    from releval.evaluation.summary import render_attribution
    from releval.frames.attribution import rows
    from releval.stats.attribution import Thresholds

    def summary(system: str, date: str, counts: list[int], tau: float | None) -> Row:
        cells = ["success", "generation_miss", "retrieval_miss", "answered_without_evidence",
                 "no_qrels"]
        return Row(system=system, date=date, _string_system=system, _string_date=date,
                   **{f"_n_{c}": n for c, n in zip(cells, counts, strict=True)},
                   _tau=tau, _p=None, _with=None, _without=None, _covered=sum(counts))

    found = [summary(s, d, [2, 1, 1, 0, 3], 0.5) for d in DATES for s in SYSTEMS]
    found[0] = summary("bm25", DATES[0], [0, 0, 0, 0, 3], None)  # no query with qrels
    written = [Row(**r, job_run_id="j") for r in rows(found, partition_columns=["system", "date"],
                                                      thresholds=Thresholds("Hit@10"))]
    lines = render_attribution(written, shown=4)
    assert lines[0].startswith("  retrieval and the answer: evidence retrieved when Hit@10 >= 1, "
                               "correct when answer_score >= 0.5")
    # the thresholds, the table's 3 rules and header, 4 run partitions, the rest counted
    assert len(lines) == 1 + 4 + 4 + 1
    assert lines[2].split("|")[1:-1] == [
        " system ", " date       ", " attributed ", " success ", " generation_miss ",
        " retrieval_miss ", " answered_without_evidence ", " no_qrels ", " kendall_tau_b "]
    # by system, then date: bm25 on the first date has no share without an attributed query;
    # on the next, 2/4, 1/4, 1/4, 0/4
    assert [c.strip() for c in lines[4].split("|")[1:-1]] == [
        "bm25", DATES[0], "0", "NULL", "NULL", "NULL", "NULL", "3", "NULL"]
    assert [c.strip() for c in lines[5].split("|")[1:-1]] == [
        "bm25", DATES[1], "4", "50.0%", "25.0%", "25.0%", "0.0%", "3", "0.500"]
    assert lines[-1] == "  and 20 more run partition(s): the attribution table"
    assert render_attribution([]) == []
