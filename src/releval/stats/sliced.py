"""A comparison's rows per slice value and its traffic-weighted rows.

A queries input gives each query its slice values and a weight (:mod:`releval.checks`'
checked rows: ``query_id``, ``weight``, one column per slice). :mod:`releval.frames.comparison`
tests each slice value's pairs as it tests all of them; here are the pieces both of its
paths share on the driver: each query's slice values and weight, and the weighted rows
(:mod:`releval.stats.weighted`); :mod:`releval.frames.sliced` has the executors' side.

A weighted row (``averaging = 'weighted'``) holds the weighted means of the pairs of the
queries the queries input lists (an unlisted query has no weight): ``num_pairs``, the
weighted ``baseline_mean``, ``candidate_mean`` and ``mean_diff`` with its linearized
interval, ``relative_change``, the counts ``wins`` / ``ties`` / ``losses`` and, for a
measure with a ``[best]`` form, ``mean_diff_best`` and ``sign_holds``; it is no test, so
``effect_size``, every p-value, ``significant``, ``min_detectable_diff`` and
``queries_needed`` are null. See docs/statistics.md."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from releval.core import columns as S
from releval.core.measures.registry import BEST_SUFFIX
from releval.stats import kernel
from releval.stats.weighted import weighted_mean

#: the columns a weighted row leaves null: it is an estimate with its interval, not a test
NOT_WEIGHTED = (S.EFFECT_SIZE, S.T_P_VALUE, S.RANDOMIZATION_P_VALUE, S.T_P_ADJUSTED,
                S.RANDOMIZATION_P_ADJUSTED, S.TUKEY_P_VALUE, S.SIGNIFICANT,
                S.MIN_DETECTABLE_DIFF, S.QUERIES_NEEDED)
SUMS = ("_n", "_sw", "_swb", "_swc", "_swd", "_sw2", "_sw2d", "_sw2d2", "_wins", "_ties",
         "_losses")


def at(row: Mapping[str, Any]) -> tuple[Any, Any]:
    """A row's (slice, slice value); (None, None) over all queries."""
    return row.get(S.SLICE), row.get(S.SLICE_VALUE)


def of_codes(attributes: pd.DataFrame, names: Sequence[Any], slices: Sequence[str]
             ) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Each query code's slice values (slice -> array of strings) and weight (NaN: unlisted
    or no weight), from the checked queries (``query_id``, ``weight``, the slices) and the
    query id of each code."""
    index = pd.Index(attributes[S.QUERY_ID].astype(str)).get_indexer(
        [str(n) for n in names])
    listed = index >= 0
    values = {}
    for s in slices:
        column = attributes[s].astype(object).to_numpy()
        out = np.full(len(names), S.UNLISTED_SLICE, dtype=object)
        out[listed] = column[index[listed]]
        values[s] = out
    weights = np.full(len(names), np.nan)
    raw = pd.to_numeric(attributes[S.WEIGHT], errors="coerce").to_numpy(np.float64)
    weights[listed] = raw[index[listed]]
    return values, weights


def groups(values: Mapping[str, np.ndarray]) -> list[tuple[str, str, np.ndarray]]:
    """(slice, value, the codes' mask) of every slice value, sorted."""
    return [(s, v, codes == v) for s, codes in values.items()
            for v in sorted({str(x) for x in codes})]


def weighted_row(b: np.ndarray, c: np.ndarray, w: np.ndarray, *, level: float
                 ) -> dict[str, Any] | None:
    """The weighted statistics of one group's pairs (``w`` NaN where a query has no
    weight); None without a positive total weight (no pair has a weight, or every one 0)."""
    keep = ~np.isnan(w)
    if not w[keep].sum() > 0:
        return None
    b, c, w = b[keep], c[keep], w[keep]
    d = kernel.differences(b, c)
    diff = weighted_mean(d, w, level=level)
    base = weighted_mean(b, w, level=level).mean
    return _row(len(d), base, weighted_mean(c, w, level=level).mean, diff.mean, diff.ci_low,
                diff.ci_high, int((d > 0).sum()), int((d == 0).sum()), int((d < 0).sum()))


def _row(n: int, base: float, cand: float, diff: float, low: float, high: float, wins: int,
         ties: int, losses: int) -> dict[str, Any]:
    return {S.NUM_PAIRS: n, S.BASELINE_MEAN: base, S.CANDIDATE_MEAN: cand, S.MEAN_DIFF: diff,
            S.DIFF_CI_LOW: low, S.DIFF_CI_HIGH: high,
            S.RELATIVE_CHANGE: diff / base if base == base and base != 0 else float("nan"),
            S.WINS: wins, S.TIES: ties, S.LOSSES: losses, **dict.fromkeys(NOT_WEIGHTED),
            S.AVERAGING: "weighted"}


def from_sums(sums: Mapping[str, Any], *, level: float) -> dict[str, Any] | None:
    """:func:`weighted_row` from a group's sums: ``sum(w^2 (d - m)^2)`` is
    ``sum(w^2 d^2) - 2 m sum(w^2 d) + m^2 sum(w^2)``."""
    n, sw = int(sums["_n"]), float(sums["_sw"])
    nan = float("nan")
    if not sw > 0:
        return None
    m = sums["_swd"] / sw
    low = high = nan
    if n >= 2:
        spread = max(sums["_sw2d2"] - 2.0 * m * sums["_sw2d"] + m * m * sums["_sw2"], 0.0)
        v = n / (n - 1.0) * spread / (sw * sw)
        half = float(kernel.t_quantile((1.0 + level) / 2.0, n - 1)) * np.sqrt(v)
        low, high = m - half, m + half
    return _row(n, sums["_swb"] / sw, sums["_swc"] / sw, m, low, high, int(sums["_wins"]),
                int(sums["_ties"]), int(sums["_losses"]))


def finish_weighted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Add ``mean_diff_best`` and ``sign_holds`` (as :func:`releval.stats.paired_groups.finish`
    does, within the row's slice value); NaN becomes None."""
    means = {(*at(r), r[S.CANDIDATE], r[S.MEASURE_KEY]): r[S.MEAN_DIFF] for r in rows}

    def sign(x: float) -> float:
        return 0.0 if abs(x) <= kernel.TIE_TOLERANCE else float(np.sign(x))

    for r in rows:
        best = means.get((*at(r), r[S.CANDIDATE], r[S.MEASURE_KEY] + BEST_SUFFIX))
        best = None if best is None or best != best else best
        r[S.MEAN_DIFF_BEST] = best
        r[S.SIGN_HOLDS] = (None if best is None or r[S.MEAN_DIFF] != r[S.MEAN_DIFF]
                           else sign(r[S.MEAN_DIFF]) == sign(best))
    return [{k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}
            for r in rows]
