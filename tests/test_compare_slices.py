"""Comparisons per slice value and weighted: each slice's paired test (scipy's), the slices'
family corrected as statsmodels does, the weighted difference and its linearized interval,
on both of compare's paths."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests
from support.slices_data import SCHEMA, pairs_frame, per_query_rows, queries_rows

from releval.checks.queries import check_queries
from releval.config import ComparisonSettings
from releval.core import columns as S
from releval.frames import comparison


@pytest.fixture(scope="module")
def per_query(spark):
    return spark.createDataFrame(per_query_rows(), SCHEMA).cache()


@pytest.fixture(scope="module")
def checked(spark):
    frame = spark.createDataFrame(queries_rows(),
                                  "qid string, segment string, locale string, hits double")
    return check_queries(frame, query_id="qid", weight="hits", slices=["segment", "locale"])


def compared(per_query, checked, *, test="t", missing="zero", driver_rows=comparison.DRIVER_ROWS,
             weighted=True):
    settings = ComparisonSettings(permutations=500, seed=3, test=test)
    got = comparison.compare(
        per_query, baseline={"system": "bm25"},
        candidates={f"system={s}": {"system": s} for s in ("dense", "hybrid")},
        missing_queries=missing, settings=settings, driver_rows=driver_rows,
        queries=checked.used, slices=["segment", "locale"], weighted=weighted).collect()
    return {(r[S.CANDIDATE].removeprefix("system="), r[S.MEASURE_KEY], r[S.SLICE],
             r[S.SLICE_VALUE], r[S.AVERAGING]): r.asDict() for r in got}


@pytest.mark.parametrize("missing", ["zero", "skip"])
def test_each_slice_is_scipys_paired_t_test_and_the_family_is_holm(per_query, checked, missing):
    got = compared(per_query, checked, missing=missing)
    pairs = pairs_frame(missing)
    expected = {}
    for s in ("segment", "locale"):
        for (cand, key, value), g in pairs.groupby(["candidate", "measure_key", s]):
            expected[(cand, key, s, value, "macro")] = (len(g), (g.c - g.b).mean(),
                                                        sps.ttest_rel(g.c, g.b).pvalue)
    sliced = {k: r for k, r in got.items() if k[2] is not None and k[4] == "macro"}
    assert sorted(sliced) == sorted(expected)
    # segment: head, torso, tail, (null) for q05, (unlisted) for q46 and q47
    assert {k[3] for k in sliced if k[2] == "segment"} == {
        "head", "torso", "tail", S.NULL_SLICE, S.UNLISTED_SLICE}
    for k, (n, diff, p) in expected.items():
        assert got[k][S.NUM_PAIRS] == n, k
        assert got[k][S.MEAN_DIFF] == pytest.approx(diff, rel=1e-12, abs=1e-15), k
        if n >= 2:
            assert got[k][S.T_P_VALUE] == pytest.approx(p, rel=1e-9), k
    # one family: 2 candidates x 3 measures x (5 segments + 3 locales) = 48 tests
    keys = sorted(sliced)
    raw = np.array([np.nan if sliced[k][S.T_P_VALUE] is None else sliced[k][S.T_P_VALUE]
                    for k in keys])
    ok = ~np.isnan(raw)
    holm = multipletests(raw[ok], method="holm")[1]
    assert [sliced[k][S.T_P_ADJUSTED] for k, o in zip(keys, ok, strict=True) if o] == \
        pytest.approx(holm.tolist(), rel=1e-12)
    # the rows over all queries keep their own family, as without slices
    plain = comparison.compare(
        per_query, baseline={"system": "bm25"},
        candidates={f"system={s}": {"system": s} for s in ("dense", "hybrid")},
        missing_queries=missing, settings=ComparisonSettings(permutations=500, seed=3, test="t"),
    ).collect()
    assert {r[S.AVERAGING] for r in plain} == {"macro"} and {r[S.SLICE] for r in plain} == {None}
    for r in plain:
        row = got[(r[S.CANDIDATE].removeprefix("system="), r[S.MEASURE_KEY], None, None, "macro")]
        assert row == r.asDict()


def test_weighted_rows_are_the_ratio_estimator_with_its_linearized_interval(per_query, checked):
    got = compared(per_query, checked)
    pairs = pairs_frame("zero")
    listed = pairs[pairs.weight.notna()]
    t975 = sps.t.ppf(0.975, np.arange(1, 100))

    def expect(g):
        w, d = g.weight.to_numpy(), (g.c - g.b).to_numpy()
        m = (w * d).sum() / w.sum()  # sum(w d) / sum(w)
        n = len(d)
        if n < 2:  # (null): q05 alone; no interval
            return n, m, None, None, (w * g.b).sum() / w.sum()
        v = n / (n - 1) * (w**2 * (d - m) ** 2).sum() / w.sum() ** 2
        half = t975[n - 2] * np.sqrt(v)  # t(n - 1, 0.975)
        return n, m, m - half, m + half, (w * g.b).sum() / w.sum()

    groups = [((c, k, None, None), g) for (c, k), g in listed.groupby(["candidate", "measure_key"])]
    groups += [((c, k, s, v), g) for s in ("segment", "locale")
               for (c, k, v), g in listed.groupby(["candidate", "measure_key", s])]
    weighted = {k[:4]: r for k, r in got.items() if k[4] == "weighted"}
    # the unlisted queries have no weight: no weighted (unlisted) row
    assert sorted(weighted, key=str) == sorted((k for k, _ in groups), key=str)
    for key, g in groups:
        n, m, low, high, base = expect(g)
        r = weighted[key]
        assert r[S.NUM_PAIRS] == n
        assert r[S.MEAN_DIFF] == pytest.approx(m, rel=1e-9, abs=1e-12), key
        if low is None:
            assert r[S.DIFF_CI_LOW] is None and r[S.DIFF_CI_HIGH] is None
        else:
            assert r[S.DIFF_CI_LOW] == pytest.approx(low, rel=1e-9, abs=1e-12), key
            assert r[S.DIFF_CI_HIGH] == pytest.approx(high, rel=1e-9, abs=1e-12), key
        assert r[S.BASELINE_MEAN] == pytest.approx(base, rel=1e-9), key
        assert r[S.T_P_VALUE] is None and r[S.SIGNIFICANT] is None and r[S.EFFECT_SIZE] is None
    best = weighted[("dense", "P@5", "segment", "head")]
    assert best[S.MEAN_DIFF_BEST] == weighted[("dense", "P@5[best]", "segment", "head")][
        S.MEAN_DIFF]


@pytest.mark.parametrize("test", ["t", "randomization", "tukey"])
def test_the_paths_agree_with_slices(per_query, checked, test):
    driver = compared(per_query, checked, test=test)
    executors = compared(per_query, checked, test=test, driver_rows=0)
    assert sorted(driver, key=str) == sorted(executors, key=str)
    for key, row in driver.items():
        other = executors[key]
        for name, value in row.items():
            if isinstance(value, float):
                assert other[name] == pytest.approx(value, rel=1e-9, abs=1e-12), (key, name)
            else:
                assert other[name] == value, (key, name)
    if test == "tukey":
        assert driver[("dense", "P@5", "segment", "head", "macro")][S.TUKEY_P_VALUE] is not None


def _job_config(spark, tmp_path, per_query):
    from releval.config import Config, OutputSettings, QrelsSource, RunSource

    out = tmp_path / "out"
    per_query.write.format("delta").partitionBy("date").save(str(out / "per_query"))
    return Config(
        run=RunSource(path="unused", partition_columns=("system", "date")),
        qrels=QrelsSource(path="unused"),
        output=OutputSettings(per_query_path=str(out / "per_query"), partition_columns=("date",)),
        comparison=ComparisonSettings(test="t"),
    )


@pytest.mark.slow  # whole batch jobs in this process
def test_a_version_9_comparison_table_migrates_and_the_job_writes_slices(
        spark, tmp_path, per_query, checked):
    from delta.tables import DeltaTable
    from pyspark.sql import types as T

    from releval.io import comparison_table
    from releval.io.atomic import table_schema_version
    from releval.io.writers import SCHEMA_VERSION_PROPERTY
    from releval.job import compare as compare_job
    from releval.job.migrations import migrate_table

    config = _job_config(spark, tmp_path, per_query)
    path = str(tmp_path / "out" / "comparison")
    added = (S.SLICE, S.SLICE_VALUE, S.AVERAGING)
    v9 = T.StructType([T.StructField(f.name, f.dataType, f.nullable and f.name != S.SIGNIFICANT)
                       for f in comparison_table.comparison_schema([T.StructField("date", T.StringType())])
                       if f.name not in added])
    (DeltaTable.create(spark).location(path).addColumns(v9).partitionedBy("date")
     .property(SCHEMA_VERSION_PROPERTY, "9").execute())
    typed = {"double": 0.5, "bigint": 20, "string": "old", "boolean": False, "int": 10}
    old = {f.name: typed.get(f.dataType.simpleString()) for f in v9.fields}
    from datetime import datetime
    old.update({"date": "2026-11-27", S.COMPARED_AT: datetime(2026, 11, 27),
                S.MEASURE_KEY: "RR", S.BASELINE: "b", S.CANDIDATE: "c"})
    spark.createDataFrame([tuple(old[f.name] for f in v9.fields)], v9).write.format(
        "delta").mode("append").save(path)
    assert migrate_table(spark, kind="comparison", path=path, table=None,
                         config=config) == ["9", "10", "11", "12"]
    table = spark.read.format("delta").load(path)
    assert table.columns == [*v9.names, *added] and table.schema[S.SIGNIFICANT].nullable
    for name in added:
        assert table.schema[name].metadata["comment"] == comparison_table.COMPARISON_COMMENTS[name]
    (row,) = table.collect()  # the old row: a macro row over all queries
    assert (row[S.SLICE], row[S.SLICE_VALUE], row[S.AVERAGING]) == (None, None, "macro")

    report = compare_job.run(
        spark, config, baseline={"system": "bm25", "date": "2026-11-28"},
        candidates=[{"system": "dense", "date": "2026-11-28"}], comparison_id="new",
        queries=checked, worst=2)
    assert table_schema_version(spark, path=path, table=None) == "12"
    after = spark.read.format("delta").load(path).where("comparison_id = 'new'")
    # 3 measures x (1 overall + 5 segments + 3 locales) macro, and weighted: 1 + 4 + 2 (no
    # (unlisted) weighted rows: those queries have no weight)
    assert after.where("averaging = 'macro'").count() == 3 * 9
    assert after.where("averaging = 'weighted'").count() == 3 * 7
    assert after.where("averaging = 'weighted' AND significant IS NOT NULL").count() == 0
    text = report.render()
    assert "by slice" in text and "the 2 queries that lost most" in text
    moved = [line.split() for line in text.splitlines() if line.startswith("      1. ")]
    assert len(moved) == 3  # rank 1 of each measure
    # a fresh table is created at version 10 with the slice columns
    fresh = tmp_path / "fresh"
    fresh_config = _job_config(spark, fresh, per_query)
    compare_job.run(spark, fresh_config, baseline={"system": "bm25", "date": "2026-11-28"},
                    candidates=[{"system": "hybrid", "date": "2026-11-28"}], queries=checked)
    made = str(fresh / "out" / "comparison")
    assert table_schema_version(spark, path=made, table=None) == "12"
    # 3 measures x (5 segment values macro + 4 weighted)
    assert spark.read.format("delta").load(made).where("slice = 'segment'").count() == 3 * 9
