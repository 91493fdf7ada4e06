"""The batch job in-process: incremental selection, exact replaceWhere, lineage, schema versions.

The crash, re-run and concurrent-process tests are in test_batch_job_processes.py.
"""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import pytest
from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from support.batch_support import (
    AGGREGATE_ROWS_PER_DATE,
    D27,
    D28,
    D29,
    PER_QUERY_ROWS_PER_DATE,
    config_at,
    history,
    read,
    sorted_rows,
    version,
    write_config,
    write_inputs,
)

from releval.core import columns as S
from releval.core.measures import parse_measures
from releval.core.measures.judged import with_judged_measures
from releval.errors import SchemaVersionError, WriteConflictError
from releval.evaluation.evaluate import evaluate
from releval.evaluation.partitions import parse_selection
from releval.io import tables
from releval.io.atomic import replace_partitions
from releval.io.readers import read_qrels, read_run
from releval.io.writers import SCHEMA_VERSION_PROPERTY, with_comments
from releval.job import lineage
from releval.job.batch import run_job
from releval.job.migrations import migrate_table

pytestmark = pytest.mark.slow  # whole batch jobs in this process: reads, checks, Delta commits

PARTS = ("system", "date")


@pytest.fixture(scope="module")
def inputs(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    return write_inputs(spark, tmp_path_factory.mktemp("inputs"))


def select(*partitions: str, pending: bool = False):  # noqa: ANN201 - a PartitionSelection
    return parse_selection(list(partitions), pending=pending, run_partition_columns=PARTS)


def dates(spark: SparkSession, path: str) -> dict[str, int]:
    rows = read(spark, path).groupBy("date").count().collect()
    return {r["date"]: r["count"] for r in rows}


def test_incremental_runs_replace_only_the_selected_partitions(
    spark: SparkSession, inputs: tuple[str, str], tmp_path: Path
) -> None:
    config = config_at(write_config(tmp_path, *inputs))
    pq, agg = config.output.per_query_path or "", config.output.aggregate_path or ""

    first = run_job(spark, config, select(f"date={D27}"), job_run_id="run-27").record
    assert first.status == lineage.SUCCEEDED
    assert [p["date"] for p in first.partitions] == [D27, D27, D27]
    assert dates(spark, pq) == {D27: PER_QUERY_ROWS_PER_DATE}
    assert dates(spark, agg) == {D27: AGGREGATE_ROWS_PER_DATE}
    before_27 = sorted_rows(read(spark, pq).where(F.col("date") == D27), drop=())

    # --pending: the run holds 3 dates, the outputs hold 27 -> 28 and 29 are evaluated
    second = run_job(spark, config, select(pending=True), job_run_id="run-pending").record
    assert sorted({p["date"] for p in second.partitions}) == [D28, D29]
    assert dates(spark, pq) == {d: PER_QUERY_ROWS_PER_DATE for d in (D27, D28, D29)}
    assert dates(spark, agg) == {d: AGGREGATE_ROWS_PER_DATE for d in (D27, D28, D29)}
    # date 27 untouched, row for row, job_run_id included
    assert sorted_rows(read(spark, pq).where(F.col("date") == D27), drop=()) == before_27
    ids = {r[0] for r in read(spark, pq).select(S.JOB_RUN_ID).distinct().collect()}
    assert ids == {"run-27", "run-pending"}

    # nothing pending: no commit to the output tables, one run-log row saying so
    versions = (version(spark, pq), version(spark, agg))
    none_done = run_job(spark, config, select(pending=True), job_run_id="run-none")
    third = none_done.record
    assert third.status == lineage.NOTHING_PENDING and third.partitions == []
    assert "\n  rows written: none\n" in none_done.render() + "\n"
    assert (version(spark, pq), version(spark, agg)) == versions
    # one commit per table per run that wrote: the first creates the table with its rows
    # (one CREATE TABLE AS SELECT), the next replaces its partitions
    assert [(op, meta) for _, op, meta in history(spark, agg)] == [
        ("CREATE TABLE AS SELECT", "releval job_run_id=run-27"),
        ("WRITE", "releval job_run_id=run-pending"),
    ]
    log = read(spark, str(tmp_path / "out" / "run_log"))
    assert sorted(r[0] for r in log.select("status").collect()) == [
        "nothing_pending", "succeeded", "succeeded"
    ]


def test_a_partition_that_now_yields_no_rows_is_cleared_and_lineage_reproduces_the_old_result(
    spark: SparkSession, tmp_path: Path
) -> None:
    run_path, qrels_path = write_inputs(spark, tmp_path / "in")
    config = config_at(write_config(tmp_path, run_path, qrels_path))
    agg = config.output.aggregate_path or ""
    log_path = str(tmp_path / "out" / "run_log")
    old = run_job(spark, config, select(f"date={D28}..{D29}"), job_run_id="old").record
    assert old.run_version == 0 and old.qrels_version == 0

    # date 29 disappears from the input (input version 1); re-running the same range clears it
    DeltaTable.forPath(spark, run_path).delete(F.col("date") == D29)
    new = run_job(spark, config, select(f"date={D28}..{D29}"), job_run_id="new").record
    assert new.run_version == 1
    assert dates(spark, agg) == {D28: AGGREGATE_ROWS_PER_DATE}

    # "which qrels and which code produced this number?" in one SQL query
    row = spark.sql(
        f"""SELECT l.job_run_id, l.qrels_source, l.qrels_version, l.qrels_filter,
                   l.releval_version, l.config_hash, l.run_version
            FROM delta.`{agg}` a JOIN delta.`{log_path}` l USING (job_run_id)
            WHERE a.date = '{D28}' AND a.system = 'bm25' AND a.measure_key = 'AP'
              AND a.averaging = 'macro'"""
    ).collect()
    assert [tuple(r) for r in row] == [
        ("new", f"delta:{qrels_path}", 0, "qrels_version = 'v1'", lineage.releval_version(),
         lineage.config_hash(config), 1)
    ]

    # reproduce the old date-29 numbers: the aggregate table at the old run's version equals
    # a fresh evaluation of the inputs read at the versions the run log recorded
    then = read(spark, agg, old.aggregate_version).where(F.col("date") == D29)
    run_then = read_run(spark, config.run, version=old.run_version).where(F.col("date") == D29)
    qrels_then = read_qrels(spark, config.qrels, version=old.qrels_version)
    again = evaluate(
        run_then, qrels_then,
        measures=with_judged_measures(  # the job adds Judged@k for each evaluated k
            parse_measures(config.evaluation.measures, relevance_level=1), relevance_level=1
        ),
        partition_columns=PARTS,
    ).aggregate
    # (values and interval ends to 12 digits: a mean's last bit depends on the order Spark
    # sums in)
    def rounded(df):  # noqa: ANN001, ANN202
        return sorted_rows(df.select(*[c for c in then.columns if c != S.JOB_RUN_ID])
                           .withColumn(S.VALUE, F.round(S.VALUE, 12))
                           .withColumn(S.CI_LOW, F.round(S.CI_LOW, 12))
                           .withColumn(S.CI_HIGH, F.round(S.CI_HIGH, 12)))

    assert rounded(then) == rounded(again)


def test_an_old_schema_version_is_refused_until_migrated(
    spark: SparkSession, inputs: tuple[str, str], tmp_path: Path
) -> None:
    config = config_at(write_config(tmp_path, *inputs))
    pq = config.output.per_query_path or ""
    # a per-query table of schema version 0 (no job_run_id column, no version property)
    old_fields = [f for f in tables.per_query_schema([]).fields
                  if f.name not in (S.JOB_RUN_ID, S.NEGATIVE_LABELS, S.DEPTH,
                                 S.ANSWER_SCORE, S.WINDOW_SIZE, S.WEIGHT, S.SLICES)]
    (DeltaTable.create(spark).location(pq)
     .addColumn("system", "STRING").addColumn("date", "STRING").addColumns(old_fields)
     .partitionedBy("date").execute())
    old_row = ("bm25", D29, "q1", "P", 5, 1, False, "P@5", 0.2, 10, 3, 1)
    spark.createDataFrame([old_row], T.StructType([
        T.StructField("system", T.StringType()), T.StructField("date", T.StringType()), *old_fields
    ])).write.format("delta").mode("append").save(pq)
    with pytest.raises(SchemaVersionError, match=r"releval.schema_version = '0'.*docs/migrations.md"):
        run_job(spark, config, select(f"date={D27}"), job_run_id="refused")
    assert version(spark, pq) == 1  # nothing written (version 1 is the old row's append)
    log = read(spark, str(tmp_path / "out" / "run_log"))
    assert [tuple(r) for r in log.select(S.JOB_RUN_ID, "status").collect()] == [("refused", "failed")]

    assert migrate_table(spark, kind="per_query", path=pq, table=None,
                         config=config) == ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12"]
    assert migrate_table(spark, kind="per_query", path=pq, table=None, config=config) == ["12"]
    run_job(spark, config, select(f"date={D27}"), job_run_id="migrated")
    table = read(spark, pq)
    assert table.columns[-7:] == [S.JOB_RUN_ID, S.NEGATIVE_LABELS, S.DEPTH, S.ANSWER_SCORE,
                                  S.WINDOW_SIZE, S.WEIGHT, S.SLICES]
    assert dates(spark, pq) == {D27: PER_QUERY_ROWS_PER_DATE, D29: 1}
    # the old row: no job run id, the rule it was computed with (negative label = judged)
    # and no depth (every document)
    old = table.where(F.col("date") == D29).first()
    assert (old[S.VALUE], old[S.JOB_RUN_ID], old[S.NEGATIVE_LABELS], old[S.DEPTH]) == (
        0.2, None, "judged", None)


def test_version_2_tables_get_the_depth_column_and_a_job_with_a_depth_fills_it(
    spark: SparkSession, inputs: tuple[str, str], tmp_path: Path
) -> None:
    config = config_at(write_config(tmp_path, *inputs))
    text = T.StringType()
    parts = [T.StructField("system", text), T.StructField("date", text)]
    # both tables as version 2 wrote them (no depth), each with a row of D29
    old_rows = {
        "per_query": (config.output.per_query_path or "", tables.per_query_schema(parts),
                      ("bm25", D29, "q1", "P", 5, 1, False, "P@5", 0.2, 10, 3, 1, "old",
                       "unjudged")),
        "aggregate": (config.output.aggregate_path or "", tables.aggregate_schema(parts),
                      ("bm25", D29, "P", 5, 1, False, "P@5", "macro", 0.2, 20, "old", "unjudged",
                       0.1, 0.3, "t", 0.95)),
    }
    for kind, (path, schema, row) in old_rows.items():
        v2_fields = [f for f in schema.fields
                     if f.name not in (S.DEPTH, S.ANSWER_SCORE, S.WINDOW_SIZE, S.SLICE,
                                       S.SLICE_VALUE, S.WEIGHT, S.SLICES)]
        (DeltaTable.create(spark).location(path).addColumns(v2_fields).partitionedBy("date")
         .property(SCHEMA_VERSION_PROPERTY, "2").execute())
        spark.createDataFrame([row], T.StructType(v2_fields)).write.format("delta").mode(
            "append").save(path)
        with pytest.raises(SchemaVersionError, match=r"releval.schema_version = '2'"):
            run_job(spark, config, select(f"date={D27}"), job_run_id="refused")
        assert migrate_table(spark, kind=kind, path=path, table=None,
                             config=config) == ["2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12"]
        table = read(spark, path)
        field = table.schema[S.DEPTH]
        # after version 2's columns (answer_score, version 4's, follows in the per-query
        # table), a nullable int with its comment; the old row: no depth (all)
        assert table.columns[len(v2_fields)] == S.DEPTH and field.nullable
        assert field.dataType == T.IntegerType()
        assert field.metadata["comment"] == tables.PER_QUERY_COMMENTS[S.DEPTH]
        assert [(r[S.VALUE], r[S.DEPTH]) for r in table.collect()] == [(0.2, None)]

    whole = run_job(spark, config, select(f"date={D27}"), job_run_id="whole").summary
    deep = dataclasses.replace(config, evaluation=dataclasses.replace(config.evaluation, depth=3))
    cut = run_job(spark, deep, select(f"date={D27}"), job_run_id="deep").summary
    assert whole is not None and cut is not None
    # the same rows read and used: the ones past the depth are used, not quarantined
    assert whole.rows_beyond_depth == 0 and cut.rows_beyond_depth > 0
    assert (cut.quality.run.input, cut.quality.run.used, cut.quality.run.quarantined) == (
        whole.quality.run.input, whole.quality.run.used, whole.quality.run.quarantined)
    assert (f"depth 3: each ranking evaluated at its first 3 documents; {cut.rows_beyond_depth} "
            "ranked run rows beyond it (used, not evaluated)") in cut.render()
    per_query = read(spark, config.output.per_query_path or "")
    new = per_query.where(F.col("date") == D27)
    # D27 replaced (not appended to), every row cut at 3; D29's migrated row untouched
    assert new.count() == PER_QUERY_ROWS_PER_DATE
    assert {r[S.DEPTH] for r in new.collect()} == {3}
    assert max(r[S.NUM_RET] for r in new.collect()) == 3
    old = per_query.where(F.col("date") == D29).collect()
    assert [(r[S.JOB_RUN_ID], r[S.DEPTH]) for r in old] == [("old", None)]
    aggregate = read(spark, config.output.aggregate_path or "").where(F.col("date") == D27)
    assert {r[S.DEPTH] for r in aggregate.collect()} == {3}


def test_two_writers_on_the_same_partition_leave_exactly_one_copy(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = str(tmp_path / "table")
    schema = with_comments(tables.aggregate_schema([]), tables.AGGREGATE_COMMENTS)
    schema = T.StructType([T.StructField("date", T.StringType(), True), *schema.fields])

    def rows(job: str):  # noqa: ANN202
        # 2 rows for date 29 per writer
        return spark.createDataFrame(
            # ..., num_queries, job_run_id, negative_labels, ci_low, ci_high, ci_method,
            # ci_level, depth, slice, slice_value
            [(D29, "P", 5, 1, False, "P@5", "macro", 0.5, 10, job, "unjudged", 0.2, 0.8, "t", 0.95,
              None, None, None),
             (D29, "AP", None, 1, False, "AP", "macro", 0.25, 10, job, "unjudged", 0.1, 0.4, "t",
              0.95, None, None, None)],
            schema,
        )

    frames = {job: rows(job) for job in ("a", "b")}
    errors: list[BaseException] = []

    def write(job: str) -> None:
        try:
            replace_partitions(frames[job], path=path, table=None, schema=schema,
                               partition_columns=["date"], description="t",
                               predicate=f"date = '{D29}'", user_metadata=job,
                               backoff_seconds=0.2)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(job,)) for job in frames]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    table = read(spark, path)
    # one writer's 2 rows, not 4: the later commit replaced the earlier one's
    assert table.count() == 2
    assert table.select(S.JOB_RUN_ID).distinct().count() == 1


def test_a_folder_that_is_not_a_delta_table_fails_with_deltas_error(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # someone's Parquet files where the table should be: Delta's own error at once, not
    # retried as if another job were creating the table, not a WriteConflictError
    (tmp_path / "table").mkdir()
    (tmp_path / "table" / "part-0.parquet").write_bytes(b"not delta")
    schema = with_comments(tables.aggregate_schema([]), tables.AGGREGATE_COMMENTS)
    rows = spark.createDataFrame(
        [("P", 5, 1, False, "P@5", "macro", 0.5, 10, "j", "unjudged", None, None, None, None, None,
          None, None)],
        schema
    )
    with pytest.raises(Exception, match=r"DELTA_\w+.*table.*is not a Delta table") as caught:
        replace_partitions(rows, path=str(tmp_path / "table"), table=None, schema=schema,
                           partition_columns=[], description="t", predicate=None,
                           user_metadata="j", max_attempts=3, backoff_seconds=0.01)
    assert not isinstance(caught.value, WriteConflictError)
    assert "retrying" not in capsys.readouterr().out
