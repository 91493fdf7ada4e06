"""Per-query rows -> one aggregate row per (run partition, measure, averaging).

* ``macro``: the mean over queries of the per-query values (trec_eval's ``all``).
* ``micro``: pooled counts over queries, for the measures whose spec defines it
  (P@k: sum num_rel_ret / (k * queries); R@k: sum num_rel_ret / sum num_rel).
* ``sum``: the total over queries, for counts (num_ret, num_rel, num_rel_ret),
  as trec_eval's ``all`` line prints them.
"""

from __future__ import annotations

from typing import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from releval import schemas as S
from releval.metrics.registry import Measure

_MEAN, _SUM, _N, _REL_RET, _REL = "_mean", "_sum", "_n", "_rel_ret", "_rel"


def _by_measure(measures: Sequence[Measure], value: dict[str, Column]) -> Column:
    """CASE measure_key WHEN key THEN value[key] ... END (null for other keys)."""
    expr: Column | None = None
    for m in measures:
        if m.key not in value:
            continue
        cond = F.col(S.MEASURE_KEY) == m.key
        expr = F.when(cond, value[m.key]) if expr is None else expr.when(cond, value[m.key])
    return expr if expr is not None else F.lit(None).cast("double")


def aggregate(
    per_query: DataFrame, *, measures: Sequence[Measure], partition_columns: Sequence[str]
) -> DataFrame:
    """Aggregate per-query measures over the queries of each run partition.

    Args:
        per_query: rows of the per-query table.
        measures: the measures in it (their specs say which averagings apply).
        partition_columns: the run's partition columns (one aggregate per partition).

    Returns:
        The columns of :func:`releval.schemas.aggregate_schema`, in order.
    """
    keys = [*partition_columns, S.MEASURE, S.CUTOFF, S.REL_LEVEL, S.MEASURE_KEY]
    grouped = per_query.groupBy(*keys).agg(
        F.avg(S.VALUE).alias(_MEAN),
        F.sum(S.VALUE).alias(_SUM),
        F.count(F.lit(1)).alias(_N),
        F.sum(S.NUM_REL_RET).alias(_REL_RET),
        F.sum(S.NUM_REL).alias(_REL),
    )
    rel_ret, rel, n = F.col(_REL_RET), F.col(_REL), F.col(_N)
    by_averaging: dict[str, dict[str, Column]] = {"macro": {}, "micro": {}, "sum": {}}
    for m in measures:
        spec = m.spec
        if "macro" in spec.averaging:
            by_averaging["macro"][m.key] = F.col(_MEAN)
        if "sum" in spec.averaging:
            by_averaging["sum"][m.key] = F.col(_SUM)
        if "micro" in spec.averaging and spec.micro is not None:
            by_averaging["micro"][m.key] = spec.micro(m, rel_ret, rel, n)
    candidates = F.array(
        *[
            F.struct(F.lit(name).alias(S.AVERAGING), _by_measure(measures, values).alias(S.VALUE))
            for name, values in by_averaging.items()
        ]
    )
    return (
        grouped.select(*keys, n.alias(S.NUM_QUERIES), F.explode(candidates).alias("_a"))
        .where(F.col(f"_a.{S.VALUE}").isNotNull())
        .select(
            *keys,
            f"_a.{S.AVERAGING}",
            F.col(f"_a.{S.VALUE}").cast("double").alias(S.VALUE),
            F.col(S.NUM_QUERIES).cast("long").alias(S.NUM_QUERIES),
        )
    )
