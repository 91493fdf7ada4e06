"""Slices by a run column (one value per query of a run partition): hand-worked rows, a
pandas group-by, a query whose rows disagree (its slice value set aside, its score kept) and
the accounts, and the errors of a slice that both or neither input has. Run on the suite's session, which plays a
notebook's default ``getOrCreate()`` session; the same evaluation runs over Spark Connect in
tests/connect/test_connect_slices.py."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from chispa import assert_approx_df_equality
from pyspark.sql import functions as F
from support.batch_support import config_at, read, write_config

import releval
from releval.cli import _parser, config_from_args
from releval.config import Config, QrelsSource, QueriesSource, RunSource
from releval.config.parse import validate
from releval.core import columns as S
from releval.errors import ConfigError
from releval.job.batch import run_job

RUN_SCHEMA = "system string, query_id string, doc_id string, score double, device string"
RUN = [
    ("s", "q1", "a", 3.0, "mobile"), ("s", "q1", "b", 2.0, "mobile"),    # RR 1
    ("s", "q2", "a", 3.0, "mobile"), ("s", "q2", "b", 2.0, "mobile"),    # RR 1/2
    ("s", "q3", "a", 3.0, "desktop"), ("s", "q3", "b", 2.0, "desktop"),
    ("s", "q3", "c", 1.0, "desktop"),                                    # RR 1/3
    ("s", "q4", "a", 3.0, None),                                         # RR 0, (null)
    ("s", "q5", "a", 3.0, "mobile"), ("s", "q5", "b", 2.0, "desktop"),   # disagree
    ("t", "q1", "a", 3.0, "desktop"),      # another partition may say otherwise: RR 1
]
QRELS = [("q1", "a", 1), ("q2", "b", 1), ("q3", "c", 1), ("q4", "z", 1), ("q5", "a", 1),
         ("q6", "a", 1)]


def _evaluate(spark, **kwargs):
    run = spark.createDataFrame(RUN, RUN_SCHEMA)
    qrels = spark.createDataFrame(QRELS, "query_id string, doc_id string, relevance int")
    return releval.evaluate(run, qrels, measures=["RR"], partition_by=["system"], **kwargs)


def test_hand_worked_run_slice_rows(spark):
    result = _evaluate(spark, slices=["device"])
    got = (result.aggregate.where((F.col(S.MEASURE_KEY) == "RR") & (F.col(S.AVERAGING) == "macro"))
           .select("system", S.SLICE, S.SLICE_VALUE, S.VALUE, S.NUM_QUERIES))
    # s: q5's rows disagree on the device: it keeps its score (RR 1) and only its slice
    # value is set aside, (conflicting); q6, judged and not retrieved, scores 0
    expected = spark.createDataFrame([
        ("s", None, None, (1 + 1 / 2 + 1 / 3 + 0 + 1 + 0) / 6, 6),
        ("s", "device", "mobile", (1 + 1 / 2) / 2, 2),          # q1, q2
        ("s", "device", "desktop", 1 / 3, 1),                   # q3
        ("s", "device", "(null)", 0.0, 1),                      # q4
        ("s", "device", "(conflicting)", 1.0, 1),               # q5
        ("s", "device", "(not retrieved)", 0.0, 1),             # q6
        ("t", None, None, (1 + 0 * 5) / 6, 6),                  # q1 1; q2..q6 not retrieved
        ("t", "device", "desktop", 1.0, 1),                     # q1
        ("t", "device", "(not retrieved)", 0.0, 5),
    ], "system string, slice string, slice_value string, value double, num_queries long")
    assert_approx_df_equality(got, expected, 1e-12, ignore_row_order=True,
                              ignore_nullable=True)


def test_disagreeing_rows_are_used_and_keep_the_overall_score(spark):
    sliced, plain = _evaluate(spark, slices=["device"]), _evaluate(spark)
    assert sliced.quarantine.count() == 0
    run_account = sliced.accounts.run
    assert (run_account.input, run_account.used, run_account.quarantined) == (11, 11, {})

    def means(result):
        return sorted((r["system"], r[S.VALUE]) for r in result.aggregate.collect()
                      if r[S.SLICE] is None and r[S.AVERAGING] == "macro")

    assert means(sliced) == means(plain)


def test_without_slices_the_same_rows_are_used(spark):
    # without the slice q5 is evaluated (RR 1), as with it
    result = _evaluate(spark)
    assert result.accounts.run.quarantined == {}
    got = {r[S.QUERY_ID]: r[S.VALUE] for r in result.per_query.collect()
           if r["system"] == "s" and r[S.MEASURE_KEY] == "RR"}
    assert got["q5"] == 1.0


def test_run_slice_means_equal_a_pandas_group_by(spark):
    rng = np.random.default_rng(53)
    devices = ["mobile", "desktop", "tablet"]
    locales = [f"l{i}" for i in range(7)]
    run, qrels, attrs = [], [], {}
    for system in ("s", "t"):
        for q in range(60):
            qid = f"q{q:02d}"
            device, locale = devices[rng.integers(3)], locales[rng.integers(7)]
            attrs[(system, qid)] = (device, locale)
            for d in range(int(rng.integers(1, 6))):
                run.append((system, qid, f"d{d}", float(rng.random()), device, locale))
    for q in range(60):
        for d in rng.choice(6, size=2, replace=False):
            qrels.append((f"q{q:02d}", f"d{d}", int(rng.integers(1, 3))))
    result = releval.evaluate(
        spark.createDataFrame(run, "system string, query_id string, doc_id string, "
                              "score double, device string, locale string"),
        spark.createDataFrame(qrels, "query_id string, doc_id string, relevance int"),
        measures=["nDCG@3", "RR"], partition_by=["system"], slices=["device", "locale"])
    per_query = result.per_query.where(F.col(S.MEASURE_KEY).isin("nDCG@3", "RR")).select(
        "system", S.QUERY_ID, S.MEASURE_KEY, S.VALUE).toPandas()
    keys = list(zip(per_query.system, per_query.query_id, strict=True))
    per_query["device"] = [attrs[k][0] for k in keys]
    per_query["locale"] = [attrs[k][1] for k in keys]
    expected = pd.concat([
        per_query.groupby(["system", S.MEASURE_KEY, c])[S.VALUE].agg(["mean", "count"])
        .reset_index().rename(columns={c: S.SLICE_VALUE}).assign(**{S.SLICE: c})
        for c in ("device", "locale")])
    got = result.aggregate.where(F.col(S.SLICE).isNotNull() & (F.col(S.AVERAGING) == "macro")
                                 & F.col(S.MEASURE_KEY).isin("nDCG@3", "RR")).select("system", S.MEASURE_KEY, S.SLICE, S.SLICE_VALUE,
                                          S.VALUE, S.NUM_QUERIES).toPandas()
    merged = got.merge(expected, on=["system", S.MEASURE_KEY, S.SLICE, S.SLICE_VALUE],
                       how="outer", indicator=True)
    assert (merged["_merge"] == "both").all()
    assert len(merged) == len(expected) > 2 * 2 * (3 + 7) - 5
    assert np.allclose(merged[S.VALUE], merged["mean"], rtol=0, atol=1e-12)
    assert (merged[S.NUM_QUERIES] == merged["count"]).all()


def test_run_slice_with_a_queries_slice(spark):
    queries = spark.createDataFrame([("q1", "head"), ("q2", "head"), ("q3", "tail")],
                                    "query_id string, segment string")
    result = _evaluate(spark, queries=queries, slices=["device", "segment"])
    got = {(r[S.SLICE], r[S.SLICE_VALUE]): (r[S.VALUE], r[S.NUM_QUERIES])
           for r in result.aggregate.collect()
           if r["system"] == "s" and r[S.AVERAGING] == "macro" and r[S.SLICE] is not None}
    assert got[("device", "mobile")] == pytest.approx(((1 + 1 / 2) / 2, 2))
    assert got[("segment", "head")] == pytest.approx(((1 + 1 / 2) / 2, 2))      # q1, q2
    # q4 0, q5 1 (its rows disagree on the device only), q6 0
    assert got[("segment", "(unlisted)")] == pytest.approx(((0 + 1 + 0) / 3, 3))


def test_a_slice_both_inputs_have_is_an_error(spark):
    queries = spark.createDataFrame([("q1", "phone")], "query_id string, device string")
    with pytest.raises(ConfigError, match="'device' is a column of both the run DataFrame "
                       "and the queries DataFrame"):
        _evaluate(spark, queries=queries, slices=["device"])


def test_a_slice_neither_input_has_is_an_error(spark):
    with pytest.raises(ConfigError, match=r"slice 'region' is not a column of the run "
                       r"DataFrame \(it has \['system', 'query_id', 'doc_id', 'score', "
                       r"'device'\]\) nor of the queries input \(no queries DataFrame"):
        _evaluate(spark, slices=["region"])
    queries = spark.createDataFrame([("q1", "head")], "query_id string, segment string")
    with pytest.raises(ConfigError, match=r"the queries DataFrame has \['query_id', 'segment'\]"):
        _evaluate(spark, queries=queries, slices=["region"])


def test_a_slice_on_a_read_column_is_an_error(spark):
    with pytest.raises(ConfigError, match="'system' is a partition_by column"):
        _evaluate(spark, slices=["system"])
    with pytest.raises(ConfigError, match="'doc_id' is a run column releval reads"):
        _evaluate(spark, slices=["doc_id"])
    run = spark.createDataFrame([("q1", "a", 1.0, "x")],
                                "query_id string, doc_id string, score double, slice string")
    qrels = spark.createDataFrame([("q1", "a", 1)], "query_id string, doc_id string, relevance int")
    with pytest.raises(ConfigError, match="run slice 'slice' is a name releval uses itself"):
        releval.evaluate(run, qrels, measures=["RR"], slices=["slice"])


def test_config_run_slices_checked():
    qrels = QrelsSource(path="qrels")
    with pytest.raises(ConfigError, match="a TREC run has no slice columns"):
        validate(Config(run=RunSource(path="run", format="trec", slices=("device",)), qrels=qrels))
    with pytest.raises(ConfigError, match="run.slices names 'query_id'"):
        validate(Config(run=RunSource(path="run", slices=("query_id",)), qrels=qrels))
    with pytest.raises(ConfigError, match="'device' is in both run.slices and queries.slices"):
        validate(Config(run=RunSource(path="run", slices=("device",)), qrels=qrels,
                        queries=QueriesSource(path="q", slices=("device",))))
    assert validate(Config(run=RunSource(path="run", slices=("device",)), qrels=qrels)
                    ).run.slices == ("device",)


@pytest.mark.slow
def test_the_job_slices_by_run_columns(spark, tmp_path):
    run_path, qrels_path = str(tmp_path / "run"), str(tmp_path / "qrels")
    spark.createDataFrame(
        [("s", "d1", q, doc, score, pos, device) for q, doc, score, pos, device in [
            ("q1", "a", 3.0, 1, "mobile"), ("q1", "b", 2.0, 2, "mobile"),    # RR 1
            ("q2", "a", 3.0, 1, "mobile"), ("q2", "b", 2.0, 2, "mobile"),    # RR 1/2
            ("q3", "a", 3.0, 1, "desktop"),                                  # RR 0
            ("q5", "a", 3.0, 1, "mobile"), ("q5", "b", 2.0, 2, "desktop")]],  # disagree
        "system string, date string, query_id string, item_id string, score double, "
        "position int, device string").write.format("delta").save(run_path)
    spark.createDataFrame([(q, d, 1, "v1") for q, d in [("q1", "a"), ("q2", "b"), ("q3", "z"),
                                                         ("q5", "a")]],
                          "query_id string, doc_id string, relevance int, qrels_version string"
                          ).write.format("delta").save(qrels_path)
    base = config_at(write_config(tmp_path, run_path, qrels_path))
    config = dataclasses.replace(
        base, run=dataclasses.replace(base.run, slices=("device",)),
        evaluation=dataclasses.replace(base.evaluation, measures=("RR",)),
        output=dataclasses.replace(base.output,
                                   quarantine_path=str(tmp_path / "out" / "quarantine")))
    done = run_job(spark, config, job_run_id="run-sliced")
    got = {r[S.SLICE_VALUE]: (r[S.VALUE], r[S.NUM_QUERIES]) for r in
           read(spark, config.output.aggregate_path or "").where(
               "measure_key = 'RR' AND averaging = 'macro' AND slice = 'device'").collect()}
    assert got == {"mobile": (pytest.approx((1 + 1 / 2) / 2), 2), "desktop": (0.0, 1),
                   "(conflicting)": (1.0, 1)}  # q5: its rows disagree, its RR 1 stays
    run_account = done.summary.quality.run
    assert (run_account.input, run_account.used, run_account.quarantined) == (7, 7, {})


def test_run_slices_from_the_command_line(tmp_path):
    base = ["evaluate", "--run", "r.parquet", "--format", "parquet", "--qrels", "q.parquet"]
    config = config_from_args(_parser().parse_args([*base, "--run-slices", "device, locale"]),
                              str(tmp_path))
    assert config.run.slices == ("device", "locale")
    assert config_from_args(_parser().parse_args(base), str(tmp_path)).run.slices == ()
    with pytest.raises(ConfigError, match="a TREC run has no slice columns"):
        config_from_args(_parser().parse_args(
            ["evaluate", "--run", "r.txt", "--qrels", "q.txt", "--run-slices", "device"]),
            str(tmp_path))
