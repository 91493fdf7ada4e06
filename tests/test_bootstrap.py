"""The bootstrap interval of the aggregate's macro values: hash-derived Poisson weights."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T
from scipy import stats
from support.helpers import as_queries

from releval.config import IntervalSettings
from releval.core import columns as S
from releval.core.measures import parse_measures
from releval.frames.aggregate import aggregate
from releval.frames.intervals import query_key
from releval.io import tables
from releval.stats import kernel

PER_QUERY = tables.per_query_schema([T.StructField("system", T.StringType(), True)])


def keys_for(n: int, seed: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).integers(-(2**63), 2**63 - 1, size=n, dtype=np.int64)


def test_weights_are_poisson_one_and_depend_on_the_key_only():
    keys = keys_for(500)
    w = kernel.poisson_weights(keys, np.arange(400, dtype=np.uint64))  # 200,000 cells
    # Poisson(1): mean 1, variance 1, P(0) = e^-1 = 0.3679, P(1) = 0.3679, P(2) = 0.1839;
    # standard errors at 200,000 cells: mean 0.0022, share 0.0011
    assert w.mean() == pytest.approx(1.0, abs=0.01)
    assert w.var() == pytest.approx(1.0, abs=0.02)
    for k, p in [(0, math.exp(-1)), (1, math.exp(-1)), (2, math.exp(-1) / 2)]:
        assert (w == k).mean() == pytest.approx(p, abs=0.006)
    # a query's weights do not depend on the other queries or their order
    np.testing.assert_array_equal(
        kernel.poisson_weights(keys[::-1][:7], np.arange(400, dtype=np.uint64)), w[:, ::-1][:, :7]
    )
    signs = kernel.random_signs(keys, np.arange(400, dtype=np.uint64))
    assert set(np.unique(signs)) == {-1.0, 1.0}
    assert signs.mean() == pytest.approx(0.0, abs=0.01)


def test_bootstrap_agrees_with_a_numpy_reference():
    rng = np.random.default_rng(2026)
    x = rng.beta(0.6, 1.2, size=40)  # skewed per-query values in [0, 1]
    resamples, level = 10_000, 0.95
    low, high = kernel.bootstrap_interval(x, keys_for(40), resamples=resamples, level=level)
    # reference: the same Poisson bootstrap with NumPy's generator
    w = rng.poisson(1.0, size=(resamples, len(x))).astype(float)
    ok = w.sum(1) > 0
    means = (w @ x)[ok] / w.sum(1)[ok]
    ref_low, ref_high = np.quantile(means, [0.025, 0.975])
    # Monte Carlo bound: the 2.5% quantile of B draws has standard error
    # sqrt(q (1-q) / B) / f(xi_q); with the resample means ~ Normal(mean, sigma = s / sqrt(n)),
    # f(xi_q) = phi(1.96) / sigma, so SE = sqrt(0.025 * 0.975 / 10,000) * sigma / 0.0584
    # = 0.0267 sigma. Two independent estimates differ by sqrt(2) SE; allowed: 3 of those.
    sigma = x.std(ddof=1) / math.sqrt(len(x))
    bound = 3 * math.sqrt(2) * math.sqrt(0.025 * 0.975 / resamples) * sigma / stats.norm.pdf(1.96)
    assert bound == pytest.approx(0.113 * sigma, rel=0.01)
    assert abs(low - ref_low) <= bound and abs(high - ref_high) <= bound
    # and near the t interval (n = 40): within a quarter of its half-width
    half = kernel.t_half_width(x.std(ddof=1), 40, level)
    assert abs(low - (x.mean() - half)) < half / 4 and abs(high - (x.mean() + half)) < half / 4


def test_bootstrap_edge_cases():
    assert all(math.isnan(v) for v in kernel.bootstrap_interval(
        np.array([0.5]), keys_for(1), resamples=100, level=0.95))
    # constant values: every resample mean is the value
    assert kernel.bootstrap_interval(np.full(5, 0.25), keys_for(5), resamples=200, level=0.9) == (
        pytest.approx(0.25), pytest.approx(0.25))


def per_query_frame(spark, n_a=60):
    values = np.random.default_rng(5).beta(1, 2, size=n_a)
    m = parse_measures(["RR"])[0]
    rows = [("a", f"q{i:03d}", m.name, m.cutoff, m.rel_level, False, m.key, float(v), 10, 1, 1, None,
             "unjudged", None, None, None, None, None) for i, v in enumerate(values)]
    rows.append(("b", "q000", m.name, m.cutoff, m.rel_level, False, m.key, 0.5, 10, 1, 1, None,
                 "unjudged", None, None, None, None, None))
    return spark.createDataFrame(rows, PER_QUERY), [m], values


def test_spark_bootstrap_is_the_kernel_and_ignores_partitioning(spark):
    per_query, measures, values = per_query_frame(spark)
    settings = IntervalSettings(method="bootstrap", resamples=3000, seed=11)

    def intervals(df):
        rows = aggregate(as_queries(df, measures, ["system"]), measures=measures, partition_columns=["system"], intervals=settings)
        return {r["system"]: (r[S.CI_LOW], r[S.CI_HIGH], r[S.CI_METHOD], r[S.VALUE])
                for r in rows}

    def interval_only(got):  # Spark's own avg may differ in the last bit with the row order
        return {k: v[:3] for k, v in got.items()}

    one = intervals(per_query.repartition(1))
    # bit for bit the same interval under other partitionings and row orders
    assert interval_only(one) == interval_only(intervals(per_query.repartition(7, S.QUERY_ID)))
    assert interval_only(one) == interval_only(
        intervals(per_query.orderBy(F.col(S.QUERY_ID).desc()).repartition(3)))
    # the same numbers as the kernel over xxhash64(seed, query_id) keys (rows in query order)
    keys = per_query.where("system = 'a'").orderBy(S.QUERY_ID).select(query_key(11).alias("k"))
    expected = kernel.bootstrap_interval(
        values, np.array([r["k"] for r in keys.collect()]), resamples=3000, level=0.95)
    low, high, method, value = one["a"]
    assert (low, high) == pytest.approx(expected, abs=1e-15) and method == "bootstrap"
    assert low <= value <= high
    assert one["b"][:3] == (None, None, "bootstrap")  # one query: no interval
    # another seed, other weights
    other = aggregate(as_queries(per_query, measures, ["system"]), measures=measures, partition_columns=["system"],
                      intervals=IntervalSettings(method="bootstrap", resamples=3000, seed=12))
    assert next(r for r in other if r["system"] == "a")[S.CI_LOW] != low
