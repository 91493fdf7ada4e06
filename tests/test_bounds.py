"""Bounds from the missing labels: P@k[best], Hit@k[best], RR[best] count every unjudged
retrieved document relevant. Hand-worked queries, pytrec_eval on qrels where those documents
are added as relevant, and the comparison at both extremes."""

from __future__ import annotations

import random

import pytest
from support.helpers import evaluate_rows, qrels_df, run_df, values
from support.sql_oracle import ENGINES

import releval
from releval.core import columns as S
from releval.core.measures import parse_measure, parse_measures
from releval.errors import MeasureError
from releval.evaluation.evaluate import evaluate
from releval.io.views import column_name

# Ranking B X C Y D A (scores 6..1); X and Y are unjudged, B C D judged 0, A judged 1; E (1)
# is not retrieved. The top 5 B X C Y D holds 2 unjudged documents and nothing relevant.
HOLES_RUN = [("q", "B", 6.0), ("q", "X", 5.0), ("q", "C", 4.0), ("q", "Y", 3.0),
             ("q", "D", 2.0), ("q", "A", 1.0)]
HOLES_QRELS = [("q", "B", 0), ("q", "C", 0), ("q", "D", 0), ("q", "A", 1), ("q", "E", 1)]
HOLES_MEASURES = "P@5,P@5[best],Hit@5,Hit@5[best],RR,RR[best],RR@1,RR@1[best],P@10[best]"


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_a_top_5_with_2_unjudged_documents_has_a_range(spark, engine):
    got = values(evaluate_rows(spark, HOLES_RUN, HOLES_QRELS, HOLES_MEASURES, engine=engine))
    assert got[("q", "P@5")] == 0.0  # no relevant document in B X C Y D
    assert got[("q", "P@5[best]")] == 2 / 5  # X and Y counted relevant: P@5 in [0, 0.4]
    assert got[("q", "Hit@5")] == 0.0
    assert got[("q", "Hit@5[best]")] == 1.0  # X at 2 could be relevant: Hit@5 in [0, 1]
    assert got[("q", "RR")] == 1 / 6  # A at 6
    assert got[("q", "RR[best]")] == 1 / 2  # X at 2: RR in [1/6, 1/2]
    assert got[("q", "RR@1")] == 0.0 and got[("q", "RR@1[best]")] == 0.0  # B at 1 is judged 0
    assert got[("q", "P@10[best]")] == 3 / 10  # X, Y, A of 6 retrieved; divides by k = 10


# Ranking M A C (scores 3..1): M labelled -1, A 1, C 2. At rel=2 only C is relevant.
NEGATIVE_RUN = [("q", "M", 3.0), ("q", "A", 2.0), ("q", "C", 1.0)]
NEGATIVE_QRELS = [("q", "M", -1), ("q", "A", 1), ("q", "C", 2)]
NEGATIVE_MEASURES = "P(rel=2)@2,P(rel=2)@2[best],RR(rel=2),RR(rel=2)[best],Hit(rel=2)@1[best]"


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_a_negative_label_is_unjudged_by_default_and_judged_on_request(spark, engine):
    unjudged = values(evaluate_rows(spark, NEGATIVE_RUN, NEGATIVE_QRELS, NEGATIVE_MEASURES,
                                    engine=engine))
    assert unjudged[("q", "P(rel=2)@2")] == 0.0  # M, A: neither has label >= 2
    assert unjudged[("q", "P(rel=2)@2[best]")] == 1 / 2  # M in the pool, not judged: relevant
    assert unjudged[("q", "RR(rel=2)")] == 1 / 3  # C at 3
    assert unjudged[("q", "RR(rel=2)[best]")] == 1.0  # M at 1
    assert unjudged[("q", "Hit(rel=2)@1[best]")] == 1.0
    judged = values(evaluate_rows(spark, NEGATIVE_RUN, NEGATIVE_QRELS, NEGATIVE_MEASURES,
                                  engine=engine, negative_labels="judged"))
    # M judged non-relevant, A judged 1 < 2: nothing unjudged, the bound is the value
    assert judged[("q", "P(rel=2)@2[best]")] == 0.0
    assert judged[("q", "RR(rel=2)[best]")] == 1 / 3
    assert judged[("q", "Hit(rel=2)@1[best]")] == 0.0


