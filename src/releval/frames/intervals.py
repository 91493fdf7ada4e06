"""Seeded bootstrap intervals of the macro means, in the executors. See docs/statistics.md."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from releval.core import columns as S
from releval.stats import kernel

#: Below this many queries a mean, or a comparison, gets a warning: weak evidence.
FEW_QUERIES = 50
#: the columns :func:`bootstrap_intervals` returns the interval in
LOW, HIGH = "_ci_low", "_ci_high"


def query_key(seed: int) -> Column:
    """A query's 64-bit key for derived randomness: ``xxhash64(seed, query_id)``."""
    return F.xxhash64(F.lit(int(seed)).cast("long"), F.col(S.QUERY_ID).cast("string"))


def bootstrap_intervals(
    per_query: DataFrame, *, keys: Sequence[str], resamples: int, level: float, seed: int
) -> DataFrame:
    """The bootstrap percentile interval of the mean per group of ``keys``, in the executors.

    Returns:
        ``keys`` and the columns ``_ci_low``, ``_ci_high`` (null with fewer than 2 queries).
    """
    fields = [per_query.schema[k] for k in keys]
    schema = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in fields)
    schema += f", {LOW} double, {HIGH} double"
    names = list(keys)

    def interval(pdf: pd.DataFrame) -> pd.DataFrame:
        ordered = pdf.sort_values(S.QUERY_ID)  # the sum's rounding does not depend on row order
        low, high = kernel.bootstrap_interval(
            ordered[S.VALUE].to_numpy(np.float64),
            ordered["_key"].to_numpy(np.int64),
            resamples=resamples,
            level=level,
        )
        row = {k: [pdf[k].iloc[0]] for k in names}
        nan = np.isnan(low)
        return pd.DataFrame({**row, LOW: [None if nan else low], HIGH: [None if nan else high]})

    rows = per_query.select(*names, S.QUERY_ID, S.VALUE, query_key(seed).alias("_key"))
    return rows.groupBy(*names).applyInPandas(interval, schema)
