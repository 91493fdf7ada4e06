"""A gate's per-query values from Spark: only the rows of the measures its rules name, of the
run partitions it compares, collected once through Arrow; the tests run on the driver
(:mod:`releval.stats.gate`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import reduce
from operator import or_

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from releval.checks.queries import CheckedQueries, with_attributes
from releval.core import columns as S
from releval.core.measures.registry import REGISTRY, UNIT
from releval.errors import ComparisonError, ConfigError
from releval.frames.comparison import CONSTRAINTS, side_condition
from releval.stats import gate as G

SIDE = "_side"


def rule_slices(rules: Sequence[G.Rule]) -> list[str]:
    """The slice columns the rules name, in order, each once."""
    return list(dict.fromkeys(r.slice for r in rules if r.slice))


def check_rules(rules: Sequence[G.Rule], *, slices: Sequence[str], weighted: bool) -> None:
    """A rule per slice names a slice the queries input has; a weighted rule needs a weight.

    Raises:
        ConfigError: naming the rule and what it lacks.
    """
    for r in rules:
        if r.slice and r.slice not in slices:
            raise ConfigError(f"rule {r.text!r}: no slice {r.slice!r}; the queries input's "
                              f"slices are {list(slices)}")
        if r.weighted and not weighted:
            raise ConfigError(f"rule {r.text!r}: a weighted rule needs the queries input's "
                              "weight column")


def side_values(per_query: DataFrame, sides: Sequence[Mapping[str, str]],
                rules: Sequence[G.Rule], *, queries: CheckedQueries | None = None,
                carried: bool = False) -> pd.DataFrame:
    """The per-query values of ``sides`` for the rules' measures, in one collect.

    Each query's weight and slice values come from ``queries``, else (``carried``) from the
    ``weight`` and ``slices`` the per-query rows carry (each row's own), else none.

    Returns:
        ``_side`` (the index in ``sides``), ``query_id``, ``measure_key``, ``measure``,
        ``value``, ``weight`` and the slice columns: the queries input's, or with
        ``carried`` the rules' slices.

    Raises:
        ConfigError: a rule names a measure the per-query rows lack (naming the ones they
            have; a second job, run only then).
    """
    keys = sorted({r.measure_key for r in rules})
    cases = [F.when(side_condition(s), F.lit(i)) for i, s in enumerate(sides)]
    rows = per_query.where(F.col(S.MEASURE_KEY).isin(keys) & reduce(or_, [
        side_condition(s) for s in sides]))
    attrs = [c for c in (S.WEIGHT, S.SLICES) if carried and c in per_query.columns]
    rows = rows.select(F.coalesce(*cases).alias(SIDE), F.col(S.QUERY_ID).cast("string")
                       .alias(S.QUERY_ID), S.MEASURE_KEY, S.MEASURE, S.VALUE, *attrs)
    slices: tuple[str, ...] = ()
    if queries is not None:
        rows = with_attributes(rows, queries)
        slices = queries.slices
    elif carried:
        slices = tuple(rule_slices(rules))
        rows = rows.withColumns({
            S.WEIGHT: (F.col(S.WEIGHT) if S.WEIGHT in per_query.columns
                       else F.lit(None)).cast("double"),
            **{s: (F.col(S.SLICES)[s] if S.SLICES in per_query.columns else F.lit(None))
               .cast("string") for s in slices}})
    else:
        rows = rows.withColumn(S.WEIGHT, F.lit(None).cast("double"))
    conf = per_query.sparkSession.conf
    before = conf.get(CONSTRAINTS)
    conf.set(CONSTRAINTS, "false")  # as compare: an evaluation's plan is deep
    try:
        frame = rows.toArrow().to_pandas()
        missing = sorted(set(keys) - set(frame[S.MEASURE_KEY]))
        evaluated = (sorted(r[0] for r in per_query.select(S.MEASURE_KEY).distinct().collect())
                     if missing else [])
    finally:
        conf.set(CONSTRAINTS, before)
    unknown = sorted(set(missing) - set(evaluated))  # the others: none of these partitions'
    if unknown:
        raise ConfigError(
            f"rules name measure(s) {unknown} that were not evaluated; the evaluated "
            f"measures are {evaluated}")
    return frame.astype({S.WEIGHT: "float64", S.VALUE: "float64"}).reindex(
        columns=[SIDE, S.QUERY_ID, S.MEASURE_KEY, S.MEASURE, S.VALUE, S.WEIGHT, *slices])


def binary_measures(values: pd.DataFrame) -> set[str]:
    """The measure keys of measures bounded in [0, 1] (a rule's range comes from the
    registry; these keys are taken as [0, 1] when a rule's measure has none)."""
    names = values.drop_duplicates(S.MEASURE_KEY)
    return {k for k, m in zip(names[S.MEASURE_KEY], names[S.MEASURE], strict=True)
            if m in REGISTRY and REGISTRY[m].bounds == UNIT}


def pairs(values: pd.DataFrame, *, baseline: int | None, candidate: int,
          labels: Sequence[str] = ("the baseline", "the candidate")) -> pd.DataFrame:
    """The pairs :func:`releval.stats.gate.gate_rows` reads: one row per (measure, query)
    the candidate scored or the baseline scored, NaN on the side that did not (a change
    rule reads the queries both scored, a level rule the candidate's).

    Raises:
        ComparisonError: a side has two rows for one query and measure.
    """
    extra = [c for c in values.columns if c not in (SIDE, S.MEASURE, S.VALUE)]
    sides = []
    for side, column, label in [(baseline, G.BASE, labels[0]), (candidate, G.CAND, labels[1])]:
        rows = values[values[SIDE] == side] if side is not None else values.iloc[:0]
        twice = rows.duplicated([S.MEASURE_KEY, S.QUERY_ID], keep=False)
        if twice.any():
            r = rows[twice].iloc[0]
            count = int(((rows[S.MEASURE_KEY] == r[S.MEASURE_KEY])
                         & (rows[S.QUERY_ID] == r[S.QUERY_ID])).sum())
            raise ComparisonError(
                f"{label} has {count} per-query rows for query {r[S.QUERY_ID]!r} and measure "
                f"{r[S.MEASURE_KEY]!r}: it matches more than one run partition; give the value "
                "of every partition column that tells them apart")
        sides.append(rows[extra + [S.VALUE]].rename(columns={S.VALUE: column}))
    base, cand = sides
    on = [S.MEASURE_KEY, S.QUERY_ID]
    attrs = [c for c in extra if c not in on]
    # a query's weight and slice values: the baseline's, else the candidate's (they differ
    # only for a run slice, as in releval.checks.queries.carried)
    both = cand.merge(base, on=on, how="outer", suffixes=("", "_base"))
    for c in attrs:
        both[c] = both[f"{c}_base"].combine_first(both[c])
    both = both.drop(columns=[f"{c}_base" for c in attrs])
    return both.astype({G.BASE: np.float64, G.CAND: np.float64})


def gate_table(values: pd.DataFrame, rules: Sequence[G.Rule], *, baseline: int | None,
               candidate: int, alpha: float, mode: str) -> pd.DataFrame:
    """The gate's rows for one candidate against one baseline (None: no baseline)."""
    both = pairs(values, baseline=baseline, candidate=candidate)
    return G.gate_rows(both, rules, alpha=alpha, mode=mode, binary=binary_measures(values),
                       baseline=baseline is not None)
