"""A job replaces exactly what it was asked to evaluate.

The outputs' replaceWhere predicate is the config filter AND the selection (for
``--pending`` the listed partitions); the quarantine follows the same rule; null
partition values can be selected, listed and replaced; identifiers from the config
never reach SQL text unquoted.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from support.batch_support import (
    D27,
    D28,
    D29,
    config_at,
    finish,
    read,
    start_job,
    write_config,
    write_inputs,
)

from releval.config import config_from_dict
from releval.core import columns as S
from releval.errors import ConfigError, InputError
from releval.evaluation.partitions import NULL_VALUE, parse_selection
from releval.io import tables
from releval.io.run_log import RUN_LOG_SCHEMA
from releval.io.writers import SCHEMA_VERSION_PROPERTY
from releval.job import lineage
from releval.job.batch import run_job

pytestmark = pytest.mark.slow  # whole batch jobs in this process: reads, checks, Delta commits

PARTS = ["system", "date"]
SYSTEMS = ("bm25", "dense", "hybrid")
DATES = (D27, D28, D29)


@pytest.fixture(scope="module")
def inputs(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    return write_inputs(spark, tmp_path_factory.mktemp("inputs"))


def rows_by_partition(spark: SparkSession, path: str, *, drop: tuple[str, ...] = ()) -> dict:
    """{(system, date): sorted rows (all columns but ``drop``, ``job_run_id`` last)} of a
    Delta table."""
    table = read(spark, path)
    cols = [c for c in table.columns if c not in drop and c != S.JOB_RUN_ID]
    if S.JOB_RUN_ID not in drop:
        cols.append(S.JOB_RUN_ID)
    out: dict[tuple, list] = {}
    for row in table.select(*cols).collect():
        out.setdefault((row["system"], row["date"]), []).append(
            tuple(round(v, 12) if isinstance(v, float) else v for v in row)
        )
    return {k: sorted(v) for k, v in out.items()}


@pytest.mark.slow
def test_nightly_config_filter_replaces_only_that_night(
    spark: SparkSession, inputs: tuple[str, str], tmp_path: Path
) -> None:
    # every date evaluated (here, in this process), then the nightly job with
    # run.filter = "date = '2026-11-29'" and no --partition, run as a scheduler runs it
    # (its own process): it must replace that night's rows and no others
    full = write_config(tmp_path, *inputs)
    config = config_at(full)
    run_job(spark, config, job_run_id="full")
    pq, agg = config.output.per_query_path or "", config.output.aggregate_path or ""
    before = {p: rows_by_partition(spark, p) for p in (pq, agg)}
    assert {d for _, d in before[pq]} == set(DATES)

    nightly = tmp_path / "nightly"
    nightly.mkdir()
    nightly_config = write_config(tmp_path, *inputs, run_filter=f"date = '{D29}'")
    shutil.move(str(nightly_config), nightly / "job.toml")
    out = finish(start_job(nightly / "job.toml", "--job-run-id", "nightly"))

    for path in (pq, agg):
        after = rows_by_partition(spark, path)
        for (system, date), rows in before[path].items():
            if date != D29:  # every other date: the same rows, all columns, job_run_id included
                assert after[(system, date)] == rows, (path, system, date)
            else:  # the night itself: re-evaluated by the nightly job, same values
                assert {r[-1] for r in after[(system, date)]} == {"nightly"}
                assert [r[:-1] for r in after[(system, date)]] == [r[:-1] for r in rows]
        assert set(after) == set(before[path])
    log = read(spark, str(tmp_path / "out" / "run_log")).where(F.col(S.JOB_RUN_ID) == "nightly")
    row = log.first()
    assert row["status"] == lineage.SUCCEEDED
    assert row["replace_predicate"] == f"date = '{D29}'"
    assert "selection: all partitions" in out


# --- the property: any combination of filter, --partition, --from/--to, --pending ---------

FILTERS = {
    None: lambda s, d: True,
    f"date = '{D28}'": lambda s, d: d == D28,
    f"date >= '{D28}'": lambda s, d: d >= D28,
    "system IN ('bm25', 'hybrid')": lambda s, d: s in ("bm25", "hybrid"),
}
PARTITION_ARGS = {
    (): lambda s, d: True,
    (f"date={D27}",): lambda s, d: d == D27,
    ("system=dense",): lambda s, d: s == "dense",
    (f"date={D27},{D29}", "system=bm25,hybrid"): lambda s, d: d != D28 and s != "dense",
    (f"date={D28}..{D29}",): lambda s, d: D28 <= d <= D29,
}
RANGES = {
    (None, None): lambda s, d: True,
    (D28, None): lambda s, d: d >= D28,
    (None, D27): lambda s, d: d <= D27,
    (D27, D28): lambda s, d: D27 <= d <= D28,
}
#: the outputs hold these partitions before the job (two earlier jobs wrote them)
DONE = {(s, D27) for s in SYSTEMS} | {("bm25", D28)}


@pytest.fixture(scope="module")
def scenario(
    spark: SparkSession, inputs: tuple[str, str], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict, dict]:
    """(folder with the 'before' outputs, reference rows of a fresh full evaluation, before rows)."""
    reference = tmp_path_factory.mktemp("reference")
    config = config_at(write_config(reference, *inputs))
    run_job(spark, config, job_run_id="reference")
    drop = (S.JOB_RUN_ID,)
    expected = {
        name: rows_by_partition(spark, path, drop=drop)
        for name, path in (("per_query", config.output.per_query_path),
                           ("aggregate", config.output.aggregate_path))
    }
    before = tmp_path_factory.mktemp("before")
    config = config_at(write_config(before, *inputs))
    run_job(spark, config, parse_selection([f"date={D27}"], run_partition_columns=PARTS),
            job_run_id="before-1")
    run_job(spark, config, parse_selection([f"date={D28}", "system=bm25"], run_partition_columns=PARTS),
            job_run_id="before-2")
    rows = {
        name: rows_by_partition(spark, path)
        for name, path in (("per_query", config.output.per_query_path),
                           ("aggregate", config.output.aggregate_path))
    }
    assert set(rows["per_query"]) == DONE
    return before, expected, rows


@pytest.mark.slow
@settings(max_examples=10, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    filter_=st.sampled_from(sorted(FILTERS, key=str)),
    partitions=st.sampled_from(sorted(PARTITION_ARGS)),
    date_range=st.sampled_from(sorted(RANGES, key=str)),
    pending=st.booleans(),
)
def test_a_job_changes_exactly_the_partitions_it_evaluates(
    spark: SparkSession, inputs: tuple[str, str], scenario: tuple[Path, dict, dict],
    tmp_path_factory: pytest.TempPathFactory,
    filter_: str | None, partitions: tuple[str, ...], date_range: tuple, pending: bool,
) -> None:
    before_dir, expected, before = scenario
    work = tmp_path_factory.mktemp("job")
    shutil.copytree(before_dir / "out", work / "out")
    config = config_at(write_config(work, *inputs, run_filter=filter_))
    selection = parse_selection(list(partitions), date_from=date_range[0], date_to=date_range[1],
                                pending=pending, run_partition_columns=PARTS)
    # the model: the partitions the filter, the partitions and the range select, less the
    # ones the outputs already hold when --pending
    chosen = {
        (s, d) for s in SYSTEMS for d in DATES
        if FILTERS[filter_](s, d) and PARTITION_ARGS[partitions](s, d) and RANGES[date_range](s, d)
    }
    evaluated = chosen - DONE if pending else chosen
    if not chosen and not pending:  # a selection with no run rows: an error, nothing written
        with pytest.raises(InputError, match="has no rows"):
            run_job(spark, config, selection, job_run_id="job")
    else:
        run_job(spark, config, selection, job_run_id="job")
    for name, path in (("per_query", config.output.per_query_path),
                       ("aggregate", config.output.aggregate_path)):
        after = rows_by_partition(spark, path or "")
        assert set(after) == set(before[name]) | evaluated, name
        for partition, rows in after.items():
            if partition in evaluated:  # a fresh full evaluation's rows, written by this job
                assert [r[:-1] for r in rows] == expected[name][partition], (name, partition)
                assert {r[-1] for r in rows} == {"job"}
            else:  # untouched: the same rows, all columns included
                assert rows == before[name][partition], (name, partition)


# --- the quarantine ---------------------------------------------------------------------------


def test_quarantine_holds_only_rows_of_current_inputs(spark: SparkSession, tmp_path: Path) -> None:
    run = str(tmp_path / "run")
    qrels = str(tmp_path / "qrels")
    schema = "system string, date string, query_id string, doc_id string, score string"
    rows = [
        ("a", D27, "q1", "d1", "0.9"), ("a", D27, "q1", "d2", "oops"),     # invalid_score, D27
        ("a", D28, "q1", "d1", "0.9"), ("a", D28, "q1", "d3", "nan"),      # invalid_score, D28
    ]
    spark.createDataFrame(rows, schema).write.format("delta").save(run)
    spark.createDataFrame([("q1", "d1", "1"), ("q1", "d2", "x")],
                          "query_id string, doc_id string, relevance string"
                          ).write.format("delta").save(qrels)
    raw = {
        "run": {"path": run, "doc_id": "doc_id", "score": "score", "rank": None,
                "partition_columns": ["system", "date"]},
        "qrels": {"path": qrels},
        "evaluation": {"measures": ["P@1"]},
        "output": {"per_query_path": str(tmp_path / "out" / "per_query"),
                   "aggregate_path": str(tmp_path / "out" / "aggregate"),
                   "partition_columns": ["date"]},
    }
    raw["run"] = {k: v for k, v in raw["run"].items() if v is not None}
    config = config_from_dict(raw)
    quarantine = str(tmp_path / "out" / "quarantine")

    def held() -> list[tuple]:
        table = read(spark, quarantine)
        return sorted((r[S.INPUT], r["date"], r[S.REASON_CODE], r[S.RAW][S.DOC_ID], r[S.QRELS_KEY],
                       r[S.JOB_RUN_ID]) for r in table.collect())

    key = f"delta:{qrels} | filter: (none)"
    run_job(spark, config, parse_selection([f"date={D27}"], run_partition_columns=PARTS), job_run_id="j1")
    assert held() == [("qrels", None, "invalid_relevance", "d2", key, "j1"),
                      ("run", D27, "invalid_score", "d2", None, "j1")]
    run_job(spark, config, parse_selection([f"date={D28}"], run_partition_columns=PARTS), job_run_id="j2")
    # D27's run rows stay (its input is unchanged), D28's are added; the qrels rows were
    # re-read by j2: replaced, not repeated
    assert held() == [("qrels", None, "invalid_relevance", "d2", key, "j2"),
                      ("run", D27, "invalid_score", "d2", None, "j1"),
                      ("run", D28, "invalid_score", "d3", None, "j2")]
    # the run is fixed upstream for D27; re-evaluating D27 removes its rejection and nothing else
    fixed = [r for r in rows if r[4] != "oops"]
    spark.createDataFrame(fixed, schema).write.format("delta").mode("overwrite").save(run)
    run_job(spark, config, parse_selection([f"date={D27}"], run_partition_columns=PARTS), job_run_id="j3")
    assert held() == [("qrels", None, "invalid_relevance", "d2", key, "j3"),
                      ("run", D28, "invalid_score", "d3", None, "j2")]


# --- null partition values ------------------------------------------------------------------


def test_null_partition_values_can_be_selected_listed_and_replaced(
    spark: SparkSession, tmp_path: Path
) -> None:
    run, qrels = str(tmp_path / "run"), str(tmp_path / "qrels")
    schema = "system string, date string, query_id string, doc_id string, score double"
    spark.createDataFrame(
        [("a", D27, "q1", "d1", 0.9), (None, D27, "q1", "d2", 0.9), ("a", None, "q1", "d1", 0.5)],
        schema,
    ).write.format("delta").save(run)
    spark.createDataFrame([("q1", "d1", 1)], "query_id string, doc_id string, relevance int"
                          ).write.format("delta").save(qrels)
    config = config_from_dict({
        "run": {"path": run, "doc_id": "doc_id", "partition_columns": ["system", "date"]},
        "qrels": {"path": qrels},
        "evaluation": {"measures": ["P@1"]},
        "output": {"per_query_path": str(tmp_path / "out" / "per_query"),
                   "aggregate_path": str(tmp_path / "out" / "aggregate"),
                   "partition_columns": ["date"]},
    })
    agg = str(tmp_path / "out" / "aggregate")

    def p1() -> dict:  # (system, date) -> P@1 macro
        table = read(spark, agg).where((F.col(S.MEASURE_KEY) == "P@1") & (F.col(S.AVERAGING) == "macro"))
        return {(r["system"], r["date"]): r[S.VALUE] for r in table.collect()}

    # --partition with the null spelling: only the null-system partition is evaluated
    result = run_job(spark, config, parse_selection([f"system={NULL_VALUE}"], run_partition_columns=PARTS),
                     job_run_id="n1")
    # system null, date D27: d2 at rank 1 is not relevant: P@1 = 0/1
    assert p1() == {(None, D27): 0.0}
    assert result.record.partitions == [{"system": None, "date": D27}]
    assert f"date={D27}/system={NULL_VALUE}" in result.render()
    # --pending lists the remaining partitions, the null date among them
    result = run_job(spark, config, parse_selection([], pending=True, run_partition_columns=PARTS),
                     job_run_id="n2")
    # (a, D27): d1 relevant at rank 1: P@1 = 1; (a, null): d1 at rank 1: P@1 = 1
    assert p1() == {(None, D27): 0.0, ("a", D27): 1.0, ("a", None): 1.0}
    assert sorted(result.record.partitions, key=str) == sorted(
        [{"system": "a", "date": D27}, {"system": "a", "date": None}], key=str)
    # re-evaluating the null date replaces exactly it
    run_job(spark, config, parse_selection([f"date={NULL_VALUE}"], run_partition_columns=PARTS),
            job_run_id="n3")
    ids = {(r["system"], r["date"]): r[S.JOB_RUN_ID] for r in read(spark, agg).collect()}
    assert ids == {(None, D27): "n1", ("a", D27): "n2", ("a", None): "n3"}
    # nothing is pending any more
    result = run_job(spark, config, parse_selection([], pending=True, run_partition_columns=PARTS))
    assert result.record.status == lineage.NOTHING_PENDING


# --- identifiers from the config ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("run", "output", "message"),
    [
        ({}, {"per_query_table": "db.per`query", "aggregate_table": "db.agg"},
         "output.per_query_table = 'db.per`query' is not a table name releval accepts"),
        ({}, {"per_query_table": "db.pq", "aggregate_table": "db.agg'; DROP TABLE x"},
         "output.aggregate_table = \"db.agg'; DROP TABLE x\" is not a table name"),
        ({"partition_columns": ["sys`tem"]}, {},
         "run.partition_columns names 'sys`tem': a partition column must be letters"),
        ({"partition_columns": ["date", "it's"]}, {},
         "run.partition_columns names \"it's\": a partition column must be letters"),
    ],
)
def test_identifiers_with_quotes_are_refused_with_the_key(run, output, message) -> None:
    raw = {"run": {"path": "r", **run}, "qrels": {"path": "q"},
           "output": output or {"per_query_path": "o/pq", "aggregate_path": "o/agg"}}
    with pytest.raises(ConfigError) as err:
        config_from_dict(raw)
    assert message in str(err.value)


def test_catalog_names_are_quoted_in_sql_text() -> None:
    from releval.evaluation.partitions import KeyFilter
    from releval.io.atomic import sql_name

    assert sql_name(None, "db.per_query") == "`db`.`per_query`"
    assert sql_name("/tmp/a`b", None) == "delta.`/tmp/a``b`"
    assert KeyFilter(key="da`te", values=("x'y",)).predicate() == "`da``te` = 'x\\'y'"
    assert KeyFilter(key="date", values=(None, "b", "a")).predicate() == (
        "(`date` IN ('a', 'b') OR `date` IS NULL)"
    )


def test_version_1_tables_are_migrated_and_written_again(
    spark: SparkSession, inputs: tuple[str, str], tmp_path: Path
) -> None:
    from delta.tables import DeltaTable
    from pyspark.sql import types as T

    from releval.evaluation.inputs import qrels_key
    from releval.io.atomic import table_schema_version
    from releval.job.migrations import migrate_table

    config = config_at(write_config(tmp_path, *inputs))
    quarantine, log = str(tmp_path / "out" / "quarantine"), str(tmp_path / "out" / "run_log")
    text = T.StringType()
    strings = T.MapType(text, text, True)
    old = T.StructType([
        T.StructField("input", text, False), T.StructField("source", text, True),
        T.StructField("line", T.LongType(), True), T.StructField("partition", strings, False),
        T.StructField("raw", strings, False), T.StructField("reason_code", text, False),
        T.StructField("message", text, False), T.StructField("job_partition", text, False),
    ])
    (DeltaTable.create(spark).location(quarantine).addColumns(old).partitionedBy("job_partition")
     .property(SCHEMA_VERSION_PROPERTY, "1").execute())
    spark.createDataFrame([
        ("run", "s", None, {"system": "bm25", "date": D27}, {"doc_id": "d1"}, "invalid_score", "m",
         f"date={D27}"),
        ("qrels", "s", None, {}, {"doc_id": "d2"}, "invalid_relevance", "m", f"date={D27}"),
    ], old).write.format("delta").mode("append").save(quarantine)
    (DeltaTable.create(spark).location(log).addColumns(RUN_LOG_SCHEMA)
     .property(SCHEMA_VERSION_PROPERTY, "1").execute())
    # the aggregate table as version 1 wrote it: no negative_labels, no interval columns,
    # no depth (version 3)
    agg = config.output.aggregate_path or ""
    v2_only = (S.NEGATIVE_LABELS, S.CI_LOW, S.CI_HIGH, S.CI_METHOD, S.CI_LEVEL)
    parts = [T.StructField("system", text), T.StructField("date", text)]
    v1_fields = [f for f in tables.aggregate_schema(parts).fields
                 if f.name not in (*v2_only, S.DEPTH, S.SLICE, S.SLICE_VALUE)]
    (DeltaTable.create(spark).location(agg).addColumns(v1_fields).partitionedBy("date")
     .property(SCHEMA_VERSION_PROPERTY, "1").execute())
    spark.createDataFrame([("bm25", D29, "AP", None, 1, False, "AP", "macro", 0.3, 20, "old")],
                          T.StructType(v1_fields)).write.format("delta").mode("append").save(agg)

    assert migrate_table(spark, kind="quarantine", path=quarantine, table=None,
                         config=config) == ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12"]
    assert migrate_table(spark, kind="run_log", path=log, table=None,
                         config=config) == ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12"]
    assert migrate_table(spark, kind="quarantine", path=quarantine, table=None,
                         config=config) == ["12"]
    table = read(spark, quarantine)
    assert table.columns == [*PARTS, *tables.QUARANTINE_SCHEMA.names, S.QRELS_KEY, S.JOB_RUN_ID]
    rows = sorted(((r["system"], r["date"], r[S.INPUT], r[S.QRELS_KEY]) for r in table.collect()),
                  key=str)
    assert rows == sorted([("bm25", D27, "run", None), (None, None, "qrels", qrels_key(config))],
                          key=str)
    detail = DeltaTable.forPath(spark, quarantine).detail().first()
    assert list(detail["partitionColumns"]) == [S.INPUT, "date"]
    assert table_schema_version(spark, path=log, table=None) == "12"
    assert migrate_table(spark, kind="aggregate", path=agg, table=None,
                         config=config) == ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12"]
    old = read(spark, agg).first()
    assert read(spark, agg).columns[-9:] == [S.JOB_RUN_ID, *v2_only, S.DEPTH, S.SLICE,
                                             S.SLICE_VALUE]
    # the old row: computed with negative labels judged, no interval recorded, no depth
    assert (old[S.VALUE], old[S.NEGATIVE_LABELS], old[S.CI_LOW], old[S.CI_METHOD],
            old[S.DEPTH]) == (0.3, "judged", None, None, None)
    # after the migration the job writes both tables: a run of D27 replaces the migrated
    # run row of D27
    run_job(spark, config, parse_selection([f"date={D27}"], run_partition_columns=PARTS),
            job_run_id="after")
    assert read(spark, quarantine).where(F.col(S.INPUT) == "run").count() == 0
    written = read(spark, agg).where(F.col("date") == D27)
    assert written.count() > 0 and {r[S.NEGATIVE_LABELS] for r in written.collect()} == {"unjudged"}
    assert read(spark, agg).where(F.col(S.JOB_RUN_ID) == "old").count() == 1  # D29 untouched
