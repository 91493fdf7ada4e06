"""Position bias from a search log, in Spark: the PBM fit and intervention harvesting.

Counts are cached as one row per (query, doc) with arrays of (position, impressions,
clicks) (``compress``, ``pack``). A pass of the PBM fit is a ``mapInArrow`` over the pairs
that inform theta, returning per partition a log-likelihood, a gradient and a K x K Hessian;
intervention harvesting (Agarwal et al., WSDM 2019) uses the pairs shown at two positions
(``releval.stats.harvesting``). See docs/clicks.md, "Models".

Example:
    >>> from releval.clicks.simulate import random_truth, rankings, simulate_pbm, to_spark
    >>> t = random_truth(queries=20, docs=6, seed=0)
    >>> log = simulate_pbm(t, rankings(t, systems=3), examination=[1, .5], searches=2000)
    >>> fit_position_bias(compress(to_spark(spark, log))).table.count()
    4
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from releval.core.columns import (
    CLICKED,
    CLICKS,
    DOC_ID,
    EXAMINATION,
    EXAMINATION_HIGH,
    EXAMINATION_LOW,
    IMPRESSIONS,
    METHOD,
    POSITION,
    QUERY_ID,
)
from releval.evaluation.persisted import persist_merged
from releval.stats import click_models as cm
from releval.stats import harvesting as hv

#: the ``method`` of each estimate in the ``position_bias`` table
PBM = "pbm_em"
HARVESTING = "intervention_harvesting"
#: :func:`compress`'s arrays (sorted by position)
POSITIONS_ARRAY, IMPRESSIONS_ARRAY, CLICKS_ARRAY = "_positions", "_impressions", "_clicks"
_POSITIONS, _IMPRESSIONS, _CLICKS = POSITIONS_ARRAY, IMPRESSIONS_ARRAY, CLICKS_ARRAY

POSITION_BIAS_SCHEMA = (
    f"{POSITION} int, {EXAMINATION} double, {EXAMINATION_LOW} double, "
    f"{EXAMINATION_HIGH} double, {METHOD} string, {IMPRESSIONS} long"
)


@dataclass(frozen=True)
class PositionBias:
    """Both estimates of the examination curve; ``table`` is the ``position_bias`` table."""

    table: DataFrame
    pbm: cm.PbmFit
    harvesting: cm.PbmFit
    positions: int
    #: the partitions a pass in Python reads the counts in (:func:`python_partitions`)
    partitions: int = 1


def compress(interactions: DataFrame) -> DataFrame:
    """One cached row per (query_id, doc_id): arrays of position, impressions and clicks.

    A row is one impression; ``clicked > 0`` counts as a click (a count of clicks is one click
    for the click models). Positions are sorted within a row.
    """
    return pack(interactions.groupBy(QUERY_ID, DOC_ID, POSITION).agg(
        F.count(F.lit(1)).alias(IMPRESSIONS),
        F.sum(F.when(F.col(CLICKED) > 0, 1).otherwise(0)).cast("long").alias(CLICKS),
    ))


def pack(cells: DataFrame) -> DataFrame:
    """:func:`compress`'s rows from impressions and clicks per (query_id, doc_id, position)
    (:func:`releval.checks.query_means.impression_cells`); the ids become strings. Cached
    with its small partitions merged (:func:`releval.evaluation.persisted.persist_merged`)."""
    cell = F.struct(F.col(POSITION).cast("int").alias(POSITION), F.col(IMPRESSIONS), F.col(CLICKS))
    packed = cells.groupBy(QUERY_ID, DOC_ID).agg(F.sort_array(F.collect_list(cell)).alias("_c"))
    packed = packed.select(
        F.col(QUERY_ID).cast("string").alias(QUERY_ID),
        F.col(DOC_ID).cast("string").alias(DOC_ID),
        F.col(f"_c.{POSITION}").alias(_POSITIONS),
        F.col(f"_c.{IMPRESSIONS}").alias(_IMPRESSIONS),
        F.col(f"_c.{CLICKS}").alias(_CLICKS),
    )
    return persist_merged(packed, StorageLevel.MEMORY_AND_DISK_DESER)


_ARRAYS = (_POSITIONS, _IMPRESSIONS, _CLICKS)


def arrow_cells(batch: pa.RecordBatch) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """An Arrow batch of :func:`compress`'s rows as flat cells: pair index (the row), 0-based
    position, impressions and clicks (the arrays read without a copy per row)."""
    lists = [batch.column(name) for name in _ARRAYS]
    lengths = lists[0].value_lengths().to_numpy(zero_copy_only=False)
    pair = np.repeat(np.arange(len(lengths)), lengths)
    position, n, c = (x.flatten().to_numpy(zero_copy_only=False).astype(np.int64) for x in lists)
    return pair, position - 1, n, c


#: the pairs a Python task of a pass over the counts takes, about: a task costs about 0.1 s
#: to start, a pass over 500k pairs about 1 s
PAIRS_PER_TASK = 500_000


def python_partitions(pairs: int) -> int:
    """The partitions a pass in Python reads ``pairs`` pairs' counts in (coalesced, no
    shuffle): one per :data:`PAIRS_PER_TASK` pairs, at least one."""
    return max(1, -(-int(pairs) // PAIRS_PER_TASK))


def _linked(compressed: DataFrame, *, clicked: bool, partitions: int) -> DataFrame:
    """The pairs shown at two positions or more (``clicked``: and clicked): only they inform
    theta (a pair's only cell fits its alpha whatever theta is; a pair without clicks has
    alpha 0), so only they cross to Python in the fit's passes."""
    linked = F.size(_POSITIONS) > 1
    if clicked:
        linked = linked & F.exists(_CLICKS, lambda x: x > 0)
    return compressed.where(linked).select(*_ARRAYS).coalesce(partitions)


