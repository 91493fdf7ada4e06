"""One meaning of "overall": with and without slices (a queries slice, a run slice with a
query whose rows disagree, a traffic weight), every reader of the aggregate shows the same
overall numbers: ``repr``, HTML, MLflow, the report, the job's printed table, the wide view
and the trec_eval file. The accessor itself is tested on rows and a pandas frame."""

from __future__ import annotations

import mlflow
import pandas as pd
import pytest

import releval
from releval.core import columns as S
from releval.core.overall import HEADLINE, MACRO, OVERALL_SQL, is_overall, overall
from releval.evaluation.summary import render_overview
from releval.io.trec_eval_format import iter_trec_eval_lines
from releval.io.views import ViewSpec, aggregate_view_sql
from releval.report.data import ReportData
from releval.report.headline import run_means
from releval.report.html import means_table

MEASURES = ["nDCG@10", "RR", "P@2", "AP", "num_rel_ret"]
RUN_SCHEMA = "system string, query_id string, doc_id string, score double, device string"
RUN = [
    ("s", "q1", "a", 3.0, "mobile"), ("s", "q1", "b", 2.0, "mobile"),
    ("s", "q2", "c", 3.0, "desktop"), ("s", "q2", "a", 2.0, "desktop"),
    ("s", "q3", "b", 3.0, "mobile"), ("s", "q3", "c", 2.0, "mobile"),
    ("s", "q5", "a", 3.0, "mobile"), ("s", "q5", "b", 2.0, "desktop"),  # disagree
    ("t", "q1", "b", 3.0, "desktop"), ("t", "q1", "a", 2.0, "desktop"),
    ("t", "q2", "a", 3.0, "mobile"), ("t", "q4", "a", 3.0, "mobile"),
]
QRELS = [("q1", "a", 1), ("q2", "a", 2), ("q2", "c", 1), ("q3", "c", 1), ("q4", "a", 1),
         ("q5", "b", 1)]
QUERIES = [("q1", "head", 5.0), ("q2", "head", 1.0), ("q3", "tail", 0.5), ("q4", "tail", 2.0)]


def _evaluate(spark, variant: str):
    run = spark.createDataFrame(RUN, RUN_SCHEMA)
    qrels = spark.createDataFrame(QRELS, "query_id string, doc_id string, relevance int")
    if variant == "plain":
        return releval.evaluate(run, qrels, measures=MEASURES, partition_by=["system"])
    queries = spark.createDataFrame(QUERIES, "query_id string, segment string, weight double")
    weighted = variant == "weighted"
    return releval.evaluate(
        run, qrels, measures=MEASURES, partition_by=["system"],
        queries=queries if weighted else queries.drop("weight"),
        queries_columns={"weight": "weight"} if weighted else None,
        slices=["segment", "device"])


@pytest.fixture(scope="module")
def results(spark):
    return {v: _evaluate(spark, v) for v in ("plain", "sliced", "weighted")}


def _means_part(text: str) -> str:
    """From the macro means' header on: the inputs' lines above differ by the queries input."""
    return text[text.index("macro means"):]


def _report(result) -> tuple[str, str]:
    agg = result.aggregate.toPandas()
    data = ReportData(aggregate=agg, per_query=pd.DataFrame(), comparison=None, run_log=None,
                      run_columns=("system",), date_column=None, date=None, tables=())
    return means_table(data, MEASURES), run_means(data, MEASURES)


def _wide(spark, result, name: str) -> list[dict]:
    result.aggregate.createOrReplaceTempView(name)
    sql = aggregate_view_sql(ViewSpec(source=name, measure_keys=tuple(MEASURES),
                                      partition_columns=("system",)))
    rows = spark.sql(f"SELECT * FROM ({sql}) WHERE {OVERALL_SQL}").collect()
    return sorted((r.asDict() for r in rows), key=lambda r: r["system"])


def _trec_eval(result) -> list[str]:
    found = [r.asDict() for r in result.aggregate.collect()]
    return [line for s in ("s", "t") for line in iter_trec_eval_lines(
        result.evaluation.measures, [], [r for r in found if r["system"] == s],
        partition_columns=["system"])]


@pytest.mark.parametrize("variant", ["sliced", "weighted"])
def test_every_output_shows_the_same_overall_numbers(spark, results, variant, tmp_path):
    plain, sliced = results["plain"], results[variant]
    assert sliced.aggregate.where(f"NOT ({OVERALL_SQL})").count() > 0  # slice rows exist
    assert _means_part(repr(sliced)) == _means_part(repr(plain))
    assert _means_part(sliced._repr_html_()) == _means_part(plain._repr_html_())
    assert _report(sliced) == _report(plain)
    keys = MEASURES
    assert (render_overview(sliced.aggregate.collect(), measure_keys=keys,
                            partition_columns=["system"])
            == render_overview(plain.aggregate.collect(), measure_keys=keys,
                               partition_columns=["system"]))
    assert _trec_eval(sliced) == _trec_eval(plain)
    with_weight = [c for c in _wide(spark, sliced, f"agg_{variant}")[0] if c.endswith("_weighted")]
    got = [{k: v for k, v in r.items() if k not in with_weight}
           for r in _wide(spark, sliced, f"agg_{variant}")]
    want = [{k: v for k, v in r.items() if k not in with_weight}
            for r in _wide(spark, plain, "agg_plain")]
    assert got == want and len(got) == 2
    mlflow.set_tracking_uri((tmp_path / "mlruns").as_uri())
    logged = [mlflow.get_run(r.log_mlflow()).data.metrics for r in (sliced, plain)]
    assert logged[0] == logged[1] and "s/ndcg_at_10" in logged[0]


def test_the_overall_numbers_are_worked_by_hand(results):
    # s: q1 ranks a (rel) b: RR 1; q2 ranks c (1) a (2): RR 1; q3 b c (1): RR 1/2;
    # q5 a b (1): RR 1/2 (its rows disagree on the device: it keeps its score); q4 not
    # retrieved: 0. Mean (1 + 1 + 1/2 + 1/2 + 0) / 5
    for result in results.values():
        rr = {r["system"]: r[S.VALUE] for r in overall(result.aggregate.collect(), MACRO)
              if r[S.MEASURE_KEY] == "RR"}
        assert rr["s"] == pytest.approx(3 / 5)


def test_overall_keeps_the_rows_over_all_queries():
    rows = [{S.SLICE: None, S.AVERAGING: "macro", S.VALUE: 0.5},
            {S.SLICE: "segment", S.SLICE_VALUE: "head", S.AVERAGING: "macro", S.VALUE: 0.9},
            {S.SLICE: None, S.AVERAGING: "weighted", S.VALUE: 0.4},
            {S.SLICE: None, S.AVERAGING: "sum", S.VALUE: 7.0}]
    assert [r[S.VALUE] for r in overall(rows)] == [0.5, 0.4, 7.0]
    assert [r[S.VALUE] for r in overall(rows, MACRO)] == [0.5]
    assert [r[S.VALUE] for r in overall(rows, HEADLINE)] == [0.5, 7.0]
    assert not is_overall(rows[1]) and is_overall({S.VALUE: 1.0}, MACRO)  # no columns: macro
    frame = pd.DataFrame(rows)
    assert overall(frame, MACRO)[S.VALUE].tolist() == [0.5]
    # a table of an older schema, without slice or averaging columns: every row
    assert len(overall(pd.DataFrame({S.VALUE: [1.0, 2.0]}), MACRO)) == 2
