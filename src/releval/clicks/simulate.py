"""Search logs simulated from a known truth (Chuklin et al., "Click Models for Web Search").

- PBM: position k is examined with probability ``theta_k``, an examined result clicked with
  its attractiveness ``alpha_qd``: P(click) = theta_k alpha_qd.
- DBN (cascade): the user reads down from position 1, clicks an examined result with
  probability ``alpha_qd``, is then satisfied with ``sigma_qd`` and stops, else goes on with
  probability ``gamma`` (``gamma = 1``: the simplified DBN).

A search picks a query, then one of its rankings (``system``); ``shuffle`` permutes pages.

Example:
    >>> truth = random_truth(queries=5, docs=8, seed=1)
    >>> len(simulate_pbm(truth, rankings(truth, systems=2), examination=[1, .6], searches=9))
    18
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from releval.core.columns import (
    ATTRACTIVENESS,
    CLICKED,
    DOC_ID,
    DWELL,
    POSITION,
    QUERY_ID,
    RELEVANCE,
    SATISFACTION,
    SEARCH_ID,
)

#: the ranking (ranker) that produced a simulated page
SYSTEM = "system"

#: Attractiveness and satisfaction of each relevance grade 0..3 in ``random_truth``.
GRADE_ATTRACTIVENESS = (0.05, 0.25, 0.55, 0.85)
GRADE_SATISFACTION = (0.05, 0.2, 0.5, 0.8)

#: Dwell (seconds) after a click: exponential with this mean, plus ``SATISFIED_DWELL_FLOOR``
#: when the click satisfied the user.
CLICK_DWELL_MEAN = 15.0
SATISFIED_DWELL_FLOOR = 30.0


def random_truth(
    *,
    queries: int,
    docs: int,
    seed: int = 0,
    grade_probabilities: Sequence[float] = (0.5, 0.25, 0.15, 0.1),
) -> pd.DataFrame:
    """A known truth: per (query, doc) a relevance grade 0..3, its attractiveness and satisfaction.

    Attractiveness and satisfaction are the grade's values (``GRADE_ATTRACTIVENESS``,
    ``GRADE_SATISFACTION``) moved by a small uniform jitter (+-0.04), so pairs of one grade differ.

    Returns:
        pandas DataFrame ``query_id``, ``doc_id``, ``relevance``, ``attractiveness``,
        ``satisfaction``; ids are strings ``q0001`` and ``q0001-d003``.

    Example:
        >>> t = random_truth(queries=2, docs=3, seed=0)
        >>> list(t.columns)
        ['query_id', 'doc_id', 'relevance', 'attractiveness', 'satisfaction']
    """
    rng = np.random.default_rng(seed)
    n = queries * docs
    grade = rng.choice(len(grade_probabilities), size=n, p=np.asarray(grade_probabilities))
    jitter = rng.uniform(-0.04, 0.04, size=(2, n))
    alpha = np.clip(np.asarray(GRADE_ATTRACTIVENESS)[grade] + jitter[0], 0.01, 0.99)
    sigma = np.clip(np.asarray(GRADE_SATISFACTION)[grade] + jitter[1], 0.01, 0.99)
    q = np.repeat(np.arange(queries), docs)
    d = np.tile(np.arange(docs), queries)
    qid = np.char.add("q", np.char.zfill(q.astype(str), 4))
    did = np.char.add(np.char.add(qid, "-d"), np.char.zfill(d.astype(str), 3))
    return pd.DataFrame(
        {
            QUERY_ID: qid.astype(object),
            DOC_ID: did.astype(object),
            RELEVANCE: grade.astype("int64"),
            ATTRACTIVENESS: alpha,
            SATISFACTION: sigma,
        }
    )


def rankings(
    truth: pd.DataFrame,
    *,
    systems: int = 1,
    noise: Sequence[float] | None = None,
    depth: int = 10,
    seed: int = 0,
) -> pd.DataFrame:
    """Rankings of each query's documents by ``systems`` rankers of known quality.

    Ranker ``i`` sorts by ``relevance + noise[i] * N(0, 1)`` (descending) and keeps the top
    ``depth``: a larger noise is a worse ranker. The default noise runs evenly from 0.5 to 3.0.

    Returns:
        pandas DataFrame ``system`` (``s00``, ``s01``, ...), ``query_id``, ``doc_id``,
        ``position`` (1-based) and ``score`` (``depth - position + 1``), a run per system.

    Example:
        >>> t = random_truth(queries=2, docs=4, seed=0)
        >>> r = rankings(t, systems=3, depth=3, seed=0)
        >>> r.groupby("system").size().tolist()
        [6, 6, 6]
    """
    rng = np.random.default_rng(seed)
    sigma = np.linspace(0.5, 3.0, systems) if noise is None else np.asarray(noise, dtype=float)
    if len(sigma) != systems:
        raise ValueError(f"rankings: {systems} systems but {len(sigma)} noise levels: {sigma!r}")
    frames = []
    rel = truth[RELEVANCE].to_numpy(dtype=float)
    for i, s in enumerate(sigma):
        score = rel + s * rng.standard_normal(len(truth))
        frame = truth[[QUERY_ID, DOC_ID]].assign(_score=score)
        frame = frame.sort_values([QUERY_ID, "_score"], ascending=[True, False], kind="stable")
        frame[POSITION] = frame.groupby(QUERY_ID).cumcount() + 1
        frame = frame[frame[POSITION] <= depth]
        frame.insert(0, SYSTEM, f"s{i:02d}")
        frames.append(frame.drop(columns="_score"))
    out = pd.concat(frames, ignore_index=True)
    out["score"] = (depth - out[POSITION] + 1).astype(float)
    return out


@dataclass(frozen=True)
class _Pages:
    """The simulated searches: who saw what, as (searches, positions) arrays."""

    page: np.ndarray  # (S,) index of the (query, system) ranking shown
    slot: np.ndarray  # (S, K) row of ``truth`` shown at each position; -1: nothing shown


def _pages(
    truth: pd.DataFrame, runs: pd.DataFrame, searches: int, depth: int, shuffle: float, rng
) -> tuple[_Pages, np.ndarray, np.ndarray]:
    """Draw the searches: a query uniformly, one of its rankings uniformly, an optional shuffle."""
    key = pd.MultiIndex.from_frame(truth[[QUERY_ID, DOC_ID]])
    row = key.get_indexer(pd.MultiIndex.from_frame(runs[[QUERY_ID, DOC_ID]]))
    if (row < 0).any():
        bad = runs[row < 0].iloc[0].to_dict()
        raise ValueError(f"simulate: a ranked (query, doc) has no truth row, e.g. {bad}")
    runs = runs.assign(_row=row, _system=runs[SYSTEM] if SYSTEM in runs else "s00")
    runs = runs[runs[POSITION] <= depth]
    pages = runs.groupby([QUERY_ID, "_system"], sort=True)
    names = list(pages.groups)
    table = np.full((len(names), depth), -1, dtype=np.int64)
    for i, (_, frame) in enumerate(pages):
        table[i, frame[POSITION].to_numpy() - 1] = frame["_row"].to_numpy()
    page_query = np.array([q for q, _ in names], dtype=object)
    page_system = np.array([s for _, s in names], dtype=object)
    choose = rng.integers(0, len(names), size=searches)
    slot = table[choose]
    if shuffle > 0:
        mixed = rng.random(searches) < shuffle
        keys = rng.random((int(mixed.sum()), depth)) + (slot[mixed] < 0)  # empty slots last
        slot[mixed] = np.take_along_axis(slot[mixed], np.argsort(keys, axis=1), axis=1)
    return _Pages(page=choose, slot=slot), page_query, page_system


def _frame(
    truth: pd.DataFrame,
    pages: _Pages,
    page_query: np.ndarray,
    page_system: np.ndarray,
    clicks: np.ndarray,
    satisfied: np.ndarray,
    rng,
) -> pd.DataFrame:
    """One row per shown result, the canonical interaction columns plus ``system``."""
    searches, depth = pages.slot.shape
    shown = pages.slot >= 0
    s_idx, k_idx = np.nonzero(shown)
    rows = pages.slot[s_idx, k_idx]
    clicked = clicks[s_idx, k_idx].astype("int64")
    dwell = rng.exponential(CLICK_DWELL_MEAN, size=len(rows)) + np.where(
        satisfied[s_idx, k_idx], SATISFIED_DWELL_FLOOR, 0.0
    )
    width = len(str(max(searches - 1, 0)))
    return pd.DataFrame(
        {
            SEARCH_ID: np.char.add("s", np.char.zfill(s_idx.astype(str), width)).astype(object),
            QUERY_ID: page_query[pages.page[s_idx]],
            DOC_ID: truth[DOC_ID].to_numpy()[rows],
            POSITION: (k_idx + 1).astype("int64"),
            CLICKED: clicked,
            DWELL: pd.array(np.where(clicked > 0, dwell, np.nan), dtype="Float64"),
            SYSTEM: page_system[pages.page[s_idx]],
        }
    )


def simulate_pbm(
    truth: pd.DataFrame,
    runs: pd.DataFrame,
    *,
    examination: Sequence[float],
    searches: int,
    shuffle: float = 0.0,
    seed: int = 0,
) -> pd.DataFrame:
    """A log of ``searches`` result pages with clicks from the position-based model.

    P(click at position k on d) = ``examination[k-1] * attractiveness(q, d)``, independently per
    position. A clicked result is a satisfied click with probability ``satisfaction(q, d)``,
    which only sets its dwell. Pages show the top ``len(examination)`` of a ranking.

    Args:
        truth: ``query_id``, ``doc_id``, ``attractiveness`` and ``satisfaction`` per pair
            (``random_truth``, or your own).
        runs: rankings (``rankings``): ``query_id``, ``doc_id``, ``position`` and optionally
            ``system``; each search picks a query, then one of its systems, uniformly.
        examination: theta per position, 1-based positions in order.
        searches: result pages to draw.
        shuffle: share of pages shown in a uniformly random order.
        seed: the generator's seed.

    Returns:
        pandas DataFrame ``search_id``, ``query_id``, ``doc_id``, ``position``, ``clicked``
        (0/1), ``dwell`` (seconds; null, pandas' ``<NA>``, when not clicked) and ``system``.

    Example:
        >>> t = random_truth(queries=3, docs=5, seed=0)
        >>> log = simulate_pbm(t, rankings(t), examination=[1.0, 0.5], searches=10)
        >>> int(log["position"].max())
        2
    """
    rng = np.random.default_rng(seed)
    theta = np.asarray(examination, dtype=float)
    pages, page_query, page_system = _pages(truth, runs, searches, len(theta), shuffle, rng)
    alpha = _gather(truth[ATTRACTIVENESS], pages.slot)
    sigma = _gather(truth[SATISFACTION], pages.slot)
    clicks = rng.random(alpha.shape) < theta[None, :] * alpha
    satisfied = clicks & (rng.random(alpha.shape) < sigma)
    return _frame(truth, pages, page_query, page_system, clicks, satisfied, rng)


def simulate_cascade(
    truth: pd.DataFrame,
    runs: pd.DataFrame,
    *,
    searches: int,
    continuation: float = 1.0,
    depth: int = 10,
    shuffle: float = 0.0,
    seed: int = 0,
) -> pd.DataFrame:
    """A log of ``searches`` result pages with clicks from the DBN (a cascade model).

    Position 1 is examined. At an examined position the result is clicked with probability
    ``attractiveness``; a click satisfies with probability ``satisfaction``; a satisfied user
    stops, an unsatisfied one examines the next position with probability ``continuation``
    (gamma). ``continuation=1`` is the simplified DBN.

    Args:
        truth: as for ``simulate_pbm``.
        runs: as for ``simulate_pbm``.
        searches: result pages to draw.
        continuation: gamma, the probability of examining the next result when not satisfied.
        depth: positions shown per page.
        shuffle: share of pages shown in a uniformly random order.
        seed: the generator's seed.

    Returns:
        the columns of ``simulate_pbm``; a satisfied click dwells at least
        ``SATISFIED_DWELL_FLOOR`` seconds.

    Example:
        >>> t = random_truth(queries=3, docs=5, seed=0)
        >>> log = simulate_cascade(t, rankings(t), searches=10, depth=5)
        >>> set(log["clicked"]) <= {0, 1}
        True
    """
    rng = np.random.default_rng(seed)
    pages, page_query, page_system = _pages(truth, runs, searches, depth, shuffle, rng)
    alpha = _gather(truth[ATTRACTIVENESS], pages.slot)
    sigma = _gather(truth[SATISFACTION], pages.slot)
    draws = rng.random((3, *alpha.shape))
    clicks = np.zeros(alpha.shape, dtype=bool)
    satisfied = np.zeros(alpha.shape, dtype=bool)
    examined = np.ones(alpha.shape[0], dtype=bool)
    for k in range(depth):
        present = pages.slot[:, k] >= 0
        clicks[:, k] = examined & present & (draws[0, :, k] < alpha[:, k])
        satisfied[:, k] = clicks[:, k] & (draws[1, :, k] < sigma[:, k])
        examined = examined & ~satisfied[:, k] & (draws[2, :, k] < continuation)
    return _frame(truth, pages, page_query, page_system, clicks, satisfied, rng)


def to_spark(spark, log: pd.DataFrame):
    """The simulated log as a Spark DataFrame, a missing dwell as null (not NaN).

    Example:
        >>> t = random_truth(queries=2, docs=3, seed=0)
        >>> df = to_spark(spark, simulate_pbm(t, rankings(t), examination=[1.0], searches=5))
        >>> df.where("clicked = 0 and dwell is not null").count()
        0
    """
    from pyspark.sql import functions as F

    frame = log.assign(**{DWELL: log[DWELL].astype(float)}) if DWELL in log else log
    key = "spark.sql.execution.arrow.pyspark.enabled"
    before = spark.conf.get(key, None)
    spark.conf.set(key, "true")  # a million rows in seconds, not minutes
    try:
        df = spark.createDataFrame(frame)
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)
    if DWELL in log:
        df = df.withColumn(DWELL, F.when(~F.isnan(DWELL), F.col(DWELL)))
    return df


def _gather(values: pd.Series, slot: np.ndarray) -> np.ndarray:
    """``values`` at each shown slot, 0 where nothing is shown."""
    v = values.to_numpy(dtype=float)
    return np.where(slot >= 0, v[np.maximum(slot, 0)], 0.0)
