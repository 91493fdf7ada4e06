"""Confidence intervals of the aggregate table's macro values."""

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
from releval.io import tables
from releval.job.pipeline import evaluate
from releval.job.sample import SampleShape, generate
from releval.stats import kernel
from releval.stats.aggregate import aggregate

PER_QUERY = tables.per_query_schema([T.StructField("system", T.StringType(), True)])


def per_query_rows(spark, values_by_system, measure="P@5"):
    """Per-query rows of one measure; num_rel_ret = 5 * value (P@5), num_rel = 5."""
    m = parse_measures([measure])[0]
    rows = [
        (system, f"q{i:03d}", m.name, m.cutoff, m.rel_level, False, m.key, float(v),
         10, 5, int(round(5 * v)), None, "unjudged", None)
        for system, values in values_by_system.items()
        for i, v in enumerate(values)
    ]
    return spark.createDataFrame(rows, PER_QUERY), [m]


def by_system(rows, averaging="macro"):
    return {r["system"]: r for r in rows if r[S.AVERAGING] == averaging}


# --- the t interval -------------------------------------------------------------------


def test_t_interval_by_hand(spark):
    # a: 0.2, 0.4, 0.6: mean 0.4, s = sqrt(((-.2)^2 + 0 + .2^2) / 2) = 0.2, n = 3,
    #    t_{0.975, 2} = 4.302652729911275, half = 4.302652729911275 * 0.2 / sqrt(3) = 0.496827...
    # b: one query, no interval; c: constant 0.6 (s = 0): the interval is [0.6, 0.6]
    per_query, measures = per_query_rows(
        spark, {"a": [0.2, 0.4, 0.6], "b": [0.8], "c": [0.6] * 7}
    )
    rows = by_system(aggregate(as_queries(per_query, measures, ["system"]), measures=measures, partition_columns=["system"]))
    half = 4.302652729911275 * 0.2 / math.sqrt(3)
    assert half == pytest.approx(0.4968275, abs=1e-7)
    a = rows["a"]
    assert (a[S.VALUE], a[S.CI_LOW], a[S.CI_HIGH]) == pytest.approx((0.4, 0.4 - half, 0.4 + half))
    assert (a[S.CI_METHOD], a[S.CI_LEVEL], a[S.NUM_QUERIES]) == ("t", 0.95, 3)
    assert (a[S.CI_LOW], a[S.CI_HIGH]) == pytest.approx(
        stats.t.interval(0.95, 2, loc=0.4, scale=0.2 / math.sqrt(3))
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


def test_every_macro_row_of_the_sample_holds_its_value(spark):
    run, qrels = generate(SampleShape(queries=40, docs_per_query=20, judged_per_query=10,
                                      dates=("2026-11-27", "2026-11-28", "2026-11-29")))
    run_df = spark.createDataFrame(run.rename(columns={"item_id": S.DOC_ID, "position": S.RANK}))
    result = evaluate(
        run_df.select("system", "date", S.QUERY_ID, S.DOC_ID, S.SCORE,
                      F.col(S.RANK).cast("int").alias(S.RANK)),
        spark.createDataFrame(qrels.drop(columns="qrels_version")),
        measures=parse_measures(["P@5", "R@10", "RR", "nDCG@10", "AP", "num_rel"]),
        partition_columns=["system", "date"],
    )
    macro = result.aggregate.where(F.col(S.AVERAGING) == "macro").collect()
    assert len(macro) == 3 * 3 * 5  # systems x dates x macro measures
    for r in macro:
        assert r[S.NUM_QUERIES] >= 2
        assert r[S.CI_LOW] <= r[S.VALUE] <= r[S.CI_HIGH], r


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
