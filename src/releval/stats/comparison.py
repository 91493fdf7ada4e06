"""Is the difference real? A baseline run partition against candidates, query by query.

:func:`compare` gives one row per (candidate, measure): the paired statistics and p-values,
corrected over the whole comparison as one family. See docs/statistics.md."""

from __future__ import annotations

from collections.abc import Mapping
from functools import reduce

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from releval.config import ComparisonSettings
from releval.core import columns as S
from releval.core.frames import local_frame
from releval.core.measures.registry import BEST_SUFFIX, REGISTRY
from releval.stats import kernel
from releval.stats.intervals import query_key
from releval.stats.power import paired_power

_B, _C, _KEY = "_baseline_value", "_candidate_value", "_key"
_MEASURE_COLUMNS = list(S.MEASURE_COLUMNS)
_STATS = [
    (S.NUM_PAIRS, "long"), (S.BASELINE_MEAN, "double"), (S.CANDIDATE_MEAN, "double"),
    (S.MEAN_DIFF, "double"), (S.DIFF_CI_LOW, "double"), (S.DIFF_CI_HIGH, "double"),
    (S.RELATIVE_CHANGE, "double"), (S.WINS, "long"), (S.TIES, "long"), (S.LOSSES, "long"),
    (S.EFFECT_SIZE, "double"), (S.T_P_VALUE, "double"), (S.RANDOMIZATION_P_VALUE, "double"),
    (S.MIN_DETECTABLE_DIFF, "double"), (S.QUERIES_NEEDED, "long"),
]
_ADJUSTED = [(S.T_P_ADJUSTED, "double"), (S.RANDOMIZATION_P_ADJUSTED, "double"),
             (S.SIGNIFICANT, "boolean")]


def side_condition(values: Mapping[str, str]) -> Column:
    """Rows of the run partition ``values`` (column -> value, compared as strings)."""
    return reduce(lambda a, b: a & b, [F.col(c).cast("string") == v for c, v in values.items()])


def _compared_measures(per_query: DataFrame) -> DataFrame:
    counts = sorted(name for name, spec in REGISTRY.items() if "macro" not in spec.averaging)
    return per_query.where(~F.col(S.MEASURE).isin(counts))


def pairs(
    per_query: DataFrame,
    *,
    baseline: Mapping[str, str],
    candidates: Mapping[str, Mapping[str, str]],
    missing_queries: str,
) -> DataFrame:
    """The pairs of every candidate with the baseline, by measure and query.

    Args:
        baseline: the baseline run partition (column -> value).
        candidates: label -> candidate run partition.
        missing_queries: ``zero`` (queries either side scored, 0 where missing) or ``skip``.

    Returns:
        ``candidate``, the measure columns, ``query_id`` and both values, for measures both have.
    """
    rows = _compared_measures(per_query)
    base = rows.where(side_condition(baseline)).select(
        *_MEASURE_COLUMNS, S.QUERY_ID, F.col(S.VALUE).alias(_B))
    cand = reduce(DataFrame.unionByName, [
        rows.where(side_condition(values)).select(
            F.lit(label).alias(S.CANDIDATE), *_MEASURE_COLUMNS, S.QUERY_ID,
            F.col(S.VALUE).alias(_C))
        for label, values in candidates.items()
    ])
    labels = local_frame(rows.sparkSession, [(k,) for k in candidates],
                         T.StructType([T.StructField(S.CANDIDATE, T.StringType())]))
    # measures one side lacks are never paired with zeros
    common = cand.select(S.CANDIDATE, S.MEASURE_KEY).distinct().join(
        base.select(S.MEASURE_KEY).distinct(), S.MEASURE_KEY)
    base_x = base.crossJoin(F.broadcast(labels))
    keys = [S.CANDIDATE, S.MEASURE_KEY, S.QUERY_ID]
    if missing_queries == "skip":
        described = [c for c in _MEASURE_COLUMNS if c != S.MEASURE_KEY]  # taken from base
        joined = base_x.join(cand.drop(*described), keys, "inner")
        return joined.select(S.CANDIDATE, *_MEASURE_COLUMNS, S.QUERY_ID, _B, _C)
    b, c = base_x.alias("b"), cand.alias("c")
    joined = b.join(c, [F.col(f"b.{k}") == F.col(f"c.{k}") for k in keys], "full_outer")
    out = joined.select(
        *[F.coalesce(F.col(f"b.{k}"), F.col(f"c.{k}")).alias(k) for k in [S.CANDIDATE,
                                                                          *_MEASURE_COLUMNS,
                                                                          S.QUERY_ID]],
        F.coalesce(F.col(f"b.{_B}"), F.lit(0.0)).alias(_B),
        F.coalesce(F.col(f"c.{_C}"), F.lit(0.0)).alias(_C),
    )
    return out.join(F.broadcast(common), [S.CANDIDATE, S.MEASURE_KEY], "left_semi")


