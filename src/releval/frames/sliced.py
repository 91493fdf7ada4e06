"""The executors' side of a comparison's slices: the pairs with each query's slice values
and weight, and the weighted rows from sums aggregated in Spark (the driver's side and the
weighted row are in :mod:`releval.stats.sliced`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from releval.core import columns as S
from releval.stats import kernel
from releval.stats.paired_groups import B, C
from releval.stats.sliced import SUMS, from_sums


def with_slices(pairs: DataFrame, attributes: DataFrame, slices: Sequence[str]) -> DataFrame:
    """The pairs (one row per candidate, measure and query) once over all queries (``slice``
    null) and once per slice, with the query's slice value (an unlisted query's is
    :data:`releval.core.columns.UNLISTED_SLICE`) and ``weight`` (null: unlisted)."""
    hidden = [f"_slice{i}" for i in range(len(slices))]
    listed = attributes.select(
        F.col(S.QUERY_ID).cast("string").alias(S.QUERY_ID),
        F.col(S.WEIGHT).cast("double").alias(S.WEIGHT),
        *[F.col(s).cast("string").alias(h) for s, h in zip(slices, hidden, strict=True)])
    joined = pairs.join(listed, S.QUERY_ID, "left")
    none = F.lit(None).cast("string")
    each = F.explode(F.array(
        F.struct(none.alias(S.SLICE), none.alias(S.SLICE_VALUE)),
        *[F.struct(F.lit(s).alias(S.SLICE),
                   F.coalesce(F.col(h), F.lit(S.UNLISTED_SLICE)).alias(S.SLICE_VALUE))
          for s, h in zip(slices, hidden, strict=True)]))
    kept = list(pairs.columns)
    return joined.select(*kept, S.WEIGHT, each.alias("_at")).select(
        *kept, S.WEIGHT, F.col("_at")[S.SLICE].alias(S.SLICE),
        F.col("_at")[S.SLICE_VALUE].alias(S.SLICE_VALUE))


def weighted_in_executors(pairs: DataFrame, group: Sequence[str], *, level: float
                          ) -> list[dict[str, Any]]:
    """Each group's weighted row from sums aggregated in Spark (the pairs of
    :func:`with_slices`, with their values in ``_baseline_value`` and ``_candidate_value``)."""
    raw = F.col(C) - F.col(B)
    d = F.when(F.abs(raw) <= kernel.TIE_TOLERANCE, F.lit(0.0)).otherwise(raw)
    w = F.col(S.WEIGHT)
    found = pairs.where(w.isNotNull()).groupBy(*group).agg(
        F.count(F.lit(1)).alias("_n"), F.sum(w).alias("_sw"), F.sum(w * F.col(B)).alias("_swb"),
        F.sum(w * F.col(C)).alias("_swc"), F.sum(w * d).alias("_swd"),
        F.sum(w * w).alias("_sw2"), F.sum(w * w * d).alias("_sw2d"),
        F.sum(w * w * d * d).alias("_sw2d2"), F.count(F.when(d > 0, 1)).alias("_wins"),
        F.count(F.when(d == 0, 1)).alias("_ties"), F.count(F.when(d < 0, 1)).alias("_losses"),
    ).collect()
    out = []
    for r in found:
        row = from_sums({k: r[k] for k in SUMS}, level=level)
        if row is not None:
            out.append({**{g: r[g] for g in group}, **row})
    return out
