"""The comparison of run partitions in Spark: pairing, tests per (candidate, measure), the job."""

from __future__ import annotations

import dataclasses
import math
from datetime import datetime

import numpy as np
import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T
from statsmodels.stats.power import TTestPower

from releval.config import ComparisonSettings, Config, OutputSettings, QrelsSource, RunSource
from releval.core import columns as S
from releval.core.measures import parse_measures
from releval.errors import ComparisonError
from releval.evaluation.partitions import parse_side
from releval.frames import comparison
from releval.io import comparison_table, tables
from releval.job import compare as compare_job
from releval.job.lineage import RunRecord
from releval.stats import kernel

PARTS = [T.StructField("system", T.StringType(), True), T.StructField("date", T.StringType(), True)]
SCHEMA = tables.per_query_schema(PARTS)
DATE = "2026-11-28"


def rows_for(system, values, measure="nDCG@10", date=DATE, run_id=None, ids=None):
    m = parse_measures([measure])[0]
    ids = ids or [f"q{i:03d}" for i in range(len(values))]
    return [(system, date, q, m.name, m.cutoff, m.rel_level, False, m.key, float(v), 10, 3, 1,
             run_id, "unjudged", None, None, None, None, None) for q, v in zip(ids, values, strict=True)]


def side(system, date=DATE):
    return {"system": system, "date": date}


def by_candidate(df):
    return {(r[S.CANDIDATE], r[S.MEASURE_KEY]): r for r in df.collect()}


SETTINGS = ComparisonSettings(permutations=4000, seed=5)


def test_equal_and_better_candidates(spark):
    base = np.random.default_rng(1).uniform(0.1, 0.8, size=30)
    better = base + np.linspace(0.01, 0.1, 30)  # better on every query
    rows = (rows_for("bm25", base) + rows_for("same", base) + rows_for("better", better)
            + rows_for("bm25", base, measure="num_rel"))  # counts are not compared
    per_query = spark.createDataFrame(rows, SCHEMA)
    settings = dataclasses.replace(SETTINGS, power=0.9, effect_of_interest=0.01)
    result = by_candidate(comparison.compare(
        per_query, baseline=side("bm25"),
        candidates={"same": side("same"), "better": side("better")},
        missing_queries="zero", settings=settings))
    assert set(result) == {("same", "nDCG@10"), ("better", "nDCG@10")}
    same = result[("same", "nDCG@10")]
    assert (same[S.MEAN_DIFF], same[S.WINS], same[S.TIES], same[S.LOSSES]) == (0.0, 0, 30, 0)
    assert (same[S.T_P_VALUE], same[S.RANDOMIZATION_P_VALUE]) == (1.0, 1.0)
    assert same[S.EFFECT_SIZE] is None and same[S.SIGNIFICANT] is False
    assert same[S.RANDOMIZATION_P_ADJUSTED] == 1.0
    # no spread of the differences: nothing to say about power
    assert (same[S.MIN_DETECTABLE_DIFF], same[S.QUERIES_NEEDED]) == (None, None)
    good = result[("better", "nDCG@10")]
    # mean difference = mean of linspace(0.01, 0.1) = 0.055; all 30 wins
    assert good[S.MEAN_DIFF] == pytest.approx(0.055) and good[S.WINS] == 30
    # exact p = 2 / 2^30; estimated (1 + 0) / (1 + 4000); Holm over 2 rows: x 2 = 0.0005
    assert good[S.RANDOMIZATION_P_VALUE] == pytest.approx(1 / 4001)
    assert good[S.RANDOMIZATION_P_ADJUSTED] == pytest.approx(2 / 4001)
    assert good[S.SIGNIFICANT] is True and good[S.EFFECT_SIZE] > 1
    assert good[S.DIFF_CI_LOW] > 0 and good[S.NUM_PAIRS] == 30
    # d = linspace(0.01, 0.1, 30), step h = 0.09 / 29: s = h * sqrt(30 * 31 / 12) = 0.0273209;
    # min_detectable_diff = d_min(30 pairs, alpha 0.05, power 0.9) * s, queries_needed the
    # pairs to detect 0.01 = 0.366 s with power 0.9 (statsmodels' TTestPower)
    s = 0.09 / 29 * (30 * 31 / 12) ** 0.5
    assert s == pytest.approx(0.0273209, abs=1e-7)
    solve = TTestPower().solve_power
    d_min = solve(effect_size=None, nobs=30, alpha=0.05, power=0.9, alternative="two-sided")
    assert good[S.MIN_DETECTABLE_DIFF] == pytest.approx(float(np.squeeze(d_min)) * s, rel=1e-4)
    needed = solve(effect_size=0.01 / s, nobs=None, alpha=0.05, power=0.9,
                   alternative="two-sided")
    assert good[S.QUERIES_NEEDED] == math.ceil(float(np.squeeze(needed)))