def test_best_is_parsed_keyed_and_refused_where_it_bounds_nothing():
    m = parse_measure("p(rel=2)@5[BEST]")
    assert (m.key, m.best, m.judged_only, m.trec_name) == ("P(rel=2)@5[best]", True, False, None)
    assert parse_measure("recip_rank[best]").key == "RR[best]"
    assert column_name("P@5[best]") == "p_at_5_best"
    with pytest.raises(MeasureError, match=r"AP has no \[best\] bound.*Hit, P, RR"):
        parse_measure("AP[best]")
    with pytest.raises(MeasureError, match=r"R has no \[best\] bound"):
        parse_measure("R@10[best]")
    with pytest.raises(MeasureError, match=r"judged-only measure .* has none"):
        parse_measure("P@5[judged][best]")
    with pytest.raises(MeasureError, match=r"judged-only measure .* has none"):
        parse_measure("P@5[best]", judged_only=True)
    with pytest.raises(MeasureError, match=r"repeated suffix \[best\]"):
        parse_measure("P@5[best][best]")
    with pytest.raises(MeasureError, match=r"unknown suffix \[worst\]"):
        parse_measure("P@5[worst]")


def random_case(seed: int, queries: int = 30):
    rng = random.Random(seed)
    run, qrels = [], []
    for q in range(queries):
        qid = f"q{q:02d}"
        pool = [f"d{i:03d}" for i in range(60)]
        for doc in rng.sample(pool, 15):  # a quarter of the pool judged: many holes
            qrels.append((qid, doc, rng.choice([-1, 0, 0, 1, 2])))
        if q % 10 == 9:
            continue  # a judged query the run lacks
        for doc in rng.sample(pool, rng.randint(2, 25)):
            run.append((qid, doc, round(rng.random(), 1)))  # one decimal: many ties
    return run, qrels


def filled(run, qrels, label: int) -> dict[str, dict[str, int]]:
    """The qrels with every retrieved document that has no judgment (none, or a negative
    label: in the pool, not judged) added with ``label``."""
    out: dict[str, dict[str, int]] = {}
    for qid, doc, rel in qrels:
        out.setdefault(qid, {})[doc] = rel
    for qid, doc, _ in run:
        if out.setdefault(qid, {}).get(doc, -1) < 0:
            out[qid][doc] = label
    return out


@pytest.mark.parametrize("level", [1, 2])
def test_best_is_pytrec_eval_with_the_unjudged_documents_relevant(spark, level):
    run, qrels = random_case(seed=5 + level)
    measures = parse_measures(["P@5[best],P@20[best],RR[best],Hit@1[best],Hit@10[best]"],
                              relevance_level=level)
    got = values(evaluate(run_df(spark, run), qrels_df(spark, qrels), measures=measures))
    oracle_run: dict[str, dict[str, float]] = {}
    for qid, doc, score in run:
        oracle_run.setdefault(qid, {})[doc] = score
    # added at the level: relevant at every level up to it
    evaluator = pytrec_eval().RelevanceEvaluator(
        filled(run, qrels, level), {"P.5,20", "recip_rank", "success.1,10"},
        relevance_level=level)
    expected = evaluator.evaluate(oracle_run)
    assert len(expected) == 27  # pytrec_eval scores the queries of the run only
    names = {"P@5[best]": "P_5", "P@20[best]": "P_20", "RR[best]": "recip_rank",
             "Hit@1[best]": "success_1", "Hit@10[best]": "success_10"}
    mismatches = [
        (qid, key, oracle[name], got.get((qid, key)))
        for qid, oracle in expected.items() for key, name in names.items()
        if abs(got[(qid, key)] - oracle[name]) > 1e-12
    ]
    assert not mismatches, f"{len(mismatches)} mismatches, first: {mismatches[:5]}"
    # the bound moved: some query has an unjudged document above its first relevant one
    plain = values(evaluate(run_df(spark, run), qrels_df(spark, qrels),
                            measures=parse_measures(["RR"], relevance_level=level)))
    assert sum(got[(q, "RR[best]")] > plain[(q, "RR")] for q in expected) > 5


# q1 judges A 1, B 0, C 0; q2 judges D 1, E 0; U, V, W are unjudged.
#   base:  q1 A B   q2 D E   P@2 1/2, 1/2 (both [best] too: nothing unjudged); RR 1, 1
#   flip:  q1 U V   q2 D E   P@2 0, 1/2; P@2[best] 1, 1/2; RR 0, 1; RR[best] 1, 1
#   weak:  q1 B C   q2 E W   P@2 0, 0; P@2[best] 0, 1/2; RR 0, 0; RR[best] 0, 1/2
COMPARE_RUN = [("base", "q1", "A", 2.0), ("base", "q1", "B", 1.0), ("base", "q2", "D", 2.0),
               ("base", "q2", "E", 1.0), ("flip", "q1", "U", 2.0), ("flip", "q1", "V", 1.0),
               ("flip", "q2", "D", 2.0), ("flip", "q2", "E", 1.0), ("weak", "q1", "B", 2.0),
               ("weak", "q1", "C", 1.0), ("weak", "q2", "E", 2.0), ("weak", "q2", "W", 1.0)]
