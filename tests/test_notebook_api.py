"""What a notebook meets: a Result's tables built once with few driver calls, its short
``repr`` and ``_repr_html_``, and ``dir(releval)`` (Tab completion)."""

from __future__ import annotations

import gc
import importlib

import pytest
from py4j.java_gateway import GatewayClient
from py4j.protocol import MEMORY_COMMAND_NAME

import releval

# a measure per cutoff: 5 and 40 measures of the same two kinds
FEW = [f"P@{k}" for k in range(1, 6)]
MANY = [f"{m}@{k}" for m in ("P", "nDCG") for k in range(1, 21)]


def inputs(spark):
    run = spark.createDataFrame(
        [(s, f"q{q}", f"d{d}", float(10 - d + i * (d % 2)))
         for i, s in enumerate(("bm25", "dense")) for q in range(3) for d in range(6)],
        "system string, query_id string, doc_id string, score double")
    qrels = spark.createDataFrame([(f"q{q}", f"d{d}", 1) for q in range(3) for d in (1, 4)],
                                  "query_id string, doc_id string, relevance int")
    return run, qrels


@pytest.fixture
def driver_calls(monkeypatch):
    """``calls(fn)``: the Py4J round trips (Python -> JVM commands) ``fn()`` makes, less the
    ones that free JVM objects (they follow Python's garbage collection, off meanwhile)."""
    count = {"n": 0}
    send = GatewayClient.send_command

    def counted(self, command, *args, **kwargs):
        if not command.startswith(MEMORY_COMMAND_NAME):
            count["n"] += 1
        return send(self, command, *args, **kwargs)

    monkeypatch.setattr(GatewayClient, "send_command", counted)

    def calls(fn):
        gc.collect()
        gc.disable()
        try:
            before = count["n"]
            fn()
            return count["n"] - before
        finally:
            gc.enable()

    return calls


def test_per_query_is_planned_once_with_driver_calls_that_do_not_grow_with_measures(
        spark, driver_calls):
    run, qrels = inputs(spark)
    made = {}
    for name, measures in (("few", FEW), ("many", MANY)):
        result = releval.evaluate(run, qrels, measures=measures, partition_by=["system"])
        made[name] = driver_calls(lambda r=result: r.per_query)
        # built once: the same DataFrame at the next read, with no driver call at all
        first = result.per_query
        assert driver_calls(lambda r=result: r.per_query) == 0
        assert result.per_query is first
        assert result.quarantine is result.quarantine
        # systems x queries x measures (the asked ones and the counts every evaluation adds)
        assert result.per_query.count() == 2 * 3 * len(result.evaluation.measures)
        assert len(result.evaluation.measures) >= len(measures)
    # the plan's steps make the calls, not its measures: 8 times the measures, at most 2
    # calls more (a literal per field per measure would be hundreds more)
    assert made["many"] <= made["few"] + 2, made


def test_the_measure_names_of_the_long_format_are_the_registry_s(spark):
    run, qrels = inputs(spark)
    asked = ["P@3", "nDCG@5", "map", "RR", "P(rel=2)@2", "nDCG@5[judged]"]
    result = releval.evaluate(run, qrels, measures=asked)
    rows = result.per_query.select(
        "measure", "cutoff", "rel_level", "judged_only", "measure_key").distinct().collect()
    assert len(rows) == len(result.evaluation.measures)
    assert sorted(tuple(r) for r in rows if r.measure_key in asked or r.measure == "AP") == sorted([
        ("AP", None, 1, False, "AP"), ("P", 2, 2, False, "P(rel=2)@2"),
        ("P", 3, 1, False, "P@3"), ("RR", None, 1, False, "RR"),
        ("nDCG", 5, 1, False, "nDCG@5"), ("nDCG", 5, 1, True, "nDCG@5[judged]"),
    ])


def test_dir_lists_the_public_api_and_every_name_imports():
    listed = dir(releval)
    for name in ("evaluate", "compare", "measures", "Result"):
        assert name in listed
    for name in releval.__all__:
        assert name in listed, name
        assert getattr(releval, name) is not None
        assert getattr(importlib.import_module("releval"), name) is getattr(releval, name)
    # the module's own names and subpackages are still listed
    assert "__version__" in listed and "api" in listed
    # and not the module's own imports
    assert "Any" not in listed and "annotations" not in listed
    assert listed == sorted(listed)


