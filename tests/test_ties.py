"""Tie-aware measures (``M[ties]``): the expected value over every ordering of tied scores.

Checked by hand on one query, against the exact mean over every ordering (brute force) and
against the mean of random tie-breaks, through the pure functions and through the engine."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.helpers import evaluate_rows, values

import releval
from releval.config import config_from_dict
from releval.core import columns as S
from releval.core import ties
from releval.core.columns import MEASURES, TIE_DEPENDENT
from releval.core.measures import parse_measure
from releval.errors import MeasureError
from releval.io.views import column_name
from releval.job import pipeline

# Ranking A B [C D E F] G: scores 9, 8, then C D E F tied at 5, then G at 1. Labels A=0, B=0,
# C=2, D=0, E=1, F=0, G=1 (relevant at level 1: C, E, G; R = 3). The tie group holds
# positions 3..6 (s = 2, n = 4, r = 2, none relevant above it) and straddles k = 5.
# trec_eval's tie-break (doc id descending) orders it F E D C: E at 4, C at 6.
HAND_RUN = [("q", "A", 9.0), ("q", "B", 8.0), ("q", "C", 5.0), ("q", "D", 5.0),
            ("q", "E", 5.0), ("q", "F", 5.0), ("q", "G", 1.0)]
HAND_QRELS = [("q", "A", 0), ("q", "B", 0), ("q", "C", 2), ("q", "D", 0), ("q", "E", 1),
              ("q", "F", 0), ("q", "G", 1)]
# IDCG@5 over the labels 2, 1, 1: 2/log2(2) + 1/log2(3) + 1/log2(4)
HAND_IDCG5 = 2 + 1 / math.log2(3) + 1 / 2
HAND = {
    # 3 of the group's 4 slots are inside 5, each holding 2/4 relevant: 1.5 / 5
    "P@5[ties]": 1.5 / 5,
    "P@5": 1 / 5,  # F E D at 3..5: E
    "R@5[ties]": 1.5 / 3,
    # slot 1 (position 3) holds a relevant one with probability 2/4
    "Hit@3[ties]": 2 / 4,
    "Hit@3": 0.0,  # F at 3
    # the first relevant is in slot j with P = C(4-j, 1)/C(4, 2) = (4-j)/6: 3/6, 2/6, 1/6
    # at positions 3, 4, 5: (1/2)(1/3) + (1/3)(1/4) + (1/6)(1/5) = 10/60 + 5/60 + 2/60
    "RR[ties]": 17 / 60,
    "RR": 1 / 4,  # E at 4
    # group: sum over slots i = 1..4 of (2/4)(0 + 1 + (i-1)(1)/3)/(2+i): each term is
    # (1/2)(1/3) (1/3, (4/3)/4, (5/3)/5, 2/6), so 4 * 1/6 = 2/3 (the mean of 1/a + 2/b over
    # the 6 placements a < b of the two relevant in 3..6: 24/36 = 2/3); G at 7 has 2 + 1
    # relevant at or above it: 3/7. AP = (2/3 + 3/7) / 3 = 23/63
    "AP[ties]": 23 / 63,
    "AP": (1 / 4 + 2 / 6 + 3 / 7) / 3,  # E at 4, C at 6, G at 7
    # the group's mean gain (2 + 0 + 1 + 0)/4 = 3/4 at positions 3, 4, 5
    "nDCG@5[ties]": 0.75 * (1 / 2 + 1 / math.log2(5) + 1 / math.log2(6)) / HAND_IDCG5,
    "nDCG@5": (1 / math.log2(5)) / HAND_IDCG5,  # E (gain 1) at 4; C at 6 is past 5
}


def test_hand_worked_tie_group_across_the_cutoff(spark):
    ev = evaluate_rows(spark, HAND_RUN, HAND_QRELS, ",".join(HAND))
    got = {k: v for (_, k), v in values(ev).items() if k in HAND}
    assert got == pytest.approx(HAND, abs=1e-12)


def test_summary_flags_count_queries_whose_value_depends_on_the_order(spark):
    # q: the hand-worked query; u: the same documents with untied scores; v: a tie group
    # of equal labels (E, G: label 1) and one (D, F: label 0) past k
    run = [*HAND_RUN,
           *[("u", d, float(10 - i)) for i, (_, d, _) in enumerate(HAND_RUN)],
           ("v", "E", 5.0), ("v", "G", 5.0), ("v", "A", 4.0), ("v", "D", 1.0), ("v", "F", 1.0)]
    qrels = [*HAND_QRELS, *[("u", d, g) for _, d, g in HAND_QRELS],
             *[("v", d, g) for _, d, g in HAND_QRELS]]
    keys = ["P@5[ties]", "Hit@5[ties]", "Hit@3[ties]", "RR[ties]", "AP[ties]", "nDCG@5[ties]"]
    ev = evaluate_rows(spark, run, qrels, ",".join(keys))
    measures = [parse_measure(k) for k in keys]
    rows = ev.queries.select("query_id", MEASURES).collect()
    flags = {}
    for row in rows:
        for m, entry in zip(ev.measures, row[MEASURES], strict=True):
            if m in measures:
                flags[(row["query_id"], m.key)] = entry[TIE_DEPENDENT]
    assert {k: v for (q, k), v in flags.items() if q == "q"} == {
        "P@5[ties]": True,  # the mixed group straddles 5
        "Hit@5[ties]": False,  # 3 of the 4 slots inside 5: one of the 2 relevant always is
        "Hit@3[ties]": True,  # slot 1 only: relevant or not
        "RR[ties]": True, "AP[ties]": True, "nDCG@5[ties]": True,
    }
    assert not any(v for (q, _), v in flags.items() if q in ("u", "v"))


@pytest.mark.slow
def test_the_job_summary_counts_queries_whose_value_depends_on_the_order(spark, tmp_path):
    # run "sys": q is the hand-worked query, u the same documents untied
    lines = [f"q Q0 {d} 0 {s} sys" for _, d, s in HAND_RUN]
    lines += [f"u Q0 {d} 0 {10 - i} sys" for i, (_, d, _) in enumerate(HAND_RUN)]
    (tmp_path / "run.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "qrels.txt").write_text(
        "".join(f"{q} 0 {d} {g}\n" for q in "qu" for _, d, g in HAND_QRELS))
    config = config_from_dict({
        "run": {"path": str(tmp_path / "run.txt"), "format": "trec",
                "partition_columns": ["run_id"]},
        "qrels": {"path": str(tmp_path / "qrels.txt"), "format": "trec"},
        "evaluation": {"measures": ["P@5[ties]", "Hit@5[ties]", "AP[ties]", "AP"]},
        "output": {"per_query_path": str(tmp_path / "pq"), "aggregate_path": str(tmp_path / "agg")},
    })
    summary = pipeline.run(spark, config)
    assert {t.measure_key: (t.queries, t.scored) for t in summary.tie_dependent} == {
        "P@5[ties]": (1, 2), "Hit@5[ties]": (0, 2), "AP[ties]": (1, 2)}
    assert (
        "  queries whose value depends on the order of tied scores (range over 1 run "
        "partition(s)): AP[ties] 1 of 2, Hit@5[ties] 0 of 2, P@5[ties] 1 of 2; the plain "
        "measures break ties by doc id descending (trec_eval), the [ties] values average "
        "over every order") in summary.render().splitlines()
    macro = {r[S.MEASURE_KEY]: r[S.VALUE] for r in summary.aggregate if r[S.AVERAGING] == "macro"}
    # u has no ties: AP[ties] = AP there = (1/3 + 2/5 + 3/7) / 3 (C at 3, E at 5, G at 7)
    u_ap = (1 / 3 + 2 / 5 + 3 / 7) / 3
    assert macro["AP[ties]"] == pytest.approx((HAND["AP[ties]"] + u_ap) / 2, abs=1e-12)
    # a tie-aware measure has a mean only (no micro average of expected counts)
    assert {r[S.AVERAGING] for r in summary.aggregate if r[S.MEASURE_KEY] == "P@5[ties]"} == {
        "macro"}


def test_no_ties_tie_aware_equals_plain(spark):
    run = [("q", d, float(10 - i)) for i, (_, d, _) in enumerate(HAND_RUN)]
    run += [("r", "A", 3.0), ("r", "C", 2.0), ("r", "G", 1.0)]
    qrels = [*HAND_QRELS, ("r", "C", 1), ("r", "Z", 2)]
    plain = ["P@5", "R@5", "Hit@3", "RR", "RR@2", "AP", "AP@3", "nDCG@5", "nDCG_exp@3",
             "P@3[judged]", "AP[judged]"]
    measures = plain + [p.replace("[judged]", "") + ("[judged][ties]" if "[judged]" in p
                                                      else "[ties]") for p in plain]
    got = values(evaluate_rows(spark, run, qrels, ",".join(measures)))
    for q in ("q", "r"):
        for p, t in zip(plain, measures[len(plain):], strict=True):
            assert got[(q, t)] == pytest.approx(got[(q, p)], abs=1e-12), (q, p)


def test_ranked_by_rank_there_are_no_ties(spark):
    # equal scores, logged ranks A 1, B 3, C 4, D 9 (gaps kept): ranked by rank, a rank holds
    # one document, so M[ties] = M: RR = 1/3 (B), P@4 = 2/4 (B, C), AP = (1/3 + 2/4) / 2
    run = [("q", "A", 1.0, 1), ("q", "B", 1.0, 3), ("q", "C", 1.0, 4), ("q", "D", 1.0, 9)]
    qrels = [("q", "B", 1), ("q", "C", 1)]
    got = values(evaluate_rows(spark, run, qrels, "RR[ties],P@4[ties],AP[ties]", rank_by="rank"))
    assert got == pytest.approx({("q", "RR[ties]"): 1 / 3, ("q", "P@4[ties]"): 2 / 4,
                                 ("q", "AP[ties]"): (1 / 3 + 2 / 4) / 2}, abs=1e-12)


def test_parse_and_errors():
    assert parse_measure("nDCG@10[ties]").key == "nDCG@10[ties]"
    assert parse_measure("AP[Judged][TIES]").key == "AP[judged][ties]"
    assert parse_measure("P@5[ties]").trec_name is None
    assert parse_measure("P@5[ties]").averaging == ("macro",)
    with pytest.raises(MeasureError, match="no tie-aware variant"):
        parse_measure("bpref[ties]")
    with pytest.raises(MeasureError, match="repeated suffix"):
        parse_measure("AP[ties][ties]")
    # the wide views' columns
    assert [column_name(k) for k in ("nDCG@10[ties]", "AP[judged][ties]")] == [
        "ndcg_at_10_ties", "ap_judged_ties"]


def test_depth_with_tie_aware_measures_is_an_error(spark):
    with pytest.raises(MeasureError, match="depth"):
        evaluate_rows(spark, HAND_RUN, HAND_QRELS, "AP[ties]", depth=3)


# -- brute force: the plain measure on every ordering of each tie group -------------------


def _plain(gains: list[float], relevant: list[bool], k: int, num_rel: int, idcg: float) -> dict:
    """The plain measures of one ordering (independent of the engine's code)."""
    top = relevant[:k]
    rel_ret = sum(top)
    first = next((i + 1 for i, r in enumerate(relevant) if r), None)
    seen, prec = 0, 0.0
    for i, r in enumerate(relevant):
        if r:
            seen += 1
            prec += seen / (i + 1)
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains[:k]))
    return {
        "P": rel_ret / k, "R": rel_ret / num_rel if num_rel else 0.0, "Hit": float(rel_ret > 0),
        "RR": 1 / first if first else 0.0, "RRk": 1 / first if first and first <= k else 0.0,
        "AP": prec / num_rel if num_rel else 0.0, "nDCG": dcg / idcg if idcg else 0.0,
    }


