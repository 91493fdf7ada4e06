"""The answers input and the attribution table on DataFrames: the cells and their shares,
Wilson intervals, Kendall's tau-b, bad answers rows, and an answers table that covers no
query of the run."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scipy import stats

import releval
from releval.core import columns as S
from releval.errors import ConfigError, InputError
from releval.stats.attribution import CELLS, Thresholds, summarize, wilson_interval

RUN = "system string, query_id string, doc_id string, score double"
QRELS = "query_id string, doc_id string, relevance int"
ANSWERS = "system string, query_id string, answer_score double"

# One run partition (system a), six answered queries, Hit@10 the retrieval measure:
#   q1  retrieves relevant d1 (Hit 1), answer 0.9   -> success
#   q2  retrieves relevant d2 (Hit 1), answer 0.7   -> success
#   q3  retrieves relevant d3 (Hit 1), answer 0.2   -> generation_miss
#   q4  retrieves only non-relevant dn (Hit 0), 0.1 -> retrieval_miss
#   q5  judged, not retrieved at all (Hit 0), 0.6   -> answered_without_evidence
#   q6  retrieved, no qrels, 0.8                    -> no_qrels (outside the shares)
HAND_RUN = [("a", "q1", "d1", 2.0), ("a", "q1", "dx", 1.0), ("a", "q2", "d2", 1.0),
            ("a", "q3", "d3", 1.0), ("a", "q4", "dn", 1.0), ("a", "q6", "d6", 1.0)]
HAND_QRELS = [("q1", "d1", 1), ("q2", "d2", 1), ("q3", "d3", 2), ("q4", "d4", 1),
              ("q4", "dn", 0), ("q5", "d5", 1)]
HAND_ANSWERS = [("a", "q1", 0.9), ("a", "q2", 0.7), ("a", "q3", 0.2), ("a", "q4", 0.1),
                ("a", "q5", 0.6), ("a", "q6", 0.8)]


def by_cell(result: releval.Result) -> dict[tuple, dict]:
    return {(r["system"], r[S.CELL]): r.asDict() for r in result.attribution.collect()}


def test_six_queries_worked_by_hand(spark):
    result = releval.evaluate(
        spark.createDataFrame(HAND_RUN, RUN), spark.createDataFrame(HAND_QRELS, QRELS),
        measures=["P@1"], partition_by=["system"],
        answers=spark.createDataFrame(HAND_ANSWERS, ANSWERS),
    )
    cells = by_cell(result)
    assert [c for _, c in cells] == list(CELLS)
    # attributed: q1..q5 = 5; success 2/5, each other cell 1/5; no_qrels 1, no share
    assert {c: r[S.QUERIES] for (_, c), r in cells.items()} == {
        "success": 2, "generation_miss": 1, "retrieval_miss": 1,
        "answered_without_evidence": 1, "no_qrels": 1}
    assert {c: r[S.SHARE] for (_, c), r in cells.items()} == {
        "success": 0.4, "generation_miss": 0.2, "retrieval_miss": 0.2,
        "answered_without_evidence": 0.2, "no_qrels": None}
    row = cells[("a", "success")]
    assert (row[S.ATTRIBUTED], row[S.RETRIEVED_BY_MEASURE], row[S.RETRIEVED_AT],
            row[S.CORRECT_AT], row[S.CI_LEVEL]) == (5, "Hit@10", 1.0, 0.5, 0.95)
    # Wilson 95% of 2/5: z = 1.95996, z^2 = 3.84146; center 0.4 + 3.84146/10 = 0.78415,
    # half 1.95996 * sqrt(0.24/5 + 3.84146/100) = 0.57616, over 1 + 3.84146/5 = 1.76829
    assert row[S.SHARE_CI_LOW] == pytest.approx((0.78415 - 0.57616) / 1.76829, abs=1e-4)
    assert row[S.SHARE_CI_HIGH] == pytest.approx((0.78415 + 0.57616) / 1.76829, abs=1e-4)
    assert cells[("a", "no_qrels")][S.SHARE_CI_LOW] is None
    # tau-b over q1..q5, x = Hit (1 1 1 0 0), y = (0.9 0.7 0.2 0.1 0.6): of the 10 pairs,
    # 4 tie in x (q1q2 q1q3 q2q3 q4q5); the 6 others are concordant but q3 (0.2) < q5 (0.6):
    # C = 5, D = 1, n0 = 10, ties in x n1 = 3 + 1, in y n2 = 0:
    # tau-b = (5 - 1) / sqrt((10 - 4) * (10 - 0)) = 4 / sqrt(60)
    assert row[S.KENDALL_TAU_B] == pytest.approx(4 / math.sqrt(60), abs=1e-12)
    x, y = [1, 1, 1, 0, 0], [0.9, 0.7, 0.2, 0.1, 0.6]
    assert row[S.KENDALL_P_VALUE] == pytest.approx(stats.kendalltau(x, y).pvalue, abs=1e-12)
    # mean answer score with the evidence (q1 q2 q3): 1.8 / 3; without (q4 q5): 0.7 / 2
    assert row[S.MEAN_SCORE_WITH_EVIDENCE] == pytest.approx(0.6, abs=1e-12)
    assert row[S.MEAN_SCORE_WITHOUT_EVIDENCE] == pytest.approx(0.35, abs=1e-12)
    # every row of the partition carries the same figures
    assert {r[S.KENDALL_TAU_B] for r in cells.values()} == {row[S.KENDALL_TAU_B]}
    # the per-query table: answer_score on every measure row of the scored queries (q5, not
    # retrieved, scores 0 and keeps its answer; q6 has no qrels and no per-query rows);
    # Hit@10, the retrieval measure, was added to the measures
    per_query = {(r[S.QUERY_ID], r[S.MEASURE_KEY]): (r[S.VALUE], r[S.ANSWER_SCORE])
                 for r in result.per_query.collect()}
    assert per_query[("q5", "Hit@10")] == (0.0, 0.6)
    assert per_query[("q1", "P@1")] == (1.0, 0.9)
    assert {q for q, _ in per_query} == {"q1", "q2", "q3", "q4", "q5"}
    # six answers rows: six used, none quarantined
    answers = result.accounts.answers
    assert (answers.input, answers.used, answers.quarantined_total) == (6, 6, 0)


@pytest.mark.parametrize(("k", "n"), [(0, 1), (1, 1), (0, 7), (2, 5), (7, 7), (13, 40),
                                      (999, 1000)])
@pytest.mark.parametrize("level", [0.8, 0.95, 0.99])
def test_wilson_interval_against_the_score_test_and_statsmodels(k, n, level):
    # the Wilson interval is the set of p whose score test does not reject: its ends are the
    # roots of (k/n - p)^2 = z^2 p (1 - p) / n, a quadratic in p, solved here by numpy
    z = stats.norm.ppf((1 + level) / 2)
    phat = k / n
    roots = np.sort(np.roots([1 + z * z / n, -(2 * phat + z * z / n), phat * phat]).real)
    low, high = wilson_interval(k, n, level)
    assert (low, high) == (pytest.approx(max(0.0, roots[0]), abs=1e-9),
                           pytest.approx(min(1.0, roots[1]), abs=1e-9))
    proportion = pytest.importorskip("statsmodels.stats.proportion")
    expected = proportion.proportion_confint(k, n, alpha=1 - level, method="wilson")
    assert (low, high) == (pytest.approx(expected[0], abs=1e-9),
                           pytest.approx(expected[1], abs=1e-9))
    assert wilson_interval(0, 0, level) == (None, None)


@pytest.mark.parametrize("seed", range(5))
def test_kendall_tau_b_is_scipys_on_graded_values_with_ties(seed):
    rnd = random.Random(seed)
    n = rnd.randint(5, 60)
    # a graded retrieval measure (nDCG-like, with many ties at 0) and graded answer scores;
    # a few answered queries without qrels (NaN), left out of tau-b
    x = np.array([rnd.choice([0.0, 0.0, 0.25, 0.5, 0.61, 1.0]) for _ in range(n)])
    y = np.array([rnd.choice([0.0, 0.5, 1.0, rnd.random()]) for _ in range(n)])
    x[rnd.sample(range(n), 3)] = np.nan
    figures = summarize(x, y, Thresholds("nDCG@10", retrieved_at=0.5, correct_at=0.5))
    judged = ~np.isnan(x)
    expected = stats.kendalltau(x[judged], y[judged])
    assert figures["_tau"] == pytest.approx(expected.statistic, abs=1e-12)
    assert figures["_p"] == pytest.approx(expected.pvalue, abs=1e-12)
    assert figures["_n_no_qrels"] == 3
    # constant retrieval values: no tau-b (scipy's is NaN), no p-value
    constant = summarize(np.ones(5), np.linspace(0, 1, 5), Thresholds("Hit@10"))
    assert (constant["_tau"], constant["_p"]) == (None, None)


def test_bad_answers_rows_are_quarantined_with_a_reason_and_counted(spark):
    run = spark.createDataFrame(
        [(s, q, "d1", 1.0) for s in ("a", "b") for q in ("q1", "q2", "q3", "q4")], RUN)
    qrels = spark.createDataFrame([(q, "d1", 1) for q in ("q1", "q2", "q3", "q4")], QRELS)
    answers = spark.createDataFrame([
        ("a", "q1", "0.9"),    # used
        ("a", "q2", None),     # invalid_answer_score: null
        ("a", "q3", "1.5"),    # invalid_answer_score: out of [0, 1]
        ("a", "q4", "nan"),    # invalid_answer_score: NaN
        ("a", "q4", "high"),   # invalid_answer_score: not a number
        ("a", " ", "0.5"),     # missing_query_id: blank
        ("zz", "q1", "0.5"),   # unknown_partition: the run has no system zz
        ("b", "q1", "0.4"),    # duplicate_answer: two scores for b/q1, none used
        ("b", "q1", "0.6"),    # duplicate_answer
        ("b", "q2", "0.3"),    # used
    ], "system string, qid string, grade string")
    result = releval.evaluate(run, qrels, measures=["P@1"], partition_by=["system"],
                              answers=answers,
                              answers_columns={"query_id": "qid", "answer_score": "grade"})
    account = result.accounts.answers
    got = {p.partition: (p.input, p.used, p.quarantined) for p in account.partitions}
    assert got == {
        "system=a": (6, 1, {"invalid_answer_score": 4, "missing_query_id": 1}),
        "system=b": (3, 1, {"duplicate_answer": 2}),
        "system=zz": (1, 0, {"unknown_partition": 1}),
    }
    assert (account.input, account.used, account.quarantined_total) == (10, 2, 8)
    assert result.accounts.quarantined == 8
    rejected = sorted((r["system"], r[S.RAW][S.QUERY_ID], r[S.RAW][S.ANSWER_SCORE],
                       r[S.REASON_CODE]) for r in result.quarantine.collect()
                      if r[S.INPUT] == "answers")
    assert rejected == sorted([
        ("a", "q2", None, "invalid_answer_score"), ("a", "q3", "1.5", "invalid_answer_score"),
        ("a", "q4", "nan", "invalid_answer_score"), ("a", "q4", "high", "invalid_answer_score"),
        ("a", " ", "0.5", "missing_query_id"), ("zz", "q1", "0.5", "unknown_partition"),
        ("b", "q1", "0.4", "duplicate_answer"), ("b", "q1", "0.6", "duplicate_answer"),
    ], key=str)
    scores = {(r["system"], r[S.QUERY_ID]): r[S.ANSWER_SCORE]
              for r in result.per_query.where(f"{S.MEASURE_KEY} = 'P@1'").collect()}
    assert scores == {("a", "q1"): 0.9, ("a", "q2"): None, ("a", "q3"): None, ("a", "q4"): None,
                      ("b", "q1"): None, ("b", "q2"): 0.3, ("b", "q3"): None, ("b", "q4"): None}
    assert {(r["system"], r[S.ATTRIBUTED]) for r in result.attribution.collect()} == {
        ("a", 1), ("b", 1)}


def test_answers_that_cover_no_query_of_the_run_fail_in_one_line(spark):
    run = spark.createDataFrame(HAND_RUN, RUN)
    qrels = spark.createDataFrame(HAND_QRELS, QRELS)
    # the evaluator's query ids are numbers, the run's are q1, q2, ...
    answers = spark.createDataFrame([("a", "1", 0.9), ("a", "2", 0.1)], ANSWERS)
    result = releval.evaluate(run, qrels, measures=["P@1"], partition_by=["system"],
                              answers=answers)
    with pytest.raises(InputError) as err:
        result.attribution  # noqa: B018
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("answers DataFrame: none of its 2 row(s) answers a query of the "
                              "run (quarantined: none)")
    assert "answers.query_id" in message
    empty = spark.createDataFrame([], ANSWERS)
    no_rows = releval.evaluate(run, qrels, measures=["P@1"], partition_by=["system"],
                               answers=empty)
    with pytest.raises(InputError, match="answers DataFrame has no rows"):
        no_rows.accounts  # noqa: B018


def test_the_api_names_wrong_answers_arguments(spark):
    run = spark.createDataFrame(HAND_RUN, RUN)
    qrels = spark.createDataFrame(HAND_QRELS, QRELS)
    answers = spark.createDataFrame(HAND_ANSWERS, ANSWERS)
    without = releval.evaluate(run, qrels, measures=["P@1"], partition_by=["system"])
    with pytest.raises(ConfigError, match="no answers= DataFrame"):
        without.attribution  # noqa: B018
    assert without.per_query.where(f"{S.ANSWER_SCORE} IS NOT NULL").count() == 0
    with pytest.raises(ConfigError, match=r"answers_columns: unknown key\(s\) \['score'\]"):
        releval.evaluate(run, qrels, measures=["P@1"], partition_by=["system"],
                         answers=answers, answers_columns={"score": "answer_score"})
    with pytest.raises(InputError, match=r"missing run partition column\(s\) \['system'\]"):
        releval.evaluate(run, qrels, measures=["P@1"], partition_by=["system"],
                         answers=answers.drop("system"))
    with pytest.raises(ConfigError, match="correct_at = 50"):
        releval.evaluate(run, qrels, measures=["P@1"], partition_by=["system"],
                         answers=answers, correct_at=50)
    with pytest.raises(ConfigError, match="answers.retrieved_by: unknown measure 'Hits'"):
        releval.evaluate(run, qrels, measures=["P@1"], partition_by=["system"],
                         answers=answers, retrieved_by="Hits@10")


def test_a_graded_retrieval_measure_and_thresholds(spark):
    # nDCG@10 >= 0.5 says retrieved; correct from 0.8: q1 (nDCG 1, 0.9) success, q3 (nDCG 1,
    # 0.2) generation_miss, q2 (nDCG 1, 0.7) generation_miss now, q4 (0, 0.1) and q5 (0, 0.6)
    # retrieval_miss
    result = releval.evaluate(
        spark.createDataFrame(HAND_RUN, RUN), spark.createDataFrame(HAND_QRELS, QRELS),
        measures=["nDCG@10"], partition_by=["system"],
        answers=spark.createDataFrame(HAND_ANSWERS, ANSWERS),
        retrieved_by="nDCG@10", retrieved_at=0.5, correct_at=0.8,
    )
    cells = {c: r[S.QUERIES] for (_, c), r in by_cell(result).items()}
    assert cells == {"success": 1, "generation_miss": 2, "retrieval_miss": 2,
                     "answered_without_evidence": 0, "no_qrels": 1}
    keys = {r[S.MEASURE_KEY] for r in result.aggregate.collect()}
    assert "Hit@10" not in keys  # the retrieval measure was among the measures


@pytest.mark.slow  # Delta tables written and read back
def test_write_gives_the_attribution_and_the_answers_rejections(spark, tmp_path):
    answers = spark.createDataFrame([*HAND_ANSWERS, ("a", "q6", 1.2)], ANSWERS)
    result = releval.evaluate(
        spark.createDataFrame(HAND_RUN, RUN), spark.createDataFrame(HAND_QRELS, QRELS),
        measures=["P@1"], partition_by=["system"], answers=answers)
    paths = {name: str(tmp_path / name) for name in ("per_query", "quarantine", "attribution")}
    result.write(**paths)
    attribution = spark.read.format("delta").load(paths["attribution"])
    assert attribution.count() == len(CELLS)
    assert attribution.schema[S.SHARE].metadata["comment"].startswith("queries / attributed")
    per_query = spark.read.format("delta").load(paths["per_query"])
    assert per_query.where(f"{S.ANSWER_SCORE} IS NOT NULL").select(S.QUERY_ID).distinct(
        ).count() == 5
    quarantine = spark.read.format("delta").load(paths["quarantine"]).collect()
    assert [(r[S.INPUT], r["system"], r[S.REASON_CODE]) for r in quarantine] == [
        ("answers", "a", "invalid_answer_score")]


def test_nothing_runs_until_a_table_is_used_with_answers_too(spark, monkeypatch):
    from releval.evaluation import answers as job_answers

    def fail(*args, **kwargs):
        raise AssertionError("the answers were evaluated")

    monkeypatch.setattr(job_answers, "evaluate_answers", fail)
    result = releval.evaluate(
        spark.createDataFrame(HAND_RUN, RUN), spark.createDataFrame(HAND_QRELS, QRELS),
        measures=["P@1"], partition_by=["system"],
        answers=spark.createDataFrame(HAND_ANSWERS, ANSWERS))
    with pytest.raises(AssertionError, match="the answers were evaluated"):
        result.attribution  # noqa: B018
