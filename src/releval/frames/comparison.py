"""Is the difference real? A baseline run partition against candidates, query by query.

:func:`compare` gives one row per (candidate, measure): the paired statistics and p-values,
corrected over the whole comparison as one family. Its plan reads the per-query rows once,
whatever the number of candidates and measures. Up to :data:`DRIVER_ROWS` compared rows, the
family is computed on the driver in one pass; above, the pairs are made and tested in the
executors, and only each group's statistics reach the driver. See docs/statistics.md."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import reduce
from operator import add, or_
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from releval.checks.queries import Carried, carried_columns
from releval.config import ComparisonSettings
from releval.core import columns as S
from releval.core.frames import local_frame
from releval.core.measures.registry import REGISTRY
from releval.errors import ComparisonError
from releval.frames.compared_in_executors import in_executors
from releval.frames.intervals import query_key
from releval.stats import paired_groups as G
from releval.stats import sliced as SL

#: Up to this many per-query rows of the compared run partitions, the comparison collects
#: them (a few columns, through Arrow: about 100 MB at most) and runs on the driver.
DRIVER_ROWS = 1_000_000
#: Spark's setting for inferring filters from a plan's constraints: off while compare plans,
#: since over the projections of an evaluation's per-query rows the inferred constraints
#: grow with the number of measures (a 1 GB driver runs out of memory), and a comparison's
#: filters and groups gain nothing from them
CONSTRAINTS = "spark.sql.constraintPropagation.enabled"
_COUNT = "_count"


def side_condition(values: Mapping[str, str]) -> Column:
    """Rows of the run partition ``values`` (column -> value, compared as strings)."""
    return reduce(lambda a, b: a & b, [F.col(c).cast("string") == v for c, v in values.items()])


def _compared_measures(per_query: DataFrame) -> DataFrame:
    counts = sorted(name for name, spec in REGISTRY.items() if "macro" not in spec.averaging)
    return per_query.where(~F.col(S.MEASURE).isin(counts))


def _disjoint(sides: Sequence[Mapping[str, str]]) -> bool:
    """Whether no row can be of two sides: every two sides differ on a column both name."""
    return all(any(a[c] != b[c] for c in set(a) & set(b))
               for i, a in enumerate(sides) for b in sides[i + 1:])


def side_rows(per_query: DataFrame, sides: Sequence[Mapping[str, str]], *, seed: int
              ) -> DataFrame:
    """The per-query rows of each side, read once: ``_side`` (the index in ``sides``; a row
    of two sides appears twice), the measure columns, ``query_id``, ``_value`` and the
    query's key (:func:`releval.frames.intervals.query_key`); counts are not compared."""
    conditions = [side_condition(values) for values in sides]
    cases = [F.when(c, F.lit(i)) for i, c in enumerate(conditions)]
    if _disjoint(sides):  # one side per row: no array to explode
        side = F.coalesce(*cases) if len(cases) > 1 else cases[0]
    else:
        side = F.explode(F.array_compact(F.array(*cases)))
    return _compared_measures(per_query).where(reduce(or_, conditions)).select(
        side.alias(G.SIDE), *S.MEASURE_COLUMNS, S.QUERY_ID,
        F.col(S.VALUE).alias(G.VALUE), query_key(seed).alias(G.KEY))


def compare(
    per_query: DataFrame,
    *,
    baseline: Mapping[str, str],
    candidates: Mapping[str, Mapping[str, str]],
    missing_queries: str,
    settings: ComparisonSettings = ComparisonSettings(),
    driver_rows: int = DRIVER_ROWS,
    queries: DataFrame | None = None,
    slices: Sequence[str] = (),
    weighted: bool = False,
    surveyed: Survey | None = None,
) -> DataFrame:
    """The comparison rows, one per (candidate, measure both sides have); with ``queries``,
    also one per (candidate, measure, slice value) and, ``weighted``, the weighted rows.

    Args:
        baseline: the baseline run partition (column -> value).
        candidates: label -> candidate run partition.
        missing_queries: ``zero`` (queries either side scored, 0 where missing) or ``skip``.
        driver_rows: up to this many compared per-query rows, on the driver.
        queries: the checked queries input (``query_id``, ``weight``, a column per slice;
            :mod:`releval.checks.queries`); ``slices``: its slice columns. The slice rows
            are tested as the rows over all queries are, and corrected as one family of their
            own: candidates x measures x slice values.
        weighted: add the rows with ``averaging = 'weighted'`` over all queries and per slice
            value (:mod:`releval.stats.sliced`).
        surveyed: the rows' :func:`survey`, when the caller made it (else one job here).

    Returns:
        ``candidate``, the measure columns, ``slice``, ``slice_value`` and ``averaging``
        (``macro``; null slice over all queries), the statistics, ``min_detectable_diff`` and
        ``queries_needed``, the Tukey p-value (``test="tukey"``), corrected p-values,
        ``significant``, ``mean_diff_best`` and ``sign_holds``; the randomization test's
        columns are null with ``test="t"``. A DataFrame of rows made on the driver.

    Raises:
        ComparisonError: a side has two per-query rows for one query and measure, or one
            measure key names two measures.
    """
    labels = list(candidates)
    sliced = {"queries": queries, "slices": tuple(slices), "weighted": weighted}
    surveyed = surveyed or survey(per_query, [baseline, *candidates.values()])
    count, described = surveyed.count, surveyed.described
    rows = side_rows(per_query, [baseline, *candidates.values()], seed=settings.seed)
    conf = per_query.sparkSession.conf
    before = conf.get(CONSTRAINTS)
    conf.set(CONSTRAINTS, "false")
    try:
        if count <= driver_rows:
            out = _on_driver(rows, labels, described, missing_queries=missing_queries,
                             settings=settings, **sliced)
        else:
            out = in_executors(rows, labels, described, missing_queries=missing_queries,
                                   settings=settings, **sliced)
    finally:
        conf.set(CONSTRAINTS, before)
    schema = _schema(per_query)
    for r in out:
        r.setdefault(S.AVERAGING, "macro")
    return local_frame(per_query.sparkSession,
                       [tuple(r.get(f.name) for f in schema.fields) for r in out], schema)