def _orderings(scores: list[float]):
    """Every ordering of the rows, score descending, the rows of each tie group permuted."""
    groups = [[i for i, s in enumerate(scores) if s == v] for v in sorted(set(scores), reverse=True)]
    for choice in itertools.product(*(itertools.permutations(g) for g in groups)):
        yield [i for g in choice for i in g]


def _expected(scores: list[float], labels: list[int], k: int, extra_rel: int = 0) -> dict:
    """The tie-aware values of one query from :mod:`releval.core.ties` (ranked best first)."""
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    s = np.array([scores[i] for i in order])
    lab = np.array([labels[i] for i in order])
    query = np.zeros(len(s), dtype=np.int64)
    tie = ties.tie_groups(query, s, "score")
    position = np.arange(1, len(s) + 1)
    relevant = lab >= 1
    gain = np.maximum(lab, 0).astype(np.float64)
    num_rel = int(relevant.sum()) + extra_rel
    ideal = sorted([*np.maximum(lab, 0), *([1] * extra_rel)], reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))

    def rows(cutoff):
        return ties.TieRows(query, tie, position, relevant, 1, cutoff, gain)

    return {
        "P": ties.expected_rel_ret(rows(k))[0] / k,
        "R": ties.expected_rel_ret(rows(k))[0] / num_rel if num_rel else 0.0,
        "Hit": ties.expected_hit(rows(k))[0],
        "RR": ties.expected_rr(rows(None))[0],
        "RRk": ties.expected_rr(rows(k))[0],
        "AP": ties.expected_prec_sum(rows(None))[0] / num_rel if num_rel else 0.0,
        "nDCG": ties.expected_dcg(rows(k))[0] / idcg if idcg else 0.0,
    }