def test_pairing_zero_and_skip(spark):
    # baseline scored q0..q3; the candidate did not score q3 (skip evaluation) but scored q4
    rows = (rows_for("bm25", [0.5, 0.2, 0.4, 0.6], ids=["q0", "q1", "q2", "q3"])
            + rows_for("dense", [0.7, 0.2, 0.3, 0.9], ids=["q0", "q1", "q2", "q4"]))
    per_query = spark.createDataFrame(rows, SCHEMA)

    def run(pairing):
        return by_candidate(comparison.compare(
            per_query, baseline=side("bm25"), candidates={"dense": side("dense")},
            missing_queries=pairing, settings=SETTINGS))[("dense", "nDCG@10")]

    # skip: q0..q2, d = +0.2, 0, -0.1: mean 0.1 / 3, W/T/L 1/1/1
    skip = run("skip")
    assert (skip[S.NUM_PAIRS], skip[S.WINS], skip[S.TIES], skip[S.LOSSES]) == (3, 1, 1, 1)
    assert skip[S.MEAN_DIFF] == pytest.approx(0.1 / 3)
    # zero: q0..q4, q3 is 0 for dense (d = -0.6), q4 is 0 for bm25 (d = +0.9):
    # d = 0.2, 0, -0.1, -0.6, 0.9: mean 0.4 / 5 = 0.08, W/T/L 2/1/2; bm25 mean 1.7 / 5
    zero = run("zero")
    assert (zero[S.NUM_PAIRS], zero[S.WINS], zero[S.TIES], zero[S.LOSSES]) == (5, 2, 1, 2)
    assert zero[S.MEAN_DIFF] == pytest.approx(0.08)
    assert zero[S.BASELINE_MEAN] == pytest.approx(0.34)
    assert zero[S.RELATIVE_CHANGE] == pytest.approx(0.08 / 0.34)


def test_same_result_under_any_partitioning(spark):
    rng = np.random.default_rng(4)
    base = rng.uniform(size=40)
    rows = rows_for("bm25", base) + rows_for("dense", np.clip(base + rng.normal(0.03, 0.1, 40), 0, 1))
    per_query = spark.createDataFrame(rows, SCHEMA)

    def p_values(df):
        got = comparison.compare(df, baseline=side("bm25"), candidates={"dense": side("dense")},
                                 missing_queries="zero", settings=SETTINGS).first()
        return got[S.RANDOMIZATION_P_VALUE], got[S.T_P_VALUE], got[S.DIFF_CI_LOW]

    first = p_values(per_query.repartition(1))
    assert first == p_values(per_query.repartition(5, S.QUERY_ID))
    assert first == p_values(per_query.orderBy(F.rand(3)))
    # and it is the kernel's p-value over xxhash64(seed, query_id) keys in query order
    keys = spark.createDataFrame([(f"q{i:03d}",) for i in range(40)], "query_id string").select(
        comparison.query_key(SETTINGS.seed).alias("k")).collect()
    d = kernel.differences(base, np.array([r[8] for r in rows[40:]]))
    expected = kernel.randomization_p(d, np.array([r["k"] for r in keys]), permutations=4000)
    assert first[0] == expected


