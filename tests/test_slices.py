"""Aggregates per slice value and traffic-weighted means (releval.evaluate with a queries
input): hand-worked rows, a pandas group-by, the linearized interval against a bootstrap over
queries, the quarantine and the accounts, and the aggregate table's migration to version 10.
Run on the suite's session, which plays a notebook's default ``getOrCreate()`` session; the
same checks run over Spark Connect in tests/connect/test_connect_slices.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
from chispa import assert_approx_df_equality
from delta.tables import DeltaTable
from pyspark.sql import functions as F
from pyspark.sql import types as T
from scipy import stats
from support.slices_support import check, expected_check

import releval
from releval.core import columns as S
from releval.errors import ConfigError
from releval.io import tables
from releval.io.atomic import table_schema_version
from releval.io.writers import SCHEMA_VERSION, SCHEMA_VERSION_PROPERTY
from releval.job.migrations import migrate_table

RUN = [("s", "q1", "a", 3.0), ("s", "q1", "b", 2.0),                       # RR 1
       ("s", "q2", "a", 3.0), ("s", "q2", "b", 2.0),                       # RR 1/2
       ("s", "q3", "a", 3.0), ("s", "q3", "b", 2.0), ("s", "q3", "c", 1.0),  # RR 1/3
       ("s", "q4", "a", 3.0)]                                              # RR 0
QRELS = [("q1", "a", 1), ("q2", "b", 1), ("q3", "c", 1), ("q4", "z", 1)]
#: q4 is not listed: slice value (unlisted), left out of the weighted means
QUERIES = [("q1", 10.0, "head"), ("q2", 30.0, "head"), ("q3", 20.0, "tail")]


def _evaluate(spark, **kwargs):
    run = spark.createDataFrame(RUN, "system string, query_id string, doc_id string, score double")
    qrels = spark.createDataFrame(QRELS, "query_id string, doc_id string, relevance int")
    queries = spark.createDataFrame(QUERIES, "id string, hits double, segment string")
    return releval.evaluate(run, qrels, measures=["RR"], partition_by=["system"],
                            queries=queries, **kwargs)


def test_hand_worked_slice_and_weighted_rows(spark):
    result = _evaluate(spark, queries_columns={"query_id": "id", "weight": "hits"},
                       slices=["segment"])
    got = result.aggregate.select(S.SLICE, S.SLICE_VALUE, S.AVERAGING, S.VALUE, S.NUM_QUERIES,
                                  S.CI_LOW, S.CI_HIGH, S.CI_METHOD)
    # overall weighted: w = 10, 30, 20 on x = 1, 1/2, 1/3; m = (10 + 15 + 20/3) / 60 = 19/36
    # sum w^2 (x - m)^2 = (100 * 17^2 + 900 * 1^2 + 400 * 7^2) / 36^2 = 49400 / 1296
    # V = 3/2 * 49400 / 1296 / 60^2 = 0.0158822016...; half = t(2, .975) 4.302652729749 * sqrt(V)
    half_all = 4.302652729749462 * math.sqrt(1.5 * 49400 / 1296 / 3600)
    # head weighted: m = (10 + 15) / 40 = 0.625; V = 2/1 * (100 * .375^2 + 900 * .125^2) / 40^2
    # = 0.03515625; half = t(1, .975) 12.706204736174707 * sqrt(V)
    half_head = 12.706204736174707 * math.sqrt(0.03515625)
    expected = spark.createDataFrame([
        (None, None, "macro", (1 + 0.5 + 1 / 3 + 0) / 4, 4),     # every scored query
        (None, None, "weighted", 19 / 36, 3),                    # q4 unlisted: no weight
        ("segment", "head", "macro", (1 + 0.5) / 2, 2),
        ("segment", "head", "weighted", 0.625, 2),
        ("segment", "tail", "macro", 1 / 3, 1),
        ("segment", "tail", "weighted", 1 / 3, 1),               # one query: no interval
        ("segment", "(unlisted)", "macro", 0.0, 1),
    ], "slice string, slice_value string, averaging string, value double, num_queries long")
    assert_approx_df_equality(got.drop(S.CI_LOW, S.CI_HIGH, S.CI_METHOD), expected, 1e-12,
                              ignore_row_order=True, ignore_nullable=True)
    weighted = {(r[S.SLICE_VALUE]): (r[S.CI_LOW], r[S.CI_HIGH], r[S.CI_METHOD])
                for r in got.where(F.col(S.AVERAGING) == "weighted").collect()}
    assert weighted[None][:2] == pytest.approx((19 / 36 - half_all, 19 / 36 + half_all), abs=1e-12)
    assert weighted["head"][:2] == pytest.approx((0.625 - half_head, 0.625 + half_head), abs=1e-12)
    assert weighted["tail"] == (None, None, "linearized")
    assert {m for *_, m in weighted.values()} == {"linearized"}
    assert result.accounts.unlisted == 1  # q4
    assert result.accounts.queries.input == 3


def test_without_a_weight_no_weighted_rows_and_overall_rows_unchanged(spark):
    sliced = _evaluate(spark, queries_columns={"query_id": "id"}, slices=["segment"])
    plain = releval.evaluate(
        spark.createDataFrame(RUN, "system string, query_id string, doc_id string, score double"),
        spark.createDataFrame(QRELS, "query_id string, doc_id string, relevance int"),
        measures=["RR"], partition_by=["system"])
    overall = sliced.aggregate.where(F.col(S.SLICE).isNull())
    assert_approx_df_equality(overall, plain.aggregate, 1e-15, ignore_row_order=True)
    assert sliced.aggregate.where(F.col(S.AVERAGING) == "weighted").count() == 0
    assert plain.aggregate.where(F.col(S.SLICE).isNotNull()).count() == 0


def test_slices_equal_a_pandas_group_by_and_bad_rows_are_quarantined(spark):
    # the synthetic log (tests/support/slices_support.py): per-slice macro means against a
    # pandas group-by, weighted rows against sum(w x) / sum(w) and the linearized formula
    got = check(spark)
    assert got["worst_slice"] < 1e-12 and got["slice_rows"] == 100
    # 2 systems x 5 measures (3 asked, Judged@5, Judged@10) x (overall + 3 segments + 5 locales)
    assert got["worst_weighted"] < 1e-9 and got["weighted_rows"] == 90
    assert got["overall_weighted"] == 10
    assert got["balanced"]
    for key, value in expected_check().items():
        assert got[key] == value, key


def test_the_weighted_interval_agrees_with_a_bootstrap_over_queries(spark):
    # 400 queries with skewed traffic; the bootstrap resamples queries (with their weights)
    rng = np.random.default_rng(11)
    n = 400
    hits = rng.pareto(1.5, n) * 100 + 1
    qrels = [(f"q{i}", f"d{d}", 1) for i in range(n) for d in range(int(rng.integers(1, 4)))]
    run = [("s", f"q{i}", f"d{d}", float(rng.normal())) for i in range(n) for d in range(10)]
    queries = [(f"q{i}", float(hits[i])) for i in range(n)]
    result = releval.evaluate(
        spark.createDataFrame(run, "system string, query_id string, doc_id string, score double"),
        spark.createDataFrame(qrels, "query_id string, doc_id string, relevance int"),
        measures=["nDCG@10"], partition_by=["system"],
        queries=spark.createDataFrame(queries, "query_id string, hits double"),
        queries_columns={"weight": "hits"})
    row = result.aggregate.where("averaging = 'weighted' AND measure_key = 'nDCG@10'").first()
    values = {r.query_id: r.value for r in
              result.per_query.where("measure_key = 'nDCG@10'").collect()}
    x = np.array([values[f"q{i}"] for i in range(n)])
    boot_rng = np.random.default_rng(5)
    picks = boot_rng.integers(0, n, size=(4000, n))
    means = (hits[picks] * x[picks]).sum(axis=1) / hits[picks].sum(axis=1)
    # the linearized standard error against the bootstrap's; the bootstrap's own error on a
    # standard deviation from 4000 resamples is about 1 / sqrt(2 * 4000) = 1.1%, and the
    # linearization is first order: 10% apart at most
    se = (row.ci_high - row.ci_low) / 2 / stats.t.ppf(0.975, n - 1)
    assert row.value == pytest.approx((hits @ x) / hits.sum(), abs=1e-12)
    assert se == pytest.approx(means.std(ddof=1), rel=0.10)
    low, high = np.quantile(means, [0.025, 0.975])
    assert row.ci_low == pytest.approx(low, abs=0.35 * se)
    assert row.ci_high == pytest.approx(high, abs=0.35 * se)


def test_queries_arguments_without_a_queries_frame_and_unknown_keys_are_errors(spark):
    run = spark.createDataFrame(RUN, "system string, query_id string, doc_id string, score double")
    qrels = spark.createDataFrame(QRELS, "query_id string, doc_id string, relevance int")
    # a slice is a run column or a queries column: neither names both frames' columns
    with pytest.raises(ConfigError, match=r"slice 'segment' is not a column of the run "
                       r"DataFrame.*no queries DataFrame was given"):
        releval.evaluate(run, qrels, measures=["RR"], slices=["segment"])
    with pytest.raises(ConfigError, match="queries= DataFrame"):
        releval.evaluate(run, qrels, measures=["RR"], queries_columns={"query_id": "id"})
    with pytest.raises(ConfigError, match=r"queries_columns: unknown key\(s\) \['traffic'\]"):
        _evaluate(spark, queries_columns={"traffic": "hits"})
    with pytest.raises(ConfigError, match=r"slice 'device' is not a column of the run DataFrame "
                       r"\(it has \['system', 'query_id', 'doc_id', 'score'\]\).*the queries "
                       r"DataFrame has \['id', 'hits', 'segment'\]"):
        _evaluate(spark, queries_columns={"query_id": "id"}, slices=["device"])


def test_an_aggregate_table_of_version_9_migrates_and_a_new_one_is_written_at_10(spark, tmp_path):
    from support.batch_support import config_at, write_config  # noqa: PLC0415
    assert SCHEMA_VERSION == "11"
    parts = [T.StructField("system", T.StringType())]
    v9 = [f for f in tables.aggregate_schema(parts).fields
          if f.name not in (S.SLICE, S.SLICE_VALUE)]
    old = str(tmp_path / "old_aggregate")
    (DeltaTable.create(spark).location(old).addColumns(v9)
     .property(SCHEMA_VERSION_PROPERTY, "9").execute())
    spark.createDataFrame([("s", "RR", None, 1, False, "RR", "macro", 0.4, 4, "old", "unjudged",
                            0.1, 0.7, "t", 0.95, None)], T.StructType(v9)).write.format(
        "delta").mode("append").save(old)
    config = config_at(write_config(tmp_path, str(tmp_path / "run.tsv"), str(tmp_path / "q")))
    assert migrate_table(spark, kind="aggregate", path=old, table=None, config=config) == ["9", "10", "11"]
    table = spark.read.format("delta").load(old)
    assert table.columns[-2:] == [S.SLICE, S.SLICE_VALUE]
    for name in (S.SLICE, S.SLICE_VALUE):
        field = table.schema[name]
        assert field.nullable and field.dataType == T.StringType()
        assert field.metadata["comment"] == tables.AGGREGATE_COMMENTS[name]
    # the old row reads as a row over all queries
    assert [(r[S.VALUE], r[S.SLICE], r[S.SLICE_VALUE]) for r in table.collect()] == [(0.4, None, None)]
    # a new table: version 10, slice rows beside the overall ones; the migrated one takes them
    result = _evaluate(spark, queries_columns={"query_id": "id", "weight": "hits"},
                       slices=["segment"])
    new = str(tmp_path / "new_aggregate")
    result.write(aggregate=new)
    result.write(aggregate=old)
    assert table_schema_version(spark, path=new, table=None) == "11"
    for path in (new, old):
        written = spark.read.format("delta").load(path)
        assert written.where("slice = 'segment' AND slice_value = 'head' AND averaging = "
                             "'macro'").first()[S.VALUE] == pytest.approx(0.75, abs=1e-15)
        assert written.where("slice IS NULL AND averaging = 'weighted'").count() == 1
