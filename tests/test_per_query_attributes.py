"""The per-query rows carry each query's weight and slice values (schema version 11):
``compare``, ``changes`` and ``gate`` read them from the rows, from a Delta table read back,
and over a run-column slice; ``queries=`` overrides them; the version 10 table migrates."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest
from chispa import assert_df_equality
from delta.tables import DeltaTable
from pyspark.sql import types as T

import releval
from releval.core import columns as S
from releval.errors import ConfigError, SignDisagreementWarning
from releval.io import tables
from releval.io.atomic import table_schema_version
from releval.io.writers import SCHEMA_VERSION, SCHEMA_VERSION_PROPERTY
from releval.job.migrations import migrate_table

#: RR per query: bm25 ranks the relevant document b second on q1..q3 (1/2) and first on
#: q4..q6 (1); dense first everywhere but q6 (0: not retrieved). The device is the run's.
RUN = [(s, q, d, x, dev) for q, first in [("q1", "a"), ("q2", "a"), ("q3", "a"),
                                         ("q4", "b"), ("q5", "b"), ("q6", "b")]
       for s, d, x, dev in [("bm25", first, 2.0, "phone" if q < "q4" else "desktop"),
                            ("bm25", "a" if first == "b" else "b", 1.0,
                             "phone" if q < "q4" else "desktop")]] + [
    ("dense", q, "b", 2.0, "phone") for q in ("q1", "q2", "q3", "q4", "q5")]
QRELS = [(q, "b", 1) for q in ("q1", "q2", "q3", "q4", "q5", "q6")]
#: q6 is not listed: (unlisted), no weight
QUERIES = [("q1", 1.0, "head"), ("q2", 2.0, "head"), ("q3", 1.0, "tail"), ("q4", 3.0, "tail"),
           ("q5", 1.0, "tail")]
BASE, CAND = "system=bm25", "system=dense"


def _inputs(spark):
    run = spark.createDataFrame(
        RUN, "system string, query_id string, doc_id string, score double, device string")
    qrels = spark.createDataFrame(QRELS, "query_id string, doc_id string, relevance int")
    queries = spark.createDataFrame(QUERIES, "id string, hits double, segment string")
    return run, qrels, queries


@pytest.fixture(scope="module")
def evaluated(spark):
    run, qrels, queries = _inputs(spark)
    result = releval.evaluate(run, qrels, measures=["RR"], partition_by=["system"],
                              queries=queries, queries_columns={"query_id": "id",
                                                                "weight": "hits"},
                              slices=["segment", "device"])
    return result, queries


def test_the_rows_carry_the_weight_and_the_slices_asked_for(evaluated):
    result, _ = evaluated
    rows = {(r["system"], r[S.QUERY_ID]): (r[S.WEIGHT], dict(r[S.SLICES]))
            for r in result.per_query.where("measure_key = 'RR'").collect()}
    assert rows[("bm25", "q2")] == (2.0, {"segment": "head", "device": "phone"})
    assert rows[("bm25", "q6")] == (None, {"segment": "(unlisted)", "device": "desktop"})
    # dense did not retrieve q6: the run gives it no device
    assert rows[("dense", "q6")] == (None, {"segment": "(unlisted)", "device": "(not retrieved)"})
    assert result.per_query.schema.names == tables.per_query_schema(
        [T.StructField("system", T.StringType())]).names


def test_without_slices_the_rows_carry_none(spark):
    run, qrels, _ = _inputs(spark)
    row = releval.evaluate(run, qrels, measures=["RR"], partition_by=["system"]).per_query.first()
    assert (row[S.WEIGHT], row[S.SLICES]) == (None, None)


ACTIONS = ("collect", "toArrow", "toPandas", "first", "take", "head", "count")


def test_compare_surveys_the_rows_and_what_they_carry_in_one_action(spark, monkeypatch):
    from pyspark.sql.classic.dataframe import DataFrame

    run, qrels, _ = _inputs(spark)
    result = releval.evaluate(run, qrels, measures=["RR"], partition_by=["system"])
    result.aggregate.collect()
    called: list[str] = []
    for name in ACTIONS:
        def counted(self, *args, _name=name, _action=getattr(DataFrame, name), **kwargs):
            called.append(_name)
            return _action(self, *args, **kwargs)
        monkeypatch.setattr(DataFrame, name, counted)
    found = releval.compare(result.per_query, baseline=BASE, candidates=CAND, permutations=200)
    monkeypatch.undo()
    # one action surveys the rows (their measures and count, whether they carry a weight,
    # their slices), one collects the pairs' values
    assert called == ["collect", "toArrow"]
    row = found.first()
    assert (row[S.SLICE], row[S.MEAN_DIFF]) == (None, pytest.approx((3 * 0.5 - 1) / 6))
    result.unpersist()


def _sorted(frame):
    return frame.orderBy(*frame.columns[:4])


def test_compare_changes_and_gate_read_the_rows_as_they_read_the_queries(evaluated):
    result, queries = evaluated
    given = {"queries": queries, "queries_columns": {"query_id": "id", "weight": "hits"},
             "slices": ["segment"]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SignDisagreementWarning)
        from_rows = releval.compare(result.per_query, baseline=BASE, candidates=CAND,
                                    slices=["segment"], measures=["RR"], permutations=200)
        from_queries = releval.compare(result.per_query, baseline=BASE, candidates=CAND,
                                       measures=["RR"], permutations=200, **given)
    assert_df_equality(_sorted(from_rows), _sorted(from_queries))
    # weighted rows and the segment's (head, tail, (unlisted)) rows: read from the rows
    assert from_rows.where("averaging = 'weighted' AND slice IS NULL").count() == 1
    assert {r.slice_value for r in from_rows.where("slice = 'segment'").collect()} == {
        "head", "tail", "(unlisted)"}
    moved = releval.changes(result.per_query, baseline=BASE, candidates=CAND, slices=["segment"])
    assert_df_equality(_sorted(moved), _sorted(releval.changes(
        result.per_query, baseline=BASE, candidates=CAND, **given)))
    g = releval.gate(result.per_query, baseline=BASE, candidates=CAND,
                     rules=["weighted RR change >= -0.5 per segment"])
    h = releval.gate(result.per_query, baseline=BASE, candidates=CAND,
                     rules=["weighted RR change >= -0.5 per segment"], **{
                         k: v for k, v in given.items() if k != "slices"})
    pd.testing.assert_frame_equal(g.rows.sort_values(S.SLICE_VALUE).reset_index(drop=True),
                                  h.rows.sort_values(S.SLICE_VALUE).reset_index(drop=True))


def test_by_default_compare_and_changes_slice_by_what_the_rows_carry(evaluated):
    result, _ = evaluated
    found = releval.compare(result.per_query, baseline=BASE, candidates=CAND, measures=["RR"],
                            permutations=200)
    assert {r.slice for r in found.collect()} == {None, "device", "segment"}
    moved = releval.changes(result.per_query, baseline=BASE, candidates=CAND, measures=["RR"])
    assert {"device", "segment", S.WEIGHT} <= set(moved.columns)
    # queries= replaces what the rows carry: no slices unless asked for, as compare
    _, queries = evaluated
    listed = releval.changes(result.per_query, baseline=BASE, candidates=CAND, measures=["RR"],
                             queries=queries, queries_columns={"query_id": "id"})
    assert not {"device", "segment"} & set(listed.columns)
    # slices=() asks for none: the weight still comes from the rows
    plain = releval.compare(result.per_query, baseline=BASE, candidates=CAND, measures=["RR"],
                            permutations=200, slices=())
    assert {(r.slice, r.averaging) for r in plain.collect()} == {(None, "macro"),
                                                                 (None, "weighted")}
    with pytest.raises(ConfigError, match=r"slice 'locale'.*carry the slices \['device', "
                       r"'segment'\]"):
        releval.compare(result.per_query, baseline=BASE, candidates=CAND, slices=["locale"])


def test_a_run_column_slice_is_the_baselines_value_in_all_three(evaluated):
    result, _ = evaluated
    found = releval.compare(result.per_query, baseline=BASE, candidates=CAND, measures=["RR"],
                            slices=["device"], permutations=200)
    # bm25 served q1..q3 on a phone (dense gains 1/2 on each) and q4..q6 on a desktop
    # (q4, q5 tie, dense loses q6's 1)
    by = {r.slice_value: r.mean_diff for r in found.where(
        "slice = 'device' AND averaging = 'macro'").collect()}
    assert by == pytest.approx({"phone": 0.5, "desktop": -1 / 3})
    moved = releval.changes(result.per_query, baseline=BASE, candidates=CAND, slices=["device"])
    assert {r.query_id: r.device for r in moved.collect()}["q6"] == "desktop"
    g = releval.gate(result.per_query, baseline=BASE, candidates=CAND,
                     rules=["RR change >= -0.1 per device"], mode="point")
    assert g.rules == {"RR change >= -0.1 per device": "fail"}
    assert set(g.rows[S.SLICE_VALUE]) == {"phone", "desktop"}


@pytest.mark.slow  # Delta tables written, read back and migrated
def test_the_rows_read_back_from_delta_decide_as_the_result_does(evaluated, spark, tmp_path):
    result, _ = evaluated
    path = str(tmp_path / "per_query")
    result.write(per_query=path)
    back = spark.read.format("delta").load(path)
    assert table_schema_version(spark, path=path, table=None) == SCHEMA_VERSION == "12"
    for column in (S.WEIGHT, S.SLICES):
        assert back.schema[column].metadata["comment"] == tables.PER_QUERY_COMMENTS[column]
    kwargs = {"baseline": BASE, "candidates": CAND, "measures": ["RR"], "permutations": 200}
    assert_df_equality(_sorted(releval.compare(back, **kwargs)),
                       _sorted(releval.compare(result.per_query, **kwargs)))
    # a warehouse query slices the table with no join
    rows = spark.sql(f"SELECT slices['segment'] AS segment, COUNT(*) AS n FROM delta.`{path}` "
                     "WHERE system = 'bm25' GROUP BY 1").collect()
    assert {r.segment: r.n for r in rows} == {"head": 2, "tail": 3, "(unlisted)": 1}


@pytest.mark.slow  # Delta tables written, read back and migrated
def test_a_version_10_per_query_table_migrates_and_takes_new_rows(evaluated, spark, tmp_path):
    from support.batch_support import config_at, write_config  # noqa: PLC0415
    result, queries = evaluated
    parts = [T.StructField("system", T.StringType())]
    v10 = [f for f in tables.per_query_schema(parts).fields if f.name not in (S.WEIGHT, S.SLICES)]
    path = str(tmp_path / "per_query")
    (DeltaTable.create(spark).location(path).addColumns(v10)
     .property(SCHEMA_VERSION_PROPERTY, "10").execute())
    old = [("bm25", q, "RR", None, 1, False, "RR", v, 2, 1, 1, "old", "unjudged", None, None,
            None) for q, v in (("q1", 0.5), ("q2", 1.0))]
    spark.createDataFrame(old, T.StructType(v10)).write.format("delta").mode("append").save(path)
    # an old table's rows (no weight, no slices) still compare, with queries= for the slices
    before = spark.read.format("delta").load(path)
    assert releval.changes(before, baseline=BASE, candidates="system=bm25").count() == 2
    with pytest.raises(ConfigError, match="carry the slices"):
        releval.changes(before, baseline=BASE, candidates="system=bm25", slices=["segment"])
    config = config_at(write_config(tmp_path, str(tmp_path / "run.tsv"), str(tmp_path / "q")))
    assert migrate_table(spark, kind="per_query", path=path, table=None,
                         config=config) == ["10", "11", "12"]
    table = spark.read.format("delta").load(path)
    assert table.columns[-2:] == [S.WEIGHT, S.SLICES]
    for column in (S.WEIGHT, S.SLICES):
        assert table.schema[column].nullable
        assert table.schema[column].metadata["comment"] == tables.PER_QUERY_COMMENTS[column]
    assert {(r[S.WEIGHT], r[S.SLICES]) for r in table.collect()} == {(None, None)}
    result.write(per_query=path)
    written = spark.read.format("delta").load(path)
    assert written.where("slices['segment'] = 'head'").count() == 4  # q1, q2 x 2 systems
    moved = releval.changes(written, baseline=BASE, candidates=CAND, measures=["RR"],
                            queries=queries, queries_columns={"query_id": "id"},
                            slices=["segment"])
    assert {r.query_id: r.segment for r in moved.collect()}["q3"] == "tail"