# --- the job: read the per-query table and the run log, write the comparison table -----


def write_inputs(spark, tmp_path, *, dense_qrels_version=3):
    out = tmp_path / "out"
    rng = np.random.default_rng(8)
    base = rng.uniform(size=20)
    rows = (rows_for("bm25", base, run_id="r1") + rows_for("hybrid", base + 0.05, run_id="r1")
            + rows_for("dense", base, run_id="r2") + rows_for("bm25", base, run_id="r3", date="2026-11-29")
            + rows_for("hybrid", base, run_id="r3", date="2026-11-29"))
    spark.createDataFrame(rows, SCHEMA).write.format("delta").partitionBy("date").save(
        str(out / "per_query"))
    now = datetime(2026, 11, 30)

    def record(run_id, version):
        return RunRecord(job_run_id=run_id, status="succeeded", started_at=now, finished_at=now,
                         releval_version="0", config_hash="h", config_json="{}",
                         run_source="delta:/run", run_version=1, run_filter=None,
                         qrels_source="delta:/qrels", qrels_version=version,
                         qrels_filter="qrels_version = 'v1'", selection="all",
                         replace_predicate=None)

    log = record("r1", 3).to_frame(spark).unionByName(
        record("r2", dense_qrels_version).to_frame(spark))
    log.write.format("delta").save(str(out / "run_log"))
    return Config(
        run=RunSource(path="unused", partition_columns=("system", "date")),
        qrels=QrelsSource(path="unused"),
        output=OutputSettings(per_query_path=str(out / "per_query"), partition_columns=("date",)),
        comparison=SETTINGS,
    )


@pytest.mark.slow  # whole batch jobs in this process
def test_job_writes_and_replaces_the_comparison(spark, tmp_path):
    config = write_inputs(spark, tmp_path)
    report = compare_job.run(spark, config, baseline=side("bm25"),
                            candidates=[side("hybrid"), side("dense")], comparison_id="c1")
    table = spark.read.format("delta").load(str(tmp_path / "out" / "comparison"))
    assert table.inputFiles() and set(table.columns) >= {"date", S.BASELINE, S.SIGNIFICANT}
    rows = {r[S.CANDIDATE]: r for r in table.collect()}
    assert set(rows) == {"system=hybrid/date=2026-11-28", "system=dense/date=2026-11-28"}
    hybrid = rows["system=hybrid/date=2026-11-28"]
    assert hybrid["date"] == DATE and hybrid[S.BASELINE] == "system=bm25/date=2026-11-28"
    assert hybrid[S.MEAN_DIFF] == pytest.approx(0.05) and hybrid[S.SIGNIFICANT]
    assert (hybrid[S.BASELINE_JOB_RUN_ID], hybrid[S.CANDIDATE_JOB_RUN_ID]) == ("r1", "r1")
    assert rows["system=dense/date=2026-11-28"][S.CANDIDATE_JOB_RUN_ID] == "r2"
    assert hybrid[S.PERMUTATIONS] == 4000 and hybrid[S.CORRECTION] == "holm"
    # hybrid = bm25 + 0.05 on every query, dense = bm25: no spread, no power figures
    assert {(r[S.MIN_DETECTABLE_DIFF], r[S.QUERIES_NEEDED]) for r in rows.values()} == {
        (None, None)}
    assert table.columns[-7:] == [S.MIN_DETECTABLE_DIFF, S.QUERIES_NEEDED, S.MEAN_DIFF_BEST,
                                  S.SIGN_HOLDS, S.SLICE, S.SLICE_VALUE, S.AVERAGING]
    # no queries input: the rows over all queries, macro
    assert {(r[S.SLICE], r[S.SLICE_VALUE], r[S.AVERAGING]) for r in rows.values()} == {
        (None, None, "macro")}
    assert table.schema[S.QUERIES_NEEDED].metadata["comment"] == comparison_table.COMPARISON_COMMENTS[
        S.QUERIES_NEEDED]
    text = report.render()
    assert "mdd  needed" in text and "detects with power 0.8 at n" in text
    assert "* system=hybrid/date=2026-11-28" in text
    assert ("WARNING: 2 candidate(s) rest on fewer than 50 queries, weak comparisons: "
            "system=dense/date=2026-11-28 20, system=hybrid/date=2026-11-28 20") in text
    # a re-run replaces the rows of the same baseline and date
    compare_job.run(spark, config, baseline=side("bm25"), candidates=[side("hybrid")],
                   comparison_id="c2")
    again = spark.read.format("delta").load(str(tmp_path / "out" / "comparison"))
    assert [r[S.COMPARISON_ID] for r in again.collect()] == ["c2"]
    # the other date has no run-log record: compared, with a note
    other = compare_job.run(spark, config, baseline=side("bm25", "2026-11-29"),
                           candidates=[side("hybrid", "2026-11-29")])
    assert any("not checked" in n for n in other.notes)
    assert other.rows[0][S.MEAN_DIFF] == 0.0 and other.rows[0][S.RANDOMIZATION_P_VALUE] == 1.0


