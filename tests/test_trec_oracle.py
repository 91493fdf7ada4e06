"""The trec_eval measures beyond the classic ones agree with pytrec_eval per query, with and
without judged-only (trec_eval -J), on randomized runs with ties, graded and negative labels
and judged queries the run lacks; and their geometric means with pytrec_eval's gm_map and
gm_bpref. pytrec_eval bundles trec_eval 9, whose iprec_at_recall and 11pt_avg round the recall
cutoff differently from 10.0: those two are checked against trec_eval 10.0's own output in
tests/test_conformance.py; pytrec_eval has no rbp, rbp_resid or unj. Depth (trec_eval -M)
is checked against pytrec_eval on rankings truncated by hand after trec_eval's tie-break.
"""

from __future__ import annotations

import math
import random

import pytest
from support.helpers import qrels_df, run_df

from releval.core import columns as S
from releval.core.measures import parse_measures
from releval.evaluation.evaluate import evaluate

pytrec_eval = pytest.importorskip("pytrec_eval")

# releval measure -> pytrec_eval output name
MEASURES = {
    "infAP": "infAP",
    "Rprec_mult(mult=0.2)": "Rprec_mult_0.20",
    "Rprec_mult(mult=1.4)": "Rprec_mult_1.40",
    "utility": "utility",
    "binG": "binG",
    "G": "G",
    "ndcg_rel": "ndcg_rel",
    "Rndcg": "Rndcg",
    "relative_P@5": "relative_P_5",
    "relative_P@20": "relative_P_20",
    "set_P": "set_P",
    "set_relative_P": "set_relative_P",
    "set_recall": "set_recall",
    "set_map": "set_map",
    "set_F": "set_F",
    "num_nonrel_judged_ret": "num_nonrel_judged_ret",
    "AP": "map",
    "bpref": "bpref",
}
ORACLE = {"infAP", "Rprec_mult.0.20,1.40", "utility", "binG", "G", "ndcg_rel", "Rndcg",
          "relative_P.5,20", "set_P", "set_relative_P", "set_recall", "set_map", "set_F",
          "num_nonrel_judged_ret", "map", "bpref", "gm_map", "gm_bpref"}


def random_case(seed: int = 11, queries: int = 40):
    rng = random.Random(seed)
    run, qrels = [], []
    for q in range(queries):
        qid = f"q{q:02d}"
        pool = [f"d{i:03d}" for i in range(80)]
        for doc in rng.sample(pool, 30):
            qrels.append((qid, doc, rng.choice([-1, 0, 0, 1, 1, 2, 3])))
        if q % 10 == 9:
            continue  # a judged query the run lacks
        for doc in rng.sample(pool, rng.randint(3, 60)):
            run.append((qid, doc, round(rng.random(), 1)))  # one decimal: many ties
    return run, qrels


def oracle(run, qrels, judged_only: bool) -> dict[str, dict[str, float]]:
    oracle_qrels: dict[str, dict[str, int]] = {}
    for qid, doc, rel in qrels:
        oracle_qrels.setdefault(qid, {})[doc] = rel
    oracle_run: dict[str, dict[str, float]] = {}
    for qid, doc, score in run:
        oracle_run.setdefault(qid, {})[doc] = score
    evaluator = pytrec_eval.RelevanceEvaluator(oracle_qrels, ORACLE,
                                               judged_docs_only_flag=judged_only)
    return evaluator.evaluate(oracle_run)


@pytest.mark.parametrize("judged_only", [False, True], ids=["all", "judged-only"])
def test_trec_eval_measures_agree_with_pytrec_eval(spark, judged_only):
    run, qrels = random_case()
    measures = parse_measures([*MEASURES, "GMAP", "GM_bpref"], judged_only=judged_only)
    ev = evaluate(run_df(spark, run), qrels_df(spark, qrels), measures=measures)
    suffix = "[judged]" if judged_only else ""
    got = {
        (r[S.QUERY_ID], r[S.MEASURE_KEY]): r[S.VALUE]
        for r in ev.per_query.select(S.QUERY_ID, S.MEASURE_KEY, S.VALUE).collect()
    }
    expected = oracle(run, qrels, judged_only)
    assert len(expected) == 36  # pytrec_eval scores the queries of the run only
    keys = {key: parse_measures([key], judged_only=judged_only)[0].key for key in MEASURES}
    assert all(k.endswith(suffix) for k in keys.values())
    mismatches = [
        (qid, key, values[name], got.get((qid, keys[key])))
        for qid, values in expected.items()
        for key, name in MEASURES.items()
        if got.get((qid, keys[key])) is None or abs(got[(qid, keys[key])] - values[name]) > 1e-9
    ]
    assert not mismatches, f"{len(mismatches)} mismatches, first: {mismatches[:5]}"
    # the 4 judged queries the run lacks score 0 (trec_eval -c)
    missing = {f"q{q:02d}" for q in range(9, 40, 10)}
    assert {got[(q, keys["infAP"])] for q in missing} == {0.0}
    # geometric means: pytrec_eval gives each query's log(max(value, 0.00001)); with -c the
    # missing queries add log(0.00001) each
    means = {r[S.MEASURE_KEY]: r[S.VALUE] for r in ev.aggregate.collect()
             if r[S.AVERAGING] == "geometric"}
    for name, key in (("gm_map", "GMAP"), ("gm_bpref", "GM_bpref")):
        logs = [values[name] for values in expected.values()] + [math.log(1e-5)] * len(missing)
        assert means[key + suffix] == pytest.approx(math.exp(sum(logs) / len(logs)), abs=1e-12)


def top(run, depth: int):
    """Each query's first ``depth`` documents in trec_eval's order: score descending, ties by
    doc id descending (what trec_eval -M keeps)."""
    by_query: dict[str, list[tuple[str, str, float]]] = {}
    for row in run:
        by_query.setdefault(row[0], []).append(row)
    kept = []
    for rows in by_query.values():
        kept += sorted(rows, key=lambda r: (r[2], r[1]), reverse=True)[:depth]
    return kept


@pytest.mark.parametrize("judged_only", [False, True], ids=["all", "judged-only"])
def test_depth_is_pytrec_eval_on_rankings_cut_by_hand(spark, judged_only):
    run, qrels = random_case(seed=12)
    depth = 7  # many rankings are longer, and ties straddle the cut
    measures = parse_measures([*MEASURES], judged_only=judged_only)
    ev = evaluate(run_df(spark, run), qrels_df(spark, qrels), measures=measures, depth=depth)
    got = {
        (r[S.QUERY_ID], r[S.MEASURE_KEY]): r[S.VALUE]
        for r in ev.per_query.select(S.QUERY_ID, S.MEASURE_KEY, S.VALUE).collect()
    }
    cut = top(run, depth)
    assert len(cut) < len(run) / 2
    expected = oracle(cut, qrels, judged_only)
    keys = {key: parse_measures([key], judged_only=judged_only)[0].key for key in MEASURES}
    mismatches = [
        (qid, key, values[name], got.get((qid, keys[key])))
        for qid, values in expected.items()
        for key, name in MEASURES.items()
        if got.get((qid, keys[key])) is None or abs(got[(qid, keys[key])] - values[name]) > 1e-9
    ]
    assert not mismatches, f"{len(mismatches)} mismatches, first: {mismatches[:5]}"
