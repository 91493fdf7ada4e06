"""The answers in the batch job and the command line: the attribution table next to the
others, the answers' rows of the quarantine replaced per evaluated run partition, idempotent
re-runs, and the per-query table's migration from schema version 2."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from support.batch_support import D27, D28, D29, SHAPE, config_at, read, write_config, write_inputs

from releval.cli import main
from releval.core import columns as S
from releval.errors import SchemaVersionError
from releval.evaluation.partitions import parse_selection
from releval.io import tables
from releval.io.writers import SCHEMA_VERSION_PROPERTY
from releval.job.batch import run_job
from releval.job.migrations import migrate_table
from releval.job.sample import generate, generate_answers
from releval.stats.attribution import CELLS

pytestmark = pytest.mark.slow  # whole batch jobs in this process: reads, checks, Delta commits

PARTS = ("system", "date")


def select(*partitions: str):  # noqa: ANN201 - a PartitionSelection
    return parse_selection(list(partitions), run_partition_columns=PARTS)


@pytest.fixture(scope="module")
def inputs(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    return write_inputs(spark, tmp_path_factory.mktemp("inputs"))


def answers_csv(path: Path, *bad: tuple[str, str, str, object]) -> tuple[str, int]:
    """The sample's answers (one per served system, date and query) and ``bad`` rows as a
    CSV file with a header: (path, rows)."""
    run, qrels = generate(SHAPE)
    answers = generate_answers(run, qrels, SHAPE)
    frame = pd.concat([answers, pd.DataFrame(bad, columns=answers.columns)], ignore_index=True)
    frame.to_csv(path, index=False)
    return str(path), len(frame)


def test_the_job_writes_the_attribution_and_replaces_what_it_evaluates(
    spark: SparkSession, inputs: tuple[str, str], tmp_path: Path
) -> None:
    bad = [("bm25", D27, "q00001", 1.7),         # invalid_answer_score, on D27
           ("legacy", D28, "q00001", 0.5)]       # unknown_partition: the run has no legacy
    path, n = answers_csv(tmp_path / "answers.csv", *bad)
    config = config_at(write_config(
        tmp_path, *inputs,
        answers=f'path = "{path}"\nformat = "csv"\nretrieved_by = "Hit(rel=3)@5"'))
    out = tmp_path / "out"
    result = run_job(spark, config, job_run_id="all")
    account = result.summary.quality.answers
    assert (account.input, account.quarantined) == (
        n, {"invalid_answer_score": 1, "unknown_partition": 1})
    assert account.used == n - 2
    assert "retrieval and the answer: evidence retrieved when Hit(rel=3)@5 >= 1" in (
        result.render())
    attribution = read(spark, str(out / "attribution"))
    # five cells for each of the 9 run partitions, partitioned by date like the aggregate
    assert attribution.count() == 9 * len(CELLS)
    detail = DeltaTable.forPath(spark, str(out / "attribution")).detail().first()
    assert list(detail["partitionColumns"]) == ["date"]
    assert attribution.schema.fieldNames() == tables.attribution_schema(
        [T.StructField(c, T.StringType()) for c in PARTS]).fieldNames()
    per_partition = attribution.groupBy(*PARTS).agg(
        F.sum(F.when(F.col(S.CELL) != "no_qrels", F.col(S.QUERIES))).alias("attributed"),
        F.first(S.ATTRIBUTED).alias("column"), F.sum(S.SHARE).alias("shares"))
    for row in per_partition.collect():
        assert row["attributed"] == row["column"]
        assert row["shares"] == pytest.approx(1.0)
    # the per-query table has every used answer's score on its rows
    per_query = read(spark, str(out / "per_query"))
    answered = per_query.where(F.col(S.ANSWER_SCORE).isNotNull())
    assert answered.select(*PARTS, S.QUERY_ID).distinct().count() == int(
        attribution.where(F.col(S.CELL) != "no_qrels").agg(F.sum(S.QUERIES)).first()[0])

    def rejected() -> list[tuple]:
        table = read(spark, str(out / "quarantine")).where(F.col(S.INPUT) == "answers")
        return sorted((r["system"], r["date"], r[S.REASON_CODE], r[S.JOB_RUN_ID])
                      for r in table.collect())

    assert rejected() == [("bm25", D27, "invalid_answer_score", "all"),
                          ("legacy", D28, "unknown_partition", "all")]
    before = {(r["system"], r["date"], r[S.CELL]): r for r in attribution.collect()}

    # the evaluator's bad row is fixed; re-evaluating D27 replaces D27's answers rows of the
    # quarantine and D27's attribution rows, with the same values; D28's stay
    answers_csv(tmp_path / "answers.csv", bad[1])
    run_job(spark, config, select(f"date={D27}"), job_run_id="fix")
    assert rejected() == [("legacy", D28, "unknown_partition", "all")]
    after = {(r["system"], r["date"], r[S.CELL]): r for r in
             read(spark, str(out / "attribution")).collect()}
    assert after.keys() == before.keys()
    for key, row in after.items():
        assert row[S.JOB_RUN_ID] == ("fix" if key[1] == D27 else "all")
        assert {**row.asDict(), S.JOB_RUN_ID: None} == {**before[key].asDict(), S.JOB_RUN_ID: None}


def test_a_version_2_per_query_table_is_migrated(
    spark: SparkSession, inputs: tuple[str, str], tmp_path: Path
) -> None:
    config = config_at(write_config(tmp_path, *inputs))
    pq = config.output.per_query_path or ""
    # a per-query table as schema version 2 wrote it: no depth, no answer_score
    parts = [T.StructField(c, T.StringType()) for c in PARTS]
    v2 = [f for f in tables.per_query_schema(parts).fields
          if f.name not in (S.DEPTH, S.ANSWER_SCORE, S.WINDOW_SIZE, S.WEIGHT, S.SLICES)]
    (DeltaTable.create(spark).location(pq).addColumns(v2).partitionedBy("date")
     .property(SCHEMA_VERSION_PROPERTY, "2").execute())
    spark.createDataFrame([("bm25", D29, "q1", "P", 5, 1, False, "P@5", 0.2, 10, 3, 1, "old",
                            "unjudged")], T.StructType(v2)).write.format("delta").mode(
        "append").save(pq)
    with pytest.raises(SchemaVersionError, match=r"releval.schema_version = '2'"):
        run_job(spark, config, select(f"date={D27}"), job_run_id="refused")
    assert migrate_table(spark, kind="per_query", path=pq, table=None, config=config) == [
        "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12"]
    assert migrate_table(spark, kind="per_query", path=pq, table=None, config=config) == ["12"]
    table = read(spark, pq)
    assert table.columns[-4:] == [S.ANSWER_SCORE, S.WINDOW_SIZE, S.WEIGHT, S.SLICES]
    assert table.schema[S.ANSWER_SCORE].metadata["comment"] == (
        tables.PER_QUERY_COMMENTS[S.ANSWER_SCORE])
    old = table.first()
    assert (old[S.VALUE], old[S.JOB_RUN_ID], old[S.ANSWER_SCORE]) == (0.2, "old", None)
    run_job(spark, config, select(f"date={D27}"), job_run_id="migrated")
    assert read(spark, pq).where(F.col("date") == D27).count() > 0


TREC_RUN = "q1 Q0 d1 1 2.0 bm25\nq2 Q0 d9 1 1.0 bm25\nq1 Q0 d9 1 2.0 dense\nq2 Q0 d2 1 1.0 dense\n"
TREC_QRELS = "q1 0 d1 1\nq2 0 d2 1\n"


def test_the_command_line_takes_answers(shared_session, tmp_path, capsys):
    spark = shared_session
    (tmp_path / "run.txt").write_text(TREC_RUN)
    (tmp_path / "qrels.txt").write_text(TREC_QRELS)
    # a TREC run is partitioned by its tag, run_id; bm25 finds q1's evidence, dense q2's
    spark.createDataFrame(
        [("bm25", "q1", 0.9), ("bm25", "q2", 0.8), ("dense", "q1", 0.1), ("dense", "q2", 0.2)],
        "run_id string, query_id string, answer_score double",
    ).write.parquet(str(tmp_path / "answers"))
    out = tmp_path / "out"
    code = main(["evaluate", "--run", str(tmp_path / "run.txt"),
                 "--qrels", str(tmp_path / "qrels.txt"), "--measures", "P@1",
                 "--answers", str(tmp_path / "answers"), "--output", str(out)])
    printed = capsys.readouterr().out
    assert code == 0
    assert "retrieval and the answer" in printed
    cells = {(r["run_id"], r[S.CELL]): r[S.QUERIES]
             for r in read(spark, str(out / "attribution")).collect()}
    # bm25: q1 retrieved and right (success), q2 missed but right (answered_without_evidence);
    # dense: q1 missed and wrong (retrieval_miss), q2 retrieved and wrong (generation_miss)
    assert {k: n for k, n in cells.items() if n} == {
        ("bm25", "success"): 1, ("bm25", "answered_without_evidence"): 1,
        ("dense", "retrieval_miss"): 1, ("dense", "generation_miss"): 1}
    scores = read(spark, str(out / "per_query")).where(F.col(S.MEASURE_KEY) == "Hit@10")
    assert {(r["run_id"], r[S.QUERY_ID]): (r[S.VALUE], r[S.ANSWER_SCORE])
            for r in scores.collect()} == {("bm25", "q1"): (1.0, 0.9), ("bm25", "q2"): (0.0, 0.8),
                                           ("dense", "q1"): (0.0, 0.1), ("dense", "q2"): (1.0, 0.2)}
    assert main(["evaluate", "--run", str(tmp_path / "run.txt"), "--qrels",
                 str(tmp_path / "qrels.txt"), "--answers", str(tmp_path / "none.csv")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"releval: error: input not found: {tmp_path / 'none.csv'}")