@pytest.mark.slow  # whole batch jobs in this process
def test_a_version_2_comparison_table_is_refused_then_migrated(spark, tmp_path):
    from delta.tables import DeltaTable

    from releval.errors import SchemaVersionError
    from releval.io.atomic import table_schema_version
    from releval.io.writers import SCHEMA_VERSION_PROPERTY
    from releval.job.migrations import migrate_table

    config = write_inputs(spark, tmp_path)
    path = str(tmp_path / "out" / "comparison")
    # the comparison table as version 2 wrote it: none of the columns added since
    added = (S.MIN_DETECTABLE_DIFF, S.QUERIES_NEEDED, S.MEAN_DIFF_BEST, S.SIGN_HOLDS,
             S.SLICE, S.SLICE_VALUE, S.AVERAGING)
    # and both randomization columns and significant NOT NULL
    required = (S.RANDOMIZATION_P_VALUE, S.RANDOMIZATION_P_ADJUSTED, S.SIGNIFICANT)
    v2 = T.StructType([T.StructField(f.name, f.dataType, f.nullable and f.name not in required)
                       for f in comparison_table.comparison_schema([PARTS[1]]).fields
                       if f.name not in added])
    (DeltaTable.create(spark).location(path).addColumns(v2).partitionedBy("date")
     .property(SCHEMA_VERSION_PROPERTY, "2").execute())
    typed = {"double": 0.5, "bigint": 20, "string": "old", "boolean": False,
             "int": 10, "timestamp": datetime(2026, 11, 28)}
    old = {f.name: typed[f.dataType.simpleString()] for f in v2.fields}
    old.update({"date": "2026-11-27", S.MEASURE_KEY: "nDCG@10", S.BASELINE: "b",
                S.CANDIDATE: "c"})
    spark.createDataFrame([tuple(old[f.name] for f in v2.fields)], v2).write.format(
        "delta").mode("append").save(path)
    with pytest.raises(SchemaVersionError, match=r"releval.schema_version = '2'"):
        compare_job.run(spark, config, baseline=side("bm25"), candidates=[side("hybrid")])

    assert migrate_table(spark, kind="comparison", path=path, table=None, config=config) == [
        "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12"]
    assert migrate_table(spark, kind="comparison", path=path, table=None, config=config) == ["12"]
    assert table_schema_version(spark, path=path, table=None) == "12"
    table = spark.read.format("delta").load(path)
    # added at the end, nullable, commented; the old row holds nulls there
    assert table.columns == [*v2.names, *added]
    for name in added:
        assert table.schema[name].nullable
        assert table.schema[name].metadata["comment"] == comparison_table.COMPARISON_COMMENTS[name]
    assert table.schema[S.QUERIES_NEEDED].dataType == T.LongType()
    (row,) = table.collect()
    assert (row[S.COMPARISON_ID], row[S.MIN_DETECTABLE_DIFF], row[S.QUERIES_NEEDED],
            row[S.MEAN_DIFF_BEST], row[S.SIGN_HOLDS]) == ("old", None, None, None, None)
    # the old row is a macro row over all queries
    assert (row[S.SLICE], row[S.SLICE_VALUE], row[S.AVERAGING]) == (None, None, "macro")
    assert table.schema[S.SIGN_HOLDS].dataType == T.BooleanType()
    assert all(table.schema[name].nullable for name in required)
    # the job writes the migrated table, a t-test comparison's null randomization p-values
    # included; the other date's old row stays
    t_only = dataclasses.replace(config, comparison=dataclasses.replace(config.comparison,
                                                                        test="t"))
    compare_job.run(spark, t_only, baseline=side("bm25"), candidates=[side("hybrid")],
                    comparison_id="new")
    after = spark.read.format("delta").load(path)
    assert sorted((r["date"], r[S.COMPARISON_ID], r[S.RANDOMIZATION_P_VALUE])
                  for r in after.collect()) == [("2026-11-27", "old", 0.5), (DATE, "new", None)]