COMPARE_QRELS = [("q1", "A", 1), ("q1", "B", 0), ("q1", "C", 0), ("q2", "D", 1), ("q2", "E", 0)]


def test_the_comparison_at_both_extremes_and_whether_its_sign_holds(spark):
    result = releval.evaluate(
        spark.createDataFrame(COMPARE_RUN, "system string, query_id string, doc_id string, "
                                           "score double"),
        spark.createDataFrame(COMPARE_QRELS, "query_id string, doc_id string, relevance int"),
        measures=["P@2", "P@2[best]", "RR", "RR[best]", "AP"], partition_by=["system"])
    table = releval.compare(result.per_query, baseline="system=base",
                            candidates=["system=flip", "system=weak"], permutations=200)
    got = {(r[S.CANDIDATE], r[S.MEASURE_KEY]): (r[S.MEAN_DIFF], r[S.MEAN_DIFF_BEST],
                                                r[S.SIGN_HOLDS]) for r in table.collect()}
    flip, weak = "system=flip", "system=weak"
    # flip - base, P@2: q1 0 - 1/2, q2 0 -> -1/4; [best]: q1 1 - 1/2, q2 0 -> +1/4: it flips
    assert got[(flip, "P@2")] == pytest.approx((-0.25, 0.25, False))
    # RR: q1 0 - 1, q2 0 -> -1/2; [best]: q1 1 - 1, q2 0 -> 0: not the same sign either
    assert got[(flip, "RR")] == pytest.approx((-0.5, 0.0, False))
    # weak - base, P@2: q1 -1/2, q2 -1/2 -> -1/2; [best]: q1 -1/2, q2 0 -> -1/4: it holds
    assert got[(weak, "P@2")] == pytest.approx((-0.5, -0.25, True))
    # RR: q1 -1, q2 -1 -> -1; [best]: q1 -1, q2 1/2 - 1 -> -3/4: it holds
    assert got[(weak, "RR")] == pytest.approx((-1.0, -0.75, True))
    # the [best] rows are compared too; they and measures without a bound have no pair
    assert got[(weak, "P@2[best]")] == pytest.approx((-0.25, None, None))
    assert got[(flip, "AP")][1:] == (None, None) and got[(flip, "Judged@2")][1:] == (None, None)


def pytrec_eval():
    return pytest.importorskip("pytrec_eval")


def test_releval_compare_on_files_warns_of_each_sign_that_does_not_hold():
    from releval.adhoc import _label, render_comparison
    from releval.config import ComparisonSettings

    def row(tag, key, diff, best, holds):
        return {S.CANDIDATE: _label(tag), S.MEASURE_KEY: key, S.BASELINE_MEAN: 0.5,
                S.CANDIDATE_MEAN: 0.5 + diff, S.SIGNIFICANT: False, S.NUM_PAIRS: 60,
                S.MEAN_DIFF: diff, S.MEAN_DIFF_BEST: best, S.SIGN_HOLDS: holds}

    # the flip and weak rows of the comparison above, and the [best] rows (no pair of their own)
    rows = [row("flip", "P@2", -0.25, 0.25, False), row("flip", "P@2[best]", 0.25, None, None),
            row("weak", "P@2", -0.5, -0.25, True), row("weak", "P@2[best]", -0.25, None, None)]
    text = render_comparison(rows, tags=["base", "flip", "weak"], baseline="base",
                             measure_keys=["P@2", "P@2[best]"], settings=ComparisonSettings())
    assert ("WARNING: 1 difference(s) do not keep their sign with every unjudged document "
            "relevant: flip P@2 -0.2500 -> +0.2500 (docs/incomplete-judgments.md)") in text
    assert "weak P@2" not in text


def test_a_mean_difference_within_the_tie_tolerance_has_no_sign():
    from releval.config import ComparisonSettings
    from releval.stats.paired_groups import finish

    tests = [{S.CANDIDATE: "c", S.MEASURE_KEY: key, S.MEAN_DIFF: diff, S.T_P_VALUE: 0.5,
              S.RANDOMIZATION_P_VALUE: 0.5}
             for key, diff in [("P@5", 1e-17), ("P@5[best]", 0.0), ("RR", -1e-17),
                               ("RR[best]", 0.25), ("AP", 0.5)]]
    got = {r[S.MEASURE_KEY]: (r[S.MEAN_DIFF_BEST], r[S.SIGN_HOLDS])
           for r in finish(tests, ComparisonSettings())}
    # 1e-17 is float noise around 0: the same sign as 0, not as 0.25
    assert got == {"P@5": (0.0, True), "RR": (0.25, False), "AP": (None, None),
                   "P@5[best]": (None, None), "RR[best]": (None, None)}
