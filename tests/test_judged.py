"""Incomplete judgments: Judged@k, judged-only ([judged]) measures, bpref, Rprec, nDCG_exp,
per-measure relevance levels, the two rules for negative labels. Expected values are worked out by hand beside each case."""

from __future__ import annotations

import math

import pytest
from chispa import assert_approx_df_equality
from pyspark.sql import types as T
from support.helpers import evaluate_rows, values
from support.sql_oracle import ENGINES

from releval.core import columns as S
from releval.core.measures import parse_measure, parse_measures
from releval.errors import MeasureError

# Ranking A X B Y C (scores 5..1); X and Y are unjudged. Labels A=1, B=0, C=2, D=1 (D not
# retrieved). Full positions: A1 X2 B3 Y4 C5. Condensed (judged only): A1 B2 C3.
HOLES_RUN = [("q", "A", 5.0), ("q", "X", 4.0), ("q", "B", 3.0), ("q", "Y", 2.0), ("q", "C", 1.0)]
HOLES_QRELS = [("q", "A", 1), ("q", "B", 0), ("q", "C", 2), ("q", "D", 1)]
LOG3 = math.log2(3)
# IDCG@3 over the labels 2, 1, 1: 2/log2(2) + 1/log2(3) + 1/log2(4)
IDCG3 = 2 + 1 / LOG3 + 1 / 2


def test_judged_at_k_and_condensed_list_measures(spark):
    measures = (
        "Judged@2,Judged@5,Judged@10,Judged,nDCG@3,nDCG@3[judged],P@3,P@3[judged],"
        "AP,AP[judged],Rprec,Rprec[judged],RR[judged],num_ret[judged],bpref"
    )
    ev = evaluate_rows(spark, HOLES_RUN, HOLES_QRELS, measures)
    schema = T.StructType(
        [
            T.StructField(S.MEASURE_KEY, T.StringType()),
            T.StructField(S.JUDGED_ONLY, T.BooleanType()),
            T.StructField(S.VALUE, T.DoubleType()),
        ]
    )
    expected = spark.createDataFrame(
        [
            ("Judged@2", False, 1 / 2),  # A judged, X not
            ("Judged@5", False, 3 / 5),  # A, B, C of 5
            ("Judged@10", False, 3 / 5),  # only 5 retrieved: divides by the 5, not by 10
            ("Judged", False, 3 / 5),  # all retrieved
            ("nDCG@3", False, 1 / IDCG3),  # A X B: DCG = 1/log2(2) = 1
            ("nDCG@3[judged]", True, 2 / IDCG3),  # A B C: DCG = 1 + 0 + 2/log2(4) = 2
            ("P@3", False, 1 / 3),  # A X B: A relevant
            ("P@3[judged]", True, 2 / 3),  # A B C: A, C relevant
            ("AP", False, (1 / 1 + 2 / 5) / 3),  # A at 1, C at 5; 3 relevant (A, C, D)
            ("AP[judged]", True, (1 / 1 + 2 / 3) / 3),  # A at 1, C at 3
            ("Rprec", False, 1 / 3),  # R = 3: top 3 A X B holds A
            ("Rprec[judged]", True, 2 / 3),  # top 3 A B C holds A, C
            ("RR[judged]", True, 1.0),
            ("num_ret[judged]", True, 3.0),  # A, B, C
            # R = 3, N = 1 (B). A: no non-relevant above -> 1; C: B above -> 1 - 1/min(1, 3) = 0
            ("bpref", False, (1 + 0) / 3),
        ],
        schema,
    )
    actual = ev.per_query.select(S.MEASURE_KEY, S.JUDGED_ONLY, S.VALUE)
    assert_approx_df_equality(actual, expected, 1e-12, ignore_row_order=True, ignore_nullable=True)
    aggregate = {
        (r[S.MEASURE_KEY], r[S.JUDGED_ONLY]) for r in ev.aggregate.collect()
    }
    assert ("nDCG@3[judged]", True) in aggregate and ("nDCG@3", False) in aggregate


# Ranking M A N B X C (scores 6..1). Labels M=-1, A=1, N=-2, B=0, C=2; X is unjudged; D=1 and
# E=0 are not retrieved. Top 4 = M A N B holds both negative labels. Positive labels of the
# query: C 2, A 1, D 1, so IDCG@4 = 2/log2(2) + 1/log2(3) + 1/log2(4) = 2.5 + 1/log2(3).
NEGATIVE_RUN = [("q", "M", 6.0), ("q", "A", 5.0), ("q", "N", 4.0), ("q", "B", 3.0),
                ("q", "X", 2.0), ("q", "C", 1.0)]
