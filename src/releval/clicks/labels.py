"""``releval.click_labels``: qrels-shaped relevance labels from a search log.

The log is checked (:func:`releval.checks.interactions.check_interactions`), then one click
model estimates each (query, doc)'s attractiveness, P(click | examined):

- ``pbm``: the position-based model's maximum likelihood (:mod:`releval.clicks.position_bias`);
  the interval is the likelihood-ratio interval for the fitted examination curve.
- ``sdbn``: the simplified DBN's closed forms (Chuklin et al., "Click Models for Web Search",
  ch. 4): attractiveness = clicks / impressions at or above the search's last click (every
  impression of a search without a click), satisfaction = last clicks / clicks; Wilson
  intervals. ``dbn`` is the DBN with continuation 1, estimated by these counts.

``relevance`` is the number of cut points (``grades``, default :data:`DEFAULT_GRADES`) at or
below the attractiveness. See docs/clicks.md, "Models".
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from releval.checks.interactions import check_interactions
from releval.checks.query_means import impression_cells
from releval.clicks import position_bias as pb
from releval.clicks.labels_result import ClickLabels
from releval.core import columns as S
from releval.errors import ConfigError
from releval.stats import click_models as cm

#: The click models ``model`` takes.
MODELS = ("pbm", "sdbn", "dbn")
#: Attractiveness cut points of relevance 1, 2, 3, 4 (relevance 0 below 0.1).
DEFAULT_GRADES = (0.1, 0.3, 0.5, 0.7)
#: The labels' columns, in order (``ClickLabels.labels``).
LABEL_COLUMNS = (
    S.QUERY_ID,
    S.DOC_ID,
    S.RELEVANCE,
    S.ATTRACTIVENESS,
    S.ATTRACTIVENESS_LOW,
    S.ATTRACTIVENESS_HIGH,
    S.SATISFACTION,
    S.IMPRESSIONS,
    S.CLICKS,
    S.LABEL_SOURCE,
)
_IDENTIFIED = "_identified"
_SCORED_SCHEMA = (
    f"{S.QUERY_ID} string, {S.DOC_ID} string, {S.ATTRACTIVENESS} double, "
    f"{S.ATTRACTIVENESS_LOW} double, {S.ATTRACTIVENESS_HIGH} double, {S.SATISFACTION} double, "
    f"{S.IMPRESSIONS} long, {S.CLICKS} long, {_IDENTIFIED} boolean"
)


def click_labels(
    interactions: DataFrame,
    *,
    columns: Mapping[str, str] | None = None,
    model: str = "pbm",
    min_impressions: int = 10,
    grades: Sequence[float] | None = None,
) -> ClickLabels:
    """Relevance labels from impressions and clicks, corrected for position bias.

    Args:
        interactions: one row per shown result: ``search_id``, ``query_id``, ``doc_id``,
            ``position`` (1-based), ``clicked`` (0/1 or a count; > 0 is a click), optional
            ``dwell``; only these five are read (the rest, dwell included, is ignored).
        columns: releval's column -> ``interactions``' column, for those named otherwise.
        model: ``"pbm"``, ``"sdbn"`` or ``"dbn"`` (docs/clicks.md, "Models").
        min_impressions: a (query, doc) shown fewer times gets no label (counted in
            ``accounts.pairs_under_min_impressions``).
        grades: increasing attractiveness cut points in (0, 1]; ``relevance`` is how many are
            at or below the attractiveness. None: :data:`DEFAULT_GRADES`.

    Returns:
        :class:`ClickLabels`: ``.labels`` (usable as ``qrels=`` of ``releval.evaluate``),
        ``.position_bias``, ``.quarantine``, ``.accounts``, ``.write``.

    Raises:
        ConfigError: an unknown model, ``min_impressions`` < 1, bad ``grades``, or a column
            the log lacks.

    Example:
        >>> log = spark.createDataFrame(
        ...     [(f"s{i}", "q", d, p, int(d == "a")) for i in range(20)
        ...      for d, p in (("a", 1 + i % 2), ("b", 2 - i % 2))],
        ...     "search_id string, query_id string, doc_id string, position int, clicked int")
        >>> found = click_labels(log, model="sdbn", min_impressions=5)
        >>> [(r.doc_id, r.relevance) for r in found.labels.orderBy("doc_id").collect()]
        [('a', 4), ('b', 0)]
    """
    cuts = _grades(grades)
    if model not in MODELS:
        raise ConfigError(
            f"click_labels: model={model!r}; expected one of {list(MODELS)} "
            "(docs/clicks.md, 'Models')"
        )
    if (
        isinstance(min_impressions, bool)
        or not isinstance(min_impressions, int | np.integer)
        or min_impressions < 1
    ):
        raise ConfigError(
            f"click_labels: min_impressions={min_impressions!r}; expected an integer >= 1"
        )
    checked = check_interactions(_needed(interactions, columns), columns)
    compressed = pb.pack(impression_cells(checked))
    if model == "pbm":
        bias = pb.fit_position_bias(compressed)
        scored = _pbm_scored(compressed, bias.pbm.theta, int(min_impressions), bias.partitions)
    else:
        bias = None
        scored = _cascade_scored(checked.rows)
    enough = F.col(S.IMPRESSIONS) >= int(min_impressions)
    labels = scored.where(F.col(_IDENTIFIED) & enough).select(
        S.QUERY_ID,
        S.DOC_ID,
        _relevance(cuts),
        S.ATTRACTIVENESS,
        S.ATTRACTIVENESS_LOW,
        S.ATTRACTIVENESS_HIGH,
        S.SATISFACTION,
        S.IMPRESSIONS,
        S.CLICKS,
        F.lit(f"clicks:{model}").alias(S.LABEL_SOURCE),
    )
    return ClickLabels(
        labels=labels,
        scored=scored,
        checked=checked,
        compressed=compressed,
        model=model,
        min_impressions=int(min_impressions),
        grades=cuts,
        fitted=bias,
    )


def _needed(interactions: DataFrame, columns: Mapping[str, str] | None) -> DataFrame:
    """The columns the click models read (``dwell`` and ``team`` are not: their rules do not
    cost a label)."""
    given = dict(columns or {})
    keep = [given.get(c, c) for c in (S.SEARCH_ID, S.QUERY_ID, S.DOC_ID, S.POSITION, S.CLICKED)]
    return interactions.select(*[c for c in interactions.columns if c in keep])


def _grades(grades: Sequence[float] | None) -> tuple[float, ...]:
    if grades is None:
        return DEFAULT_GRADES
    try:
        cuts = tuple(float(g) for g in grades)
    except (TypeError, ValueError):
        raise ConfigError(
            f"click_labels: grades={grades!r}; expected increasing numbers in "
            "(0, 1], e.g. (0.1, 0.3, 0.5, 0.7)"
        ) from None
    if (
        not cuts
        or any(not 0 < g <= 1 for g in cuts)
        or any(b <= a for a, b in zip(cuts, cuts[1:], strict=False))
    ):
        raise ConfigError(
            f"click_labels: grades={list(grades)!r}; expected increasing cut "
            "points in (0, 1], e.g. (0.1, 0.3, 0.5, 0.7)"
        )
    return cuts


def _relevance(cuts: tuple[float, ...]) -> Column:
    """How many cut points are at or below the attractiveness."""
    grade = sum((F.col(S.ATTRACTIVENESS) >= F.lit(c)).cast("int") for c in cuts)
    return grade.cast("int").alias(S.RELEVANCE)


def _pbm_scored(compressed: DataFrame, theta: np.ndarray, min_impressions: int,
                partitions: int) -> DataFrame:
    """Every pair's impressions, clicks and whether it is identified; for a pair shown at
    least ``min_impressions`` times (one that can have a label), its PBM attractiveness and
    interval at the fitted examination ``theta``, in ``partitions`` Python tasks (null for
    the others, which stay in Spark).

    Cells at positions with no examination estimate are left out; a pair with none left is
    not identified (no label)."""
    theta = np.asarray(theta, dtype=float)
    total = F.aggregate(pb.IMPRESSIONS_ARRAY, F.lit(0).cast("long"), lambda a, x: a + x)
    enough = total >= min_impressions
    known = [int(p) + 1 for p in np.flatnonzero(np.isfinite(theta))]
    none = F.lit(None).cast("double")
    under = compressed.where(~enough).select(
        S.QUERY_ID,
        S.DOC_ID,
        none.alias(S.ATTRACTIVENESS),
        none.alias(S.ATTRACTIVENESS_LOW),
        none.alias(S.ATTRACTIVENESS_HIGH),
        none.alias(S.SATISFACTION),
        total.alias(S.IMPRESSIONS),
        F.aggregate(pb.CLICKS_ARRAY, F.lit(0).cast("long"), lambda a, x: a + x).alias(S.CLICKS),
        F.exists(pb.POSITIONS_ARRAY, lambda p: p.isin(known)).alias(_IDENTIFIED),
    )

    def score(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            pair, position, n, c = pb.arrow_cells(batch)
            pairs = batch.num_rows
            known = position < len(theta)
            known[known] = np.isfinite(theta[position[known]])
            alpha = np.full(pairs, np.nan)
            low = np.full(pairs, np.nan)
            high = np.full(pairs, np.nan)
            used = np.unique(pair[known])
            if len(used):
                index = np.searchsorted(used, pair[known])
                th = theta[position[known]]
                a, upper = cm.pbm_alpha(index, th, n[known], c[known], len(used))
                lo, hi = cm.pbm_alpha_interval(index, th, n[known], c[known], a, upper)
                alpha[used], low[used], high[used] = a, lo, hi
            yield pa.RecordBatch.from_arrays(
                [
                    batch.column(S.QUERY_ID),
                    batch.column(S.DOC_ID),
                    *[pa.array(x, from_pandas=True)  # NaN: null, as for every estimate
                      for x in (alpha, low, high, np.full(pairs, np.nan))],
                    pa.array(np.bincount(pair, weights=n, minlength=pairs).astype(np.int64)),
                    pa.array(np.bincount(pair, weights=c, minlength=pairs).astype(np.int64)),
                    pa.array(np.isfinite(alpha)),
                ],
                names=[S.QUERY_ID, S.DOC_ID, S.ATTRACTIVENESS, S.ATTRACTIVENESS_LOW,
                       S.ATTRACTIVENESS_HIGH, S.SATISFACTION, S.IMPRESSIONS, S.CLICKS,
                       _IDENTIFIED],
            )

    scored = compressed.where(enough).coalesce(partitions).mapInArrow(score, _SCORED_SCHEMA)
    return scored.unionByName(under)


def _cascade_scored(rows: DataFrame) -> DataFrame:
    """The simplified DBN's counts per pair: attractiveness, satisfaction, Wilson interval."""
    clicked = F.col(S.CLICKED) > 0
    last = F.max(F.when(clicked, F.col(S.POSITION))).over(Window.partitionBy(S.SEARCH_ID))
    marked = rows.select(
        S.QUERY_ID,
        S.DOC_ID,
        clicked.alias("_click"),
        (last.isNull() | (F.col(S.POSITION) <= last)).alias("_examined"),
        (clicked & (F.col(S.POSITION) == last)).alias("_last"),
    )
    counts = marked.groupBy(S.QUERY_ID, S.DOC_ID).agg(
        F.count(F.lit(1)).alias(S.IMPRESSIONS),
        F.sum(F.col("_click").cast("long")).alias(S.CLICKS),
        F.sum(F.col("_examined").cast("long")).alias("_exam"),
        F.sum(F.col("_last").cast("long")).alias("_lasts"),
    )
    k, n = F.col(S.CLICKS).cast("double"), F.col("_exam").cast("double")
    low, high = _wilson(k, n)
    return counts.select(
        S.QUERY_ID,
        S.DOC_ID,
        F.when(n > 0, k / n).alias(S.ATTRACTIVENESS),
        low.alias(S.ATTRACTIVENESS_LOW),
        high.alias(S.ATTRACTIVENESS_HIGH),
        F.when(k > 0, F.col("_lasts") / k).alias(S.SATISFACTION),
        S.IMPRESSIONS,
        S.CLICKS,
        (n > 0).alias(_IDENTIFIED),
    )


def _wilson(k: Column, n: Column, z: float = cm.Z95) -> tuple[Column, Column]:
    """The Wilson score interval of k successes in n trials, as Spark columns (null: n = 0)."""
    p = k / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * F.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return (
        F.when(n > 0, F.greatest(centre - half, F.lit(0.0))),
        F.when(n > 0, F.least(centre + half, F.lit(1.0))),
    )
