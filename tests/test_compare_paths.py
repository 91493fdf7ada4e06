"""The comparison's two paths (on the driver, in the executors) give today's values: the
randomization and Tukey p-values pinned for a fixed input and seed, and the rest."""

from __future__ import annotations

import numpy as np
import pytest
from pyspark.sql import types as T

from releval.config import ComparisonSettings
from releval.core import columns as S
from releval.core.measures import parse_measures
from releval.errors import ComparisonError
from releval.frames import comparison
from releval.io import tables

PARTS = [T.StructField("system", T.StringType()), T.StructField("date", T.StringType())]
SCHEMA = tables.per_query_schema(PARTS)
CANDIDATES = {f"system={s}": {"system": s} for s in ("dense", "hybrid", "same")}
KEYS = [(c, m) for c in ("dense", "hybrid", "same") for m in ("P@5", "P@5[best]", "RR", "nDCG@10")]


def pinned_rows():
    """40 queries x 4 measures x 4 systems; dense lacks q03 and q17, same q05, bm25 q09."""
    rng = np.random.default_rng(47)
    out = []
    for measure in ["nDCG@10", "P@5", "P@5[best]", "RR"]:
        m = parse_measures([measure])[0]
        base = rng.uniform(0, 1, 40).round(3)
        for system, shift, drop in [("bm25", 0.0, ()), ("dense", 0.05, (3, 17)),
                                    ("hybrid", 0.12, ()), ("same", 0.0, (5,))]:
            noise = rng.normal(0, 0.1, 40).round(3) * (system != "same")
            for i, v in enumerate(np.clip(base + shift + noise, 0, 1)):
                if i in drop or (system == "bm25" and i == 9):
                    continue
                out.append((system, "2026-11-28", f"q{i:02d}", m.name, m.cutoff, m.rel_level,
                            False, m.key, float(v), 10, 3, 1, None, "unjudged", None, None, None, None, None))
    return out


# p = (1 + count) / (1 + 2000): the counts of the engine these values were pinned on, in the
# order of KEYS (dense, hybrid, same x P@5, P@5[best], RR, nDCG@10)
RANDOMIZATION = {
    "zero": [1160, 1195, 1186, 664, 0, 0, 0, 0, 1866, 120, 1126, 728],
    "skip": [37, 1915, 1322, 78, 0, 0, 0, 0, 814, 96, 1895, 817],
}
TUKEY = {
    "zero": [1851, 1962, 1872, 1535, 0, 46, 1, 0, 2000, 741, 1988, 1929],
    "skip": [194, 1987, 1982, 240, 0, 9, 0, 0, 1951, 1010, 2000, 1749],
}
T_P = {
    "zero": [0.563080914819, 0.610988739019, 0.57723122694, 0.323835697656, 1.29201328556e-06,
             0.000352020752151, 3.67078128987e-07, 4.3730685073e-06, 0.925672814511,
             0.0899014230449, 0.556614002133, 0.358405058536],
    "skip": [0.0134660911114, 0.965449067085, 0.646431181794, 0.0477855455222,
             2.57015509199e-07, 0.00068235646836, 5.83396039037e-07, 8.54358426963e-06,
             0.399239861841, 0.0568189174239, 0.941075218658, 0.395365961718],
}
PAIRS = {"zero": [40] * 12, "skip": [37] * 4 + [39] * 4 + [38] * 4}


@pytest.fixture(scope="module")
def per_query(spark):
    return spark.createDataFrame(pinned_rows(), SCHEMA).cache()


def run(per_query, missing, test, driver_rows=comparison.DRIVER_ROWS):
    settings = ComparisonSettings(permutations=2000, seed=11, test=test)
    got = comparison.compare(per_query, baseline={"system": "bm25"}, candidates=CANDIDATES,
                             missing_queries=missing, settings=settings,
                             driver_rows=driver_rows).collect()
    return {(r[S.CANDIDATE].removeprefix("system="), r[S.MEASURE_KEY]): r for r in got}