def _brute_force(scores, labels, k, extra_rel=0) -> tuple[dict, dict]:
    """(the mean of each plain measure over every ordering, whether it varies)."""
    num_rel = sum(1 for x in labels if x >= 1) + extra_rel
    ideal = sorted([*(max(x, 0) for x in labels), *([1] * extra_rel)], reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    seen = [_plain([max(labels[i], 0) for i in o], [labels[i] >= 1 for i in o], k, num_rel, idcg)
            for o in _orderings(scores)]
    mean = {m: sum(v[m] for v in seen) / len(seen) for m in seen[0]}
    varies = {m: max(v[m] for v in seen) - min(v[m] for v in seen) > 1e-12 for m in seen[0]}
    return mean, varies


def _depends(scores, labels, k) -> dict:
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    s = np.array([scores[i] for i in order])
    lab = np.array([labels[i] for i in order])
    query = np.zeros(len(s), dtype=np.int64)
    tie = ties.tie_groups(query, s, "score")
    gain = np.maximum(lab, 0).astype(np.float64)

    def rows(cutoff):
        return ties.TieRows(query, tie, np.arange(1, len(s) + 1), lab >= 1, 1, cutoff, gain)

    return {
        "P": ties.depends_set(rows(k))[0], "Hit": ties.depends_hit(rows(k))[0],
        "RR": ties.depends_rr(rows(None))[0], "RRk": ties.depends_rr(rows(k))[0],
        "AP": ties.depends_ap(rows(None))[0], "nDCG": ties.depends_dcg(rows(k))[0],
    }


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(-1, 3)), min_size=1, max_size=8),
    st.integers(1, 9), st.integers(0, 2),
)
def test_pure_functions_equal_the_mean_over_every_ordering(rows, k, extra_rel):
    scores = [float(s) for s, _ in rows]
    labels = [lab for _, lab in rows]
    if math.prod(math.factorial(scores.count(v)) for v in set(scores)) > 5040:
        return
    mean, varies = _brute_force(scores, labels, k, extra_rel)
    assert _expected(scores, labels, k, extra_rel) == pytest.approx(mean, abs=1e-9)
    # a flag is raised exactly when the plain value varies over the orderings
    flags = _depends(scores, labels, k)
    assert {m: bool(v) for m, v in flags.items()} == {m: varies[m] for m in flags}


