"""Position bias from a search log, in Spark: the PBM fit and intervention harvesting.

The log is compressed once to a cached row per (query, doc) with arrays of (position,
impressions, clicks) (``compress``). Each pass of the PBM fit is a ``mapInPandas`` returning
per partition a log-likelihood, a gradient and a K x K Hessian: only those reach the driver.
Intervention harvesting (Agarwal et al., WSDM 2019) uses only pairs shown at two positions
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
import pandas as pd
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
from releval.stats import click_models as cm
from releval.stats import harvesting as hv

#: the ``method`` of each estimate in the ``position_bias`` table
PBM = "pbm_em"
HARVESTING = "intervention_harvesting"
_POSITIONS, _IMPRESSIONS, _CLICKS = "_positions", "_impressions", "_clicks"

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


def compress(interactions: DataFrame) -> DataFrame:
    """One cached row per (query_id, doc_id): arrays of position, impressions and clicks.

    A row is one impression; ``clicked > 0`` counts as a click (a count of clicks is one click
    for the click models). Positions are sorted within a row.
    """
    cells = interactions.groupBy(QUERY_ID, DOC_ID, POSITION).agg(
        F.count(F.lit(1)).alias(IMPRESSIONS),
        F.sum(F.when(F.col(CLICKED) > 0, 1).otherwise(0)).cast("long").alias(CLICKS),
    )
    cell = F.struct(F.col(POSITION).cast("int").alias(POSITION), F.col(IMPRESSIONS), F.col(CLICKS))
    packed = cells.groupBy(QUERY_ID, DOC_ID).agg(F.sort_array(F.collect_list(cell)).alias("_c"))
    return packed.select(
        QUERY_ID,
        DOC_ID,
        F.col(f"_c.{POSITION}").alias(_POSITIONS),
        F.col(f"_c.{IMPRESSIONS}").alias(_IMPRESSIONS),
        F.col(f"_c.{CLICKS}").alias(_CLICKS),
    ).cache()


def cells(pdf: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A batch of compressed rows as flat cells: pair index, 0-based position, n, c."""
    lengths = pdf[_POSITIONS].map(len).to_numpy()
    pair = np.repeat(np.arange(len(pdf)), lengths)
    if len(pair) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, empty
    position = np.concatenate(pdf[_POSITIONS].to_numpy()).astype(np.int64) - 1
    n = np.concatenate(pdf[_IMPRESSIONS].to_numpy()).astype(np.int64)
    c = np.concatenate(pdf[_CLICKS].to_numpy()).astype(np.int64)
    return pair, position, n, c


_STATS_SCHEMA = "loglik double, gradient array<double>, hessian array<double>, n array<double>"


def _pass(compressed: DataFrame, theta: np.ndarray) -> cm.PassStats:
    """One pass of the PBM fit at ``theta``: per-partition sums, added on the driver."""
    k = len(theta)

    def stats(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        total = cm.PassStats(0.0, np.zeros(k), np.zeros((k, k)), np.zeros(k))
        for pdf in batches:
            pair, position, n, c = cells(pdf)
            if len(pair):
                total = total + cm.pbm_pass(pair, position, n, c, theta, k)
        yield pd.DataFrame(
            {
                "loglik": [total.loglik],
                "gradient": [total.gradient.tolist()],
                "hessian": [total.hessian.ravel().tolist()],
                "n": [total.impressions.tolist()],
            }
        )

    rows = compressed.mapInPandas(stats, _STATS_SCHEMA).collect()
    total = cm.PassStats(0.0, np.zeros(k), np.zeros((k, k)), np.zeros(k))
    for r in rows:
        total = total + cm.PassStats(
            r["loglik"],
            np.array(r["gradient"]),
            np.array(r["hessian"]).reshape(k, k),
            np.array(r["n"]),
        )
    return total


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


def _harvest(compressed: DataFrame, k: int) -> cm.PbmFit:
    """Intervention harvesting's sums, per partition, added on the driver."""

    def stats(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        total = hv.empty(k)
        for pdf in batches:
            pair, position, n, c = cells(pdf)
            if len(pair):
                total = total + hv.harvest_sums(pair, position, n, c, k)
        yield pd.DataFrame(
            {"cells": [total.cells.ravel().tolist()], "cross": [total.cross.ravel().tolist()]}
        )

    total = hv.empty(k)
    for r in compressed.mapInPandas(stats, _HARVEST_SCHEMA).collect():
        total = total + hv.HarvestSums(
            np.array(r["cells"]).reshape(total.cells.shape),
            np.array(r["cross"]).reshape(total.cross.shape),
        )
    return hv.harvest_theta(total)


def fit_position_bias(compressed: DataFrame) -> PositionBias:
    """The PBM fit and the harvesting estimate over ``compress``'s rows, side by side."""
    k, n, c = _per_position(compressed)
    harvesting = _harvest(compressed, k)
    # Newton starts at the harvested curve where it has one, else at the click-rate ratio
    ctr = np.where(n > 0, c / np.maximum(n, 1), 0.0)
    theta0 = np.clip(ctr / ctr[0], 0.01, 1.0) if k and ctr[0] > 0 else np.ones(k)
    theta0 = np.where(np.isfinite(harvesting.theta), harvesting.theta, theta0)
    pbm = cm.pbm_fit(lambda th: _pass(compressed, th), positions=k, theta0=theta0)
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
    return PositionBias(table=table, pbm=pbm, harvesting=harvesting, positions=k)


def _num(x: float) -> float | None:
    return None if not np.isfinite(x) else float(x)
