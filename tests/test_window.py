"""Measures at the window: each query cut at its own k_q, the top documents its consumer used.

Checked by hand (a window of 3 against a ranking of 10), against pytrec_eval on rankings cut
per query to k_q by hand after trec_eval's tie-break, with depth and judged-only, and the row
rules of the window column (quarantine and accounting).
"""

from __future__ import annotations

import math
import random

import pytest
from pyspark.sql import functions as F
from test_trec_oracle import top

import releval
from releval.config import AnswersSource, config_from_dict
from releval.core import columns as S
from releval.core.measures import check_window, parse_measure, parse_measures
from releval.errors import ConfigError, MeasureError
from releval.evaluation.windows import window_spreads
from releval.io import views as W

WINDOW_MEASURES = ["P@window", "R@window", "Hit@window", "RR@window", "AP@window", "nDCG@window",
                   "Judged@window", "R@10"]
RUN_SCHEMA = "system string, qid string, doc string, score double, k double"
QRELS_SCHEMA = "qid string, doc string, label int"
COLUMNS = {"query_id": "qid", "doc_id": "doc", "score": "score"}
QRELS_COLUMNS = {"query_id": "qid", "doc_id": "doc", "relevance": "label"}

# q1: d01..d10 scored 10..1, window 3; q2: e1..e4 scored 4..1, window 5 (past the ranking)
HAND_RUN = ([("bm25", "q1", f"d{i:02d}", float(11 - i), 3.0) for i in range(1, 11)]
            + [("bm25", "q2", f"e{i}", float(5 - i), 5.0) for i in range(1, 5)])
# q1: d01 unjudged, d02 2, d03 0, d05 1, d09 1, d11 3 (not retrieved): R = 4 (d02 d05 d09 d11)
# q2: e4 1, e9 1 (not retrieved): R = 2; q3: judged, retrieved by no run partition
HAND_QRELS = [("q1", "d02", 2), ("q1", "d03", 0), ("q1", "d05", 1), ("q1", "d09", 1),
              ("q1", "d11", 3), ("q2", "e4", 1), ("q2", "e9", 1), ("q3", "x", 1)]


def _evaluate(spark, run, qrels, measures, **kwargs):
    return releval.evaluate(
        spark.createDataFrame(run, RUN_SCHEMA), spark.createDataFrame(qrels, QRELS_SCHEMA),
        measures=measures, partition_by=["system"], columns=COLUMNS,
        qrels_columns=QRELS_COLUMNS, window=kwargs.pop("window", "k"), **kwargs,
    )


def _values(result):
    return {(r[S.QUERY_ID], r[S.MEASURE_KEY]): r[S.VALUE]
            for r in result.per_query.select(S.QUERY_ID, S.MEASURE_KEY, S.VALUE).collect()}


def test_a_window_of_3_against_a_ranking_of_10_by_hand(spark):
    result = _evaluate(spark, HAND_RUN, HAND_QRELS, WINDOW_MEASURES)
    got = _values(result)
    # q1, top 3: d01 (unjudged) d02 (2) d03 (0); relevant in the window: d02 at rank 2
    idcg_3 = 3 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)  # labels 3 2 1 1, cut at 3
    expected_q1 = {
        "P@window": 1 / 3,  # 1 relevant / k_q 3
        "R@window": 1 / 4,  # 1 of R = 4
        "Hit@window": 1.0,
        "RR@window": 1 / 2,  # d02 at rank 2
        "AP@window": (1 / 2) / 4,  # precision 1/2 at d02, over R = 4: 0.125
        "nDCG@window": (2 / math.log2(3)) / idcg_3,  # 1.26186 / 4.76186 = 0.26499
        "Judged@window": 2 / 3,  # d02 d03 of 3
        "R@10": 3 / 4,  # the whole ranking: d02 d05 d09
    }
    # q2, k_q 5 past a ranking of 4: e4 at rank 4
    expected_q2 = {
        "P@window": 1 / 5,  # divides by k_q, not by the 4 retrieved
        "R@window": 1 / 2,
        "Hit@window": 1.0,
        "RR@window": 1 / 4,
        "AP@window": (1 / 4) / 2,  # precision 1/4 at e4, over R = 2
        "nDCG@window": (1 / math.log2(5)) / (1 + 1 / math.log2(3)),  # 0.43068 / 1.63093
        "Judged@window": 1 / 4,  # e4 of the 4 retrieved
        "R@10": 1 / 2,
    }
    for qid, expected in (("q1", expected_q1), ("q2", expected_q2)):
        for key, value in expected.items():
            assert got[(qid, key)] == pytest.approx(value, abs=1e-12), (qid, key)
    # q3, judged and not retrieved: 0 for every measure
    assert {got[("q3", key)] for key in expected_q1} == {0.0}
    # the summary's spread: k_q 3 and 5 (median 4); recall (3/4 + 1/2 + 0) / 3 = 0.41667
    # over the whole ranking against R@window (1/4 + 1/2 + 0) / 3 = 0.25
    (spread,) = window_spreads(result.evaluation.queries, ["system"])
    assert (spread.low, spread.median, spread.high) == (3, 4.0, 5)
    assert spread.recall_all == pytest.approx(5 / 12, abs=1e-12)
    assert spread.recall_window == pytest.approx(1 / 4, abs=1e-12)
    rows = result.aggregate.collect()
    macro = {r[S.MEASURE_KEY]: r for r in rows if r[S.AVERAGING] == "macro"}
    assert macro["P@window"][S.VALUE] == pytest.approx((1 / 3 + 1 / 5 + 0) / 3, abs=1e-12)
    assert macro["P@window"][S.CUTOFF] is None
    # micro: R pools (1 + 1 + 0) / (4 + 2 + 1) = 2/7; P has no one k to pool over
    micro = {r[S.MEASURE_KEY]: r[S.VALUE] for r in rows if r[S.AVERAGING] == "micro"}
    assert micro["R@window"] == pytest.approx(2 / 7, abs=1e-12)
    assert "P@window" not in micro


