"""Hand-worked cases: each expected value is derived in the comment beside it.

Every case runs on both engines (``support.sql_oracle.ENGINES``).
"""

from __future__ import annotations

import math

import pytest
from chispa import assert_approx_df_equality
from pyspark.sql import types as T
from support import helpers
from support.helpers import evaluate_rows, values
from support.sql_oracle import ENGINES

from releval.core import columns as S


@pytest.fixture(autouse=True, params=sorted(ENGINES))
def engine(request, monkeypatch):
    monkeypatch.setattr(helpers, "ENGINE", request.param)
    return request.param

# The worked example: relevant {A, B, C}; ranking D A E B F (scores 5..1).
WORKED_RUN = [("q1", "D", 5.0), ("q1", "A", 4.0), ("q1", "E", 3.0), ("q1", "B", 2.0), ("q1", "F", 1.0)]
WORKED_QRELS = [("q1", "A", 1), ("q1", "B", 1), ("q1", "C", 1), ("q1", "D", 0)]


def test_worked_example(spark):
    ev = evaluate_rows(
        spark, WORKED_RUN, WORKED_QRELS, "P@5,R@5,Hit@5,RR,AP,AP@2,P@10,RR@1,nDCG@5"
    )
    got = values(ev)
    # relevant at ranks 2 (A) and 4 (B)
    assert got[("q1", "P@5")] == pytest.approx(2 / 5)  # 2 relevant in the top 5
    assert got[("q1", "R@5")] == pytest.approx(2 / 3)  # 2 of the 3 relevant
    assert got[("q1", "Hit@5")] == 1.0
    assert got[("q1", "RR")] == pytest.approx(1 / 2)  # first relevant at rank 2
    # AP = (P@2 + P@4) / 3 = (1/2 + 2/4) / 3 = 1/3; C is never retrieved but counts
    assert got[("q1", "AP")] == pytest.approx(1 / 3)
    assert got[("q1", "AP@2")] == pytest.approx((1 / 2) / 3)  # only A within k=2
    assert got[("q1", "P@10")] == pytest.approx(2 / 10)  # k > run length: still divides by k
    assert got[("q1", "RR@1")] == 0.0  # rank 1 (D) is not relevant
    # DCG@5 = 1/log2(3) + 1/log2(5); IDCG@5 = 1/log2(2) + 1/log2(3) + 1/log2(4)
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    idcg = 1 + 1 / math.log2(3) + 1 / 2
    assert got[("q1", "nDCG@5")] == pytest.approx(dcg / idcg, abs=1e-12)


def test_per_query_rows_carry_the_counts(spark):
    ev = evaluate_rows(spark, WORKED_RUN, WORKED_QRELS, "P@5,AP")
    schema = T.StructType(
        [
            T.StructField(S.QUERY_ID, T.StringType()),
            T.StructField(S.MEASURE_KEY, T.StringType()),
            T.StructField(S.VALUE, T.DoubleType()),
            T.StructField(S.NUM_RET, T.LongType()),
            T.StructField(S.NUM_REL, T.LongType()),
            T.StructField(S.NUM_REL_RET, T.LongType()),
        ]
    )
    # 5 retrieved, 3 relevant in the qrels, 2 of them retrieved (both within 5)
    expected = spark.createDataFrame(
        [("q1", "P@5", 0.4, 5, 3, 2), ("q1", "AP", 1 / 3, 5, 3, 2)], schema
    )
    actual = ev.per_query.select(*schema.fieldNames())
    assert_approx_df_equality(actual, expected, 1e-12, ignore_row_order=True, ignore_nullable=True)


def test_graded_ndcg_with_unjudged_document(spark):
    # labels A=3, B=2, C=1, D=0; ranking C A X B where X is unjudged (gain 0)
    run = [("q", "C", 4.0), ("q", "A", 3.0), ("q", "X", 2.0), ("q", "B", 1.0)]
    qrels = [("q", "A", 3), ("q", "B", 2), ("q", "C", 1), ("q", "D", 0)]
    got = values(evaluate_rows(spark, run, qrels, "nDCG@3,nDCG@10,nDCG"))
    # DCG@3 = 1/log2(2) + 3/log2(3) + 0/log2(4); IDCG@3 = 3/1 + 2/log2(3) + 1/log2(4)
    dcg3 = 1 + 3 / math.log2(3)
    idcg3 = 3 + 2 / math.log2(3) + 1 / 2
    assert got[("q", "nDCG@3")] == pytest.approx(dcg3 / idcg3, abs=1e-12)
    # at k=10 B adds 2/log2(5); the ideal list has only 3 positive labels
    assert got[("q", "nDCG@10")] == pytest.approx((dcg3 + 2 / math.log2(5)) / idcg3, abs=1e-12)
    assert got[("q", "nDCG")] == got[("q", "nDCG@10")]


