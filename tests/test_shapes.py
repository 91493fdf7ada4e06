"""One row per query: ranked arrays in the run, gold labels as arrays or maps, in the run's
frame or a qrels frame of their own; the same numbers as the long rows and as trec_eval."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest
import pytrec_eval
from chispa import assert_df_equality
from pyspark.sql import functions as F

import releval
from releval.core import columns as S
from releval.errors import ConfigError, InputError
from releval.io import mlflow_log, shapes

INPUTS = Path(__file__).resolve().parents[1] / "docs" / "inputs.md"

# releval's measure key -> pytrec_eval's
ORACLE = {"P@2": "P_2", "R@5": "recall_5", "nDCG@10": "ndcg_cut_10", "AP": "map",
          "RR": "recip_rank"}
GRADES = {"q1": {"d2": 2, "d4": 1, "d5": 0}, "q2": {"d6": 1}, "q3": {"d8": 2}}
RANKED = {
    ("bm25", "q1"): ["d1", "d2", "d3", "d4"],
    ("bm25", "q2"): ["d5", "d6"],
    ("bm25", "q3"): [],          # retrieved nothing: 0 where judged (trec_eval -c)
    ("dense", "q1"): ["d4", "d2"],
    ("dense", "q2"): None,       # likewise
    ("dense", "q3"): ["d8", "d1"],
    ("none", "q1"): [],          # a system that retrieved nothing at all still has its rows
    ("none", "q2"): None,
}


def rag_frame(spark):
    """One row per (system, question): retrieved ids, gold ids (grade >= 1), gold grades,
    the labels repeated on every system's row."""
    rows = [(s, q, ids, [d for d, g in GRADES[q].items() if g >= 1], GRADES[q])
            for (s, q), ids in RANKED.items()]
    return spark.createDataFrame(rows, "system string, question string, retrieved "
                                 "array<string>, gold array<string>, gold_grades map<string,int>")


def values(result, measures):
    return {(r[0], r.query_id, r.measure_key): r.value
            for r in result.per_query.where(F.col(S.MEASURE_KEY).isin(measures)).collect()}


@pytest.mark.parametrize("gold", [{"relevant": "gold"}, {"graded": "gold_grades"}])
def test_arrays_agree_with_pytrec_eval_per_query(spark, gold):
    result = releval.evaluate(rag_frame(spark), None, measures=list(ORACLE),
                              partition_by=["system"], qrels_columns=gold,
                              columns={"query_id": "question", "ranked": "retrieved"})
    found = values(result, list(ORACLE))
    graded = "graded" in gold
    qrels = {q: {d: (g if graded else int(g >= 1)) for d, g in labels.items()}
             for q, labels in GRADES.items()}
    expected = {}
    for system in ("bm25", "dense", "none"):
        # position i scores n - i: trec_eval's order is the array's
        run = {q: {d: float(len(ids) - i) for i, d in enumerate(ids)}
               for (s, q), ids in RANKED.items() if s == system and ids}
        oracle = pytrec_eval.RelevanceEvaluator(qrels, set(ORACLE.values())).evaluate(run)
        for q in GRADES:
            for key, name in ORACLE.items():
                expected[(system, q, key)] = oracle[q][name] if q in oracle else 0.0
    assert found.keys() == expected.keys()
    for key, value in expected.items():
        assert found[key] == pytest.approx(value, abs=1e-12), key
    # bm25 q1 ranks d1 d2 d3 d4, relevant {d2, d4}: RR = 1/2, AP = (1/2 + 2/4) / 2 = 1/2
    assert found[("bm25", "q1", "RR")] == 0.5
    assert found[("bm25", "q1", "AP")] == 0.5
    # system "none" ranked nothing: each judged query is there, at 0
    assert {k[1] for k in found if k[0] == "none"} == {"q1", "q2", "q3"}


def test_array_form_and_its_exploded_rows_give_equal_tables(spark):
    # structs {id, score} in rank order; graded labels as an array of {id, grade} structs in
    # a qrels frame with one row per query
    run = spark.createDataFrame(
        [("a", "q1", [("d1", 3.0), ("d2", 2.0), ("d3", 1.0)]), ("a", "q2", [("d6", 1.0)]),
         ("b", "q1", [("d3", 0.5), ("d1", 0.4)]), ("b", "q2", [])],
        "sys string, qid string, hits array<struct<id:string,score:double>>")
    qrels = spark.createDataFrame(
        [("q1", [("d1", 1), ("d3", 2)]), ("q2", [("d6", 1), ("d7", 0)])],
        "qid string, labels array<struct<id:string,grade:int>>")
    long_run = spark.createDataFrame(
        [("a", "q1", "d1", 3.0, 1), ("a", "q1", "d2", 2.0, 2), ("a", "q1", "d3", 1.0, 3),
         ("a", "q2", "d6", 1.0, 1), ("b", "q1", "d3", 0.5, 1), ("b", "q1", "d1", 0.4, 2)],
        "sys string, qid string, doc_id string, score double, rank int")
    long_qrels = spark.createDataFrame(
        [("q1", "d1", 1), ("q1", "d3", 2), ("q2", "d6", 1), ("q2", "d7", 0)],
        "qid string, doc_id string, relevance int")
    measures = ["P@2", "nDCG@10", "AP", "RR"]
    arrays = releval.evaluate(run, qrels, measures=measures, partition_by=["sys"],
                              columns={"query_id": "qid", "ranked": "hits"},
                              qrels_columns={"query_id": "qid", "graded": "labels"})
    rows = releval.evaluate(long_run, long_qrels, measures=measures, partition_by=["sys"],
                            rank_by="rank", columns={"query_id": "qid"},
                            qrels_columns={"query_id": "qid"})
    # a map column cannot be sorted: both have no slices
    assert_df_equality(arrays.per_query.drop(S.SLICES), rows.per_query.drop(S.SLICES),
                       ignore_row_order=True, ignore_nullable=True)
    assert_df_equality(arrays.aggregate, rows.aggregate, ignore_row_order=True,
                       ignore_nullable=True)
    # b q2 retrieved nothing: RR 0; b q1 ranks d3 (2) d1 (1): RR = 1
    rr = values(arrays, ["RR"])
    assert (rr[("b", "q2", "RR")], rr[("b", "q1", "RR")]) == (0.0, 1.0)
    # the elements are the rows counted: 3 + 1 + 2 + 0 in the run, 4 labels in the qrels
    assert (arrays.accounts.run.input, arrays.accounts.qrels.input) == (6, 4)