def _summed(df: DataFrame, per_batch, schema: str) -> list:
    """``per_batch`` over the Arrow batches of ``df``'s arrays, its float vectors added per
    partition and then on the driver (one row per partition reaches it)."""
    names = [f.split()[0] for f in schema.split(",")]

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        total = None
        for batch in batches:
            if batch.num_rows:
                got = per_batch(*arrow_cells(batch))
                total = got if total is None else [t + g for t, g in zip(total, got, strict=True)]
        if total is not None:
            yield pa.RecordBatch.from_pydict(
                {name: [np.asarray(v, dtype=float).ravel().tolist()]
                 for name, v in zip(names, total, strict=True)})

    rows = df.mapInArrow(run, schema).collect()
    if not rows:
        return []
    return [sum(np.array(r[name]) for r in rows) for name in names]


_STATS_SCHEMA = ("loglik array<double>, gradient array<double>, hessian array<double>, "
                 "n array<double>")


def _pass(linked: DataFrame, theta: np.ndarray) -> cm.PassStats:
    """One pass of the PBM fit at ``theta`` over the linked pairs with clicks."""
    k = len(theta)

    def stats(pair, position, n, c):
        s = cm.pbm_pass(pair, position, n, c, theta, k)
        return [np.array([s.loglik]), s.gradient, s.hessian, s.impressions]

    got = _summed(linked, stats, _STATS_SCHEMA)
    if not got:
        return cm.PassStats(0.0, np.zeros(k), np.zeros((k, k)), np.zeros(k))
    return cm.PassStats(float(got[0][0]), got[1], got[2].reshape(k, k), got[3])


def _per_position(compressed: DataFrame) -> tuple[int, np.ndarray, np.ndarray]:
    """K (the largest position) and impressions, clicks per position: K rows to the driver."""
    flat = (
        compressed.select(F.explode(F.arrays_zip(_POSITIONS, _IMPRESSIONS, _CLICKS)).alias("c"))
        .groupBy(F.col(f"c.{_POSITIONS}").alias("p"))
        .agg(F.sum(f"c.{_IMPRESSIONS}").alias("n"), F.sum(f"c.{_CLICKS}").alias("c"))
    )
    rows = flat.collect()
    if not rows:
        return 0, np.zeros(0), np.zeros(0)
    k = max(int(r["p"]) for r in rows)
    n = np.zeros(k)
    c = np.zeros(k)
    for r in rows:
        n[int(r["p"]) - 1] = r["n"]
        c[int(r["p"]) - 1] = r["c"]
    return k, n, c


_HARVEST_SCHEMA = "cells array<double>, cross array<double>"


def _harvest(linked: DataFrame, k: int) -> cm.PbmFit:
    """Intervention harvesting's sums over the pairs shown at two positions or more."""

    def sums(pair, position, n, c):
        got = hv.harvest_sums(pair, position, n, c, k)
        return [got.cells, got.cross]

    total = hv.empty(k)
    got = _summed(linked, sums, _HARVEST_SCHEMA)
    if got:
        total = hv.HarvestSums(got[0].reshape(total.cells.shape),
                               got[1].reshape(total.cross.shape))
    return hv.harvest_theta(total)


def fit_position_bias(compressed: DataFrame) -> PositionBias:
    """The PBM fit and the harvesting estimate over ``compress``'s rows, side by side."""
    k, n, c = _per_position(compressed)
    partitions = python_partitions(compressed.count())
    harvesting = _harvest(_linked(compressed, clicked=False, partitions=partitions), k)
    # Newton starts at the harvested curve where it has one, else at the click-rate ratio
    ctr = np.where(n > 0, c / np.maximum(n, 1), 0.0)
    theta0 = np.clip(ctr / ctr[0], 0.01, 1.0) if k and ctr[0] > 0 else np.ones(k)
    theta0 = np.where(np.isfinite(harvesting.theta), harvesting.theta, theta0)
    linked = _linked(compressed, clicked=True, partitions=partitions)
    pbm = cm.pbm_fit(lambda th: _pass(linked, th), positions=k, theta0=theta0)
    spark = compressed.sparkSession
    rows = []
    for method, fit in ((PBM, pbm), (HARVESTING, harvesting)):
        for p in range(k):
            rows.append(
                (
                    p + 1,
                    _num(fit.theta[p]),
                    _num(fit.low[p]),
                    _num(fit.high[p]),
                    method,
                    int(n[p]) if method == PBM else int(fit.impressions[p]),
                )
            )
    table = spark.createDataFrame(rows, POSITION_BIAS_SCHEMA)
    return PositionBias(table=table, pbm=pbm, harvesting=harvesting, positions=k,
                        partitions=partitions)


def _num(x: float) -> float | None:
    return None if not np.isfinite(x) else float(x)
