"""The evaluation's wide per-query table -> aggregate rows per (run partition, measure,
averaging): ``macro`` (the mean over queries, with its confidence interval), ``micro``
(pooled counts, where the measure's spec defines it) and ``sum`` (counts).

Two steps: :func:`sums`, the columns of one ``groupBy`` by run partition and measure over
:func:`by_measure`'s long rows (a handful of aggregate functions whatever the number of
measures), and :func:`rows`, the few collected rows -> the aggregate rows, on the driver.
See docs/design/aggregate.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F

from releval.config import IntervalSettings
from releval.core import columns as S
from releval.core.columns import IN_QRELS, MEASURES
from releval.core.engine import long_format
from releval.core.measures.registry import Measure
from releval.stats import intervals as ci
from releval.stats import kernel as ci_kernel

#: the scored queries of a run partition (those in the qrels: the per-query table's rows)
N = "_agg_n"
#: the position of a measure in the wide table's measure array (:func:`by_measure`)
INDEX = "_agg_i"
#: the measure's entry (value and counts) of a row of :func:`by_measure`
ENTRY = "_agg_entry"

#: a bootstrap interval per (run partition values, measure key)
Bootstrap = Mapping[tuple[tuple[Any, ...], str], tuple[float | None, float | None]]


def sum_column(kind: str) -> str:
    """The name of a :func:`sums` column: ``kind`` (``mean``, ``sd``, ``sum``, ``rel_ret``,
    ``rel``) of the group's measure."""
    return f"_agg_{kind}"


def by_measure(queries: DataFrame) -> DataFrame:
    """The wide table with one row per (row, measure): every column but the measure array,
    the measure's position :data:`INDEX` and its entry :data:`ENTRY`. Every wide row has
    the array (the engine's ledger rows too, with their flags false); one whose array were
    null or empty would still give one row, with a null :data:`INDEX`, so no row is lost
    from the counts taken over these rows."""
    return queries.select(
        *[c for c in queries.columns if c != MEASURES],
        F.posexplode_outer(MEASURES).alias(INDEX, ENTRY),
    )


def group_columns(partition_columns: Sequence[str]) -> list[str]:
    """What the aggregation of :func:`sums` groups :func:`by_measure`'s rows by: the run
    partition columns, the negative-label rule (one per job: a grouping column, never a
    second row per key; an aggregated string would make Spark sort the rows instead of
    hashing them) and the measure's position."""
    return [*partition_columns, S.NEGATIVE_LABELS, INDEX]


def sums(*, intervals: IntervalSettings) -> list[Column]:
    """The aggregate's columns for a ``groupBy`` of :func:`by_measure`'s rows by
    :func:`group_columns`: the same few columns for every measure.

    Over the scored queries (``_in_qrels``; the per-query table's rows): their count, and
    of the measure's values the mean and, for the t interval, ``stddev_samp`` (clamped at
    0), their sum, and the sums of its ``num_rel_ret`` and ``num_rel`` (micro). Which of
    them a measure's averagings use is :func:`rows`' business.
    """
    scored = F.col(IN_QRELS)
    entry = F.col(ENTRY)
    value = F.when(scored, entry[S.VALUE])
    return [
        F.count_if(scored).alias(N),
        F.avg(value).alias(sum_column("mean")),
        # a stable central-moment update, clamped at 0
        *([F.greatest(F.stddev_samp(value), F.lit(0.0)).alias(sum_column("sd"))]
          if intervals.method == "t" else []),
        F.sum(value).alias(sum_column("sum")),
        F.sum(F.when(scored, entry[S.NUM_REL_RET])).alias(sum_column("rel_ret")),
        F.sum(F.when(scored, entry[S.NUM_REL])).alias(sum_column("rel")),
    ]


