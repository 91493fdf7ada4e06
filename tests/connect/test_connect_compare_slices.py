"""Comparisons per slice and weighted, and releval.changes, on a Spark Connect session: the
same rows as on the suite's classic session, on both of compare's paths; a bad queries row
is the same error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from support.connect_support import CLIENT_PROLOGUE, last_json, run_client
from support.slices_data import SCHEMA, per_query_rows, queries_rows

import releval
from releval.checks.queries import check_queries
from releval.config import ComparisonSettings
from releval.core import columns as S
from releval.frames import comparison

pytestmark = pytest.mark.slow  # a Spark Connect server and a client process

QUERIES_SCHEMA = "qid string, segment string, locale string, hits double"
COLUMNS = {"query_id": "qid", "weight": "hits"}
CANDIDATES = {f"system={s}": {"system": s} for s in ("dense", "hybrid")}

SCRIPT = CLIENT_PROLOGUE + f"""
import releval
from releval.checks.queries import check_queries
from releval.config import ComparisonSettings
from releval.errors import InputError
from releval.runtime.mode import is_connect
from releval.frames import comparison
from support.slices_data import SCHEMA, per_query_rows, queries_rows

per_query = spark.createDataFrame(per_query_rows(), SCHEMA)
queries = spark.createDataFrame(queries_rows(), {QUERIES_SCHEMA!r})
api = releval.compare(per_query, baseline="system=bm25",
                      candidates=["system=dense", "system=hybrid"], test="t",
                      queries=queries, queries_columns={COLUMNS!r},
                      slices=["segment", "locale"])
checked = check_queries(queries, query_id="qid", weight="hits", slices=["segment", "locale"])
executors = comparison.compare(per_query, baseline={{"system": "bm25"}},
                               candidates={CANDIDATES!r}, missing_queries="zero",
                               settings=ComparisonSettings(test="t"), driver_rows=0,
                               queries=checked.used, slices=["segment", "locale"],
                               weighted=True)
moved = releval.changes(per_query, baseline="system=bm25",
                        candidates=["system=dense", "system=hybrid"], queries=queries,
                        queries_columns={COLUMNS!r})
bad = spark.createDataFrame(queries_rows() + [("q00", "tail", "de", 1.0)], {QUERIES_SCHEMA!r})
try:
    releval.changes(per_query, baseline="system=bm25", candidates=["system=dense"],
                    queries=bad, queries_columns={COLUMNS!r})
    error = None
except InputError as exc:
    error = str(exc)
print(json.dumps({{"connect": is_connect(spark), "error": error,
                  "api": [r.asDict() for r in api.collect()],
                  "executors": [r.asDict() for r in executors.collect()],
                  "moved": [r.asDict() for r in moved.collect()]}}))
"""


def _keyed(rows, key):
    return {tuple(r[k] for k in key): r for r in rows}


def _same(got: dict, want: dict) -> None:
    assert sorted(got, key=str) == sorted(want, key=str)
    for key, row in want.items():
        for name, value in row.items():
            if isinstance(value, float):
                assert got[key][name] == pytest.approx(value, rel=1e-9, abs=1e-12), (key, name)
            else:
                assert got[key][name] == value, (key, name)


def test_slices_weighted_and_changes_on_spark_connect(
    spark: SparkSession, connect_url: str, tmp_path: Path
) -> None:
    got = last_json(run_client(connect_url, SCRIPT, cwd=tmp_path))
    assert got["connect"] is True
    per_query = spark.createDataFrame(per_query_rows(), SCHEMA)
    queries = spark.createDataFrame(queries_rows(), QUERIES_SCHEMA)
    classic = releval.compare(per_query, baseline="system=bm25",
                              candidates=["system=dense", "system=hybrid"], test="t",
                              queries=queries, queries_columns=COLUMNS,
                              slices=["segment", "locale"]).collect()
    key = (S.CANDIDATE, S.MEASURE_KEY, S.SLICE, S.SLICE_VALUE, S.AVERAGING)
    want = _keyed([r.asDict() for r in classic], key)
    assert sum(1 for k in want if k[4] == "weighted") == 2 * 3 * 7
    _same(_keyed(got["api"], key), want)
    # the executor path on Connect gives the driver path's rows
    checked = check_queries(queries, query_id="qid", weight="hits", slices=["segment", "locale"])
    assert comparison.compare(
        per_query, baseline={"system": "bm25"}, candidates=CANDIDATES, missing_queries="zero",
        settings=ComparisonSettings(test="t"), queries=checked.used,
        slices=["segment", "locale"], weighted=True).count() == len(got["executors"])
    _same(_keyed(got["executors"], key), want)
    moved = releval.changes(per_query, baseline="system=bm25",
                            candidates=["system=dense", "system=hybrid"], queries=queries,
                            queries_columns=COLUMNS).collect()
    mkey = (S.CANDIDATE, S.MEASURE_KEY, S.QUERY_ID)
    _same(_keyed(got["moved"], mkey), _keyed([r.asDict() for r in moved], mkey))
    assert got["error"].startswith("queries DataFrame: column 'qid': duplicate_query_id")
    assert json.dumps(got["error"])  # the message names the row
    assert "'query_id': 'q00'" in got["error"]
