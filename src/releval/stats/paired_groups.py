"""A comparison's pairs and tests in pandas and NumPy, the whole family at once.

:mod:`releval.frames.comparison` hands over the rows of the compared run partitions (or, at
scale, each group's statistics); everything here runs on the driver or in one Python task
per group. The statistics are :mod:`releval.stats.kernel`'s."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from releval.config import ComparisonSettings
from releval.core import columns as S
from releval.core.measures.registry import BEST_SUFFIX
from releval.errors import ComparisonError
from releval.stats import kernel
from releval.stats.power import paired_power, power_of, powers_of

#: the hidden columns of a side's rows and of the pairs
SIDE, VALUE, KEY = "_side", "_value", "_key"
B, C = "_baseline_value", "_candidate_value"
#: one group: one test
GROUP = [S.CANDIDATE, *S.MEASURE_COLUMNS]
#: the statistics of one group, in the comparison's column order, with their Spark types
STATS = [
    (S.NUM_PAIRS, "long"), (S.BASELINE_MEAN, "double"), (S.CANDIDATE_MEAN, "double"),
    (S.MEAN_DIFF, "double"), (S.DIFF_CI_LOW, "double"), (S.DIFF_CI_HIGH, "double"),
    (S.RELATIVE_CHANGE, "double"), (S.WINS, "long"), (S.TIES, "long"), (S.LOSSES, "long"),
    (S.EFFECT_SIZE, "double"), (S.T_P_VALUE, "double"), (S.RANDOMIZATION_P_VALUE, "double"),
    (S.MIN_DETECTABLE_DIFF, "double"), (S.QUERIES_NEEDED, "long"),
]
#: what :func:`finish` adds
ADDED = [(S.TUKEY_P_VALUE, "double"), (S.T_P_ADJUSTED, "double"),
         (S.RANDOMIZATION_P_ADJUSTED, "double"), (S.SIGNIFICANT, "boolean"),
         (S.MEAN_DIFF_BEST, "double"), (S.SIGN_HOLDS, "boolean")]
#: the randomization test's dense matrix of differences is cut to about this many cells
DENSE_CELLS = 4_000_000


def repeated(side: str, query_id: Any, measure_key: str, count: int) -> ComparisonError:
    """The error of a side that has more than one per-query row for one query and measure."""
    return ComparisonError(
        f"{side} has {count} per-query rows for query {query_id!r} and measure "
        f"{measure_key!r}: it matches more than one run partition; give the value of every "
        f"partition column that tells them apart")


def pairs(rows: pd.DataFrame, labels: Sequence[str], *, missing_queries: str,
          query_names: Sequence[Any] = (), measure_names: Sequence[str] = ()) -> pd.DataFrame:
    """Every candidate's pairs with the baseline, by measure and query.

    Args:
        rows: ``_side`` (0 the baseline, i the candidate ``labels[i - 1]``), ``measure_key``,
            ``query_id`` (codes in the order of the ids), ``_value``.
        missing_queries: ``zero`` (queries either side scored, 0 where missing) or ``skip``.
        query_names: the query id of each code, for the error of a repeated row.
        measure_names: the measure key of each code, when ``measure_key`` holds codes
            (in the keys' order), for the same error.

    Returns:
        ``candidate``, ``measure_key``, ``query_id``, ``_baseline_value``,
        ``_candidate_value``, sorted: for the measures both sides have.
    """
    twice = rows.duplicated([SIDE, S.MEASURE_KEY, S.QUERY_ID], keep=False)
    if twice.any():
        # the first repeated row, each column with its own type (a row of numbers only
        # would be floats)
        repeats = rows[twice]
        first = {c: repeats[c].iloc[0] for c in rows.columns}
        side = "the baseline" if first[SIDE] == 0 else labels[int(first[SIDE]) - 1]
        count = int((twice & (rows[SIDE] == first[SIDE]) & (rows[S.QUERY_ID] == first[S.QUERY_ID])
                     & (rows[S.MEASURE_KEY] == first[S.MEASURE_KEY])).sum())
        code = first[S.QUERY_ID]
        measure = first[S.MEASURE_KEY]
        raise repeated(side, query_names[code] if len(query_names) else code,
                       measure_names[measure] if len(measure_names) else measure, count)
    on = [S.MEASURE_KEY, S.QUERY_ID]
    base = rows[rows[SIDE] == 0][[*on, VALUE]].rename(columns={VALUE: B})
    how = "inner" if missing_queries == "skip" else "outer"
    out = []
    for i, label in enumerate(labels, 1):
        cand = rows[rows[SIDE] == i][[*on, VALUE]].rename(columns={VALUE: C})
        common = set(base[S.MEASURE_KEY]) & set(cand[S.MEASURE_KEY])  # never paired with 0s
        joined = base[base[S.MEASURE_KEY].isin(common)].merge(
            cand[cand[S.MEASURE_KEY].isin(common)], on=on, how=how)
        out.append(joined.assign(**{S.CANDIDATE: label}))
    both = pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=[*on, B, C])
    both[[B, C]] = both[[B, C]].fillna(0.0)
    return both.sort_values([S.CANDIDATE, S.MEASURE_KEY, S.QUERY_ID], kind="stable")


def one_test(b: np.ndarray, c: np.ndarray, keys: np.ndarray | None,
             settings: ComparisonSettings) -> dict[str, Any]:
    """The statistics of one group (its pairs in query order); the randomization test with
    ``keys``, else its p-value is NaN."""
    stats = kernel.paired(b, c, level=1.0 - settings.alpha)
    d = kernel.differences(b, c)
    detects = paired_power(d, alpha=settings.alpha, power=settings.power,
                           effect_of_interest=settings.effect_of_interest)
    p = (float("nan") if keys is None
         else kernel.randomization_p(d, keys, permutations=settings.permutations))
    return {**stats.__dict__, **detects.__dict__, S.NUM_PAIRS: stats.pairs,
            S.RANDOMIZATION_P_VALUE: p}


def from_moments(moments: Mapping[str, Any], settings: ComparisonSettings) -> dict[str, Any]:
    """:func:`one_test` without the randomization test, from a group's moments (``n``,
    ``mean_b``, ``mean_c``, ``mean_d``, ``sd``, ``wins``, ``ties``, ``losses``)."""
    n, sd = int(moments["n"]), moments["sd"]
    sd = float("nan") if sd is None or n < 2 else float(sd)
    stats = kernel.from_moments(
        n, baseline_mean=float(moments["mean_b"]), candidate_mean=float(moments["mean_c"]),
        mean_diff=float(moments["mean_d"]), sd=sd, wins=int(moments["wins"]),
        ties=int(moments["ties"]), losses=int(moments["losses"]), level=1.0 - settings.alpha)
    detects = power_of(n, sd, alpha=settings.alpha, power=settings.power,
                       effect_of_interest=settings.effect_of_interest)
    return {**stats.__dict__, **detects.__dict__, S.NUM_PAIRS: n,
            S.RANDOMIZATION_P_VALUE: float("nan")}


def tests(pair_rows: pd.DataFrame, keys: np.ndarray, settings: ComparisonSettings
          ) -> list[dict[str, Any]]:
    """:func:`one_test` of every (candidate, measure) of :func:`pairs`: the power search
    (:func:`releval.stats.power.powers_of`) and the randomization test (unless
    ``settings.test`` is ``t``; :func:`releval.stats.kernel.randomization_ps`) of all
    groups at once.

    Args:
        keys: each query code's key.
    """
    groups = list(pair_rows.groupby([S.CANDIDATE, S.MEASURE_KEY], sort=False))
    out, counts, spreads = [], [], []
    for (label, key), g in groups:
        b, c = g[B].to_numpy(np.float64), g[C].to_numpy(np.float64)
        stats = kernel.paired(b, c, level=1.0 - settings.alpha)
        d = kernel.differences(b, c)
        counts.append(len(d))
        spreads.append(float(d.std(ddof=1)) if len(d) >= 2 else float("nan"))
        out.append({S.CANDIDATE: label, S.MEASURE_KEY: key, **stats.__dict__,
                    S.NUM_PAIRS: stats.pairs, S.RANDOMIZATION_P_VALUE: float("nan")})
    # the power search of the whole family at once (as :func:`one_test`'s, row by row)
    detects = powers_of(counts, spreads, alpha=settings.alpha, power=settings.power,
                        effect_of_interest=settings.effect_of_interest)
    for row, found in zip(out, detects, strict=True):
        row.update(found.__dict__)
    if settings.test != "t":
        for index, p in _randomization(groups, keys, settings.permutations):
            out[index][S.RANDOMIZATION_P_VALUE] = p
    return out


def _randomization(groups: list, keys: np.ndarray, permutations: int):
    """(index of the group, p) of every group, in chunks of about :data:`DENSE_CELLS`."""
    start = 0
    while start < len(groups):
        seen: set[int] = set()
        end = start
        while end < len(groups):
            more = seen | set(groups[end][1][S.QUERY_ID].tolist())
            if end > start and len(more) * (end - start + 1) > DENSE_CELLS:
                break
            seen, end = more, end + 1
        codes = np.array(sorted(seen), dtype=np.int64)
        chunk = groups[start:end]
        d = [kernel.differences(g[B].to_numpy(np.float64), g[C].to_numpy(np.float64))
             for _, g in chunk]
        rows = [np.searchsorted(codes, g[S.QUERY_ID].to_numpy(np.int64)) for _, g in chunk]
        p = kernel.randomization_ps(d, rows, keys[codes], permutations=permutations)
        yield from zip(range(start, end), p.tolist(), strict=True)
        start = end


def tukey(pdf: pd.DataFrame, *, missing_queries: str, permutations: int) -> pd.DataFrame:
    """Randomized Tukey HSD p-value of each candidate against the baseline, for the pairs
    of one measure (``candidate``, ``measure_key``, ``query_id``, both values, ``_key``).

    Returns:
        ``candidate``, ``measure_key``, ``tukey_p_value``.
    """
    by_query = pdf.groupby(S.QUERY_ID)
    wide = pd.concat(
        [by_query[B].first().rename("_baseline"),
         pdf.pivot_table(index=S.QUERY_ID, columns=S.CANDIDATE, values=C, aggfunc="first")],
        axis=1)
    wide = (wide.fillna(0.0) if missing_queries == "zero" else wide.dropna()).sort_index()
    keys = by_query[KEY].first().loc[wide.index].to_numpy(np.int64)
    p = kernel.tukey_hsd_p(wide.to_numpy(np.float64), keys, permutations=permutations)
    return pd.DataFrame({S.CANDIDATE: list(wide.columns[1:]),
                         S.MEASURE_KEY: pdf[S.MEASURE_KEY].iloc[0],
                         S.TUKEY_P_VALUE: p[0, 1:]})


def finish(rows: list[dict[str, Any]], settings: ComparisonSettings,
           tukey_p: Mapping[tuple[str, str], float] | None = None) -> list[dict[str, Any]]:
    """Add to each test row its Tukey p-value, the p-values corrected over the whole family,
    ``significant``, ``mean_diff_best`` and ``sign_holds``; NaN becomes None.

    ``mean_diff_best`` is the mean difference of the row's ``[best]`` measure (the same
    candidate and slice value) and ``sign_holds`` whether the two have the same sign, a mean
    within :data:`releval.stats.kernel.TIE_TOLERANCE` of 0 being 0; None without a
    ``[best]`` row.
    """
    adjust = kernel.CORRECTIONS[settings.correction]
    for raw, adjusted in ((S.T_P_VALUE, S.T_P_ADJUSTED),
                          (S.RANDOMIZATION_P_VALUE, S.RANDOMIZATION_P_ADJUSTED)):
        values = adjust(np.array([_number(r[raw]) for r in rows], dtype=np.float64))
        for r, v in zip(rows, values.tolist(), strict=True):
            r[adjusted] = v
    for r in rows:
        r[S.TUKEY_P_VALUE] = (tukey_p or {}).get(tukey_key(r))
    chosen = {"randomization": S.RANDOMIZATION_P_ADJUSTED, "t": S.T_P_ADJUSTED,
              "tukey": S.TUKEY_P_VALUE}[settings.test]
    means = {(*_slice_of(r), r[S.CANDIDATE], r[S.MEASURE_KEY]): r[S.MEAN_DIFF] for r in rows}

    def sign(x: float) -> float:
        return 0.0 if abs(x) <= kernel.TIE_TOLERANCE else float(np.sign(x))

    for r in rows:
        p = _number(r[chosen])
        r[S.SIGNIFICANT] = bool(p == p and p < settings.alpha)
        best = means.get((*_slice_of(r), r[S.CANDIDATE], r[S.MEASURE_KEY] + BEST_SUFFIX))
        r[S.MEAN_DIFF_BEST] = best
        r[S.SIGN_HOLDS] = None if best is None else sign(r[S.MEAN_DIFF]) == sign(best)
    return [{k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}
            for r in rows]


def _slice_of(row: Mapping[str, Any]) -> tuple[Any, Any]:
    return row.get(S.SLICE), row.get(S.SLICE_VALUE)


def tukey_key(row: Mapping[str, Any]) -> tuple:
    """The key of a row's Tukey p-value: (candidate, measure key), and the slice and its
    value on a slice's row."""
    return ((row[S.CANDIDATE], row[S.MEASURE_KEY])
            + (() if row.get(S.SLICE) is None else _slice_of(row)))


def _number(value: Any) -> float:
    return float("nan") if value is None else float(value)
