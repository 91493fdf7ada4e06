"""A comparison in the executors, above :data:`releval.frames.comparison.DRIVER_ROWS` rows:
the pairs made by a group per (candidate, measure key, query), each group's statistics in
Spark (from moments) or in a Python task (the randomized tests), and only those statistics
collected; the family is corrected on the driver (:mod:`releval.stats.paired_groups`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from releval.config import ComparisonSettings
from releval.core import columns as S
from releval.frames import sliced as SL
from releval.stats import kernel
from releval.stats import paired_groups as G
from releval.stats.sliced import finish_weighted

_CAND, _IS_BASE, _NB, _NC = "_cand", "_is_base", "_nb", "_nc"
_REPEATED, _REPEATS, _BOTH = "_repeated", "_repeats", "_both"
#: :func:`executor_pairs`' columns: the candidate's index in the sides (1, 2, ...) and how
#: many rows each side has for the (candidate, measure key, query)
PAIR_CANDIDATE, BASELINE_ROWS, CANDIDATE_ROWS = _CAND, _NB, _NC


def executor_pairs(rows: DataFrame, count: int, *, keyed: bool) -> DataFrame:
    """Each candidate's pairs with the baseline in the executors: a group per (candidate,
    measure key, query) instead of a join, so the plan holds the per-query rows once; the
    query's hash key only when a randomized test reads it (``keyed``)."""
    each = (F.lit(1) if count == 1 else F.explode(
        F.when(F.col(G.SIDE) == 0, F.array(*[F.lit(i) for i in range(1, count + 1)])
               ).otherwise(F.array(F.col(G.SIDE)))))
    base = F.col(_IS_BASE)
    return rows.select(each.alias(_CAND), (F.col(G.SIDE) == 0).alias(_IS_BASE),
                       S.MEASURE_KEY, S.QUERY_ID, G.VALUE,
                       *([G.KEY] if keyed else [])).groupBy(
        _CAND, S.MEASURE_KEY, S.QUERY_ID).agg(
        *([F.first(G.KEY).alias(G.KEY)] if keyed else []),
        F.count(F.when(base, 1)).alias(_NB), F.count(F.when(~base, 1)).alias(_NC),
        F.max(F.when(base, F.col(G.VALUE))).alias(G.B),
        F.max(F.when(~base, F.col(G.VALUE))).alias(G.C))


def in_executors(rows: DataFrame, labels: Sequence[str],
                  described: Mapping[str, Mapping[str, Any]], *, missing_queries: str,
                  settings: ComparisonSettings, queries: DataFrame | None = None,
                  slices: Sequence[str] = (), weighted: bool = False) -> list[dict[str, Any]]:
    """The pairs and each group's statistics in the executors; the family on the driver
    (``described``: each measure key's measure columns). With ``queries``, the pairs are
    grouped once over all queries and once per slice value in the same job (their families
    corrected apart), and ``weighted`` adds the weighted rows (one more job)."""
    keyed = settings.test != "t"
    pairs = executor_pairs(rows, len(labels), keyed=keyed)
    if missing_queries == "skip":
        pairs = pairs.where((F.col(_NB) > 0) & (F.col(_NC) > 0))
    pairs = pairs.select(
        F.element_at(F.array(*[F.lit(x) for x in labels]), F.col(_CAND)).alias(S.CANDIDATE),
        S.MEASURE_KEY, S.QUERY_ID, *([G.KEY] if keyed else []), _NB, _NC,
        F.coalesce(F.col(G.B), F.lit(0.0)).alias(G.B),
        F.coalesce(F.col(G.C), F.lit(0.0)).alias(G.C))
    group = [S.CANDIDATE, S.MEASURE_KEY]
    if queries is not None:
        pairs = SL.with_slices(pairs, queries, slices)
        group = [*group, S.SLICE, S.SLICE_VALUE]
    found = (_moments(pairs, group, settings) if settings.test == "t"
             else _tested(pairs, group, settings))
    tests = []
    for r in found:
        if r[_REPEATS]:
            raise G.repeated(r[S.CANDIDATE] if r[_REPEATS] < 0 else "the baseline",
                             r[_REPEATED], r[S.MEASURE_KEY], abs(r[_REPEATS]))
        if r[_BOTH]:
            tests.append({**{k: v for k, v in r.items() if not k.startswith("_")},
                          **described[r[S.MEASURE_KEY]]})
    hsd = None
    if settings.test == "tukey":
        by = group[1:]
        tested = sorted("\x00".join(str(t[c]) for c in group) for t in tests)
        both = F.concat_ws("\x00", *(F.coalesce(F.col(c).cast("string"), F.lit("None"))
                                      for c in group)).isin(tested)
        hsd = _tukey(pairs.where(both), missing_queries, settings, by)
    if queries is None:
        return G.finish(tests, settings, hsd)
    out = [*G.finish([t for t in tests if t[S.SLICE] is None], settings, hsd),
           *G.finish([t for t in tests if t[S.SLICE] is not None], settings, hsd)]
    if weighted:
        both = {(t[S.CANDIDATE], t[S.MEASURE_KEY], t[S.SLICE], t[S.SLICE_VALUE]) for t in tests}
        found = [{**r, **described[r[S.MEASURE_KEY]]}
                 for r in SL.weighted_in_executors(pairs, group, level=1.0 - settings.alpha)
                 if (r[S.CANDIDATE], r[S.MEASURE_KEY], r[S.SLICE], r[S.SLICE_VALUE]) in both]
        out += finish_weighted(found)
    return out


