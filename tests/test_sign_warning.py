"""compare's sign-disagreement warning reaches Python: a SignDisagreementWarning from
releval.compare, and the report's comparison section, on a designed case."""

from __future__ import annotations

import warnings

import pytest

import releval
from releval.errors import SignDisagreementWarning
from releval.report.slices import sign_html

QUERIES = [f"q{i:02d}" for i in range(100)]
# P@1 per query: 25 queries gain 1 (weight 1), 4 lose 1 (weight 10), 71 stay (weight 1):
# over all queries (25 - 4) / 100 = +0.21; weighted (25 - 4 * 10) / (25 + 40 + 71) = -0.1103
WINS, LOSSES = QUERIES[:25], QUERIES[25:29]


def _first(system: str, q: str) -> str:
    if q in WINS:
        return "a" if system == "cand" else "x"
    if q in LOSSES:
        return "x" if system == "cand" else "a"
    return "a"


@pytest.fixture(scope="module")
def designed(spark):
    run = spark.createDataFrame([(s, q, _first(s, q), 1.0) for s in ("base", "cand")
                                 for q in QUERIES],
                                "system string, query_id string, doc_id string, score double")
    qrels = spark.createDataFrame([(q, d, int(d == "a")) for q in QUERIES for d in "ax"],
                                  "query_id string, doc_id string, relevance int")
    queries = spark.createDataFrame([(q, 10.0 if q in LOSSES else 1.0) for q in QUERIES],
                                    "query_id string, weight double")
    result = releval.evaluate(run, qrels, measures=["P@1"], partition_by=["system"])
    return result.per_query, queries


def _compare(per_query, queries=None):
    return releval.compare(per_query, baseline="system=base", candidates=["system=cand"],
                           queries=queries, permutations=200,
                           queries_columns={"weight": "weight"} if queries is not None else None)


def test_compare_warns_when_the_weighted_difference_disagrees_in_sign(designed):
    per_query, queries = designed
    with pytest.warns(SignDisagreementWarning) as caught:
        table = _compare(per_query, queries)
    said = [str(w.message) for w in caught if w.category is SignDisagreementWarning]
    assert said == ["P@1: system=cand differs by +0.2100 over all queries but weighted -0.1103"]
    # the report's comparison section shows the same warning
    rows = table.toPandas()
    assert "P@1: system=cand differs by +0.2100 over all queries but weighted" in sign_html(rows)


def test_no_warning_without_a_queries_input(designed):
    per_query, _ = designed
    with warnings.catch_warnings():
        warnings.simplefilter("error", SignDisagreementWarning)
        table = _compare(per_query)
    assert sign_html(table.toPandas()) == ""