def test_job_refuses_different_qrels_and_missing_sides(spark, tmp_path):
    config = write_inputs(spark, tmp_path, dense_qrels_version=4)
    with pytest.raises(ComparisonError, match=r"system=dense/date=2026-11-28 and the baseline "
                       r"system=bm25/date=2026-11-28 were evaluated against different qrels "
                       r"\(delta:/qrels @v4 .* vs delta:/qrels @v3"):
        compare_job.run(spark, config, baseline=side("bm25"), candidates=[side("dense")])
    with pytest.raises(ComparisonError, match="no per-query rows for system=splade"):
        compare_job.run(spark, config, baseline=side("bm25"), candidates=[side("splade")])
    with pytest.raises(ComparisonError, match="missing"):
        parse_side("system=bm25", ("system", "date"), shared={})
    assert parse_side("system=bm25", ("system", "date"), shared={"date": DATE}) \
        == side("bm25")


def test_tukey_hsd_option(spark):
    rng = np.random.default_rng(6)
    base = rng.uniform(0.1, 0.8, size=40)
    rows = (rows_for("bm25", base) + rows_for("same", base)
            + rows_for("better", base + rng.uniform(0.05, 0.15, size=40))
            + rows_for("noisy", np.clip(base + rng.normal(0, 0.05, size=40), 0, 1)))
    settings = dataclasses.replace(SETTINGS, test="tukey", permutations=2000)
    result = by_candidate(comparison.compare(
        spark.createDataFrame(rows, SCHEMA), baseline=side("bm25"),
        candidates={c: side(c) for c in ("same", "better", "noisy")},
        missing_queries="zero", settings=settings))
    same, better = result[("same", "nDCG@10")], result[("better", "nDCG@10")]
    # 4 systems x 40 queries: the "same" pair never differs, every trial's range reaches 0
    assert same[S.TUKEY_P_VALUE] == 1.0 and not same[S.SIGNIFICANT]
    # better by 0.1 on every query: no shuffle reaches that range, p = 1 / 2001
    assert better[S.TUKEY_P_VALUE] == pytest.approx(1 / 2001) and better[S.SIGNIFICANT]
    noisy = result[("noisy", "nDCG@10")]
    assert noisy[S.TUKEY_P_VALUE] >= noisy[S.RANDOMIZATION_P_VALUE]  # a larger family
    # without the option the column is null
    plain = comparison.compare(spark.createDataFrame(rows, SCHEMA), baseline=side("bm25"),
                               candidates={"same": side("same")}, missing_queries="zero",
                               settings=SETTINGS).first()
    assert plain[S.TUKEY_P_VALUE] is None