def test_repr_is_short_names_the_inputs_and_shows_the_macro_means(spark, monkeypatch):
    from releval import result as result_module

    aggregations = []
    counts = result_module.query_counts
    monkeypatch.setattr(result_module, "query_counts",
                        lambda *a, **k: aggregations.append(1) or counts(*a, **k))
    run, qrels = inputs(spark)
    asked = ["P@1", "RR", *MANY[5:25]]
    result = releval.evaluate(run, qrels, measures=asked, partition_by=["system"])
    text = repr(result)
    lines = text.splitlines()
    assert len(lines) <= 40, text
    assert lines[0] == "releval.Result: run DataFrame against qrels DataFrame"
    assert f"measures ({len(asked)}): P@1, RR, " in lines[1]
    assert "run 36 (0); qrels 6 (0)" in lines[2]  # 2 systems x 3 queries x 6 documents
    assert lines[3].strip() == "run partitions by system (2): bm25, dense"
    table = lines[lines.index(next(x for x in lines if x.startswith("measure_key"))):]
    assert table[0].split() == ["measure_key", "bm25", "dense"]
    # bm25 ranks d0 (not relevant) first in every query, dense ties d0 and d1 at 10 and
    # trec_eval's tie-break (doc id descending) puts the relevant d1 first: P@1 0 and 1,
    # RR 1/2 (d1 second) and 1; every query alike, so each interval is the mean (t) or
    # Wilson's around 0 and 1 with 3 queries: z^2 / (3 + z^2) = 3.8415 / 6.8415 = 0.5615
    assert table[1].split() == ["P@1", "0.0000", "[0.000,", "0.561]", "1.0000", "[0.439,",
                                "1.000]"]
    assert table[2].split() == ["RR", "0.5000", "[0.500,", "0.500]", "1.0000", "[0.439,",
                                "1.000]"]
    # the aggregate's own values, cut to the first 20 measures
    macro = {(r.system, r.measure_key): r.value
             for r in result.aggregate.where("averaging = 'macro'").collect()}
    rows = [x.split() for x in table[1:21]]
    assert all(float(r[1]) == pytest.approx(macro[("bm25", r[0])], abs=5e-5) for r in rows)
    assert table[21] == f"... {len(result.evaluation.measures) - 20} more measures"
    assert lines[-1].startswith("tables (DataFrames, planned and not collected)")
    # shown and read: one aggregation, made by the repr and reused
    html = result._repr_html_()
    assert aggregations == [1]
    assert html.count("<tr>") == 1 + 20 + 1  # the header, 20 measures, the line of the rest
    assert "<th>bm25</th><th>dense</th>" in html and "<td>P@1</td>" in html


def test_repr_without_partitions_and_when_the_aggregate_fails(spark, monkeypatch):
    from releval import result as result_module

    run, qrels = inputs(spark)
    one = releval.evaluate(run.where("system = 'bm25'").drop("system"), qrels,
                           measures=["P@1"])
    text = repr(one)
    assert "run partitions" not in text
    assert "measure_key  mean" in text and "P@1          0.0000 [0.000, 0.561]" in text

    def fails(*args, **kwargs):
        raise RuntimeError("no aggregate here")

    monkeypatch.setattr(result_module, "rows", fails)
    broken = repr(releval.evaluate(run, qrels, measures=["P@1"], partition_by=["system"]))
    assert "not computed: the aggregate raised RuntimeError: no aggregate here" in broken
    assert "measure_key" not in broken


def test_text_and_html_tables_cut_rows_and_columns():
    from releval import display

    rows = [("P@10", 0.41234, 12, None), ("RR", float("nan"), 1500, "x<y"), ("AP", 1.0, 3, "z")]
    columns = ["measure", "value", "queries", "note"]
    assert display.text_table(rows, columns, max_rows=2).splitlines() == [
        "measure   value  queries  note",
        "P@10     0.4123       12  -",
        "RR            -    1,500  x<y",
        "... 1 more row",
    ]
    # 22 characters hold the first two columns (7 + 2 + 6 = 15; with the third, 24)
    assert display.text_table(rows, columns, max_width=22).splitlines()[-1] == (
        "... 2 more columns")
    assert display.text_table(rows[:1], columns, max_width=22).splitlines()[0] == (
        "measure   value")
    html = display.html_table(rows, columns, max_rows=1, noun="measure", caption="a & b")
    assert html.startswith("<table><caption>a &amp; b</caption><thead><tr><th>measure</th>")
    assert '<td style="text-align: right">0.4123</td>' in html and "x&lt;y" not in html
    assert '<td colspan="4">... 2 more measures</td>' in html
