"""``releval views`` of path tables: the SQL from the aggregate table's keys, with no Spark."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from releval.cli import main

ROOT = Path(__file__).resolve().parents[1]
LOCAL = str(ROOT / "conf" / "local.toml")

DUCKDB = '''CREATE OR REPLACE VIEW "per_query_wide" AS
SELECT
  "system",
  "date",
  query_id,
  MAX(CASE WHEN measure_key = 'num_ret' THEN value END) AS num_ret,
  MAX(CASE WHEN measure_key = 'P@5' THEN value END) AS p_at_5,
  MAX(CASE WHEN measure_key = 'RR' THEN value END) AS rr,
  MAX(job_run_id) AS job_run_id,
  MAX(negative_labels) AS negative_labels,
  MAX(depth) AS depth,
  MAX(answer_score) AS answer_score,
  MAX(window_size) AS window_size,
  MAX(weight) AS weight,
  ANY_VALUE(slices) AS slices
FROM delta_scan('warehouse/releval/per_query')
GROUP BY "system", "date", query_id;

CREATE OR REPLACE VIEW "aggregate_wide" AS
SELECT
  "system",
  "date",
  slice,
  slice_value,
  MAX(CASE WHEN averaging <> 'weighted' THEN num_queries END) AS num_queries,
  MAX(CASE WHEN measure_key = 'num_ret' AND averaging IN ('macro', 'sum') THEN value END) AS num_ret,
  MAX(CASE WHEN measure_key = 'P@5' AND averaging IN ('macro', 'sum') THEN value END) AS p_at_5,
  MAX(CASE WHEN measure_key = 'RR' AND averaging IN ('macro', 'sum') THEN value END) AS rr,
  MAX(CASE WHEN measure_key = 'P@5' AND averaging = 'macro' THEN ci_low END) AS p_at_5_ci_low,
  MAX(CASE WHEN measure_key = 'P@5' AND averaging = 'macro' THEN ci_high END) AS p_at_5_ci_high,
  MAX(CASE WHEN measure_key = 'RR' AND averaging = 'macro' THEN ci_low END) AS rr_ci_low,
  MAX(CASE WHEN measure_key = 'RR' AND averaging = 'macro' THEN ci_high END) AS rr_ci_high,
  MAX(CASE WHEN measure_key = 'P@5' AND averaging = 'weighted' THEN value END) AS p_at_5_weighted,
  MAX(CASE WHEN measure_key = 'RR' AND averaging = 'weighted' THEN value END) AS rr_weighted,
  CASE WHEN COUNT(DISTINCT CASE WHEN averaging <> 'weighted' THEN ci_method END) > 1 THEN 'mixed' ELSE MAX(CASE WHEN averaging <> 'weighted' THEN ci_method END) END AS ci_method,
  MAX(ci_level) AS ci_level,
  MAX(job_run_id) AS job_run_id,
  MAX(negative_labels) AS negative_labels,
  MAX(depth) AS depth
FROM delta_scan('warehouse/releval/aggregate')
GROUP BY "system", "date", slice, slice_value;
'''


@pytest.fixture
def no_spark(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("releval views of path tables started a SparkSession")

    monkeypatch.setattr("releval.runtime.session.build_session", refuse)


@pytest.fixture
def warehouse(tmp_path, monkeypatch):
    """conf/local.toml's aggregate table (relative paths) with two run partitions' keys."""
    monkeypatch.chdir(tmp_path)
    write_deltalake("warehouse/releval/aggregate",
                    pa.table({"measure_key": ["RR", "P@5", "num_ret"] * 2}))
    return tmp_path


def test_views_of_path_tables_without_spark(no_spark, warehouse, capsys):
    # conf/local.toml partitions runs by system and date; the keys sorted by name (case
    # ignored): num_ret, P@5, RR; num_ret is a count, with no interval columns
    assert main(["views", "--config", LOCAL, "--dialect", "duckdb"]) == 0
    assert capsys.readouterr().out == DUCKDB


def test_spark_views_of_path_tables_name_absolute_paths(no_spark, warehouse, capsys):
    assert main(["views", "--config", LOCAL]) == 0
    out = capsys.readouterr().out
    # Spark: temporary views, back-quotes, delta.`<absolute path>`
    assert out == (DUCKDB.replace('CREATE OR REPLACE VIEW', 'CREATE OR REPLACE TEMP VIEW')
                   .replace('"', "`")
                   .replace("delta_scan('warehouse/", f"delta.`{warehouse}/warehouse/")
                   .replace("')\n", "`\n"))


def test_views_before_the_job_ran(no_spark, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["views", "--config", LOCAL]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "releval: error: Delta table warehouse/releval/aggregate does not exist: run the "
        "evaluation job first (its measure keys are the views' columns)"]
