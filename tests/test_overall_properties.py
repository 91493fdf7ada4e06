"""Properties of the aggregate, on small random runs (hypothesis): the order of queries and
rows changes no number; slices (a queries slice, a run slice, a weight) and an unrelated run
partition change no overall number."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import releval
from releval.core import columns as S
from releval.core.overall import overall

MEASURES = ["nDCG@3", "RR", "P@2", "AP", "num_rel_ret", "GMAP"]
RUN_SCHEMA = "system string, query_id string, doc_id string, score double, device string"
DOCS = "abcde"
KEY = (S.SLICE, S.SLICE_VALUE, S.MEASURE_KEY, S.AVERAGING)
NUMBERS = (S.VALUE, S.NUM_QUERIES, S.CI_LOW, S.CI_HIGH)
pytestmark = pytest.mark.slow  # ten examples of one or two evaluations each
# no shrinking: each example is an evaluation or two on the shared session
SETTINGS = settings(max_examples=10, deadline=None, phases=[Phase.explicit, Phase.generate],
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@st.composite
def inputs(draw):
    """(run rows of system s, qrels rows, queries rows, run rows of another system)."""
    queries = [f"q{i}" for i in range(draw(st.integers(1, 4)))]
    run, qrels, other = [], [], []
    for q in queries:
        for d in draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=4, unique=True)):
            run.append(("s", q, d, float(draw(st.integers(0, 3))),
                        draw(st.sampled_from(["mobile", "desktop", None]))))
        for d in draw(st.lists(st.sampled_from(DOCS), max_size=3, unique=True)):
            qrels.append((q, d, draw(st.integers(0, 2))))
        if draw(st.booleans()):
            other.append(("o", q, draw(st.sampled_from(DOCS)), 1.0, "mobile"))
    if not qrels:
        qrels.append((queries[0], "a", 1))
    attrs = [(q, draw(st.sampled_from(["head", "tail"])), float(draw(st.integers(0, 3))))
             for q in queries]
    return run, qrels, attrs, other


def _rows(spark, run, qrels, attrs=None, *, slices=()):
    result = releval.evaluate(
        spark.createDataFrame(run, RUN_SCHEMA),
        spark.createDataFrame(qrels, "query_id string, doc_id string, relevance int"),
        measures=MEASURES, partition_by=["system"],
        queries=(None if attrs is None else
                 spark.createDataFrame(attrs, "query_id string, segment string, weight double")),
        queries_columns=None if attrs is None else {"weight": "weight"}, slices=slices)
    return [r.asDict() for r in result.aggregate.collect()]


def _by_key(rows, system="s"):
    return {tuple(r[k] for k in KEY): tuple(r[k] for k in NUMBERS)
            for r in rows if r["system"] == system}


def _same(got, want):
    assert got.keys() == want.keys()
    for key, numbers in want.items():
        for a, b in zip(got[key], numbers, strict=True):
            assert (a is None) == (b is None), key
            assert b is None or a == pytest.approx(b, rel=1e-9, abs=1e-12), key


@SETTINGS
@given(data=inputs(), order=st.randoms(use_true_random=False))
def test_the_order_of_queries_and_rows_changes_no_number(spark, data, order):
    run, qrels, attrs, _ = data
    shuffled = [list(x) for x in (run, qrels, attrs)]
    for rows in shuffled:
        order.shuffle(rows)
    slices = ["segment", "device"]
    _same(_by_key(_rows(spark, *shuffled, slices=slices)),
          _by_key(_rows(spark, run, qrels, attrs, slices=slices)))


@SETTINGS
@given(data=inputs())
def test_slices_and_another_run_partition_change_no_overall_number(spark, data):
    run, qrels, attrs, other = data
    plain = _by_key(_rows(spark, run, qrels))
    sliced = _by_key(overall(_rows(spark, run + other, qrels, attrs,
                                   slices=["segment", "device"])))
    # the weighted rows come with the weight: the other overall rows are the same
    _same({k: v for k, v in sliced.items() if k[3] != "weighted"}, plain)
