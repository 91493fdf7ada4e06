"""The queries input's row rules (releval.checks.queries): used rows, quarantined rows with
their reasons, the accounts, and the attributes joined to per-query rows."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

from releval.checks.queries import check_queries, unlisted_queries, with_attributes
from releval.core import columns as S
from releval.errors import ConfigError

ROWS = [
    ("q1", 10.0, "head", "en"),
    ("q2", 0.0, "tail", None),            # zero weight is valid; null locale -> (null)
    ("q3", 5.0, "torso", "de"),
    ("q3", 5.0, "torso", "de"),           # q3 twice: both rows duplicate_query_id
    ("q4", -1.0, "tail", "en"),           # invalid_weight
    ("q5", float("nan"), "tail", "en"),   # invalid_weight
    ("q6", float("inf"), "tail", "en"),   # invalid_weight
    ("q7", None, "tail", "en"),           # invalid_weight
    (" ", 1.0, "tail", "en"),             # missing_query_id
]
SCHEMA = "id string, hits double, segment string, locale string"


def test_used_and_rejected_rows_with_reasons(spark):
    checked = check_queries(spark.createDataFrame(ROWS, SCHEMA), query_id="id", weight="hits",
                            slices=["segment", "locale"])
    assert checked.weighted and checked.slices == ("segment", "locale")
    assert_df_equality(
        checked.used,
        spark.createDataFrame([("q1", 10.0, "head", "en"), ("q2", 0.0, "tail", S.NULL_SLICE)],
                              "query_id string, weight double, segment string, locale string"),
        ignore_row_order=True, ignore_nullable=True)
    rejected = checked.rejected.select(S.INPUT, F.col(S.RAW)[S.QUERY_ID].alias("q"),
                                       F.col(S.RAW)[S.WEIGHT].alias("w"), S.REASON_CODE)
    assert_df_equality(
        rejected,
        spark.createDataFrame(
            [("queries", "q3", "5.0", "duplicate_query_id"),
             ("queries", "q3", "5.0", "duplicate_query_id"),
             ("queries", "q4", "-1.0", "invalid_weight"),
             ("queries", "q5", "NaN", "invalid_weight"),
             ("queries", "q6", "Infinity", "invalid_weight"),
             ("queries", "q7", None, "invalid_weight"),
             ("queries", " ", "1.0", "missing_query_id")],
            "input string, q string, w string, reason_code string"),
        ignore_row_order=True, ignore_nullable=True)
    # 9 rows = 2 used + 2 duplicate + 4 invalid weight + 1 missing id
    account = checked.account()
    assert (account.input, account.used, account.quarantined) == (
        9, 2, {"duplicate_query_id": 2, "invalid_weight": 4, "missing_query_id": 1})


def test_without_weight_the_weight_is_null_and_any_weight_passes(spark):
    checked = check_queries(spark.createDataFrame([(1, "a"), (2, None)], "qid int, seg string"),
                            query_id="qid", slices=["seg"])
    assert not checked.weighted
    assert sorted(checked.used.collect()) == [("1", None, "a"), ("2", None, S.NULL_SLICE)]
    assert checked.rejected.count() == 0


@pytest.mark.parametrize("kwargs, column", [
    ({"query_id": "qid"}, "qid"), ({"weight": "traffic"}, "traffic"), ({"slices": ["device"]}, "device")])
def test_a_missing_column_names_the_frame_the_column_and_the_columns(spark, kwargs, column):
    frame = spark.createDataFrame([("q1", 1.0, "head")], "query_id string, hits double, segment string")
    with pytest.raises(ConfigError, match=rf"my queries: no column '{column}'.*\['query_id', 'hits', 'segment'\]"):
        check_queries(frame, name="my queries", **kwargs)


def test_with_attributes_marks_unlisted_queries(spark):
    checked = check_queries(spark.createDataFrame(ROWS, SCHEMA), query_id="id", weight="hits",
                            slices=["segment"])
    per_query = spark.createDataFrame([("s", "q1", 0.5), ("s", "q2", 0.2), ("s", "q3", 1.0),
                                       ("s", "q9", 0.0)], "system string, query_id string, value double")
    joined = with_attributes(per_query, checked)
    assert_df_equality(
        joined,
        spark.createDataFrame(
            [("s", "q1", 0.5, 10.0, "head"), ("s", "q2", 0.2, 0.0, "tail"),
             ("s", "q3", 1.0, None, S.UNLISTED_SLICE),  # q3's rows were rejected
             ("s", "q9", 0.0, None, S.UNLISTED_SLICE)],
            "system string, query_id string, value double, weight double, segment string"),
        ignore_row_order=True, ignore_nullable=True)
    assert sorted(r[0] for r in unlisted_queries(per_query, checked).collect()) == ["q3", "q9"]