def test_per_query_cutoffs_equal_one_cutoff_per_query():
    # two queries in one call, k = 2 and k = 5, against each alone
    query = np.array([0, 0, 0, 1, 1, 1, 1, 1, 1])
    score = np.array([3.0, 3.0, 1.0, 2.0, 2.0, 2.0, 2.0, 2.0, 0.0])
    relevant = np.array([1, 0, 1, 0, 1, 1, 0, 0, 1], dtype=bool)
    position = np.array([1, 2, 3, 1, 2, 3, 4, 5, 6])
    tie = ties.tie_groups(query, score, "score")
    both = ties.TieRows(query, tie, position, relevant, 2, np.array([2, 5]))
    for q, k in ((0, 2), (1, 5)):
        rows = query == q
        alone = ties.TieRows(query[rows] * 0, tie[rows], position[rows], relevant[rows], 1, k)
        for f in (ties.expected_rel_ret, ties.expected_hit, ties.expected_rr,
                  ties.expected_prec_sum, ties.depends_set):
            assert f(both)[q] == pytest.approx(f(alone)[0], abs=1e-12)
    # query 1: slots 1..5 of the one tie group of 5 (2 relevant) are all inside 5: 2 relevant
    assert ties.expected_rel_ret(both)[1] == pytest.approx(2.0)


