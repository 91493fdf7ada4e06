"""releval's Python API on a Spark Connect session: evaluate, every table of the Result, its
accounts and write (Delta on the server), compare and measures give what they give on the
suite's classic session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chispa import assert_approx_df_equality
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from support.connect_support import CLIENT_PROLOGUE, MEASURES, api_inputs, last_json, run_client

import releval

pytestmark = pytest.mark.slow  # a Spark Connect server and a client process

TABLES = ("per_query", "aggregate", "quarantine", "attribution")
#: one row per (system, question): the ranking and the gold grades in arrays and a map
SHAPED = [("s0", "q1", ["d1", "d2", "d3"], {"d2": 2, "d9": 1}),
          ("s0", "q2", ["d4", "d5"], {"d4": 1}),
          ("s1", "q1", ["d2", "d1"], {"d2": 2, "d9": 1}),
          ("s1", "q2", [], {"d4": 1})]
SHAPED_SCHEMA = "system string, question string, retrieved array<string>, grades map<string,int>"
SHAPED_ARGS = dict(measures=["nDCG@10", "P@2", "RR"], partition_by=["system"],
                   columns={"query_id": "question", "ranked": "retrieved"},
                   qrels_columns={"graded": "grades"})

SCRIPT = CLIENT_PROLOGUE + f"""
import releval
from releval.runtime.mode import is_connect
from support.connect_support import api_inputs

out = sys.argv[1]
run, qrels, answers = api_inputs(spark)
result = releval.evaluate(run, qrels, measures={MEASURES!r}, partition_by=["system"],
                          answers=answers)
for name in {TABLES!r}:  # each table as the Result gives it, then through result.write
    getattr(result, name).write.format("parquet").save(f"{{out}}/frame_{{name}}")
result.write(**{{name: f"{{out}}/{{name}}" for name in {TABLES!r}}})
comparison = releval.compare(result.per_query, baseline="system=s0",
                             candidates=["system=s1", "system=s2"], seed=7)
comparison.write.format("delta").save(f"{{out}}/comparison")
import mlflow
mlflow.set_tracking_uri(f"file://{{out}}/mlruns")
shaped = releval.evaluate(spark.createDataFrame({SHAPED!r}, {SHAPED_SCHEMA!r}), None,
                          **{SHAPED_ARGS!r})
shaped.per_query.write.format("parquet").save(f"{{out}}/shaped_per_query")
print(json.dumps({{"connect": is_connect(spark), "accounts": result.accounts.render(),
                  "measures": releval.measures(), "mlflow_run": shaped.log_mlflow(),
                  "repr": repr(result), "html": result._repr_html_(),
                  "built_once": result.per_query is result.per_query,
                  "dir": [n for n in releval.__all__ if n in dir(releval)]}}))
"""


def _sorted(df: DataFrame) -> DataFrame:
    """``df`` with its map and array columns as JSON text, ordered by its text columns first
    (the keys), then the others."""
    cols = [F.to_json(df[f.name]).alias(f.name)
            if isinstance(f.dataType, T.MapType | T.ArrayType) else df[f.name]
            for f in df.schema.fields]
    out = df.select(*cols)
    keys = [f.name for f in out.schema.fields if isinstance(f.dataType, T.StringType)]
    return out.orderBy(*keys, *[c for c in out.columns if c not in keys])


def test_evaluate_compare_and_write_on_spark_connect(
    spark: SparkSession, connect_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "connect"
    got = last_json(run_client(connect_url, SCRIPT, str(out), cwd=tmp_path))
    assert got["connect"] is True

    run, qrels, answers = api_inputs(spark)
    classic = releval.evaluate(run, qrels, measures=MEASURES, partition_by=["system"],
                               answers=answers)
    assert got["accounts"] == classic.accounts.render()
    assert "quarantined rows: 2" in got["accounts"]  # the null doc id and the NaN score
    assert got["measures"] == json.loads(json.dumps(releval.measures()))
    # how the result shows itself in a notebook: as on the classic session, short
    assert got["repr"] == repr(classic) and len(got["repr"].splitlines()) <= 40
    assert got["html"] == classic._repr_html_()
    assert got["built_once"] is True and got["dir"] == releval.__all__
    mine = tmp_path / "classic"
    classic.write(**{name: str(mine / name) for name in TABLES})
    for name in TABLES:
        frame, expected = spark.read.parquet(str(out / f"frame_{name}")), getattr(classic, name)
        written = spark.read.format("delta").load(str(out / name))
        expected_written = spark.read.format("delta").load(str(mine / name))
        assert expected.count() > 0, name
        for actual, wanted in ((frame, expected), (written, expected_written)):
            assert_approx_df_equality(_sorted(actual), _sorted(wanted), 1e-12,
                                      ignore_nullable=True)
    compared = releval.compare(classic.per_query, baseline="system=s0",
                               candidates=["system=s1", "system=s2"], seed=7)
    written = spark.read.format("delta").load(str(out / "comparison"))
    assert written.count() == compared.count() > 0
    assert_approx_df_equality(_sorted(written), _sorted(compared.select(*written.columns)),
                              1e-12, ignore_nullable=True)
    # one row per query, from the Connect client, and logged to MLflow from there
    shaped = releval.evaluate(spark.createDataFrame(SHAPED, SHAPED_SCHEMA), None, **SHAPED_ARGS)
    assert_approx_df_equality(_sorted(spark.read.parquet(str(out / "shaped_per_query"))),
                              _sorted(shaped.per_query), 1e-12, ignore_nullable=True)
    # s1 retrieved nothing for q2: it scores 0 there (RR: s1 1/1 on q1, 0 on q2)
    macro = {(r.system, r.measure_key): r.value
             for r in shaped.aggregate.where("averaging = 'macro'").collect()}
    assert macro[("s1", "RR")] == pytest.approx(0.5)
    import mlflow

    mlflow.set_tracking_uri(f"file://{out}/mlruns")
    metrics = mlflow.get_run(got["mlflow_run"]).data.metrics
    assert len(metrics) == len(macro) and metrics["s1/rr"] == pytest.approx(0.5)