def test_bad_elements_and_disagreeing_gold_are_quarantined_with_their_position(spark):
    df = spark.createDataFrame(
        [("s", "q1", ["d1", None, "d1", "d2"], ["d2"]),
         ("s", "q2", ["d5"], ["d5"]),
         ("t", "q2", ["d5"], ["d6"]),   # q2's gold differs between the rows: none is used
         ("u", "q1", ["d2"], ["d2"]),   # two rankings of q1 in run partition u: none is used
         ("u", "q1", ["d1"], ["d2"])],
        "system string, question string, retrieved array<string>, gold array<string>")
    result = releval.evaluate(df, None, measures=["RR"], partition_by=["system"],
                              columns={"query_id": "question", "ranked": "retrieved"},
                              qrels_columns={"relevant": "gold"})
    quarantined = result.quarantine.select(
        S.INPUT, S.REASON_CODE, F.col(S.RAW)[S.QUERY_ID].alias("q"),
        F.col(S.RAW)[S.DOC_ID].alias("doc"), F.col(S.RAW)[S.RANK].alias("position"))
    expected = spark.createDataFrame(
        [("run", "missing_doc_id", "q1", None, "2"), ("run", "duplicate_doc", "q1", "d1", "3"),
         ("run", "duplicate_ranking", "q1", "d2", "1"), ("run", "duplicate_ranking", "q1", "d1", "1"),
         ("qrels", "conflicting_gold", "q2", "d5", None),
         ("qrels", "conflicting_gold", "q2", "d6", None)],
        "input string, reason_code string, q string, doc string, position string")
    assert_df_equality(quarantined, expected, ignore_row_order=True, ignore_nullable=True)
    # q1 ranks d1 (d2 after the two set aside at positions 2 and 3): RR = 1/4 by position;
    # q2 has no usable labels: not scored; t and u did not retrieve the judged q1: 0
    assert values(result, ["RR"]) == {("s", "q1", "RR"): 0.25, ("t", "q1", "RR"): 0.0,
                                      ("u", "q1", "RR"): 0.0}
    run, qrels = result.accounts.run, result.accounts.qrels
    assert (run.input, run.used, run.quarantined) == (8, 4, {
        "duplicate_doc": 1, "duplicate_ranking": 2, "missing_doc_id": 1})
    assert (qrels.input, qrels.used, qrels.quarantined) == (3, 1, {"conflicting_gold": 2})


def test_wrong_mappings_and_shapes_are_errors_naming_the_column(spark):
    df = spark.createDataFrame([("q1", ["d1"], "d1", ["d1"])],
                               "q string, hits array<string>, doc string, gold array<string>")
    with pytest.raises(ConfigError, match=r"'ranked' \('hits'\).*\['doc_id'\]"):
        releval.evaluate(df, None, measures=["RR"], qrels_columns={"relevant": "gold"},
                         columns={"query_id": "q", "ranked": "hits", "doc_id": "doc"})
    with pytest.raises(ConfigError, match="qrels=None.*'relevant'"):
        releval.evaluate(df, None, measures=["RR"], columns={"query_id": "q", "ranked": "hits"})
    with pytest.raises(ConfigError, match="ranked by its positions"):
        releval.evaluate(df, None, measures=["RR"], rank_by="score",
                         columns={"query_id": "q", "ranked": "hits"},
                         qrels_columns={"relevant": "gold"})
    with pytest.raises(InputError, match=r"column 'doc' \(columns.ranked\) has type string"):
        releval.evaluate(df, None, measures=["RR"], columns={"query_id": "q", "ranked": "doc"},
                         qrels_columns={"relevant": "gold"})
    with pytest.raises(InputError, match=r"column 'hits' \(qrels_columns.graded\).*map id"):
        releval.evaluate(df, None, measures=["RR"], columns={"query_id": "q", "ranked": "hits"},
                         qrels_columns={"graded": "hits"})


def test_the_example_of_docs_inputs_runs_as_written(spark, tmp_path, monkeypatch):
    section = INPUTS.read_text().split("## One row per query", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block, "docs/inputs.md has no python example of one row per query"
    monkeypatch.chdir(tmp_path)
    exec(compile(block.group(1), "docs/inputs.md", "exec"), {"__name__": "inputs_md"})


def test_the_docstring_examples_run(spark):
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner()
    found = [t for module in (shapes, mlflow_log)
             for t in finder.find(module, globs={**vars(module), "spark": spark}) if t.examples]
    assert {t.name.rsplit(".", 1)[-1] for t in found} >= {"ranked_rows", "gold_rows",
                                                          "counted", "metric_name"}
    for test in found:
        runner.run(test)
    assert runner.failures == 0