def test_relevance_level_changes_binary_measures_not_ndcg_gains(spark):
    run = [("q", "C", 4.0), ("q", "A", 3.0), ("q", "B", 1.0)]
    qrels = [("q", "A", 3), ("q", "B", 2), ("q", "C", 1)]
    got = values(evaluate_rows(spark, run, qrels, "P@2,RR,nDCG@2", relevance_level=2))
    assert got[("q", "P@2")] == pytest.approx(1 / 2)  # only A (3 >= 2) in the top 2
    assert got[("q", "RR")] == pytest.approx(1 / 2)  # C (label 1) does not count
    # gains still 1 and 3: DCG@2 = 1 + 3/log2(3); IDCG@2 = 3 + 2/log2(3)
    assert got[("q", "nDCG@2")] == pytest.approx(
        (1 + 3 / math.log2(3)) / (3 + 2 / math.log2(3)), abs=1e-12
    )


def test_per_measure_relevance_level(spark):
    run = [("q", "C", 4.0), ("q", "A", 3.0)]
    qrels = [("q", "A", 3), ("q", "C", 1)]
    got = values(evaluate_rows(spark, run, qrels, "P@1,P(rel=2)@1,AP(rel=3)"))
    assert got[("q", "P@1")] == 1.0  # C (1 >= 1) at rank 1
    assert got[("q", "P(rel=2)@1")] == 0.0  # C (1 < 2)
    assert got[("q", "AP(rel=3)")] == pytest.approx(1 / 2)  # A at rank 2: P@2 = 1/2, 1 relevant


def test_tied_scores_break_by_doc_id_descending(spark):
    # all three tie; trec_eval orders Z, Y, X (doc id descending); the rank column is ignored
    run = [("q", "X", 1.0, 1), ("q", "Y", 1.0, 2), ("q", "Z", 1.0, 3)]
    got = values(evaluate_rows(spark, run, [("q", "Z", 1)], "RR,P@1"))
    assert got[("q", "RR")] == 1.0
    assert got[("q", "P@1")] == 1.0


def test_rank_by_rank_uses_the_logged_positions(spark):
    # positions 1, 2, 5 (3 and 4 were not logged); the relevant doc sits at 5
    run = [("q", "A", 0.9, 1), ("q", "B", 0.1, 2), ("q", "C", 0.5, 5)]
    got = values(evaluate_rows(spark, run, [("q", "C", 1)], "RR,P@4,P@5", rank_by="rank"))
    assert got[("q", "RR")] == pytest.approx(1 / 5)
    assert got[("q", "P@4")] == 0.0
    assert got[("q", "P@5")] == pytest.approx(1 / 5)


def test_duplicate_document_keeps_its_best_rank(spark):
    # A appears twice (scores 3 and 1): kept once, at rank 1; num_ret counts it once
    run = [("q", "A", 3.0), ("q", "B", 2.0), ("q", "A", 1.0)]
    ev = evaluate_rows(spark, run, [("q", "A", 1)], "P@3,num_ret")
    got = values(ev)
    assert got[("q", "P@3")] == pytest.approx(1 / 3)
    assert got[("q", "num_ret")] == 2.0
    # the dropped A is counted, for the job's input accounting (duplicate_doc)
    assert [r["_repeated"] for r in ev.queries.collect()] == [1]


def test_query_without_relevant_documents_scores_zero(spark):
    # q2 is judged (label 0 and a negative label) but has nothing relevant: every guard returns 0
    run = [("q2", "A", 2.0), ("q2", "B", 1.0)]
    qrels = [("q2", "A", 0), ("q2", "B", -1)]
    got = values(evaluate_rows(spark, run, qrels, "P@2,R@2,RR,AP,nDCG@2,Hit@2"))
    assert got == {
        ("q2", "P@2"): 0.0, ("q2", "R@2"): 0.0, ("q2", "RR"): 0.0,
        ("q2", "AP"): 0.0, ("q2", "nDCG@2"): 0.0, ("q2", "Hit@2"): 0.0,
    }


def test_missing_and_unjudged_queries(spark):
    # q1 is the worked example; q5 is judged but absent from the run; q6 is run but not judged
    run = [*WORKED_RUN, ("q6", "A", 1.0)]
    qrels = [*WORKED_QRELS, ("q5", "A", 1)]
    zero = evaluate_rows(spark, run, qrels, "P@5,RR")
    got = values(zero)
    assert set(got) == {("q1", "P@5"), ("q1", "RR"), ("q5", "P@5"), ("q5", "RR")}
    assert got[("q5", "P@5")] == 0.0 and got[("q5", "RR")] == 0.0
    macro = {
        r[S.MEASURE_KEY]: (r[S.VALUE], r[S.NUM_QUERIES])
        for r in zero.aggregate.where(f"{S.AVERAGING} = 'macro'").collect()
    }
    # the mean counts q5 as 0: P@5 = (0.4 + 0) / 2, RR = (0.5 + 0) / 2
    assert macro["P@5"] == (pytest.approx(0.2), 2)
    assert macro["RR"] == (pytest.approx(0.25), 2)
    skip = values(evaluate_rows(spark, run, qrels, "P@5", missing_queries="skip"))
    assert set(skip) == {("q1", "P@5")}