def paired_tests(
    pair_rows: DataFrame, *, alpha: float, permutations: int, seed: int, power: float = 0.8,
    effect_of_interest: float = 0.02,
) -> DataFrame:
    """One row per (candidate, measure): the paired statistics, the randomization test and
    the t-test's power (:func:`releval.stats.power.paired_power`).

    Args:
        alpha: the difference's interval has level 1 - alpha; the power is at alpha too.
        seed: hashed with each query id into its signs.
        power: of ``min_detectable_diff`` and ``queries_needed``.
        effect_of_interest: the absolute difference ``queries_needed`` is for.
    """
    group = [S.CANDIDATE, *_MEASURE_COLUMNS]
    types = {f.name: f.dataType.simpleString() for f in pair_rows.schema.fields}
    schema = ", ".join([*(f"`{c}` {types[c]}" for c in group), *(f"{n} {t}" for n, t in _STATS)])

    def one_group(key: tuple, pdf: pd.DataFrame) -> pd.DataFrame:
        pdf = pdf.sort_values(S.QUERY_ID)
        b, c = pdf[_B].to_numpy(np.float64), pdf[_C].to_numpy(np.float64)
        stats = kernel.paired(b, c, level=1.0 - alpha)
        d = kernel.differences(b, c)
        p = kernel.randomization_p(d, pdf[_KEY].to_numpy(np.int64), permutations=permutations)
        detects = paired_power(d, alpha=alpha, power=power,
                               effect_of_interest=effect_of_interest)
        values = {**dict(zip(group, key, strict=True)), **stats.__dict__,
                  **detects.__dict__, S.NUM_PAIRS: stats.pairs, S.RANDOMIZATION_P_VALUE: p}
        return pd.DataFrame({k: pd.Series([values[k]], dtype=object)
                             for k in [*group, *(n for n, _ in _STATS)]})

    rows = pair_rows.select(*group, S.QUERY_ID, _B, _C, query_key(seed).alias(_KEY))
    return rows.groupBy(*group).applyInPandas(one_group, schema)


def tukey_tests(
    pair_rows: DataFrame, *, missing_queries: str, permutations: int, seed: int
) -> DataFrame:
    """Randomized Tukey HSD p-value of each candidate against the baseline, per measure.

    Returns:
        ``candidate``, ``measure_key``, ``tukey_p_value``.
    """
    schema = f"{S.CANDIDATE} string, {S.MEASURE_KEY} string, {S.TUKEY_P_VALUE} double"

    def one_measure(pdf: pd.DataFrame) -> pd.DataFrame:
        by_query = pdf.groupby(S.QUERY_ID)
        wide = pd.concat(
            [by_query[_B].first().rename("_baseline"),
             pdf.pivot_table(index=S.QUERY_ID, columns=S.CANDIDATE, values=_C, aggfunc="first")],
            axis=1)
        wide = (wide.fillna(0.0) if missing_queries == "zero" else wide.dropna()).sort_index()
        keys = by_query[_KEY].first().loc[wide.index].to_numpy(np.int64)
        p = kernel.tukey_hsd_p(wide.to_numpy(np.float64), keys, permutations=permutations)
        return pd.DataFrame({S.CANDIDATE: list(wide.columns[1:]),
                             S.MEASURE_KEY: pdf[S.MEASURE_KEY].iloc[0],
                             S.TUKEY_P_VALUE: p[0, 1:]})

    rows = pair_rows.select(S.CANDIDATE, S.MEASURE_KEY, S.QUERY_ID, _B, _C,
                            query_key(seed).alias(_KEY))
    return rows.groupBy(S.MEASURE_KEY).applyInPandas(one_measure, schema)


