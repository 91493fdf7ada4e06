"""Per-query rows -> one aggregate row per (run partition, measure, averaging).

* ``macro``: the mean over queries of the per-query values (trec_eval's ``all``).
* ``micro``: pooled counts over queries, for the measures whose spec defines it
  (P@k: sum num_rel_ret / (k * queries); R@k: sum num_rel_ret / sum num_rel).
* ``sum``: the total over queries, for counts (num_ret, num_rel, num_rel_ret),
  as trec_eval's ``all`` line prints them.

Every macro row carries a confidence interval of its mean (``ci_low``, ``ci_high``,
``ci_method``, ``ci_level``; see :mod:`releval.inference.intervals`): the t interval
from ``stddev_samp`` of the same aggregation, or a bootstrap interval joined on the
group keys. Micro and sum rows have none (null).

Which averagings apply to which measure comes from the registry, as a small
broadcast table joined on ``measure_key`` (a per-measure CASE expression would
grow with the measure list and slow Spark's optimizer down).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F

from releval import schemas as S
from releval.config import IntervalSettings
from releval.inference import intervals as ci
from releval.metrics.registry import Measure
from releval.metrics.stats import safe_divide

_MEAN, _SUM, _N, _REL_RET, _REL, _MICRO = "_mean", "_sum", "_n", "_rel_ret", "_rel", "_micro"
_SD = "_sd"


def averagings(per_query: DataFrame, measures: Sequence[Measure]) -> DataFrame:
    """(measure_key, averaging, micro denominator) for each averaging of each measure."""
    rows = [
        (m.key, averaging, m.spec.micro if averaging == "micro" else None)
        for m in measures
        for averaging in m.spec.averaging
        if averaging != "micro" or m.spec.micro is not None
    ]
    schema = f"{S.MEASURE_KEY} string, {S.AVERAGING} string, {_MICRO} string"
    return per_query.sparkSession.createDataFrame(rows, schema)


def aggregate(
    per_query: DataFrame,
    *,
    measures: Sequence[Measure],
    partition_columns: Sequence[str],
    intervals: IntervalSettings = IntervalSettings(),
) -> DataFrame:
    """Aggregate per-query measures over the queries of each run partition.

    Args:
        per_query: rows of the per-query table.
        measures: the measures in it (their specs say which averagings apply).
        partition_columns: the run's partition columns (one aggregate per partition).
        intervals: how the macro rows' confidence intervals are computed.

    Returns:
        The columns of :func:`releval.schemas.aggregate_schema`, in order, except
        ``job_run_id`` (the batch job adds it).
    """
    keys = [*partition_columns, S.MEASURE, S.CUTOFF, S.REL_LEVEL, S.JUDGED_ONLY, S.MEASURE_KEY]
    # the negative-label rule is one per job: a grouping column, never a second row per key
    grouped = per_query.groupBy(*keys, S.NEGATIVE_LABELS).agg(
        F.avg(S.VALUE).alias(_MEAN),
        F.sum(S.VALUE).alias(_SUM),
        F.count(F.lit(1)).alias(_N),
        F.sum(S.NUM_REL_RET).alias(_REL_RET),
        F.sum(S.NUM_REL).alias(_REL),
        # a stable central-moment update, clamped at 0; null for one query (no interval)
        F.when(F.count(F.lit(1)) >= 2, F.greatest(F.stddev_samp(S.VALUE), F.lit(0.0))).alias(_SD),
    )
    if intervals.method == "bootstrap":
        boot = ci.bootstrap_intervals(
            per_query, keys=keys, resamples=intervals.resamples, level=intervals.level,
            seed=intervals.seed,
        )
        grouped = _join_null_safe(grouped, boot, keys)
        low, high = F.col(ci.LOW), F.col(ci.HIGH)
    else:
        half = ci.t_half_width(F.col(_SD), F.col(_N), level=intervals.level)
        low, high = F.col(_MEAN) - half, F.col(_MEAN) + half
    averaging, micro = F.col(S.AVERAGING), F.col(_MICRO)
    is_macro = averaging == "macro"
    value = (
        F.when(averaging == "macro", F.col(_MEAN))
        .when(averaging == "sum", F.col(_SUM))
        .when(micro == "num_rel", safe_divide(F.col(_REL_RET), F.col(_REL)))
        .when(
            micro == "cutoff_x_queries",
            safe_divide(F.col(_REL_RET), F.col(_N) * F.col(S.CUTOFF)),
        )
    )
    # the averagings as a small broadcast table: a literal map of every measure's
    # averagings was tried and blew up the optimizer (out of heap) with the hundreds of
    # measures of the conformance tests
    return grouped.join(F.broadcast(averagings(per_query, measures)), on=S.MEASURE_KEY).select(
        *keys,
        averaging,
        value.cast("double").alias(S.VALUE),
        F.col(_N).cast("long").alias(S.NUM_QUERIES),
        S.NEGATIVE_LABELS,
        F.when(is_macro, low).cast("double").alias(S.CI_LOW),
        F.when(is_macro, high).cast("double").alias(S.CI_HIGH),
        F.when(is_macro, F.lit(intervals.method)).alias(S.CI_METHOD),
        F.when(is_macro, F.lit(float(intervals.level))).alias(S.CI_LEVEL),
    )


def _join_null_safe(left: DataFrame, right: DataFrame, keys: Sequence[str]) -> DataFrame:
    """``left`` left-joined with ``right`` on ``keys``, nulls equal (cutoff is null for AP)."""
    renamed = right.select(*[F.col(k).alias(f"_r_{k}") for k in keys],
                           *[c for c in right.columns if c not in keys])
    condition = [left[k].eqNullSafe(renamed[f"_r_{k}"]) for k in keys]
    joined = left.join(renamed, on=condition, how="left")
    return joined.drop(*[f"_r_{k}" for k in keys])


def render_overview(
    rows: Sequence[Row], *, measure_keys: Sequence[str], partition_columns: Sequence[str]
) -> str:
    """The aggregate rows a job wrote (already on the driver) as a text table (no Spark job).

    One line per run partition (in the rows' order) with its query count and one column
    per measure key: the macro mean (the sum for counts), rounded to 4 decimals.
    """
    parts = list(partition_columns)
    table: dict[tuple[object, ...], dict[str, object]] = {}
    for row in rows:
        if row[S.AVERAGING] not in ("macro", "sum"):
            continue
        key = tuple(row[c] for c in parts)
        line = table.setdefault(key, {**{c: row[c] for c in parts}, S.NUM_QUERIES: row[S.NUM_QUERIES]})
        if row[S.MEASURE_KEY] in measure_keys and row[S.VALUE] is not None:
            line[row[S.MEASURE_KEY]] = round(float(row[S.VALUE]), 4)
    header = [*parts, S.NUM_QUERIES, *measure_keys]
    cells = [[_cell(line.get(h)) for h in header] for line in table.values()]
    widths = [max([len(h), *(len(c[i]) for c in cells)]) for i, h in enumerate(header)]
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"

    def fmt(values: Sequence[str]) -> str:
        return "| " + " | ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)) + " |"

    return "\n".join([rule, fmt(header), rule, *(fmt(c) for c in cells), rule])


def _cell(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, float):
        return f"{value:.4f}".rstrip("0").rstrip(".") if value == value else "NaN"
    return str(value)