def test_the_window_cuts_after_the_tie_break_and_before_the_condensation(spark):
    # scores A 3, B 2, C 2, D 2 (doc id descending: D C B), window 2: A D; judged: D 0, B 1
    run = [("r", "q", d, s, 2.0) for d, s in (("A", 3.0), ("B", 2.0), ("C", 2.0), ("D", 2.0))]
    qrels = [("q", "D", 0), ("q", "B", 1)]
    got = _values(_evaluate(spark, run, qrels, ["P@window", "P@window[judged]",
                                                "Judged@window", "RR@window[judged]"]))
    assert got[("q", "P@window")] == 0.0  # A D: ascending ties would keep A B (1/2)
    # condensed after the cut: D alone (a condensation first would keep D B: 1/2)
    assert got[("q", "P@window[judged]")] == 0.0
    assert got[("q", "RR@window[judged]")] == 0.0
    assert got[("q", "Judged@window")] == 1 / 2  # D of A D


def test_tie_aware_measures_cut_at_each_querys_window(spark):
    # A 3, then B C D tied at 2; B relevant (1), D judged 0. Window 2: A and one of B C D
    # (each 1/3). P@window[ties] = (1/3) / 2 = 1/6; Hit@window[ties] = 1/3; RR@window[ties]:
    # B at rank 2 with 1/3, so 1/3 * 1/2 = 1/6; R@window[ties] = 1/3 (R = 1).
    # A window of 4 holds all of them: B always inside, P = 1/4, RR = (1/2 + 1/3 + 1/4) / 3.
    run = ([("r", "q", d, s, 2.0) for d, s in (("A", 3.0), ("B", 2.0), ("C", 2.0), ("D", 2.0))]
           + [("r", "p", d, s, 4.0) for d, s in (("A", 3.0), ("B", 2.0), ("C", 2.0), ("D", 2.0))])
    qrels = [("q", "D", 0), ("q", "B", 1), ("p", "D", 0), ("p", "B", 1)]
    got = _values(_evaluate(spark, run, qrels, [
        "P@window[ties]", "Hit@window[ties]", "RR@window[ties]", "R@window[ties]", "P@window"]))
    assert got[("q", "P@window[ties]")] == pytest.approx(1 / 6, abs=1e-12)
    assert got[("q", "Hit@window[ties]")] == pytest.approx(1 / 3, abs=1e-12)
    assert got[("q", "RR@window[ties]")] == pytest.approx(1 / 6, abs=1e-12)
    assert got[("q", "R@window[ties]")] == pytest.approx(1 / 3, abs=1e-12)
    assert got[("q", "P@window")] == 0.0  # the tie-break keeps A D
    assert got[("p", "P@window[ties]")] == pytest.approx(1 / 4, abs=1e-12)
    assert got[("p", "Hit@window[ties]")] == 1.0
    assert got[("p", "RR@window[ties]")] == pytest.approx((1 / 2 + 1 / 3 + 1 / 4) / 3, abs=1e-12)
    with pytest.raises(MeasureError, match="do not combine"):
        parse_measure("AP@window[judged][ties]")