def correct(tests: DataFrame, *, correction: str, alpha: float, test: str) -> DataFrame:
    """Add the corrected p-values over the whole family (every row, one small group) and
    ``significant``; ``correction`` is a key of :data:`releval.stats.kernel.CORRECTIONS`."""
    adjust = kernel.CORRECTIONS[correction]
    chosen = {"randomization": S.RANDOMIZATION_P_ADJUSTED, "t": S.T_P_ADJUSTED,
              "tukey": S.TUKEY_P_VALUE}[test]
    schema = ", ".join(
        [*(f"`{f.name}` {f.dataType.simpleString()}" for f in tests.schema.fields),
         *(f"{n} {t}" for n, t in _ADJUSTED)])

    def family(pdf: pd.DataFrame) -> pd.DataFrame:
        out = pdf.copy()
        for raw, adjusted in ((S.T_P_VALUE, S.T_P_ADJUSTED),
                              (S.RANDOMIZATION_P_VALUE, S.RANDOMIZATION_P_ADJUSTED)):
            values = adjust(pdf[raw].to_numpy(np.float64, na_value=np.nan))
            out[adjusted] = pd.Series(values, index=pdf.index).astype(object).where(
                ~np.isnan(values), None)
        out[S.SIGNIFICANT] = [p is not None and p == p and p < alpha for p in out[chosen]]
        return out

    return tests.withColumn("_family", F.lit(0)).groupBy("_family").applyInPandas(
        lambda pdf: family(pdf.drop(columns="_family")), schema)


def with_bounds(tests: DataFrame) -> DataFrame:
    """Add ``mean_diff_best`` (the mean difference of the row's ``[best]`` measure, the same
    candidate) and ``sign_holds`` (the two differences have the same sign, a mean within
    :data:`releval.stats.kernel.TIE_TOLERANCE` of 0 being 0) to each row whose ``[best]`` key
    is among the rows; null on the others."""
    best = tests.select(
        F.col(S.CANDIDATE).alias("_b_candidate"), F.col(S.MEASURE_KEY).alias("_b_key"),
        F.col(S.MEAN_DIFF).alias(S.MEAN_DIFF_BEST))
    # a key ends with its suffixes and [best] combines with no other, so M[best] = M + [best]
    on = ((F.col(S.CANDIDATE) == F.col("_b_candidate"))
          & (F.concat(F.col(S.MEASURE_KEY), F.lit(BEST_SUFFIX)) == F.col("_b_key")))
    def sign(c: Column) -> Column:
        return F.when(F.abs(c) <= kernel.TIE_TOLERANCE, 0.0).otherwise(F.signum(c))

    holds = sign(F.col(S.MEAN_DIFF)) == sign(F.col(S.MEAN_DIFF_BEST))
    return (tests.join(F.broadcast(best), on, "left")
            .withColumn(S.SIGN_HOLDS, holds).drop("_b_candidate", "_b_key"))


def compare(
    per_query: DataFrame,
    *,
    baseline: Mapping[str, str],
    candidates: Mapping[str, Mapping[str, str]],
    missing_queries: str,
    settings: ComparisonSettings = ComparisonSettings(),
) -> DataFrame:
    """The comparison rows: :func:`pairs`, :func:`paired_tests`, :func:`correct`.

    Returns:
        ``candidate``, the measure columns, the statistics, ``min_detectable_diff`` and
        ``queries_needed``, corrected p-values, ``significant``, ``mean_diff_best`` and
        ``sign_holds`` (:func:`with_bounds`).
    """
    pair_rows = pairs(per_query, baseline=baseline, candidates=candidates,
                      missing_queries=missing_queries)
    tests = paired_tests(pair_rows, alpha=settings.alpha, permutations=settings.permutations,
                         seed=settings.seed, power=settings.power,
                         effect_of_interest=settings.effect_of_interest)
    if settings.test == "tukey":
        hsd = tukey_tests(pair_rows, missing_queries=missing_queries,
                          permutations=settings.permutations, seed=settings.seed)
        tests = tests.join(hsd, [S.CANDIDATE, S.MEASURE_KEY], "left")
    else:
        tests = tests.withColumn(S.TUKEY_P_VALUE, F.lit(None).cast("double"))
    return with_bounds(correct(tests, correction=settings.correction, alpha=settings.alpha,
                               test=settings.test))