def _ratio(numerator: Any, denominator: Any) -> float | None:
    """As :func:`releval.core.measures.stats.safe_divide`: 0.0 when the denominator is not > 0."""
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
    """The aggregate table's rows from the collected :func:`sums` (one row per partition
    and measure position).

    A partition without a scored query has no rows (no mean rests on it).

    Args:
        summed: rows with the :func:`group_columns` and the :func:`sums` columns.
        measures: the measures, in the wide table's order (:data:`INDEX`).
        partition_columns: the run's partition columns.
        intervals: how the macro rows' confidence intervals are computed.
        bootstrap: with ``intervals.method = "bootstrap"``, the intervals
            (:func:`bootstrap`).

    Returns:
        One dict per (partition, measure, averaging), keyed by the aggregate table's
        column names (``job_run_id`` excepted): the partitions in the order they come in
        ``summed``, then the measures in their order.
    """
    parts = list(partition_columns)
    partitions: dict[tuple[Any, ...], dict[int, Row]] = {}
    for row in summed:
        if row[INDEX] is not None:
            key = (*(row[c] for c in parts), row[S.NEGATIVE_LABELS])
            partitions.setdefault(key, {})[int(row[INDEX])] = row
    out: list[dict[str, Any]] = []
    for key, by_index in partitions.items():
        values, negative_labels = key[:-1], key[-1]
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
            }
            for averaging in spec.averaging:
                low = high = method = level = None
                if averaging == "macro":
                    value = row[sum_column("mean")]
                    low, high = _interval(row, n, value, values, m, intervals, bootstrap)
                    method, level = intervals.method, float(intervals.level)
                elif averaging == "sum":
                    value = row[sum_column("sum")]
                elif spec.micro == "num_rel":
                    value = _ratio(row[sum_column("rel_ret")], row[sum_column("rel")])
                elif spec.micro == "cutoff_x_queries":
                    value = _ratio(row[sum_column("rel_ret")],
                                   None if m.cutoff is None else n * m.cutoff)
                else:  # micro without a denominator: not an averaging of this measure
                    continue
                out.append({
                    **base,
                    S.AVERAGING: averaging,
                    S.VALUE: None if value is None else float(value),
                    S.NUM_QUERIES: n,
                    S.NEGATIVE_LABELS: negative_labels,
                    S.CI_LOW: low, S.CI_HIGH: high, S.CI_METHOD: method, S.CI_LEVEL: level,
                })
    return out


def _interval(
    row: Row, n: int, mean: float | None, values: tuple[Any, ...], m: Measure,
    intervals: IntervalSettings, bootstrap: Bootstrap | None,
) -> tuple[float | None, float | None]:
    """The macro row's interval; (None, None) with fewer than 2 queries."""
    if intervals.method == "bootstrap":
        return (bootstrap or {}).get((values, m.key), (None, None))
    sd = row[sum_column("sd")]
    if n < 2 or sd is None or mean is None:
        return None, None
    half = float(ci_kernel.t_half_width(np.array([sd]), np.array([n]), intervals.level)[0])
    return mean - half, mean + half


def bootstrap(
    queries: DataFrame,
    *,
    measures: Sequence[Measure],
    partition_columns: Sequence[str],
    intervals: IntervalSettings,
) -> Bootstrap:
    """The bootstrap intervals of the macro means (:func:`releval.stats.intervals.
    bootstrap_intervals`, over the per-query rows), collected: one per (partition, measure)."""
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
) -> list[dict[str, Any]]:
    """Aggregate the per-query measures over the scored queries of each run partition.

    Runs the aggregation (and the bootstrap, if asked) and collects its few rows.

    Args:
        queries: the evaluation's wide table: its measure array in the order of ``measures``.
        measures: the measures in it (their specs say which averagings apply).
        partition_columns: the run's partition columns (one aggregate per partition).
        intervals: how the macro rows' confidence intervals are computed.

    Returns:
        The aggregate rows (:func:`rows`).
    """
    parts = list(partition_columns)
    summed = by_measure(queries).groupBy(*group_columns(parts)).agg(
        *sums(intervals=intervals)
    ).collect()
    boot = (
        bootstrap(queries, measures=measures, partition_columns=parts, intervals=intervals)
        if intervals.method == "bootstrap" else None
    )
    return rows(summed, measures=measures, partition_columns=parts, intervals=intervals,
                bootstrap=boot)


