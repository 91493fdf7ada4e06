"""One vocabulary across evaluate, compare, changes, gate, evaluate_clicks and interleaving: each function's signature
against the table (releval.arguments.VOCABULARY, docs/usage.md), Result's methods equal to
the module functions, gate over several candidates, and the old spelling's warning."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from chispa import assert_df_equality

import releval
from releval import Result, arguments
from releval.errors import ConfigError

USAGE = Path(__file__).resolve().parents[1] / "docs" / "usage.md"
FUNCTIONS = ("evaluate", "compare", "changes", "gate", "evaluate_clicks", "interleaving",
             "click_labels")
#: RR per query: bm25 1/2 on q1..q3, 1 on q4; dense 1 everywhere; worse 0 on q1, q2
RUN = ([("bm25", q, d, x) for q in ("q1", "q2", "q3") for d, x in (("a", 2.0), ("b", 1.0))]
       + [("bm25", "q4", "b", 1.0)]
       + [("dense", q, "b", 1.0) for q in ("q1", "q2", "q3", "q4")]
       + [("worse", q, "a", 1.0) for q in ("q1", "q2")]
       + [("worse", q, "b", 1.0) for q in ("q3", "q4")])


def test_each_function_takes_the_shared_arguments_the_table_lists():
    for name, takers in arguments.VOCABULARY.items():
        for function in FUNCTIONS:
            params = inspect.signature(getattr(releval, function)).parameters
            assert (name in params) == (function in takers), (name, function)
            if name in params:
                assert params[name].kind is inspect.Parameter.KEYWORD_ONLY, (name, function)
    defaults = {f: inspect.signature(getattr(releval, f)).parameters for f in FUNCTIONS}
    # one default each: slices and measures None (evaluate's measures are required)
    assert {defaults[f]["slices"].default for f in ("compare", "changes", "gate")} == {None}
    assert {defaults[f]["measures"].default for f in ("compare", "changes", "gate")} == {None}
    assert {defaults[f]["alpha"].default for f in ("compare", "gate")} == {0.05}
    # Result's methods take the same names as the functions, but the rows
    for function in ("compare", "changes", "gate"):
        params = inspect.signature(getattr(Result, function)).parameters
        assert {"baseline", "candidates", "measures", "slices"} <= set(params), function


def test_the_usage_table_lists_each_argument_and_its_functions():
    text = USAGE.read_text()
    for name, takers in arguments.VOCABULARY.items():
        line = next((ln for ln in text.splitlines() if ln.startswith(f"| `{name}` |")), None)
        assert line is not None, name
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert set(re.findall(r"`(\w+)`", cells[1])) == set(takers), name


@pytest.fixture(scope="module")
def result(spark):
    run = spark.createDataFrame(RUN, "system string, query_id string, doc_id string, "
                                "score double")
    qrels = spark.createDataFrame([(q, "b", 1) for q in ("q1", "q2", "q3", "q4")],
                                  "query_id string, doc_id string, relevance int")
    return releval.evaluate(run, qrels, measures=["RR", "map", "P@1"], partition_by=["system"])


def _sorted(frame):
    return frame.orderBy(*frame.columns[:3])


def test_result_methods_equal_the_module_functions(result):
    kwargs = {"baseline": "system=bm25", "candidates": ["system=dense", "system=worse"]}
    asked = ["RR", "map", "P@1"]
    assert_df_equality(_sorted(result.compare(**kwargs, permutations=200)),
                       _sorted(releval.compare(result.per_query, **kwargs, permutations=200,
                                               measures=asked)))
    assert_df_equality(_sorted(result.changes(**kwargs)),
                       _sorted(releval.changes(result.per_query, **kwargs, measures=asked)))
    rules = ["RR change >= -0.1"]
    mine = result.gate(**kwargs, rules=rules, mode="point")
    theirs = releval.gate(result.per_query, **kwargs, rules=rules, mode="point")
    assert {k: g.decision for k, g in mine.items()} == {
        k: g.decision for k, g in theirs.items()}
    assert all(mine[k].rows.equals(theirs[k].rows) for k in mine)


def test_measures_leaves_out_what_evaluate_added(result):
    # evaluate adds Judged@k: Result.compare compares what was asked for ("map" is AP)
    assert {r.measure_key for r in result.compare(
        baseline="system=bm25", candidates="system=dense", permutations=200).collect()} == {
        "RR", "AP", "P@1"}
    every = releval.compare(result.per_query, baseline="system=bm25",
                            candidates="system=dense", permutations=200)
    assert "Judged@1" in {r.measure_key for r in every.collect()}
    only = releval.compare(result.per_query, baseline="system=bm25", candidates="system=dense",
                           measures=["map"], permutations=200)
    assert [r.measure_key for r in only.collect()] == ["AP"]


def test_gate_decides_per_candidate(result):
    gates = releval.gate(result.per_query, baseline="system=bm25",
                         candidates=["system=dense", "system=worse"],
                         rules=["RR change >= -0.1"], mode="point")
    # dense gains 1/2 on q1..q3 (mean 0.375); worse: -1/2, -1/2, +1/2, 0 (mean -0.125)
    assert {k: g.decision for k, g in gates.items()} == {"system=dense": "pass",
                                                         "system=worse": "fail"}
    assert gates["system=worse"].candidate == "system=worse"
    one = releval.gate(result.per_query, baseline="system=bm25", candidates="system=worse",
                       rules=["RR change >= -0.1"], mode="point")
    assert isinstance(one, releval.Gate) and one.decision == "fail"
    with pytest.raises(ConfigError, match=r"rules name \['RR'\].*measures= \['AP'\]"):
        releval.gate(result.per_query, baseline="system=bm25", candidates="system=worse",
                     rules=["RR change >= -0.1"], measures=["AP"])


def test_gates_slices_decide_each_rule_per_slice_value_too(spark):
    rows = spark.createDataFrame(
        [(s, f"q{i}", "RR", "RR", v, None, {"segment": "head" if i < 2 else "tail"})
         for i in range(4) for s, v in (("bm25", 0.5), ("dense", 1.0 if i < 2 else 0.0))],
        "system string, query_id string, measure_key string, measure string, value double, "
        "weight double, slices map<string,string>")
    g = releval.gate(rows, baseline="system=bm25", candidates="system=dense",
                     rules=["RR change >= -0.1"], slices=["segment"], mode="point")
    # overall: (0.5 + 0.5 - 0.5 - 0.5) / 4 = 0 passes; the tail loses 0.5 and fails
    assert g.rules == {"RR change >= -0.1": "pass", "RR change >= -0.1 per segment": "fail"}
    assert g.decision == "fail"


def test_the_old_spelling_candidate_warns_and_still_decides(result):
    rules = ["RR change >= -0.1"]
    with pytest.warns(DeprecationWarning, match=r"gate\(candidate=\.\.\.\) is deprecated.*"
                      "candidates="):
        old = releval.gate(result.per_query, baseline="system=bm25",
                           candidate="system=dense", rules=rules, mode="point")
    new = releval.gate(result.per_query, baseline="system=bm25", candidates="system=dense",
                       rules=rules, mode="point")
    assert old.decision == new.decision == "pass" and old.rows.equals(new.rows)
    with pytest.raises(TypeError, match="not both"), pytest.warns(DeprecationWarning):
        releval.gate(result.per_query, baseline="system=bm25", candidate="system=dense",
                     candidates="system=dense", rules=rules)
    with pytest.raises(TypeError, match="'candidat'"):
        releval.gate(result.per_query, baseline="system=bm25", candidat="system=dense",
                     rules=rules)
