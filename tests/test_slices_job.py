"""The batch job's ``[queries]`` section on the sample's queries table: slice and weighted rows
in the aggregate table, bad queries rows in the quarantine, the summary's accounts; and the
sample's design (dense gains over bm25 on most queries, loses on most searches)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from support.batch_support import config_at, read, write_config

from releval.config import QueriesSource
from releval.core import columns as S
from releval.job.batch import run_job
from releval.job.sample import DATES, SampleShape, generate_queries, write_sample

pytestmark = pytest.mark.slow  # whole batch jobs in this process, and their views

SHAPE = SampleShape(queries=200, docs_per_query=20, judged_per_query=10, corpus=2000,
                    dates=DATES[:1])


@pytest.fixture(scope="module")
def job(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("slices_job")
    run, qrels, queries = (str(folder / n) for n in ("search_log", "qrels", "queries"))
    write_sample(spark, run_path=run, qrels_path=qrels, queries_path=queries, shape=SHAPE)
    # two bad rows appended: q00000 again (both its rows are quarantined) and a negative weight
    bad = spark.createDataFrame([("q00000", "head", "en-US", 3), ("q99999", "head", "de-DE", -5)],
                                "query_id string, segment string, locale string, searches long")
    bad.write.format("delta").mode("append").save(queries)
    base = config_at(write_config(folder, run, qrels))
    config = dataclasses.replace(
        base, queries=QueriesSource(path=queries, weight="searches",
                                    slices=("segment", "locale")),
        output=dataclasses.replace(base.output, quarantine_path=str(folder / "out" / "quarantine")))
    return config, run_job(spark, config, job_run_id="sliced")


def test_the_job_writes_slice_and_weighted_rows_and_quarantines_bad_queries_rows(spark, job):
    config, done = job
    aggregate = read(spark, config.output.aggregate_path or "")
    segments = {r[0] for r in aggregate.where(F.col(S.SLICE) == "segment")
                .select(S.SLICE_VALUE).distinct().collect()}
    # q00000 lost its attributes (both its rows quarantined): (unlisted)
    assert segments == {"head", "torso", "tail", "(unlisted)"}
    assert aggregate.where("slice = 'locale'").select(S.SLICE_VALUE).distinct().count() == 5
    weighted = aggregate.where("averaging = 'weighted' AND slice IS NULL AND measure_key = 'AP'")
    assert weighted.count() == 3  # one per system
    quarantine = read(spark, str(Path(config.output.quarantine_path or "")))
    reasons = sorted((r[S.RAW][S.QUERY_ID], r[S.REASON_CODE]) for r in
                     quarantine.where("input = 'queries'").collect())
    assert reasons == [("q00000", "duplicate_query_id"), ("q00000", "duplicate_query_id"),
                       ("q99999", "invalid_weight")]
    quality = done.summary.quality
    # 200 rows + 2 appended = 202 read = 199 used (all but q00000) + 3 quarantined
    assert (quality.queries.input, quality.queries.used, quality.queries.quarantined_total) == (
        202, 199, 3)
    # q00000 is scored for each of the 3 systems on the one date and not listed
    assert quality.unlisted == 3
    assert "the queries input does not list: 3" in done.render()


def test_the_sample_dense_gains_on_queries_and_loses_on_searches(spark, job):
    config, _ = job
    aggregate = read(spark, config.output.aggregate_path or "").where(
        "measure_key = 'nDCG@10'")

    def value(system: str, averaging: str, slice_value: str | None = None) -> float:
        where = (F.col("system") == system) & (F.col(S.AVERAGING) == averaging)
        where &= (F.col(S.SLICE_VALUE) == slice_value) if slice_value else F.col(S.SLICE).isNull()
        return aggregate.where(where).first()[S.VALUE]

    assert value("dense", "macro") > value("bm25", "macro")
    assert value("dense", "weighted") < value("bm25", "weighted")
    assert value("dense", "macro", "head") < value("bm25", "macro", "head")
    assert value("dense", "macro", "tail") > value("bm25", "macro", "tail")
    queries = generate_queries(SHAPE)
    head = queries[queries.segment == "head"]
    assert len(head) == 20 and head.searches.sum() > 0.8 * queries.searches.sum()


def test_the_wide_view_and_releval_sql_show_the_slices(spark, job):
    from releval.io.views import ViewSpec, aggregate_view_sql, table_measure_keys, table_source
    from releval.sql import query

    config, _ = job
    path = config.output.aggregate_path or ""
    aggregate = read(spark, path).where("measure_key = 'nDCG@10' AND system = 'dense'")
    spec = ViewSpec(source=table_source(path=path, table=None, dialect="spark"),
                    measure_keys=tuple(table_measure_keys(spark, config)),
                    partition_columns=("system", "date"))
    wide = spark.sql(aggregate_view_sql(spec)).where("system = 'dense'")
    head = wide.where("slice = 'segment' AND slice_value = 'head'").first()
    macro = aggregate.where("slice_value = 'head' AND averaging = 'macro'").first()
    assert (head.ndcg_at_10, head.num_queries) == (macro[S.VALUE], macro[S.NUM_QUERIES])
    overall = wide.where("slice IS NULL").first()
    weighted = aggregate.where("slice IS NULL AND averaging = 'weighted'").first()
    assert overall.ndcg_at_10_weighted == weighted[S.VALUE]
    assert overall.num_queries == aggregate.where(
        "slice IS NULL AND averaging = 'macro'").first()[S.NUM_QUERIES]
    # 1 overall + 4 segment values + 5 locale values per run partition
    assert wide.count() == 10
    found = query(config, "SELECT slice_value, value FROM aggregate WHERE system = 'dense' "
                  "AND measure_key = 'nDCG@10' AND slice = 'segment' AND averaging = 'macro' "
                  "ORDER BY slice_value")
    assert list(found.slice_value) == ["(unlisted)", "head", "tail", "torso"]
    assert found.value[1] == macro[S.VALUE]