def test_large_tie_groups_against_random_tie_breaks():
    # 20 documents in 3 tie groups (8, 7, 5), 9 relevant: too many orderings to list; at
    # k = 3 and k = 10 the mean of 4000 random tie-breaks is within 5 standard errors of the
    # closed forms (a per-measure chance below 1e-6 of failing; the seed makes it
    # deterministic); 1e-9 for rounding where every draw is equal
    rng = random.Random(7)
    scores = [3.0] * 8 + [2.0] * 7 + [1.0] * 5
    labels = [1, 0, 2, 0, 0, 1, 0, 0, 1, 1, 0, 0, 3, 0, 0, 1, 0, 1, 0, 1]
    num_rel = sum(1 for x in labels if x >= 1)
    groups = [[i for i, s in enumerate(scores) if s == v] for v in (3.0, 2.0, 1.0)]
    orders = [[i for g in groups for i in rng.sample(g, len(g))] for _ in range(4000)]
    for k in (3, 10):
        expected = _expected(scores, labels, k)
        ideal = sorted(labels, reverse=True)[:k]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        draws = [_plain([labels[i] for i in o], [labels[i] >= 1 for i in o], k, num_rel, idcg)
                 for o in orders]
        for m, value in expected.items():
            sample = np.array([d[m] for d in draws])
            bound = 5 * sample.std(ddof=1) / math.sqrt(len(sample)) + 1e-9
            assert abs(sample.mean() - value) <= bound, (k, m, sample.mean(), value, bound)
    # k = 3: no relevant in the first 3 slots of the top group (8 slots, 3 relevant) with
    # probability C(5, 3)/C(8, 3) = 10/56
    assert _expected(scores, labels, 3)["Hit"] == pytest.approx(1 - 10 / 56, abs=1e-12)


# -- through the engine: every ordering as its own run partition --------------------------

ENGINE_QUERIES = {
    # query: [(doc, score, label or None for unjudged)]
    "a": [("d1", 2.0, 1), ("d2", 2.0, 0), ("d3", 2.0, None), ("d4", 2.0, 2), ("d5", 1.0, 1)],
    "b": [("d1", 5.0, 0), ("d2", 4.0, 1), ("d3", 4.0, 0), ("d4", 4.0, 1), ("d5", 3.0, None)],
    "c": [("d1", 1.0, None), ("d2", 1.0, 0), ("d3", 1.0, 1), ("d4", 0.5, 0)],
}
ENGINE_MEASURES = ["P@2", "R@3", "Hit@1", "RR", "RR@2", "AP", "nDCG@3", "nDCG_exp@2",
                   "P@2[judged]", "AP[judged]", "RR[judged]"]


def test_engine_tie_aware_equals_mean_of_plain_over_every_ordering(spark):
    tied_rows, ordered_rows, qrels_rows = [], [], []
    for q, docs in ENGINE_QUERIES.items():
        tied_rows += [("tied", q, d, s) for d, s, _ in docs]
        qrels_rows += [(q, d, lab) for d, _, lab in docs if lab is not None]
        qrels_rows.append((q, "missing", 1))  # relevant, never retrieved
        for n, order in enumerate(_orderings([s for _, s, _ in docs])):
            # the ordering as distinct scores: no ties left for the plain measures
            ordered_rows += [(f"o{n}", q, docs[i][0], float(len(docs) - j))
                             for j, i in enumerate(order)]
    tie_keys = [m.replace("[judged]", "[judged][ties]") if "[judged]" in m else m + "[ties]"
                for m in ENGINE_MEASURES]
    # an ordering partition lacks the queries with fewer orderings: skipped, not scored 0
    kw = dict(partition_by=["system"], missing_queries="skip")
    run_schema = "system string, query_id string, doc_id string, score double"
    qrels_schema = "query_id string, doc_id string, relevance int"
    qrels = spark.createDataFrame(qrels_rows, qrels_schema)
    tied = releval.evaluate(spark.createDataFrame(tied_rows, run_schema), qrels,
                            measures=tie_keys, **kw).per_query.collect()
    plain = releval.evaluate(spark.createDataFrame(ordered_rows, run_schema), qrels,
                             measures=ENGINE_MEASURES, **kw).per_query.collect()
    got = {(r["query_id"], r["measure_key"]): r["value"] for r in tied}
    by_key: dict[tuple[str, str], list[float]] = {}
    for r in plain:
        by_key.setdefault((r["query_id"], r["measure_key"]), []).append(r["value"])
    for (q, key), vals in by_key.items():
        if key in ENGINE_MEASURES:
            tie_key = tie_keys[ENGINE_MEASURES.index(key)]
            assert got[(q, tie_key)] == pytest.approx(sum(vals) / len(vals), abs=1e-12), (q, key)