def test_each_run_partition_scores_the_queries_it_missed(spark, engine):
    from pyspark.sql import functions as F
    from support.helpers import qrels_df, run_df

    from releval.core.measures import parse_measures
    from releval.evaluation.evaluate import evaluate

    # three run partitions of (system, date), one with a null date and one that differs
    # from it only in the date (a null is a value here); q1..q3 are judged
    def part(system, date, rows):
        return run_df(spark, rows).select(
            F.lit(system).alias("system"), F.lit(date).cast("string").alias("date"), "*"
        )

    run = part("one", "d1", [("q1", "A", 2.0), ("q2", "B", 1.0)]).unionByName(
        part("two", None, [("q1", "X", 1.0)])  # X unjudged: RR 0, but q1 was retrieved
    ).unionByName(part("two", "d1", [("q2", "B", 1.0)]))
    qrels = qrels_df(spark, [("q1", "A", 1), ("q2", "B", 1), ("q3", "C", 1)])
    ev = evaluate(run, qrels, measures=parse_measures(["RR"]), partition_columns=["system", "date"],
                  run_stats=ENGINES[engine])
    got = {(r["system"], r["date"], r[S.QUERY_ID]): r[S.VALUE] for r in ev.per_query.collect()}
    # every judged query in every partition; the ones a partition missed score 0
    assert got == {
        ("one", "d1", "q1"): 1.0, ("one", "d1", "q2"): 1.0, ("one", "d1", "q3"): 0.0,
        ("two", None, "q1"): 0.0, ("two", None, "q2"): 0.0, ("two", None, "q3"): 0.0,
        ("two", "d1", "q1"): 0.0, ("two", "d1", "q2"): 1.0, ("two", "d1", "q3"): 0.0,
    }
    macro = {(r["system"], r["date"]): (r[S.VALUE], r[S.NUM_QUERIES])
             for r in ev.aggregate.where(f"{S.AVERAGING} = 'macro'").collect()}
    # MRR over the 3 judged queries: one (1 + 1 + 0) / 3, two/null 0 / 3, two/d1 (0 + 1 + 0) / 3
    assert macro == {("one", "d1"): (pytest.approx(2 / 3), 3), ("two", None): (0.0, 3),
                     ("two", "d1"): (pytest.approx(1 / 3), 3)}


def test_micro_and_macro_averages(spark):
    # qa: 2 relevant in top 2 of 4 judged-relevant; qb: 0 of 1 in the top 2
    run = [("qa", "A", 2.0), ("qa", "B", 1.0), ("qb", "X", 2.0), ("qb", "Y", 1.0)]
    qrels = [("qa", d, 1) for d in "ABCD"] + [("qb", "Z", 1)]
    ev = evaluate_rows(spark, run, qrels, "P@2,R@2,num_rel")
    got = {
        (r[S.MEASURE_KEY], r[S.AVERAGING]): r[S.VALUE]
        for r in ev.aggregate.collect()
    }
    assert got[("P@2", "macro")] == pytest.approx((2 / 2 + 0 / 2) / 2)
    assert got[("P@2", "micro")] == pytest.approx((2 + 0) / (2 * 2))
    assert got[("R@2", "macro")] == pytest.approx((2 / 4 + 0 / 1) / 2)
    assert got[("R@2", "micro")] == pytest.approx((2 + 0) / (4 + 1))
    assert got[("num_rel", "sum")] == 5.0
    assert ("num_rel", "macro") not in got


def test_partitions_are_evaluated_separately(spark, engine):
    from pyspark.sql import functions as F
    from support.helpers import qrels_df, run_df

    from releval.core.measures import parse_measures
    from releval.evaluation.evaluate import evaluate

    one = run_df(spark, WORKED_RUN).withColumn("system", F.lit("one"))
    # system two puts A first: RR = 1
    two = run_df(spark, [("q1", "A", 9.0), ("q1", "D", 1.0)]).withColumn("system", F.lit("two"))
    ev = evaluate(
        one.unionByName(two), qrels_df(spark, WORKED_QRELS),
        measures=parse_measures(["RR"]), partition_columns=["system"],
        run_stats=ENGINES[engine],
    )
    got = {r["system"]: r[S.VALUE] for r in ev.per_query.collect()}
    assert got == {"one": 0.5, "two": 1.0}