NEGATIVE_QRELS = [("q", "M", -1), ("q", "A", 1), ("q", "N", -2), ("q", "B", 0), ("q", "C", 2),
                  ("q", "D", 1), ("q", "E", 0)]
NEGATIVE_MEASURES = "Judged@4,P@4[judged],nDCG@4[judged],bpref,P@4,nDCG@4,P(rel=-1)@4"
IDCG4 = 2.5 + 1 / LOG3


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_negative_labels_are_in_the_pool_but_unjudged_by_default(spark, engine):
    ev = evaluate_rows(spark, NEGATIVE_RUN, NEGATIVE_QRELS, NEGATIVE_MEASURES, engine=engine)
    got = values(ev)
    assert got[("q", "Judged@4")] == 2 / 4  # M A N B: A and B judged; M, N in the pool only
    # condensed list: M, N dropped like the unjudged X -> A(1) B(2) C(3)
    assert got[("q", "P@4[judged]")] == 2 / 4  # A, C relevant; divides by k
    # DCG = 1/log2(2) (A) + 0 (B) + 2/log2(4) (C) = 2
    assert got[("q", "nDCG@4[judged]")] == pytest.approx(2 / IDCG4, abs=1e-12)
    # R = 3 (A, C, D); N = 2 (B, E; M and N skipped). A: nothing judged non-relevant above
    # -> 1. C: B above -> 1 - min(1, 3)/min(2, 3) = 1/2. bpref = (1 + 1/2) / 3 = 1/2
    assert got[("q", "bpref")] == pytest.approx(1 / 2, abs=1e-12)
    # measures on the full ranking: a negative label is non-relevant under both rules
    assert got[("q", "P@4")] == 1 / 4  # A
    assert got[("q", "nDCG@4")] == pytest.approx((1 / LOG3) / IDCG4, abs=1e-12)  # A at 2
    # never relevant, even at level -1: relevant = A, B in the top 4 (label 0 >= -1)
    assert got[("q", "P(rel=-1)@4")] == 2 / 4
    rules = {r[S.NEGATIVE_LABELS] for r in ev.per_query.collect() + ev.aggregate.collect()}
    assert rules == {"unjudged"}


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_negative_labels_as_judgments_keep_the_old_rule(spark, engine):
    ev = evaluate_rows(
        spark, NEGATIVE_RUN, NEGATIVE_QRELS, NEGATIVE_MEASURES, engine=engine,
        negative_labels="judged",
    )
    got = values(ev)
    assert got[("q", "Judged@4")] == 4 / 4  # M A N B all have a judgment
    # condensed list: only X dropped -> M(1) A(2) N(3) B(4) C(5)
    assert got[("q", "P@4[judged]")] == 1 / 4  # A
    # DCG = 0 (M) + 1/log2(3) (A) + 0 (N) + 0 (B); negative labels gain 0
    assert got[("q", "nDCG@4[judged]")] == pytest.approx((1 / LOG3) / IDCG4, abs=1e-12)
    # R = 3; N = 4 (M, N, B, E judged non-relevant). A: M above -> 1 - min(1,3)/min(4,3) = 2/3.
    # C: M, N, B above -> 1 - min(3,3)/min(4,3) = 0. bpref = (2/3 + 0) / 3 = 2/9
    assert got[("q", "bpref")] == pytest.approx(2 / 9, abs=1e-12)
    assert got[("q", "P@4")] == 1 / 4  # unchanged: A
    assert got[("q", "nDCG@4")] == pytest.approx((1 / LOG3) / IDCG4, abs=1e-12)
    # a judgment -1 is relevant at level -1: M, A, B of the top 4 (N's -2 is not)
    assert got[("q", "P(rel=-1)@4")] == 3 / 4
    rules = {r[S.NEGATIVE_LABELS] for r in ev.per_query.collect() + ev.aggregate.collect()}
    assert rules == {"judged"}


def test_an_unknown_negative_label_rule_is_refused(spark):
    with pytest.raises(ValueError, match=r"negative_labels must be one of \['unjudged', 'judged'\]"):
        evaluate_rows(spark, NEGATIVE_RUN, NEGATIVE_QRELS, "P@1", negative_labels="ignore")


def test_judged_query_missing_from_run_and_unjudged_only_query(spark):
    # q1 retrieves only unjudged documents; q2 is judged but absent from the run
    run = [("q1", "X", 2.0), ("q1", "Y", 1.0)]
    qrels = [("q1", "A", 1), ("q2", "A", 1)]
    got = values(evaluate_rows(spark, run, qrels, "Judged@2,nDCG@2[judged],P@2[judged],bpref"))
    assert got[("q1", "Judged@2")] == 0.0  # 0 of 2
    assert got[("q1", "nDCG@2[judged]")] == 0.0  # the condensed list is empty
    assert got[("q1", "P@2[judged]")] == 0.0  # divides by k
    assert got[("q2", "Judged@2")] == 0.0  # nothing retrieved: guarded 0
    assert got[("q2", "bpref")] == 0.0


