"""Rows made on the driver become a DataFrame in the JVM (``releval.core.frames.local_frame``)."""

from __future__ import annotations

import math
from datetime import UTC, date, datetime

import pytest
from pyspark.sql import types as T

from releval.core.frames import local_frame

SCHEMA = T.StructType([
    T.StructField("name", T.StringType(), False),
    T.StructField("value", T.DoubleType(), True),
    T.StructField("count", T.LongType(), True),
    T.StructField("day", T.DateType(), True),
    T.StructField("at", T.TimestampType(), True),
    T.StructField("parts", T.ArrayType(T.MapType(T.StringType(), T.StringType()), False), True),
])


def test_driver_rows_come_back_as_written_with_no_python_task(spark):
    aware = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    naive = datetime(2026, 1, 2, 3, 4, 5)  # local time, as createDataFrame reads it
    rows = [
        ("P@10", 0.25, 7, date(2026, 1, 2), aware, [{"run_id": "bm25"}]),
        ("AP", math.nan, None, None, naive, []),
    ]
    df = local_frame(spark, rows, SCHEMA)
    # a LocalRelation: no Python worker converts the rows (spark.createDataFrame of a list
    # plans a Python RDD)
    assert df._jdf.queryExecution().analyzed().toString().startswith("LocalRelation")
    assert df.schema == SCHEMA
    got = sorted(df.collect(), key=lambda r: r["name"])
    assert got[0]["name"] == "AP" and math.isnan(got[0]["value"])
    assert got[0]["count"] is None and got[0]["day"] is None and got[0]["parts"] == []
    # collect gives naive local times: the naive one unchanged, the UTC one converted
    assert got[0]["at"] == naive
    assert got[1]["at"] == datetime.fromtimestamp(aware.timestamp())
    assert tuple(got[1])[:4] == ("P@10", 0.25, 7, date(2026, 1, 2))
    assert got[1]["parts"] == [{"run_id": "bm25"}]


def test_no_rows_is_an_empty_frame_of_the_schema(spark):
    df = local_frame(spark, [], SCHEMA)
    assert df.schema == SCHEMA and df.count() == 0


def test_a_null_in_a_non_nullable_column_names_the_column_and_the_row(spark):
    with pytest.raises(ValueError, match=r"column 'name' cannot be null; row \(None, 1\.0,"):
        local_frame(spark, [("AP", 0.5, 1, None, None, None), (None, 1.0, 2, None, None, None)],
                    SCHEMA)
