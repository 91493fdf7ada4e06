"""``[gate] baseline = "last_pass"`` with change rules only, run night by night as a
scheduler runs it: the first night is the first reference (``no_baseline``, exit 0), every
later night is gated, exactly the designed regression night fails (exit 1), and the night
after it is gated against the last pass, not the failed night."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from support.batch_support import read

from releval.config import load_config
from releval.evaluation.partitions import parse_selection
from releval.job.batch import run_job

PARTS = ["system", "date"]
NIGHTS = [f"2026-11-{d:02d}" for d in range(23, 28)]
REGRESSION = 2
#: enough queries that an unchanged night passes a margin of 0.05 (the bound at n = 80 is
#: -(1 - 0.05 ** (1 / 80)) = -0.037, the range end -1 weighing Beta(1, 80); at n = 40, -0.072
#: does not decide)
QUERIES = [f"n{i:02d}" for i in range(80)]
RULES = ("RR change >= -0.05", "P@1 change >= -0.05")


def rr(night: int) -> list[float]:
    """Each query's RR: every night queries 0-9 rank their relevant document second (RR
    1/2), the rest first (RR 1); on the regression night queries 10-79 rank it second too."""
    second = range(len(QUERIES)) if night == REGRESSION else range(10)
    return [0.5 if i in second else 1.0 for i in range(len(QUERIES))]


@pytest.fixture(scope="module")
def nights(spark, tmp_path_factory) -> Path:
    """The nights' run and qrels as Delta tables, and a job config over them; its path."""
    folder = tmp_path_factory.mktemp("last_pass")
    rows = []
    for night, date in enumerate(NIGHTS):
        for q, value in zip(QUERIES, rr(night), strict=True):
            order = ("r", "x") if value == 1.0 else ("x", "r")
            rows += [("prod", date, q, doc, 2.0 - pos, pos + 1) for pos, doc in enumerate(order)]
    run, qrels, out = folder / "log", folder / "qrels", folder / "out"
    spark.createDataFrame(rows, "system string, date string, query_id string, item_id string, "
                          "score double, position int").write.format("delta").partitionBy(
        *PARTS).save(str(run))
    spark.createDataFrame([(q, d, 1 if d == "r" else 0) for q in QUERIES for d in "rx"],
                          "query_id string, doc_id string, relevance int").write.format(
        "delta").save(str(qrels))
    rules = ", ".join(f'"{r}"' for r in RULES)
    path = folder / "job.toml"
    path.write_text(f"""
[spark]
master = "local[1]"
shuffle_partitions = 2

[run]
path = "{run}"
doc_id = "item_id"
rank = "position"
partition_columns = ["system", "date"]

[qrels]
path = "{qrels}"

[evaluation]
measures = ["RR", "P@1"]

[gate]
rules = [{rules}]
baseline = "last_pass"
order_by = "date"

[output]
per_query_path = "{out / 'per_query'}"
aggregate_path = "{out / 'aggregate'}"
partition_columns = ["date"]
""", encoding="utf-8")
    return path


@pytest.mark.slow  # five nights of the batch job in this process
def test_last_pass_gates_every_night_after_the_first(spark, nights):
    config = load_config(nights)
    # a scheduler's runs: nights 0, 1 and 2 one a run, then 3 and 4 in one run (a catch-up)
    runs = [[NIGHTS[0]], [NIGHTS[1]], [NIGHTS[2]], NIGHTS[3:]]
    results = [run_job(spark, config, parse_selection([f"date={','.join(dates)}"],
                                                      run_partition_columns=PARTS),
                       job_run_id=f"run-{i}") for i, dates in enumerate(runs)]
    # the first night is the reference (exit 0), the regression night's run exits 1
    assert [r.exit_code() for r in results] == [0, 0, 1, 0]
    assert (f"system=prod/date={NIGHTS[0]} against no baseline: no_baseline (the first "
            "reference") in results[0].render()
    assert "gate: FAIL" in results[2].render()

    gate = read(spark, str(Path(config.output.per_query_path).parent / "gate")).toPandas()
    label = lambda night: f"system=prod/date={NIGHTS[night]}"  # noqa: E731
    decision = dict(zip(gate["date"].astype(str), gate["decision"], strict=True))
    assert decision == {NIGHTS[0]: "no_baseline", NIGHTS[1]: "pass", NIGHTS[2]: "fail",
                        NIGHTS[3]: "pass", NIGHTS[4]: "pass"}
    rows = {(str(r.date), r.rule): r for r in gate.itertuples()}
    # night 0: no earlier night, every rule without a baseline
    assert {rows[(NIGHTS[0], rule)].outcome for rule in RULES} == {"no_baseline"}
    assert all(pd.isna(rows[(NIGHTS[0], rule)].baseline) for rule in RULES)
    # every later night has a baseline; the failed night 2 is never one: night 3 is gated
    # against night 1, night 4 against night 3 (a pass earlier in the same run)
    baselines = {NIGHTS[1]: label(0), NIGHTS[2]: label(1), NIGHTS[3]: label(1),
                 NIGHTS[4]: label(3)}
    for date, baseline in baselines.items():
        for rule in RULES:
            assert rows[(date, rule)].baseline == baseline, (date, rule)
            assert rows[(date, rule)].num_queries == 80
    # the regression night: RR drops by 1/2 on queries 10-79: -0.5 x 70 / 80 = -0.4375;
    # P@1 by 1 on those: -70 / 80 = -0.875; both fail
    assert rows[(NIGHTS[2], RULES[0])].estimate == pytest.approx(-0.4375)
    assert rows[(NIGHTS[2], RULES[1])].estimate == pytest.approx(-0.875)
    assert {rows[(NIGHTS[2], rule)].outcome for rule in RULES} == {"fail"}
    # every other night is unchanged against its baseline (against night 2, night 3 would
    # show +0.4375 and +0.875)
    for date in (NIGHTS[1], NIGHTS[3], NIGHTS[4]):
        for rule in RULES:
            assert rows[(date, rule)].estimate == 0.0 and rows[(date, rule)].outcome == "pass"


@pytest.mark.parametrize("rules", [
    ["RR change >= -5%"],
    ["weighted RR change >= -0.05"],
    ["RR change >= -0.05 per segment"],
    ["RR change >= -0.05", "RR change >= -0.05 per segment", "weighted RR change >= -5%"],
])
@pytest.mark.parametrize("mode", ["confidence", "point"])
def test_a_first_night_is_a_reference_with_any_change_rule(rules, mode):
    from releval.frames import gate as gate_frames
    from releval.job.gate import REFERENCE
    from releval.stats import gate as G

    # the candidate's per-query RR, with a weight and a slice; no baseline
    values = pd.DataFrame({gate_frames.SIDE: 0, "query_id": [f"q{i}" for i in range(6)],
                           "measure_key": "RR", "measure": "RR",
                           "value": [1.0, 0.5, 1.0, 0.5, 1.0, 1.0],
                           "weight": [10.0, 1.0, 1.0, 1.0, 1.0, 1.0],
                           "segment": ["head", "head", "tail", "tail", "tail", "tail"]})
    rows = gate_frames.gate_table(values, [G.parse_rule(r) for r in rules], baseline=None,
                                  candidate=0, alpha=0.05, mode=mode)
    assert len(rows) and set(rows[G.OUTCOME]) == {G.NO_BASELINE}
    assert G.decide(rows[G.OUTCOME]) == G.NO_BASELINE and G.NO_BASELINE in REFERENCE