def _schema(per_query: DataFrame) -> T.StructType:
    types = {"long": T.LongType(), "double": T.DoubleType(), "boolean": T.BooleanType()}
    return T.StructType([
        T.StructField(S.CANDIDATE, T.StringType()),
        *(T.StructField(c, per_query.schema[c].dataType) for c in S.MEASURE_COLUMNS),
        *(T.StructField(c, T.StringType()) for c in (S.SLICE, S.SLICE_VALUE, S.AVERAGING)),
        *(T.StructField(n, types[t]) for n, t in [*G.STATS, *G.ADDED]),
    ])


def _on_driver(rows: DataFrame, labels: Sequence[str],
               described: Mapping[str, Mapping[str, Any]], *, missing_queries: str,
               settings: ComparisonSettings, queries: DataFrame | None = None,
               slices: Sequence[str] = (), weighted: bool = False) -> list[dict[str, Any]]:
    """The whole family from the collected rows, in one pass (``described``: each measure
    key's measure columns); with ``queries``, the slices' family and the weighted rows."""
    table = rows.select(G.SIDE, S.QUERY_ID, S.MEASURE_KEY, G.VALUE, G.KEY).toArrow()
    names, codes = _sorted_codes(table.column(S.QUERY_ID))
    measure_names, measures = _sorted_codes(table.column(S.MEASURE_KEY))
    keys = np.empty(len(names), dtype=np.int64)
    keys[codes] = table.column(G.KEY).to_numpy()
    # the measure keys as codes in their order too: pandas pairs and groups integers
    pdf = pd.DataFrame({G.SIDE: table.column(G.SIDE).to_numpy(), S.QUERY_ID: codes,
                        S.MEASURE_KEY: measures, G.VALUE: table.column(G.VALUE).to_numpy()})
    pair_rows = G.pairs(pdf, labels, missing_queries=missing_queries, query_names=names,
                        measure_names=measure_names)
    tests = G.tests(pair_rows, keys, settings)
    hsd = None
    if settings.test == "tukey":
        with_keys = pair_rows.assign(**{
            G.KEY: keys[pair_rows[S.QUERY_ID].to_numpy()],
            S.MEASURE_KEY: np.asarray(measure_names, dtype=object)[
                pair_rows[S.MEASURE_KEY].to_numpy()]})
        hsd = _tukey_map([G.tukey(g, missing_queries=missing_queries,
                                  permutations=settings.permutations)
                          for _, g in with_keys.groupby(S.MEASURE_KEY, sort=True)])
    for t in tests:
        t[S.MEASURE_KEY] = measure_names[t[S.MEASURE_KEY]]
        t.update(described[t[S.MEASURE_KEY]])
    out = G.finish(tests, settings, hsd)
    if queries is None:
        return out
    wanted = queries.join(rows.select(S.QUERY_ID).distinct(), S.QUERY_ID, "left_semi")
    attributes = wanted.select(S.QUERY_ID, S.WEIGHT, *slices).toArrow().to_pandas()
    values, weights = SL.of_codes(attributes, names, slices)
    named = pair_rows.assign(**{S.MEASURE_KEY: np.asarray(measure_names, dtype=object)[
        pair_rows[S.MEASURE_KEY].to_numpy()]})
    return out + _slices_on_driver(named, keys, values, weights if weighted else None,
                                   described, missing_queries=missing_queries,
                                   settings=settings)


