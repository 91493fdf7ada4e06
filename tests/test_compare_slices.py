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
from releval.stats import comparison


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