def test_best_bounds_cut_at_each_querys_window(spark):
    # q1, window 3: d01 (unjudged) d02 (2) d03 (0): P@window[best] = 2/3, RR[best] = 1 (d01)
    # q2, window 5 over 4 retrieved: e1 e2 e3 unjudged, e4 relevant: 4/5; q3 retrieved by none
    got = _values(_evaluate(spark, HAND_RUN, HAND_QRELS,
                            ["P@window[best]", "Hit@window[best]", "RR@window[best]"]))
    assert got[("q1", "P@window[best]")] == pytest.approx(2 / 3, abs=1e-12)
    assert got[("q1", "RR@window[best]")] == 1.0
    assert got[("q2", "P@window[best]")] == pytest.approx(4 / 5, abs=1e-12)
    assert got[("q2", "Hit@window[best]")] == 1.0
    assert got[("q3", "P@window[best]")] == 0.0


def test_window_with_depth_cuts_at_the_smaller(spark):
    # q1 of the hand case at depth 2: top min(2, 3) = d01 d02; P still divides by k_q = 3
    result = _evaluate(spark, HAND_RUN, HAND_QRELS, ["P@window", "R@window", "R@10"], depth=2)
    got = _values(result)
    assert got[("q1", "P@window")] == pytest.approx(1 / 3, abs=1e-12)  # d02 / 3
    assert got[("q1", "R@window")] == pytest.approx(1 / 4, abs=1e-12)
    assert got[("q1", "R@10")] == pytest.approx(1 / 4, abs=1e-12)  # depth 2: d02 only
    # q2 at depth 2: e1 e2, no relevant document
    assert got[("q2", "P@window")] == 0.0


def _random_case(seed: int):
    rng = random.Random(seed)
    run, qrels, windows = [], [], {}
    for q in range(30):
        qid = f"q{q:02d}"
        pool = [f"d{i:03d}" for i in range(60)]
        for doc in rng.sample(pool, 25):
            qrels.append((qid, doc, rng.choice([-1, 0, 0, 1, 1, 2, 3])))
        if q % 10 == 9:
            continue  # a judged query the run lacks
        windows[qid] = rng.randint(1, 15)
        for doc in rng.sample(pool, rng.randint(3, 30)):
            run.append((qid, doc, round(rng.random(), 1)))  # one decimal: ties across k_q
    return run, qrels, windows


def _oracle(run, qrels, judged_only):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    oracle_qrels: dict[str, dict[str, int]] = {}
    for qid, doc, rel in qrels:
        oracle_qrels.setdefault(qid, {})[doc] = rel
    oracle_run: dict[str, dict[str, float]] = {}
    for qid, doc, score in run:
        oracle_run.setdefault(qid, {})[doc] = score
    cuts = ",".join(str(k) for k in range(1, 16))
    evaluator = pytrec_eval.RelevanceEvaluator(
        oracle_qrels, {f"P.{cuts}", f"recall.{cuts}", f"ndcg_cut.{cuts}", "map", "recip_rank",
                       f"success.{cuts}"},
        judged_docs_only_flag=judged_only)
    return evaluator.evaluate(oracle_run)


@pytest.mark.parametrize("judged_only", [False, True], ids=["all", "judged-only"])
def test_window_is_pytrec_eval_on_rankings_cut_per_query_by_hand(spark, judged_only):
    run, qrels, windows = _random_case(seed=36)
    rows = [("r", q, d, s, float(windows[q])) for q, d, s in run]
    suffix = "[judged]" if judged_only else ""
    names = ["P", "R", "nDCG", "AP", "RR", "Hit"]
    got = _values(_evaluate(spark, rows, qrels, [f"{n}@window{suffix}" for n in names]))
    # trec_eval's order (score descending, ties by doc id descending), each query cut at k_q
    cut = [row for q, k in windows.items() for row in top([r for r in run if r[0] == q], k)]
    expected = _oracle(cut, qrels, judged_only)
    assert len(expected) == 27
    oracle_name = {"P": "P_{k}", "R": "recall_{k}", "nDCG": "ndcg_cut_{k}", "AP": "map",
                   "RR": "recip_rank", "Hit": "success_{k}"}
    mismatches = [
        (qid, name, values[oracle_name[name].format(k=windows[qid])], got[(qid, f"{name}@window{suffix}")])
        for qid, values in expected.items() for name in names
        if abs(got[(qid, f"{name}@window{suffix}")]
               - values[oracle_name[name].format(k=windows[qid])]) > 1e-9
    ]
    assert not mismatches, f"{len(mismatches)} mismatches, first: {mismatches[:5]}"
    # the 3 judged queries the run lacks score 0
    assert {got[(f"q{q:02d}", f"P@window{suffix}")] for q in (9, 19, 29)} == {0.0}


