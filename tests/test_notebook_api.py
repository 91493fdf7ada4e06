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
    assert listed == sorted(listed)