def _slices_on_driver(pair_rows: pd.DataFrame, keys: np.ndarray,
                      values: Mapping[str, np.ndarray], weights: np.ndarray | None,
                      described: Mapping[str, Mapping[str, Any]], *, missing_queries: str,
                      settings: ComparisonSettings) -> list[dict[str, Any]]:
    """The slice rows (one family) and, with ``weights`` (each query code's; NaN: none),
    the weighted rows, from the pairs on the driver."""
    codes = pair_rows[S.QUERY_ID].to_numpy()
    tests, hsd = [], {}
    for name, value, mask in SL.groups(values):
        part = pair_rows[mask[codes]]
        at = {S.SLICE: name, S.SLICE_VALUE: value}
        tests += [{**t, **at, **described[t[S.MEASURE_KEY]]} for t in G.tests(part, keys, settings)]
        if settings.test == "tukey":
            with_keys = part.assign(**{G.KEY: keys[part[S.QUERY_ID].to_numpy()]})
            for _, g in with_keys.groupby(S.MEASURE_KEY, sort=True):
                found = G.tukey(g, missing_queries=missing_queries,
                                permutations=settings.permutations)
                hsd.update({(r[S.CANDIDATE], r[S.MEASURE_KEY], name, value):
                            float(r[S.TUKEY_P_VALUE]) for r in found.to_dict("records")})
    out = G.finish(tests, settings, hsd)
    if weights is None:
        return out
    level, found = 1.0 - settings.alpha, []
    everything = (None, None, np.ones(len(weights), dtype=bool))
    for name, value, mask in [everything, *SL.groups(values)]:
        part = pair_rows[mask[codes]]
        for (label, key), g in part.groupby([S.CANDIDATE, S.MEASURE_KEY], sort=False):
            row = SL.weighted_row(g[G.B].to_numpy(np.float64), g[G.C].to_numpy(np.float64),
                                  weights[g[S.QUERY_ID].to_numpy()], level=level)
            if row is not None:
                found.append({S.CANDIDATE: label, S.MEASURE_KEY: key, S.SLICE: name,
                              S.SLICE_VALUE: value, **row, **described[key]})
    return out + SL.finish_weighted(found)


def _sorted_codes(column: pa.ChunkedArray) -> tuple[list[Any], np.ndarray]:
    """A column's distinct values in their order, and each row's code: its value's index
    there (so that codes sort as the values do)."""
    found = pc.dictionary_encode(column.combine_chunks())
    order = np.asarray(pc.array_sort_indices(found.dictionary))
    code_of = np.empty(len(order), dtype=np.int64)
    code_of[order] = np.arange(len(order))
    return (found.dictionary.take(pa.array(order)).to_pylist(),
            code_of[np.asarray(found.indices)])


@dataclass(frozen=True)
class Survey:
    """What the compared rows hold: their number (a row of two sides counted twice), each
    measure key's measure columns and, when asked, what attributes they carry."""

    count: int
    described: dict[str, dict[str, Any]]
    carried: Carried | None = None


def survey(per_query: DataFrame, sides: Sequence[Mapping[str, str]], *,
           carried: bool = False) -> Survey:
    """:class:`Survey` of the rows of ``sides``, in one job (a group per measure: a few rows
    reach the driver); ``carried``: also whether they carry a weight, and their slices
    (:func:`releval.checks.queries.carried_columns`), in the same job.

    Raises:
        ComparisonError: rows of one measure key disagree on its other measure columns.
    """
    conditions = [side_condition(values) for values in sides]
    rows = _compared_measures(per_query).where(reduce(or_, conditions))
    each = reduce(add, [F.when(c, 1).otherwise(0) for c in conditions])
    conf = per_query.sparkSession.conf
    before = conf.get(CONSTRAINTS)
    conf.set(CONSTRAINTS, "false")
    try:
        found = rows.groupBy(*S.MEASURE_COLUMNS).agg(
            F.sum(each).alias(_COUNT), *(carried_columns(per_query) if carried else [])
        ).collect()
    finally:
        conf.set(CONSTRAINTS, before)
    described: dict[str, dict[str, Any]] = {}
    for r in found:
        key = r[S.MEASURE_KEY]
        if key in described:
            raise ComparisonError(
                f"measure_key {key!r} names two measures in the per-query rows: "
                f"{described[key]} and {({c: r[c] for c in S.MEASURE_COLUMNS})}")
        described[key] = {c: r[c] for c in S.MEASURE_COLUMNS}
    attributes = None
    if carried:
        each_group = [Carried.of(r) for r in found]
        attributes = Carried(any(c.weighted for c in each_group),
                             tuple(sorted({s for c in each_group for s in c.slices})))
    return Survey(sum(r[_COUNT] for r in found), described, attributes)


def _tukey_map(frames: Sequence[pd.DataFrame]) -> dict[tuple[str, str], float]:
    return {(r[S.CANDIDATE], r[S.MEASURE_KEY]): float(r[S.TUKEY_P_VALUE])
            for f in frames for r in f.to_dict("records")}