def test_bad_windows_are_quarantined_and_counted(spark):
    run = [
        ("r", "q1", "a", 3.0, 2.0), ("r", "q1", "b", 2.0, None),  # null
        ("r", "q1", "c", 1.0, 0.0), ("r", "q1", "d", 0.5, -1.0),  # zero, negative
        ("r", "q1", "e", 0.2, 2.5),  # not an integer
        ("r", "q2", "a", 3.0, 2.0), ("r", "q2", "b", 2.0, 3.0), ("r", "q2", "c", 1.0, 2.0),
        ("s", "q2", "a", 3.0, 1.0), ("s", "q2", "b", 2.0, 1.0),  # agrees within partition s
    ]
    qrels = [("q1", "a", 1), ("q2", "a", 1), ("q2", "b", 1)]
    result = _evaluate(spark, run, qrels, ["P@window", "R@window"])
    reasons = sorted((r[S.PARTITION]["system"], r[S.RAW]["doc_id"], r[S.REASON_CODE])
                     for r in result.quarantine.collect())
    # q1 of r: b c d e (null, 0, -1, 2.5); q2 of r: windows 2, 3, 2 disagree, all three rows
    assert reasons == [
        ("r", "a", "conflicting_window"), ("r", "b", "conflicting_window"),
        ("r", "b", "invalid_window"), ("r", "c", "conflicting_window"),
        ("r", "c", "invalid_window"), ("r", "d", "invalid_window"), ("r", "e", "invalid_window"),
    ]
    run_account = result.accounts.run
    assert run_account.quarantined == {"conflicting_window": 3, "invalid_window": 4}
    assert (run_account.input, run_account.used) == (10, 3)  # 10 = 3 used + 7 quarantined
    assert run_account.input == run_account.used + run_account.quarantined_total
    got = _values(result)
    # r q1: only a (window 2), relevant: P = 1/2; r q2 set aside whole: a judged query the
    # partition did not retrieve, 0; s q2: a b at window 1: P = 1/1, R = 1/2
    by_system = {(r["system"], r[S.QUERY_ID], r[S.MEASURE_KEY]): r[S.VALUE]
                 for r in result.per_query.collect()}
    assert by_system[("r", "q1", "P@window")] == 1 / 2
    assert by_system[("r", "q2", "P@window")] == 0.0
    assert by_system[("s", "q2", "P@window")] == 1.0
    assert by_system[("s", "q2", "R@window")] == 1 / 2
    assert got  # every row scored


def test_window_measures_parse_and_need_a_window(spark):
    m = parse_measure("nDCG@WINDOW[judged]")
    assert (m.key, m.cutoff, m.window, m.trec_name) == ("nDCG@window[judged]", None, True, None)
    with pytest.raises(MeasureError, match="takes no cutoff"):
        parse_measure("bpref@window")
    # the wide views' column names and order: k ascending, then the window
    assert W.column_name("nDCG@window[judged]") == "ndcg_at_window_judged"
    assert W.sort_keys(["P@window", "P@10", "P@5", "P"]) == ["P", "P@5", "P@10", "P@window"]
    with pytest.raises(MeasureError, match="run.window"):
        check_window(parse_measures(["P@5", "R@window"]), None)
    with pytest.raises(MeasureError, match="window"):
        _evaluate(spark, HAND_RUN, HAND_QRELS, ["R@window"], window=None)


