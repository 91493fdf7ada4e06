"""Position bias from a search log, in Spark: the PBM fit and intervention harvesting.

The log is compressed once to a cached row per (query, doc) with arrays of (position,
impressions, clicks) (``compress``). Each pass of the PBM fit is a ``mapInPandas`` returning
per partition a log-likelihood, a gradient and a K x K Hessian: only those reach the driver.
Intervention harvesting (Agarwal et al., WSDM 2019) uses only pairs shown at two positions
(``harvest_sums``, ``harvest_theta``). See docs/clicks.md, "Models".

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


_HARVEST_SCHEMA = "sums array<double>"
#: per (k, k') cell, k < k': sum w x, sum w y, sum w^2 x^2, sum w^2 y^2, sum w^2 x y, pairs;
#: the last stat on the diagonal (k, k): impressions at k of the pairs shown at two positions
_HARVEST_STATS = 7


def harvest_sums(pair, position, n, c, positions: int) -> np.ndarray:
    """Per ordered position pair (k < k'), the sums intervention harvesting needs.

    Every (query, doc) shown at both k and k' gives x = its click rate at k, y = at k', and
    weight w = n_k n_k' / (n_k + n_k'). Returns an array (K, K, 7) (see ``_HARVEST_STATS``).

    Example:
        >>> s = harvest_sums(np.array([0, 0]), np.array([0, 1]), np.array([10, 10]),
        ...                  np.array([5, 2]), 2)
        >>> s[0, 1, :2].tolist(), float(s[1, 1, 6])  # w = 100/20 = 5: 5 * 0.5, 5 * 0.2
        ([2.5, 1.0], 10.0)
    """
    k = positions
    out = np.zeros((k, k, _HARVEST_STATS))
    frame = pd.DataFrame({"pair": pair, "pos": position, "n": n, "rate": c / np.maximum(n, 1)})
    multi = frame.groupby("pair")["pos"].transform("size") > 1
    frame = frame[multi]
    if frame.empty:
        return out
    both = frame.merge(frame, on="pair", suffixes=("_a", "_b"))
    both = both[both["pos_a"] < both["pos_b"]]
    w = both["n_a"] * both["n_b"] / (both["n_a"] + both["n_b"])
    x, y = both["rate_a"].to_numpy(), both["rate_b"].to_numpy()
    w = w.to_numpy()
    a, b = both["pos_a"].to_numpy(), both["pos_b"].to_numpy()
    values = [w * x, w * y, (w * x) ** 2, (w * y) ** 2, w * w * x * y, np.ones_like(w)]
    for j, v in enumerate(values):
        np.add.at(out[:, :, j], (a, b), v)
    np.add.at(out[:, :, 6], (frame["pos"].to_numpy(), frame["pos"].to_numpy()), frame["n"])
    return out


def harvest_theta(sums: np.ndarray) -> cm.PbmFit:
    """theta from the harvested sums: weighted least squares on log ratios, theta_1 = 1.

    For k < k', R = sum w x / sum w y estimates theta_k / theta_k'; var(log R) by the delta
    method over pairs, (sum w^2 (x - R y)^2) / (sum w x)^2. Positions no ratio links to
    position 1 get NaN.
    """
    k = sums.shape[0]
    rows, target, weight = [], [], []
    impressions = np.diagonal(sums[:, :, 6]).copy()
    for a in range(k):
        for b in range(a + 1, k):
            sx, sy, sxx, syy, sxy = sums[a, b, :5]
            if sx <= 0 or sy <= 0:
                continue
            r = sx / sy
            var = (sxx - 2 * r * sxy + r * r * syy) / (sx * sx)
            if not np.isfinite(var) or var <= 0:
                continue
            row = np.zeros(k)
            row[a], row[b] = 1.0, -1.0
            rows.append(row)
            target.append(np.log(r))
            weight.append(1.0 / var)
    theta = np.full(k, np.nan)
    low = np.full(k, np.nan)
    high = np.full(k, np.nan)
    if k:
        theta[0] = low[0] = high[0] = 1.0
    if rows:
        x = np.array(rows)[:, 1:]
        wts = np.array(weight)
        linked = _linked(x)
        xl = x[:, linked]
        info = xl.T @ (xl * wts[:, None])
        cov = np.linalg.pinv(info)
        phi = cov @ (xl.T @ (wts * np.array(target)))
        se = np.sqrt(np.maximum(np.diag(cov), 0.0))
        idx = np.nonzero(linked)[0] + 1
        theta[idx] = np.exp(phi)
        low[idx] = np.exp(phi - cm.Z95 * se)
        high[idx] = np.exp(phi + cm.Z95 * se)
    return cm.PbmFit(theta, low, high, impressions, 1, float("nan"))


def _linked(x: np.ndarray) -> np.ndarray:
    """Positions 2..K joined to position 1 through the ratios (rows of ``x``)."""
    k = x.shape[1]
    seen = np.zeros(k, dtype=bool)
    changed = True
    while changed:
        changed = False
        for row in x:
            nz = np.nonzero(row)[0]
            # a ratio with position 1 has one non-zero; else it links two positions
            if len(nz) == 1 and not seen[nz[0]]:
                seen[nz[0]] = changed = True
            elif len(nz) == 2 and seen[nz].any() and not seen[nz].all():
                seen[nz] = changed = True
    return seen


def _harvest(compressed: DataFrame, k: int) -> cm.PbmFit:
    def stats(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        total = np.zeros((k, k, _HARVEST_STATS))
        for pdf in batches:
            pair, position, n, c = cells(pdf)
            if len(pair):
                total += harvest_sums(pair, position, n, c, k)
        yield pd.DataFrame({"sums": [total.ravel().tolist()]})

    rows = compressed.mapInPandas(stats, _HARVEST_SCHEMA).collect()
    total = np.zeros((k, k, _HARVEST_STATS))
    for r in rows:
        total += np.array(r["sums"]).reshape(k, k, _HARVEST_STATS)
    return harvest_theta(total)


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
