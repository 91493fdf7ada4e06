"""releval.click_labels in the default session: the simplified DBN's counts by hand, the PBM
against a plain EM, the labels as qrels, grades, accounts, errors, the repr and writes."""

from __future__ import annotations

import doctest

import pytest
from support.click_labels_support import EXPECTED, HAND_LOG, HAND_SCHEMA, check

import releval
from releval.clicks import labels as labels_module
from releval.clicks import position_bias, simulate
from releval.clicks.simulate import random_truth, rankings, simulate_pbm, to_spark
from releval.errors import ConfigError


@pytest.fixture(scope="module")
def hand(spark):
    return spark.createDataFrame(HAND_LOG, HAND_SCHEMA)


def test_sdbn_counts_by_hand(hand):
    found = releval.click_labels(hand, model="sdbn", min_impressions=4)
    rows = found.labels.orderBy("doc_id").collect()
    got = [
        [
            r["doc_id"],
            r["relevance"],
            r["attractiveness"],
            r["satisfaction"],
            r["impressions"],
            r["clicks"],
            r["label_source"],
        ]
        for r in rows
    ]
    assert got == EXPECTED["labels"]


@pytest.mark.slow  # a dozen small Spark jobs: the PBM fit's passes, the accounts
def test_hand_log_accounts_and_pbm_reference(spark):
    assert check(spark) == EXPECTED


@pytest.mark.parametrize(
    "module", [labels_module, simulate, pytest.param(position_bias, marks=pytest.mark.slow)]
)
def test_docstring_examples_run(spark, module):
    assert doctest.testmod(module, extraglobs={"spark": spark}).failed == 0


def test_grades_and_columns(spark, hand):
    renamed = hand.withColumnRenamed("search_id", "sid").withColumnRenamed("clicked", "n")
    found = releval.click_labels(
        renamed,
        columns={"search_id": "sid", "clicked": "n"},
        model="dbn",
        min_impressions=1,
        grades=[0.4, 0.9],
    )
    got = {r["doc_id"]: (r["relevance"], r["label_source"]) for r in found.labels.collect()}
    # a 0.5 -> one cut at or below, b 0.25 -> none, c 1.0 -> both
    assert got == {"a": (1, "clicks:dbn"), "b": (0, "clicks:dbn"), "c": (2, "clicks:dbn")}


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"model": "ubm"}, "model='ubm'"),
        ({"min_impressions": 0}, "min_impressions=0"),
        ({"grades": [0.5, 0.2]}, "increasing"),
        ({"grades": [0.0, 0.5]}, "(0, 1]"),
        ({"columns": {"clicked": "nope"}}, "nope"),
    ],
)
def test_bad_arguments_are_named(hand, kwargs, words):
    with pytest.raises(ConfigError, match=None) as error:
        releval.click_labels(hand, **kwargs)
    assert words in str(error.value)


@pytest.fixture(scope="module")
def simulated(spark):  # the tests using it are slow: the PBM fit's passes, evaluate, writes
    truth = random_truth(queries=30, docs=8, seed=7)
    runs = rankings(truth, systems=3, depth=5, seed=7)
    log = simulate_pbm(
        truth, runs, examination=[1.0, 0.6, 0.45, 0.3, 0.2], searches=3000, shuffle=0.2, seed=8
    )
    return truth, runs, releval.click_labels(to_spark(spark, log), min_impressions=20)


@pytest.mark.slow
def test_labels_are_qrels_for_evaluate(spark, simulated):
    truth, runs, found = simulated
    assert found.labels.columns == list(labels_module.LABEL_COLUMNS)
    assert found.labels.where("satisfaction is not null").count() == 0  # pbm: null
    run = spark.createDataFrame(runs.drop(columns="position"))
    result = releval.evaluate(run, found.labels, measures=["nDCG@10"], partition_by=["system"])
    assert result.aggregate.count() > 0
    a = found.accounts
    assert a.impressions_read == a.impressions_used == 15_000
    assert a.pairs == a.pairs_labelled + a.pairs_under_min_impressions + a.pairs_unidentified
    assert a.pairs_labelled == found.labels.count()


@pytest.mark.slow
def test_repr_html_and_write(spark, simulated, tmp_path):
    _, _, found = simulated
    text = repr(found)
    assert text.startswith("releval.ClickLabels: model pbm")
    assert "impressions read 15,000" in text and "harvesting" in text
    assert "<table>" in found._repr_html_()
    found.write(str(tmp_path / "labels"), position_bias=str(tmp_path / "bias"))
    back = spark.read.format("delta").load(str(tmp_path / "bias"))
    assert back.where("method = 'pbm_em' and position = 1").first()["examination"] == 1.0
    assert spark.read.format("delta").load(str(tmp_path / "labels")).count() == found.labels.count()


def test_a_python_pass_reads_one_partition_per_500k_pairs():
    # 0 and 500,000 pairs: one task; 500,001: two; 9.3M (the 100M bench log): 19
    got = [position_bias.python_partitions(p) for p in (0, 500_000, 500_001, 9_300_000)]
    assert got == [1, 1, 2, 19]
