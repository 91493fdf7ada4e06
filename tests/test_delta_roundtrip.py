"""The job end to end on Delta: write both tables, read them back, check schema and values."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from chispa import assert_df_equality
from delta.tables import DeltaTable
from pyspark.sql import functions as F

from releval.config import Config, EvaluationSettings, OutputSettings, QrelsSource, RunSource
from releval.core import columns as S
from releval.io import tables
from releval.job import pipeline

pytestmark = pytest.mark.slow  # whole batch jobs in this process: reads, checks, Delta commits

# Two systems on one date, in a log whose columns are named like production logs.
LOG = [
    # query, item, score, position, system, date
    ("q1", "A", 0.9, 1, "new", "2026-11-29"),
    ("q1", "B", 0.8, 2, "new", "2026-11-29"),
    ("q1", "C", 0.7, 3, "new", "2026-11-29"),
    ("q1", "C", 0.9, 1, "old", "2026-11-29"),
    ("q1", "X", 0.8, 2, "old", "2026-11-29"),
    ("q9", "A", 0.5, 1, "old", "2026-11-29"),  # q9 has no qrels: not scored
]
QRELS = [("q1", "A", 2, "v1"), ("q1", "B", 0, "v1"), ("q1", "C", 1, "v1"), ("q2", "A", 1, "v1"),
         ("q1", "A", 0, "v0")]  # the v0 judgment is filtered out by the config


def make_config(spark, folder: Path) -> Config:
    """The two input tables written under ``folder``, and a job config over them."""
    run_path, qrels_path = str(folder / "log"), str(folder / "qrels")
    spark.createDataFrame(
        LOG, "query_id string, item_id string, score double, position int, system string, date string"
    ).write.format("delta").partitionBy("system", "date").save(run_path)
    spark.createDataFrame(
        QRELS, "query_id string, doc_id string, relevance int, qrels_version string"
    ).write.format("delta").save(qrels_path)
    return Config(
        run=RunSource(path=run_path, doc_id="item_id", rank="position",
                      partition_columns=("system", "date"), rank_by="rank"),
        qrels=QrelsSource(path=qrels_path, filter="qrels_version = 'v1'"),
        evaluation=EvaluationSettings(measures=("P@2", "RR", "nDCG@3", "num_ret")),
        output=OutputSettings(
            per_query_path=str(folder / "out" / "per_query"),
            aggregate_path=str(folder / "out" / "aggregate"),
            partition_columns=("date",),
        ),
    )


@pytest.fixture()
def config(spark, tmp_path) -> Config:
    return make_config(spark, tmp_path)


@pytest.fixture(scope="module")
def written(spark, tmp_path_factory) -> tuple[Config, pipeline.Summary]:
    """One job over a fresh config, shared by the tests that only read what it wrote."""
    config = make_config(spark, tmp_path_factory.mktemp("roundtrip"))
    return config, pipeline.run(spark, config)


def test_job_writes_both_tables(spark, written):
    config, summary = written
    per_query = pipeline.read_per_query(spark, config)
    got = {(r["system"], r[S.QUERY_ID], r[S.MEASURE_KEY]): r[S.VALUE] for r in per_query.collect()}
    # new: A(2) B(0) C(1): P@2 = 1/2, RR = 1, DCG@3 = 2/1 + 0 + 1/log2(4); IDCG@3 = 2 + 1/log2(3)
    assert got[("new", "q1", "P@2")] == 0.5
    assert got[("new", "q1", "RR")] == 1.0
    assert got[("new", "q1", "nDCG@3")] == pytest.approx((2 + 1 / 2) / (2 + 1 / math.log2(3)))
    # old: C(1) X(unjudged): P@2 = 1/2, DCG@3 = 1; q2 (judged, not served) scores 0 in both
    assert got[("old", "q1", "nDCG@3")] == pytest.approx(1 / (2 + 1 / math.log2(3)))
    assert got[("old", "q2", "RR")] == 0.0 and got[("new", "q2", "RR")] == 0.0
    assert ("old", "q9", "RR") not in got
    # 2 systems x 2 scored queries x (4 measures + Judged@2 and Judged@3, which the job
    # adds for every cutoff it evaluates)
    assert summary.per_query_rows == per_query.count() == 24
    assert got[("old", "q1", "Judged@2")] == 0.5  # C judged, X not
    assert (summary.run_rows, summary.qrels_rows) == (6, 4)
    assert summary.queries_scored == 2 and summary.queries_missing_from_run == 2
    assert summary.queries_without_qrels == 1

    aggregate = pipeline.read_aggregate(spark, config)
    p2 = {(r["system"], r[S.AVERAGING]): (r[S.VALUE], r[S.NUM_QUERIES])
          for r in aggregate.where(F.col(S.MEASURE_KEY) == "P@2").collect()}
    # (1/2 + 0) / 2 queries, macro and micro alike here
    assert p2 == {("new", "macro"): (0.25, 2), ("new", "micro"): (0.25, 2),
                  ("old", "macro"): (0.25, 2), ("old", "micro"): (0.25, 2)}
    assert summary.aggregate_rows == aggregate.count()
    # P@2 of "new" over q1, q2: 1/2 and 0, mean 1/4, s = sqrt(2 * (1/4)^2) = 0.353553...,
    # t_{0.975, 1} = 12.7062047, half = 12.7062047 * 0.353553 / sqrt(2) = 3.1765512:
    # [-2.93, 3.43], cut at P's range [0, 1]
    new = aggregate.where((F.col("system") == "new") & (F.col(S.MEASURE_KEY) == "P@2")
                          & (F.col(S.AVERAGING) == "macro")).first()
    assert (new[S.CI_LOW], new[S.CI_HIGH]) == (0.0, 1.0)
    assert (new[S.CI_METHOD], new[S.CI_LEVEL]) == ("t-clipped", 0.95)
    # every mean rests on 2 queries (q2 scored 0 in both systems): below 50, a warning
    text = summary.render()
    assert "queries per mean: 2 per run partition; each macro value has a 95% t interval" in text
    assert "WARNING: 2 run partition(s) rest on fewer than 50 queries" in text


def test_tables_have_the_documented_schema_and_partitioning(spark, written):
    config, _ = written
    per_query = DeltaTable.forPath(spark, config.output.per_query_path)
    detail = per_query.detail().first()
    assert detail["partitionColumns"] == ["date"]
    # Delta's file statistics only where they can skip a file: the run partition column
    # that does not partition the table ("system"), and job_run_id (null here: no batch job)
    assert detail["properties"][tables.STATS_COLUMNS_PROPERTY] == "`system`,`job_run_id`"
    log = Path(config.output.per_query_path) / "_delta_log" / f"{0:020d}.json"
    adds = [json.loads(line)["add"] for line in log.read_text().splitlines() if '"add"' in line]
    stats = [json.loads(add["stats"]) for add in adds]
    assert stats and all(st["numRecords"] > 0 for st in stats)
    assert all(set(st["minValues"]) == {"system"} for st in stats)
    assert all(set(st["nullCount"]) == {"system", S.JOB_RUN_ID} for st in stats)
    schema = per_query.toDF().schema
    expected_names = ["system", "date", S.QUERY_ID, S.MEASURE, S.CUTOFF, S.REL_LEVEL,
                      S.JUDGED_ONLY, S.MEASURE_KEY, S.VALUE, S.NUM_RET, S.NUM_REL, S.NUM_REL_RET, S.JOB_RUN_ID,
                      S.NEGATIVE_LABELS, S.DEPTH, S.ANSWER_SCORE, S.WINDOW_SIZE, S.WEIGHT, S.SLICES]
    assert schema.fieldNames() == expected_names
    assert schema[S.VALUE].metadata["comment"] == tables.PER_QUERY_COMMENTS[S.VALUE]
    aggregate = DeltaTable.forPath(spark, config.output.aggregate_path).toDF()
    assert aggregate.schema[S.AVERAGING].metadata["comment"].startswith("macro:")
    # negative_labels, the interval columns, depth, the slice columns (and answer_score and
    # window in the per-query table) come last, after job_run_id (docs/migrations.md), all nullable, with
    # their comments
    assert schema.fieldNames()[-6:] == [S.NEGATIVE_LABELS, S.DEPTH, S.ANSWER_SCORE, S.WINDOW_SIZE,
                                        S.WEIGHT, S.SLICES]
    for column in (S.ANSWER_SCORE, S.WINDOW_SIZE, S.WEIGHT, S.SLICES):
        assert schema[column].nullable
        assert schema[column].metadata["comment"] == tables.PER_QUERY_COMMENTS[column]
    assert aggregate.schema.fieldNames()[-9:] == [
        S.JOB_RUN_ID, S.NEGATIVE_LABELS, S.CI_LOW, S.CI_HIGH, S.CI_METHOD, S.CI_LEVEL, S.DEPTH,
        S.SLICE, S.SLICE_VALUE]
    assert all(aggregate.schema[c].nullable
               for c in (S.CI_LOW, S.CI_HIGH, S.CI_METHOD, S.CI_LEVEL, S.DEPTH, S.SLICE,
                         S.SLICE_VALUE))
    assert aggregate.schema[S.CI_LOW].metadata["comment"] == tables.AGGREGATE_COMMENTS[S.CI_LOW]
    for table in (schema, aggregate.schema):
        assert table[S.NEGATIVE_LABELS].metadata["comment"].startswith("What a negative")
        assert table[S.DEPTH].metadata["comment"] == tables.PER_QUERY_COMMENTS[S.DEPTH]
        assert table[S.DEPTH].dataType.simpleString() == "int" and table[S.DEPTH].nullable


def test_rerun_is_idempotent(spark, config):
    pipeline.run(spark, config)
    first = pipeline.read_per_query(spark, config).localCheckpoint()
    pipeline.run(spark, config)
    second = pipeline.read_per_query(spark, config)
    # a map column cannot be sorted: compared as its JSON text
    assert_df_equality(*(t.withColumn(S.SLICES, F.to_json(S.SLICES)) for t in (first, second)),
                       ignore_row_order=True)


def test_quarantine_is_emptied_by_a_clean_rerun_then_left_alone(spark, config, tmp_path):
    import dataclasses

    config = dataclasses.replace(config, run=dataclasses.replace(config.run, rank_by="score"))
    log = DeltaTable.forPath(spark, config.run.path)
    # q1/A served twice by "new" (0.9 and 0.1): the 0.1 row is a duplicate_doc
    spark.createDataFrame(
        [("q1", "A", 0.1, 4, "new", "2026-11-29")], log.toDF().schema
    ).write.format("delta").mode("append").save(config.run.path)
    quarantine_path = str(tmp_path / "out" / "quarantine")

    def quarantined() -> list[tuple]:
        rows = spark.read.format("delta").load(quarantine_path).collect()
        return [(str(r["date"]), r[S.REASON_CODE], r[S.RAW]["score"]) for r in rows]

    summary = pipeline.run(spark, config)
    assert summary.quality is not None and summary.quality.run.quarantined == {"duplicate_doc": 1}
    assert quarantined() == [("2026-11-29", "duplicate_doc", "0.1")]
    log.delete((F.col("item_id") == "A") & (F.col("score") == 0.1))
    pipeline.run(spark, config)  # clean now: the job's partition of the quarantine is emptied
    assert quarantined() == []
    version = DeltaTable.forPath(spark, quarantine_path).history(1).first()["version"]
    pipeline.run(spark, config)  # clean again: nothing to replace, no commit
    assert DeltaTable.forPath(spark, quarantine_path).history(1).first()["version"] == version