def _checks() -> list[Column]:
    """A group's repeated rows (``_repeats``: the count, negative on the candidate's side;
    ``_repeated``: one such query) and whether both sides have the measure (``_both``)."""
    nb, nc = F.col(_NB), F.col(_NC)
    return [
        F.coalesce(F.max(F.when(nb > 1, nb)), -F.max(F.when(nc > 1, nc)), F.lit(0))
        .alias(_REPEATS),
        F.max(F.when((nb > 1) | (nc > 1), F.col(S.QUERY_ID))).alias(_REPEATED),
        ((F.max(nb) > 0) & (F.max(nc) > 0)).alias(_BOTH),
    ]


def _moments(pairs: DataFrame, group: list[str], settings: ComparisonSettings
             ) -> list[dict[str, Any]]:
    """Each group's paired statistics from its moments, aggregated in Spark (no Python)."""
    raw = F.col(G.C) - F.col(G.B)
    d = F.when(F.abs(raw) <= kernel.TIE_TOLERANCE, F.lit(0.0)).otherwise(raw)
    found = pairs.groupBy(*group).agg(
        F.count(F.lit(1)).alias("n"), F.avg(G.B).alias("mean_b"), F.avg(G.C).alias("mean_c"),
        F.avg(d).alias("mean_d"), F.stddev_samp(d).alias("sd"),
        F.count(F.when(d > 0, 1)).alias("wins"), F.count(F.when(d == 0, 1)).alias("ties"),
        F.count(F.when(d < 0, 1)).alias("losses"), *_checks()).collect()
    return [{**{c: r[c] for c in [*group, _REPEATS, _REPEATED, _BOTH]},
             **(G.from_moments(r.asDict(), settings) if r[_BOTH] else {})} for r in found]


def _tested(pairs: DataFrame, group: list[str], settings: ComparisonSettings
            ) -> list[dict[str, Any]]:
    """Each group's statistics and randomization test in a Python task of its own."""
    types = {f.name: f.dataType.simpleString() for f in pairs.schema.fields}
    schema = ", ".join([*(f"`{c}` {types[c]}" for c in group),
                        *(f"{n} {t}" for n, t in G.STATS),
                        f"{_REPEATS} long, {_REPEATED} {types[S.QUERY_ID]}, {_BOTH} boolean"])
    names = [*group, *(n for n, _ in G.STATS), _REPEATS, _REPEATED, _BOTH]

    def one_group(key: tuple, pdf: pd.DataFrame) -> pd.DataFrame:
        nb, nc = pdf[_NB].to_numpy(), pdf[_NC].to_numpy()
        values: dict[str, Any] = dict(zip(group, key, strict=True))
        twice = (nb > 1) | (nc > 1)
        values[_REPEATS] = int(nb.max() if (nb > 1).any() else -nc.max() if twice.any() else 0)
        values[_REPEATED] = pdf[S.QUERY_ID].to_numpy()[twice][0] if twice.any() else None
        values[_BOTH] = bool((nb > 0).any() and (nc > 0).any())
        stats = {n: None for n, _ in G.STATS}
        if values[_BOTH] and not twice.any():
            pdf = pdf.sort_values(S.QUERY_ID)
            stats = G.one_test(pdf[G.B].to_numpy(np.float64), pdf[G.C].to_numpy(np.float64),
                               pdf[G.KEY].to_numpy(np.int64), settings)
        return pd.DataFrame({k: pd.Series([{**values, **stats}[k]], dtype=object)
                             for k in names})

    return [r.asDict() for r in pairs.groupBy(*group).applyInPandas(one_group, schema).collect()]


def _tukey(pairs: DataFrame, missing_queries: str, settings: ComparisonSettings,
           by: Sequence[str] = (S.MEASURE_KEY,)) -> dict[tuple, float]:
    """Each measure's (``by``: and slice value's) randomized Tukey HSD in a Python task of
    its own, keyed as :func:`releval.stats.paired_groups.tukey_key`."""
    more = [c for c in by if c != S.MEASURE_KEY]
    schema = ", ".join([f"{S.CANDIDATE} string, {S.MEASURE_KEY} string",
                        *(f"{c} string" for c in more), f"{S.TUKEY_P_VALUE} double"])

    def one_measure(key: tuple, pdf: pd.DataFrame) -> pd.DataFrame:
        found = G.tukey(pdf, missing_queries=missing_queries, permutations=settings.permutations)
        if not more:
            return found
        at = dict(zip(by, key, strict=True))
        return pd.DataFrame({
            S.CANDIDATE: pd.Series(found[S.CANDIDATE].tolist(), dtype=object),
            **{c: pd.Series([at[c]] * len(found), dtype=object) for c in [S.MEASURE_KEY, *more]},
            S.TUKEY_P_VALUE: found[S.TUKEY_P_VALUE].to_numpy(np.float64)})

    found = pairs.select(S.CANDIDATE, *by, S.QUERY_ID, G.B, G.C, G.KEY).groupBy(
        *by).applyInPandas(one_measure, schema).collect()
    return {G.tukey_key(r.asDict()): r[S.TUKEY_P_VALUE] for r in found}
