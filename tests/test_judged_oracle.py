"""Judged-only measures agree with pytrec_eval's judged-documents-only mode (trec_eval -J).

Randomized runs with many unjudged documents (fixed seed). Labels are -2..3: trec_eval's
-J drops documents with a negative label ("in the pool, not judged") like unjudged ones,
and so does releval under its default rule (``negative_labels = "unjudged"``). The other
rule has no oracle; tests/test_judged.py checks it on hand-worked cases.
"""

from __future__ import annotations

import random

import pytest
from support.helpers import qrels_df, run_df
from support.sql_oracle import ENGINES

from releval.core import columns as S
from releval.core.measures import parse_measures
from releval.evaluation.evaluate import evaluate

pytrec_eval = pytest.importorskip("pytrec_eval")

# releval measure -> pytrec_eval output name
MEASURES = {
    "P@5[judged]": "P_5",
    "P@10[judged]": "P_10",
    "R@10[judged]": "recall_10",
    "nDCG@10[judged]": "ndcg_cut_10",
    "nDCG[judged]": "ndcg",
    "AP[judged]": "map",
    "AP@10[judged]": "map_cut_10",
    "RR[judged]": "recip_rank",
    "Rprec[judged]": "Rprec",
    "bpref[judged]": "bpref",
    "Hit@10[judged]": "success_10",
    "num_ret[judged]": "num_ret",
    "num_rel_ret[judged]": "num_rel_ret",
}
ORACLE_MEASURES = {"P.5,10", "recall.10", "ndcg_cut.10", "ndcg", "map", "map_cut.10",
                   "recip_rank", "Rprec", "bpref", "success.10", "num_ret", "num_rel_ret"}


def random_case(seed: int = 7, queries: int = 30):
    rng = random.Random(seed)
    run, qrels = [], []
    for q in range(queries):
        qid = f"q{q:02d}"
        pool = [f"d{i:03d}" for i in range(60)]
        judged = rng.sample(pool, 15)  # a quarter of the pool is judged
        for doc in judged:
            qrels.append((qid, doc, rng.choice([-2, -1, 0, 0, 1, 2, 3])))
        for doc in rng.sample(pool, rng.randint(5, 40)):
            run.append((qid, doc, round(rng.random(), 2)))  # mostly unjudged; ties happen
    return run, qrels


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_judged_only_measures_agree_with_pytrec_eval(spark, engine):
    run, qrels = random_case()
    ev = evaluate(
        run_df(spark, run), qrels_df(spark, qrels), measures=parse_measures([",".join(MEASURES)]),
        run_stats=ENGINES[engine],
    )
    got = {
        (r[S.QUERY_ID], r[S.MEASURE_KEY]): r[S.VALUE]
        for r in ev.per_query.select(S.QUERY_ID, S.MEASURE_KEY, S.VALUE).collect()
    }
    oracle_qrels: dict[str, dict[str, int]] = {}
    for qid, doc, rel in qrels:
        oracle_qrels.setdefault(qid, {})[doc] = rel
    oracle_run: dict[str, dict[str, float]] = {}
    for qid, doc, score in run:
        oracle_run.setdefault(qid, {})[doc] = score
    evaluator = pytrec_eval.RelevanceEvaluator(
        oracle_qrels, ORACLE_MEASURES, judged_docs_only_flag=True
    )
    expected = evaluator.evaluate(oracle_run)
    assert len(expected) == 30
    unjudged = sum(1 for qid, doc, _ in run if doc not in oracle_qrels[qid])
    assert unjudged > len(run) / 2  # the case is about unjudged documents
    # ... and about negative labels: retrieved in most queries
    negative = {qid for qid, doc, _ in run if oracle_qrels[qid].get(doc, 0) < 0}
    assert len(negative) >= 20
    mismatches = [
        (qid, key, values[name], got.get((qid, key)))
        for qid, values in expected.items()
        for key, name in MEASURES.items()
        if got.get((qid, key)) is None or abs(got[(qid, key)] - values[name]) > 1e-9
    ]
    assert not mismatches, f"{len(mismatches)} mismatches, first: {mismatches[:5]}"
