"""The wide per-query table -> aggregate rows per (run partition, measure, averaging):
``macro`` (mean, with its interval), ``micro`` (pooled counts), ``sum`` and ``geometric``;
with a weight, ``weighted`` (the traffic-weighted mean and its linearized interval,
:mod:`releval.stats.weighted`); with slices, macro, micro and weighted rows per slice value.

One ``groupBy`` (:func:`sums`; each scored query row enters once overall and once per slice,
:func:`with_slices`) then :func:`rows` on the driver. See docs/design/aggregate.md."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F

from releval.config import IntervalSettings
from releval.core import columns as S
from releval.core.columns import IN_QRELS, MEASURES
from releval.core.engine import long_format
from releval.core.measures.registry import UNIT, Measure
from releval.frames import intervals as ci
from releval.stats import kernel as ci_kernel
from releval.stats.weighted import weighted_from_sums

#: the scored queries of a run partition (those in the qrels)
N = "_agg_n"
#: the position of a measure in the wide table's measure array (:func:`by_measure`)
INDEX = "_agg_i"
#: the measure's entry (value and counts) of a row of :func:`by_measure`
ENTRY = "_agg_entry"

#: the floor of a value in a geometric mean (trec_eval's, so that a 0 does not make it 0)
MIN_GEO_MEAN = 0.00001

#: a bootstrap interval per (run partition values, measure key)
Bootstrap = Mapping[tuple[tuple[Any, ...], str], tuple[float | None, float | None]]


def sum_column(kind: str) -> str:
    """The name of the :func:`sums` column ``kind`` (``mean``, ``sd``, ``sum``, ...)."""
    return f"_agg_{kind}"


def by_measure(queries: DataFrame) -> DataFrame:
    """The wide table with one row per (row, measure): the measure array becomes
    :data:`INDEX` and :data:`ENTRY`; an empty array keeps its row, with a null index."""
    return queries.select(
        *[c for c in queries.columns if c != MEASURES],
        F.posexplode_outer(MEASURES).alias(INDEX, ENTRY),
    )


def with_slices(queries: DataFrame, slices: Sequence[str]) -> DataFrame:
    """The wide table with ``slice`` and ``slice_value``: every row once with both null (the
    rows over all queries), and each scored row once more per slice, named by the slice
    column and its value (a grouping set written as one projection: no extra pass).

    Args:
        queries: the wide table with one string column per slice (unscored rows may hold
            anything there).
    """
    overall = F.struct(F.lit(None).cast("string").alias(S.SLICE),
                       F.lit(None).cast("string").alias(S.SLICE_VALUE))
    if not slices:
        return queries.select("*", overall[S.SLICE].alias(S.SLICE),
                              overall[S.SLICE_VALUE].alias(S.SLICE_VALUE))
    each = [F.struct(F.lit(c).alias(S.SLICE), F.col(c).cast("string").alias(S.SLICE_VALUE))
            for c in slices]
    sets = F.when(F.coalesce(F.col(IN_QRELS), F.lit(False)), F.array(overall, *each)).otherwise(
        F.array(overall))
    return queries.select("*", F.inline(sets))


def group_columns(partition_columns: Sequence[str]) -> list[str]:
    """The grouping of :func:`sums`; the negative-label rule and the depth (one each per job)
    are grouped by, not aggregated: an aggregated string would make Spark sort, not hash.
    ``slice`` and ``slice_value`` (:func:`with_slices`) are null on the rows over all queries."""
    return [*partition_columns, S.NEGATIVE_LABELS, S.DEPTH, S.SLICE, S.SLICE_VALUE, INDEX]


#: the sums of the weighted rows over the scored queries with a weight
WEIGHTED_SUMS = ("w_n", "w", "wx", "w2", "w2x", "w2x2")


def sums(*, measures: Sequence[Measure], intervals: IntervalSettings,
         weighted: bool = False) -> list[Column]:
    """The aggregate's columns over the scored queries, the same few for every measure: the
    count, mean, standard deviation and values other than 0 and 1 (t interval), sum, the
    sum of logs (when a measure averages geometrically), and micro's summed counts; with
    ``weighted`` (the rows have ``weight``), :data:`WEIGHTED_SUMS` over the scored queries
    with a weight."""
    scored = F.col(IN_QRELS)
    entry = F.col(ENTRY)
    value = F.when(scored, entry[S.VALUE])
    t = intervals.method == "t"
    weighting: list[Column] = []
    if weighted:
        has = scored & F.col(S.WEIGHT).isNotNull()
        w = F.when(has, F.col(S.WEIGHT))
        x = F.when(has, entry[S.VALUE])
        w2 = w * w
        weighting = [F.count_if(has).alias(sum_column("w_n")), F.sum(w).alias(sum_column("w")),
                     F.sum(w * x).alias(sum_column("wx")), F.sum(w2).alias(sum_column("w2")),
                     F.sum(w2 * x).alias(sum_column("w2x")),
                     F.sum(w2 * x * x).alias(sum_column("w2x2"))]
    return [
        F.count_if(scored).alias(N),
        F.avg(value).alias(sum_column("mean")),
        *([F.greatest(F.stddev_samp(value), F.lit(0.0)).alias(sum_column("sd")),
           F.count_if(scored & ~entry[S.VALUE].isin(0.0, 1.0)).alias(sum_column("nonbinary"))]
          if t else []),
        F.sum(value).alias(sum_column("sum")),
        *([F.sum(F.when(scored, F.log(F.greatest(entry[S.VALUE], F.lit(MIN_GEO_MEAN)))))
           .alias(sum_column("log"))]
          if any("geometric" in m.spec.averaging for m in measures) else []),
        F.sum(F.when(scored, entry[S.NUM_REL_RET])).alias(sum_column("rel_ret")),
        F.sum(F.when(scored, entry[S.NUM_REL])).alias(sum_column("rel")),
        *weighting,
    ]


def _ratio(numerator: Any, denominator: Any) -> float | None:
    """0.0 when the denominator is not > 0, as ``safe_divide``."""
    if denominator is None or denominator <= 0:
        return 0.0
    return None if numerator is None else float(numerator) / float(denominator)


def rows(
    summed: Sequence[Row],
    *,
    measures: Sequence[Measure],
    partition_columns: Sequence[str],
    intervals: IntervalSettings = IntervalSettings(),
    bootstrap: Bootstrap | None = None,
) -> list[dict[str, Any]]:
    """The aggregate table's rows from the collected :func:`sums` (none for unscored partitions).

    Args:
        measures: the measures, in the wide table's order (:data:`INDEX`).
        bootstrap: the intervals (:func:`bootstrap`) when ``intervals.method`` is bootstrap.

    Returns:
        One dict per (partition, measure, averaging), keyed by column (no ``job_run_id``).
    """
    parts = list(partition_columns)
    partitions: dict[tuple[Any, ...], dict[int, Row]] = {}
    for row in summed:
        if row[INDEX] is not None:
            key = (*(row[c] for c in parts), row[S.NEGATIVE_LABELS], row[S.DEPTH],
                   _get(row, S.SLICE), _get(row, S.SLICE_VALUE))
            partitions.setdefault(key, {})[int(row[INDEX])] = row
    out: list[dict[str, Any]] = []
    for key, by_index in partitions.items():
        values, negative_labels, depth, slice_, slice_value = (
            key[:-4], key[-4], key[-3], key[-2], key[-1])
        for i, m in enumerate(measures):
            row = by_index.get(i)
            n = 0 if row is None else int(row[N] or 0)
            if n == 0:
                continue
            spec = m.spec
            base = {
                **dict(zip(parts, values, strict=True)),
                S.MEASURE: m.name, S.CUTOFF: m.cutoff, S.REL_LEVEL: m.rel_level,
                S.JUDGED_ONLY: m.judged_only, S.MEASURE_KEY: m.key,
                S.NEGATIVE_LABELS: negative_labels, S.DEPTH: depth,
                S.SLICE: slice_, S.SLICE_VALUE: slice_value,
            }
            for averaging in m.averaging:
                low = high = method = level = None
                if slice_ is not None and averaging not in ("macro", "micro"):
                    continue  # a slice has its macro and micro values
                if averaging == "macro":
                    value = row[sum_column("mean")]
                    boot = bootstrap if slice_ is None else {}
                    low, high, method = _interval(row, n, value, values, m, intervals, boot)
                    level = float(intervals.level)
                elif averaging == "sum":
                    value = row[sum_column("sum")]
                elif averaging == "geometric":
                    value = math.exp(row[sum_column("log")] / n)
                elif spec.micro == "num_rel":
                    value = _ratio(row[sum_column("rel_ret")], row[sum_column("rel")])
                elif spec.micro == "cutoff_x_queries":
                    if m.window:  # k_q differs per query: no k * queries to pool over
                        continue
                    value = _ratio(row[sum_column("rel_ret")],
                                   None if m.cutoff is None else n * m.cutoff)
                else:  # micro without a denominator
                    continue
                out.append({
                    **base,
                    S.AVERAGING: averaging,
                    S.VALUE: None if value is None else float(value),
                    S.NUM_QUERIES: n,
                    S.CI_LOW: low, S.CI_HIGH: high, S.CI_METHOD: method, S.CI_LEVEL: level,
                })
            if "macro" in m.averaging and _get(row, sum_column("w_n")):
                found = _weighted_row(row, intervals.level)
                if found is not None:
                    out.append({**base, **found})
    return out


#: ``averaging`` and ``ci_method`` of the traffic-weighted rows
WEIGHTED, LINEARIZED = "weighted", "linearized"


def _get(row: Row, name: str) -> Any:
    """``row[name]``, None when the row has no such field."""
    return row[name] if name in row.__fields__ else None


def _weighted_row(row: Row, level: float) -> dict[str, Any] | None:
    """The weighted row's value, count and interval (:func:`weighted_from_sums`); None
    without a positive total weight."""
    n, *total = (row[sum_column(k)] for k in WEIGHTED_SUMS)
    found = weighted_from_sums(int(n), *(float(t or 0.0) for t in total), level=level)
    if not math.isfinite(found.mean):
        return None
    interval = math.isfinite(found.ci_low)
    return {
        S.AVERAGING: WEIGHTED, S.VALUE: found.mean, S.NUM_QUERIES: found.n,
        S.CI_LOW: found.ci_low if interval else None,
        S.CI_HIGH: found.ci_high if interval else None,
        S.CI_METHOD: LINEARIZED, S.CI_LEVEL: float(level),
    }


#: ``ci_method`` of a t interval cut at the measure's bounds, and of Wilson's interval
T_CLIPPED, WILSON = "t-clipped", "wilson"


def _interval(
    row: Row, n: int, mean: float | None, values: tuple[Any, ...], m: Measure,
    intervals: IntervalSettings, bootstrap: Bootstrap | None,
) -> tuple[float | None, float | None, str]:
    """The macro row's interval and its ``ci_method``; no ends with fewer than 2 queries.

    A bootstrap interval is a quantile of resampled means, inside the values' range. With
    ``t``, a measure bounded in [0, 1] (``MetricSpec.bounds``) whose values are all 0 or 1
    gets Wilson's interval (:data:`WILSON`), any other bounded measure the t interval cut
    at its bounds (:data:`T_CLIPPED` when a bound cut it)."""
    if intervals.method == "bootstrap":
        low, high = (bootstrap or {}).get((values, m.key), (None, None))
        return low, high, intervals.method
    sd = row[sum_column("sd")]
    if n < 2 or sd is None or mean is None:
        return None, None, intervals.method
    bounds = m.spec.bounds
    if bounds == UNIT and row[sum_column("nonbinary")] == 0:
        low, high = ci_kernel.wilson_interval(mean, n, intervals.level)
        return low, high, WILSON
    half = float(ci_kernel.t_half_width(np.array([sd]), np.array([n]), intervals.level)[0])
    low, high = mean - half, mean + half
    if bounds is None or bounds[0] <= low <= high <= bounds[1]:
        return low, high, intervals.method
    return max(low, bounds[0]), min(high, bounds[1]), T_CLIPPED


def bootstrap(
    queries: DataFrame,
    *,
    measures: Sequence[Measure],
    partition_columns: Sequence[str],
    intervals: IntervalSettings,
) -> Bootstrap:
    """The bootstrap intervals of the macro means, collected: one per (partition, measure)."""
    parts = list(partition_columns)
    keys = [*parts, S.MEASURE, S.CUTOFF, S.REL_LEVEL, S.JUDGED_ONLY, S.MEASURE_KEY]
    macro = [m.key for m in measures if "macro" in m.spec.averaging]
    per_query = long_format(queries, partition_columns=parts, measures=measures).where(
        F.col(S.MEASURE_KEY).isin(macro)
    )
    found = ci.bootstrap_intervals(
        per_query, keys=keys, resamples=intervals.resamples, level=intervals.level,
        seed=intervals.seed,
    ).collect()
    return {
        (tuple(r[c] for c in parts), r[S.MEASURE_KEY]): (r[ci.LOW], r[ci.HIGH]) for r in found
    }


def aggregate(
    queries: DataFrame,
    *,
    measures: Sequence[Measure],
    partition_columns: Sequence[str],
    intervals: IntervalSettings = IntervalSettings(),
    slices: Sequence[str] = (),
    weighted: bool = False,
) -> list[dict[str, Any]]:
    """Aggregate the per-query measures over the scored queries of each run partition.

    Args:
        queries: the wide table, its measure array in the order of ``measures``; with
            ``slices`` and ``weighted``, its slice columns and ``weight``
            (:func:`releval.checks.queries.with_attributes`).

    Returns:
        The aggregate rows (:func:`rows`).
    """
    parts = list(partition_columns)
    summed = by_measure(with_slices(queries, slices)).groupBy(*group_columns(parts)).agg(
        *sums(measures=measures, intervals=intervals, weighted=weighted)
    ).collect()
    boot = (
        bootstrap(queries, measures=measures, partition_columns=parts, intervals=intervals)
        if intervals.method == "bootstrap" else None
    )
    return rows(summed, measures=measures, partition_columns=parts, intervals=intervals,
                bootstrap=boot)