@pytest.mark.parametrize("missing", ["zero", "skip"])
@pytest.mark.parametrize("driver_rows", [comparison.DRIVER_ROWS, 0], ids=["driver", "executors"])
def test_pinned_p_values_on_both_paths(per_query, missing, driver_rows):
    tukey = run(per_query, missing, "tukey", driver_rows)
    assert sorted(tukey) == sorted(KEYS)
    counts = [round(tukey[k][S.RANDOMIZATION_P_VALUE] * 2001) - 1 for k in KEYS]
    assert counts == RANDOMIZATION[missing]
    assert [round(tukey[k][S.TUKEY_P_VALUE] * 2001) - 1 for k in KEYS] == TUKEY[missing]
    assert [tukey[k][S.NUM_PAIRS] for k in KEYS] == PAIRS[missing]
    assert [tukey[k][S.T_P_VALUE] for k in KEYS] == pytest.approx(T_P[missing], rel=1e-10)
    # Holm over the 12 randomization p-values: hybrid's four (1/2001 each) x 12 .. x 9
    assert tukey[("hybrid", "P@5")][S.RANDOMIZATION_P_ADJUSTED] == pytest.approx(12 / 2001)
    # P@5 has its [best] form: its mean difference and whether the sign holds
    row = tukey[("hybrid", "P@5")]
    assert row[S.MEAN_DIFF_BEST] == tukey[("hybrid", "P@5[best]")][S.MEAN_DIFF]
    assert row[S.SIGN_HOLDS] is True and tukey[("hybrid", "RR")][S.SIGN_HOLDS] is None


@pytest.mark.parametrize("missing", ["zero", "skip"])
def test_the_paths_agree_on_every_column(per_query, missing):
    for test in ("randomization", "t"):
        driver = run(per_query, missing, test)
        executors = run(per_query, missing, test, driver_rows=0)
        assert sorted(driver) == sorted(executors)
        for key, row in driver.items():
            other = executors[key].asDict()
            for name, value in row.asDict().items():
                if isinstance(value, float):
                    assert other[name] == pytest.approx(value, rel=1e-12, abs=1e-15), (key, name)
                else:
                    assert other[name] == value, (key, name)


def test_t_test_only_leaves_the_randomization_test_out(per_query):
    got = run(per_query, "zero", "t")
    assert {r[S.RANDOMIZATION_P_VALUE] for r in got.values()} == {None}
    assert {r[S.RANDOMIZATION_P_ADJUSTED] for r in got.values()} == {None}
    # significant by the corrected t-test: hybrid on all four measures
    assert sorted(k for k, r in got.items() if r[S.SIGNIFICANT]) == [
        ("hybrid", m) for m in ("P@5", "P@5[best]", "RR", "nDCG@10")]


@pytest.mark.parametrize("driver_rows", [comparison.DRIVER_ROWS, 0], ids=["driver", "executors"])
def test_a_side_matching_two_partitions_is_an_error(spark, driver_rows):
    rows = [r for r in pinned_rows() if r[0] in ("bm25", "dense")]
    other_day = [(r[0], "2026-11-29", *r[2:]) for r in rows if r[0] == "dense"]
    per_query = spark.createDataFrame(rows + other_day, SCHEMA)
    with pytest.raises(ComparisonError, match=r"system=dense has 2 per-query rows for query "
                                              r"'q\d\d' and measure"):
        comparison.compare(per_query, baseline={"system": "bm25"},
                           candidates={"system=dense": {"system": "dense"}},
                           missing_queries="zero", driver_rows=driver_rows)


@pytest.mark.parametrize("driver_rows", [comparison.DRIVER_ROWS, 0], ids=["driver", "executors"])
def test_sides_that_share_rows(spark, driver_rows):
    # the candidate "date=2026-11-28" names no system: bm25's rows (the only ones here) are
    # of both sides, so every pair is (v, v)
    rows = [r for r in pinned_rows() if r[0] == "bm25"]
    per_query = spark.createDataFrame(rows, SCHEMA)
    settings = ComparisonSettings(permutations=200, seed=11, test="t")
    got = comparison.compare(per_query, baseline={"system": "bm25"},
                             candidates={"date=2026-11-28": {"date": "2026-11-28"}},
                             missing_queries="zero", settings=settings,
                             driver_rows=driver_rows).collect()
    # 4 measures, 39 queries each (bm25 lacks q09): difference 0 on every pair, all ties
    assert sorted(r[S.MEASURE_KEY] for r in got) == ["P@5", "P@5[best]", "RR", "nDCG@10"]
    assert {(r[S.NUM_PAIRS], r[S.MEAN_DIFF], r[S.TIES], r[S.T_P_VALUE]) for r in got} == {
        (39, 0.0, 39, 1.0)}


def test_a_measure_key_naming_two_measures_is_an_error(spark):
    # bm25's RR rows computed at relevance level 1, dense's at 2, both keyed "RR"
    rows = [r for r in pinned_rows() if r[0] in ("bm25", "dense") and r[7] == "RR"]
    rows = [(*r[:5], 2 if r[0] == "dense" else r[5], *r[6:]) for r in rows]
    per_query = spark.createDataFrame(rows, SCHEMA)
    with pytest.raises(ComparisonError, match=r"measure_key 'RR' names two measures"):
        comparison.compare(per_query, baseline={"system": "bm25"},
                           candidates={"system=dense": {"system": "dense"}},
                           missing_queries="zero", settings=ComparisonSettings(test="t"))