def test_exponential_gain_ndcg(spark):
    # labels A=3, B=2, C=1; ranking C A X B (X unjudged)
    run = [("q", "C", 4.0), ("q", "A", 3.0), ("q", "X", 2.0), ("q", "B", 1.0)]
    qrels = [("q", "A", 3), ("q", "B", 2), ("q", "C", 1)]
    got = values(
        evaluate_rows(spark, run, qrels, "nDCG@3,nDCG_exp@3,nDCG_exp(rel=3)@3,nDCG_exp@3[judged]")
    )
    # gains 2^l - 1: C 1, A 7, B 3. DCG@3 = 1/1 + 7/log2(3) + 0; IDCG@3 = 7 + 3/log2(3) + 1/2
    idcg = 7 + 3 / LOG3 + 1 / 2
    assert got[("q", "nDCG_exp@3")] == pytest.approx((1 + 7 / LOG3) / idcg, abs=1e-12)
    assert got[("q", "nDCG_exp(rel=3)@3")] == got[("q", "nDCG_exp@3")]  # level: no effect
    # linear gains differ: (1 + 3/log2(3)) / (3 + 2/log2(3) + 1/2)
    assert got[("q", "nDCG@3")] == pytest.approx((1 + 3 / LOG3) / (3.5 + 2 / LOG3), abs=1e-12)
    # condensed: C A B -> DCG = 1 + 7/log2(3) + 3/log2(4)
    assert got[("q", "nDCG_exp@3[judged]")] == pytest.approx(
        (1 + 7 / LOG3 + 3 / 2) / idcg, abs=1e-12
    )


def test_per_measure_relevance_threshold_on_every_family(spark):
    # labels A=3, B=2, C=1, D=0; ranking C D A B. With rel=2 the relevant set is {A, B}.
    run = [("q", "C", 4.0), ("q", "D", 3.0), ("q", "A", 2.0), ("q", "B", 1.0)]
    qrels = [("q", "A", 3), ("q", "B", 2), ("q", "C", 1), ("q", "D", 0)]
    measures = "AP(rel=2),R(rel=2)@3,Rprec(rel=2),bpref(rel=2),RR(rel=2),nDCG(rel=2)@2,nDCG@2,AP"
    got = values(evaluate_rows(spark, run, qrels, measures))
    assert got[("q", "AP(rel=2)")] == pytest.approx((1 / 3 + 2 / 4) / 2)  # A at 3, B at 4
    assert got[("q", "R(rel=2)@3")] == pytest.approx(1 / 2)  # A of {A, B}
    assert got[("q", "Rprec(rel=2)")] == 0.0  # R = 2: top 2 is C D
    # N = 2 (C, D: 0 <= label < 2); A and B each have 2 above: 1 - min(2,2)/min(2,2) = 0
    assert got[("q", "bpref(rel=2)")] == 0.0
    assert got[("q", "RR(rel=2)")] == pytest.approx(1 / 3)
    assert got[("q", "nDCG(rel=2)@2")] == got[("q", "nDCG@2")]  # gains ignore the level
    # default level 1: C, A, B relevant at 1, 3, 4: (1/1 + 2/3 + 3/4) / 3
    assert got[("q", "AP")] == pytest.approx((1 + 2 / 3 + 3 / 4) / 3)


def test_parse_judged_suffix():
    m = parse_measure("nDCG@10[judged]")
    assert (m.name, m.cutoff, m.judged_only, m.key) == ("nDCG", 10, True, "nDCG@10[judged]")
    assert m.trec_name is None  # trec_eval's -J is per run, not per measure
    assert parse_measure("ndcg_cut_10").trec_name == "ndcg_cut_10"
    assert parse_measure("P(rel=2)@5[judged]").key == "P(rel=2)@5[judged]"
    assert parse_measure("AP[judged]").key == "AP[judged]"
    assert parse_measure("Rprec").trec_name == "Rprec" and parse_measure("bpref").key == "bpref"
    with pytest.raises(MeasureError, match="no judged-only variant"):
        parse_measure("Judged@5[judged]")
    with pytest.raises(MeasureError, match=r"unknown suffix \[graded\]"):
        parse_measure("P@5[graded]")
    # the config's judged_only makes every measure judged-only, except Judged@k
    keys = [m.key for m in parse_measures(["P@5,Judged@5"], judged_only=True)]
    assert keys == ["P@5[judged]", "Judged@5"]
