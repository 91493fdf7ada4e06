"""Confidence intervals of the aggregate table's macro values."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T
from scipy import stats
from support.helpers import as_queries

from releval.config import IntervalSettings
from releval.core import columns as S
from releval.core.engine import long_format
from releval.core.measures import REGISTRY, parse_measures
from releval.evaluation.evaluate import evaluate
from releval.frames.aggregate import aggregate
from releval.io import tables
from releval.job.sample import DATES, SampleShape, generate
from releval.stats import kernel

PER_QUERY = tables.per_query_schema([T.StructField("system", T.StringType(), True)])


def per_query_rows(spark, values_by_system, measure="P@5"):
    """Per-query rows of one measure; num_rel_ret = 5 * value (P@5), num_rel = 5."""
    m = parse_measures([measure])[0]
    rows = [
        (system, f"q{i:03d}", m.name, m.cutoff, m.rel_level, False, m.key, float(v),
         10, 5, int(round(5 * v)), None, "unjudged", None, None, None, None, None)
        for system, values in values_by_system.items()
        for i, v in enumerate(values)
    ]
    return spark.createDataFrame(rows, PER_QUERY), [m]


def by_system(rows, averaging="macro"):
    return {r["system"]: r for r in rows if r[S.AVERAGING] == averaging}


# --- the t interval -------------------------------------------------------------------


def test_t_interval_by_hand(spark):
    # a: 0.3, 0.4, 0.5: mean 0.4, s = sqrt(((-.1)^2 + 0 + .1^2) / 2) = 0.1, n = 3,
    #    t_{0.975, 2} = 4.302652729911275, half = 4.302652729911275 * 0.1 / sqrt(3) = 0.248414...
    #    (inside P@5's range [0, 1]: not clipped)
    # b: one query, no interval; c: constant 0.6 (s = 0): the interval is [0.6, 0.6]
    per_query, measures = per_query_rows(
        spark, {"a": [0.3, 0.4, 0.5], "b": [0.8], "c": [0.6] * 7}
    )
    rows = by_system(aggregate(as_queries(per_query, measures, ["system"]), measures=measures, partition_columns=["system"]))
    half = 4.302652729911275 * 0.1 / math.sqrt(3)
    assert half == pytest.approx(0.2484137, abs=1e-7)
    a = rows["a"]
    assert (a[S.VALUE], a[S.CI_LOW], a[S.CI_HIGH]) == pytest.approx((0.4, 0.4 - half, 0.4 + half))
    assert (a[S.CI_METHOD], a[S.CI_LEVEL], a[S.NUM_QUERIES]) == ("t", 0.95, 3)
    assert (a[S.CI_LOW], a[S.CI_HIGH]) == pytest.approx(
        stats.t.interval(0.95, 2, loc=0.4, scale=0.1 / math.sqrt(3))
    )
    b = rows["b"]
    assert (b[S.CI_LOW], b[S.CI_HIGH], b[S.CI_METHOD]) == (None, None, "t")
    c = rows["c"]
    # stddev_samp of a constant is exactly 0 (sum and sum of squares could give -1e-17)
    assert (c[S.CI_LOW], c[S.CI_HIGH]) == (pytest.approx(0.6), pytest.approx(0.6))
    assert c[S.CI_LOW] <= c[S.VALUE] <= c[S.CI_HIGH]


def test_micro_and_sum_rows_have_no_interval(spark):
    per_query, _ = per_query_rows(spark, {"a": [0.2, 0.4, 0.6]})
    measures = parse_measures(["P@5", "num_rel"])
    counts = per_query.withColumn(S.MEASURE, F.lit("num_rel")).withColumn(
        S.MEASURE_KEY, F.lit("num_rel")).withColumn(S.CUTOFF, F.lit(None).cast("int"))
    both = as_queries(per_query.unionByName(counts), measures, ["system"])
    rows = aggregate(both, measures=measures, partition_columns=["system"])
    kinds = {(r[S.MEASURE_KEY], r[S.AVERAGING]) for r in rows}
    assert kinds == {("P@5", "macro"), ("P@5", "micro"), ("num_rel", "sum")}
    for r in rows:
        filled = r[S.AVERAGING] == "macro"
        assert all((r[c] is not None) == filled for c in (S.CI_LOW, S.CI_HIGH, S.CI_METHOD, S.CI_LEVEL))


@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_t_half_width_agrees_with_scipy(level):
    n = np.array([2, 3, 10, 51, 1000, 1])
    sd = np.array([0.5, 0.1, 0.3, 0.25, 0.2, 0.3])
    got = kernel.t_half_width(sd, n, level)
    expected = stats.t.ppf((1 + level) / 2, n[:-1] - 1) * sd[:-1] / np.sqrt(n[:-1])
    np.testing.assert_allclose(got[:-1], expected, rtol=1e-12)
    assert np.isnan(got[-1])  # n = 1


def test_interval_narrows_as_queries_grow(spark):
    # nested samples drawn from one generator: the first 25, 100 and 400 of 400 values
    values = np.random.default_rng(12).beta(2, 5, size=400)
    nested = {f"n{n:03d}": values[:n].tolist() for n in (25, 100, 400)}
    per_query, measures = per_query_rows(spark, nested)
    rows = by_system(aggregate(as_queries(per_query, measures, ["system"]), measures=measures, partition_columns=["system"]))
    widths = [rows[k][S.CI_HIGH] - rows[k][S.CI_LOW] for k in sorted(rows)]
    assert widths[0] > widths[1] > widths[2] > 0
    # about 1/sqrt(n): width ratio 25 -> 400 queries near 4 (t_24 vs t_399 and s differ a bit)
    assert 3.0 < widths[0] / widths[2] < 5.5


def test_wilson_interval_agrees_with_statsmodels():
    proportion = pytest.importorskip("statsmodels.stats.proportion")
    for count, n in [(0, 2), (1, 2), (99, 100), (100, 100), (3, 40), (20, 20), (517, 1000)]:
        for level in (0.9, 0.95, 0.99):
            want = proportion.proportion_confint(count, n, alpha=1 - level, method="wilson")
            got = kernel.wilson_interval(count / n, n, level)
            assert got == pytest.approx(want, rel=1e-12, abs=1e-15), (count, n, level)
            assert 0.0 <= got[0] <= count / n <= got[1] <= 1.0
    assert all(math.isnan(x) for x in kernel.wilson_interval(0.0, 0, 0.95))


#: make run's measures, every other family with a macro value, and 0/1 ones at k = 1
SAMPLE_MEASURES = [
    "P@5", "P@10", "R@10", "R@50", "Hit@10", "RR", "nDCG@10", "AP", "AP@10",
    "Hit@1", "P@1", "RR@1", "nDCG_exp@10", "relative_P@10", "Rprec", "Rprec_mult(mult=2)",
    "bpref", "infAP", "unj@10", "iprec(recall=0.5)", "iprec_avg", "rbp", "rbp_resid", "binG",
    "G", "ndcg_rel", "Rndcg", "set_P", "set_recall", "set_relative_P", "set_map", "set_F",
    "utility",
]


def test_every_macro_interval_of_the_sample_is_inside_its_measures_range(spark):
    # make run's sample, its first two dates (the generator draws them first: the same
    # rows); on 2026-11-22 bm25's Hit@10 is 0.99 over 100 queries, whose t interval
    # [0.9702, 1.0098] passed 1
    run, qrels = generate(SampleShape(dates=DATES[:2]))
    run_df = spark.createDataFrame(run.rename(columns={"item_id": S.DOC_ID, "position": S.RANK}))
    result = evaluate(
        run_df.select("system", "date", S.QUERY_ID, S.DOC_ID, S.SCORE,
                      F.col(S.RANK).cast("int").alias(S.RANK)),
        spark.createDataFrame(qrels.drop(columns="qrels_version")),
        measures=parse_measures(SAMPLE_MEASURES),
        partition_columns=["system", "date"],
    )
    parts = ["system", "date"]
    queries = result.queries.localCheckpoint()  # computed once, as the job persists it
    per_query = long_format(queries, partition_columns=parts, measures=result.measures).groupBy(
        *parts, S.MEASURE, S.MEASURE_KEY).agg(
        F.min(S.VALUE).alias("low"), F.max(S.VALUE).alias("high"),
        F.count_if(~F.col(S.VALUE).isin(0.0, 1.0)).alias("nonbinary")).collect()
    values = {(r["system"], r["date"], r[S.MEASURE_KEY]): r for r in per_query}
    macro = [r for r in aggregate(queries, measures=result.measures, partition_columns=parts)
             if r[S.AVERAGING] == "macro"]
    assert len(macro) == 2 * 3 * len({k[2] for k in values if REGISTRY[
        values[k][S.MEASURE]].averaging[0] == "macro"})
    methods = Counter()
    for r in macro:
        key = (r["system"], r["date"], r[S.MEASURE_KEY])
        bounds, seen = REGISTRY[r[S.MEASURE]].bounds, values[key]
        assert r[S.CI_LOW] <= r[S.VALUE] <= r[S.CI_HIGH], r
        methods[r[S.CI_METHOD]] += 1
        if bounds is None:  # utility
            assert r[S.CI_METHOD] == "t"
            continue
        # the declared range holds every query's value, and the interval
        assert bounds[0] <= seen["low"] <= seen["high"] <= bounds[1], (key, seen)
        assert bounds[0] <= r[S.CI_LOW] <= r[S.CI_HIGH] <= bounds[1], r
        assert (r[S.CI_METHOD] == "wilson") == (seen["nonbinary"] == 0), (r, seen)
        if r[S.CI_METHOD] == "t-clipped":
            assert r[S.CI_LOW] == bounds[0] or r[S.CI_HIGH] == bounds[1], r
    assert set(methods) == {"t", "t-clipped", "wilson"}, methods
    hit = next(r for r in macro if (r["system"], r["date"], r[S.MEASURE_KEY])
               == ("bm25", "2026-11-22", "Hit@10"))
    # Wilson's interval of 99 in 100 (tests/test_aggregate_rows.py works it by hand)
    assert (hit[S.VALUE], hit[S.CI_METHOD]) == (0.99, "wilson")
    assert (hit[S.CI_LOW], hit[S.CI_HIGH]) == pytest.approx((0.9455138, 0.9982326), abs=1e-7)
    # a percentile bootstrap interval is made of resampled means: inside the values' range
    boot = aggregate(queries, measures=result.measures, partition_columns=parts,
                     intervals=IntervalSettings(method="bootstrap", resamples=200))
    for r in boot:
        if r[S.AVERAGING] == "macro":
            seen = values[(r["system"], r["date"], r[S.MEASURE_KEY])]
            assert seen["low"] <= r[S.CI_LOW] <= r[S.CI_HIGH] <= seen["high"], (r, seen)
            assert r[S.CI_METHOD] == "bootstrap"


def test_interval_config_is_checked(tmp_path):
    from releval.config import load_config
    from releval.errors import ConfigError

    base = '[run]\npath = "r"\n[qrels]\npath = "q"\n'
    path = tmp_path / "c.toml"
    path.write_text(base + '[intervals]\nmethod = "bootstrap"\nresamples = 500\nseed = 7\n')
    assert load_config(path).intervals == IntervalSettings(method="bootstrap", resamples=500, seed=7)
    for bad, message in [('method = "normal"', "intervals.method"), ("level = 95", "intervals.level"),
                         ("resamples = 0", "intervals.resamples")]:
        path.write_text(base + f"[intervals]\n{bad}\n")
        with pytest.raises(ConfigError, match=message):
            load_config(path)