def test_window_in_the_config_and_the_answers_default(spark):
    raw = {"run": {"path": "x", "window": "k"}, "qrels": {"path": "y"}}
    assert config_from_dict(raw).run.window == "k"
    with pytest.raises(ConfigError, match="TREC run has no window"):
        config_from_dict({"run": {"path": "x", "format": "trec", "window": "k"},
                          "qrels": {"path": "y"}})
    assert AnswersSource().retrieval_measure("k") == "Hit@window"
    assert AnswersSource().retrieval_measure(None) == "Hit@10"
    assert AnswersSource(retrieved_by="R@5").retrieval_measure("k") == "R@5"
    # releval.evaluate with answers and a window: Hit@window is added and decides the cells
    answers = spark.createDataFrame([("bm25", "q1", 1.0), ("bm25", "q2", 0.0)],
                                    "system string, qid string, answer_score double")
    result = _evaluate(spark, HAND_RUN, HAND_QRELS, ["P@window"], answers=answers,
                       answers_columns={"query_id": "qid"})
    rows = result.attribution.where(F.col(S.QUERIES) > 0).collect()
    assert {r[S.RETRIEVED_BY_MEASURE] for r in rows} == {"Hit@window"}
    # q1 and q2 both have a relevant document in their window: q1 correct, q2 wrong
    assert sorted((r[S.CELL], r[S.QUERIES]) for r in rows) == [
        ("generation_miss", 1), ("success", 1)]


def test_the_job_writes_k_q_and_the_summary_and_report_show_what_the_window_lost(
    spark, tmp_path
):
    from releval import report
    from releval.config import Config, EvaluationSettings, OutputSettings, QrelsSource, RunSource
    from releval.job import pipeline

    run_path, qrels_path, out = tmp_path / "run", tmp_path / "qrels", tmp_path / "out"
    spark.createDataFrame(HAND_RUN, RUN_SCHEMA).write.parquet(str(run_path))
    spark.createDataFrame(HAND_QRELS, QRELS_SCHEMA).write.parquet(str(qrels_path))
    config = Config(
        run=RunSource(path=str(run_path), format="parquet", query_id="qid", doc_id="doc",
                      partition_columns=("system",), window="k"),
        qrels=QrelsSource(path=str(qrels_path), format="parquet", query_id="qid", doc_id="doc",
                          relevance="label"),
        evaluation=EvaluationSettings(measures=("P@window", "nDCG@10")),
        output=OutputSettings(per_query_path=str(out / "per_query"),
                              aggregate_path=str(out / "aggregate")),
    )
    # R@window and set_recall are added with a window, Judged@window with a @window measure
    assert [m.key for m in pipeline.job_measures(config)] == [
        "P@window", "nDCG@10", "R@window", "set_recall", "Judged@10", "Judged@window"]
    summary = pipeline.run(spark, config)
    text = summary.render()
    # k_q 3 and 5; recall (3/4 + 1/2 + 0) / 3 = 0.4167 -> R@window (1/4 + 1/2 + 0) / 3 = 0.25
    assert "system=bm25: k_q 3 / 4 / 5; recall 0.4167 -> 0.2500 (lost 0.1667)" in text
    per_query = spark.read.format("delta").load(str(out / "per_query"))
    sizes = {(r[S.QUERY_ID], r[S.WINDOW_SIZE])
             for r in per_query.select(S.QUERY_ID, S.WINDOW_SIZE).distinct().collect()}
    assert sizes == {("q1", 3), ("q2", 5), ("q3", None)}  # q3: not retrieved
    page = report.build(config)
    section = page[page.index('<table class="window">'):]
    cells = [c for c in section[:section.index("</table>")].split("<td") if c.strip()]
    texts = [c[c.index(">") + 1:c.index("</td>")] for c in cells[1:]]
    assert texts == ["bm25", "3 / 4 / 5", "0.4167", "0.2500", "0.1667"]


def test_window_from_the_command_line(tmp_path, capsys):
    from releval.cli import _parser, config_from_args, main

    base = ["evaluate", "--run", "r", "--qrels", "q", "--format", "parquet"]
    assert config_from_args(_parser().parse_args(base), str(tmp_path)).run.window is None
    config = config_from_args(_parser().parse_args([*base, "--window", "k"]), str(tmp_path))
    assert config.run.window == "k"
    with pytest.raises(ConfigError, match="a TREC run has no window"):
        config_from_args(_parser().parse_args(["evaluate", "--run", "r", "--qrels", "q",
                                               "--window", "k"]), str(tmp_path))
    # a @window measure without --window fails before Spark starts, in one line
    (tmp_path / "r").mkdir()
    (tmp_path / "q").mkdir()
    code = main(["evaluate", "--run", str(tmp_path / "r"), "--qrels", str(tmp_path / "q"),
                 "--format", "parquet", "--measures", "P@5,R@window"])
    assert code == 2
    assert "measure(s) ['R@window'] need the run's window" in capsys.readouterr().err
