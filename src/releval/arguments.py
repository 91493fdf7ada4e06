"""The arguments the public functions share, each with one name and one meaning: the run
partitions compared (``baseline``, ``candidates``), the ``measures``, the ``slices``, and
where a query's attributes come from (the per-query rows, or a ``queries=`` DataFrame).
:data:`VOCABULARY` lists each argument and the functions that take it (docs/usage.md)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from functools import reduce
from operator import or_
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from releval.checks.queries import Carried, CheckedQueries, carried, check_queries
from releval.core import columns as S
from releval.core.measures.registry import parse_measure
from releval.errors import ConfigError, MeasureError
from releval.evaluation.compare_slices import refuse_rejected
from releval.evaluation.partitions import parse_side, partition_label
from releval.frames.comparison import side_condition

#: releval's columns of a queries input (``queries_columns`` maps them to yours)
QUERIES_COLUMNS = (S.QUERY_ID, S.WEIGHT)

#: Each shared argument and the public functions that take it, with one meaning everywhere
#: (``Result.compare``, ``.changes`` and ``.gate`` take what the functions do, but the rows).
VOCABULARY: dict[str, tuple[str, ...]] = {
    "baseline": ("compare", "changes", "gate", "interleaving"),
    "candidates": ("compare", "changes", "gate", "interleaving"),
    "measures": ("evaluate", "compare", "changes", "gate", "evaluate_clicks"),
    "slices": ("evaluate", "compare", "changes", "gate", "evaluate_clicks", "interleaving"),
    "alpha": ("compare", "gate"),
    "missing_queries": ("evaluate", "compare", "changes"),
    "queries": ("evaluate", "compare", "changes", "gate", "evaluate_clicks", "interleaving"),
    "queries_columns": ("evaluate", "compare", "changes", "gate", "evaluate_clicks",
                        "interleaving"),
}

#: A run partition: ``{"system": "bm25"}`` or ``"system=bm25"``.
Side = Mapping[str, str] | str


def mapping(given: Mapping[str, str] | None, known: Sequence[str], name: str,
            df: DataFrame) -> dict[str, str]:
    """releval's column -> the caller's; an unknown key is an error naming the known ones."""
    given = dict(given or {})
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise ConfigError(
            f"{name}: unknown key(s) {unknown}; releval's columns are {list(known)} "
            f"(map them to the DataFrame's columns {df.columns})"
        )
    return {c: given.get(c, c) for c in known}


def checked_queries(queries: DataFrame | None, columns: Mapping[str, str] | None,
                    slices: Sequence[str], *, name: str = "queries DataFrame"
                    ) -> CheckedQueries | None:
    """The checked queries input of ``evaluate``'s ``queries`` arguments (None: none)."""
    if queries is None:
        if columns or slices:
            raise ConfigError("queries_columns and slices name columns of a queries= "
                              "DataFrame (one row per query); none was given")
        return None
    given = mapping(columns, QUERIES_COLUMNS, "queries_columns", queries)
    return check_queries(queries, query_id=given[S.QUERY_ID],
                         weight=(columns or {}).get(S.WEIGHT), slices=tuple(slices),
                         name=name)


def queries_input(queries: DataFrame | None, queries_columns: Mapping[str, str] | None,
                  slices: Sequence[str] | None, *, name: str = "queries DataFrame"
                  ) -> CheckedQueries | None:
    """The checked queries input of :func:`releval.compare` and :func:`releval.changes`
    (None: none); ``slices`` None: none.

    Raises:
        InputError: a rejected row: its reason, the column and the row.
        ConfigError: ``slices`` without ``queries``, an unknown key, a missing column.
    """
    if queries is None:
        return checked_queries(None, queries_columns, slices or ())
    names = mapping(queries_columns, QUERIES_COLUMNS, "queries_columns", queries)
    checked = checked_queries(queries, queries_columns, slices or (), name=name)
    refuse_rejected(checked, query_id=names[S.QUERY_ID],
                    weight=(queries_columns or {}).get(S.WEIGHT))
    return checked


def candidate_sides(candidates: Side | Sequence[Side]) -> list[Side]:
    """``candidates`` as a list: one run partition, or several.

    Example:
        >>> candidate_sides("system=dense"), candidate_sides(["system=a", {"system": "b"}])
        (['system=dense'], ['system=a', {'system': 'b'}])
    """
    if isinstance(candidates, str | Mapping):
        return [candidates]
    found = list(candidates)
    if not found:
        raise ConfigError("candidates: give at least one run partition, e.g. 'system=dense'")
    return found


def sides(per_query: DataFrame, baseline: Side, candidates: Side | Sequence[Side]
          ) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """The baseline's partition values, and each candidate's by its label
    (``system=dense``: the columns that tell the sides apart)."""
    base = parse_side(baseline, per_query.columns)
    found = [parse_side(c, per_query.columns) for c in candidate_sides(candidates)]
    keys = sorted({k for side in [base, *found] for k in side})
    return base, {partition_label(side, [k for k in keys if k in side]): side for side in found}


def renamed(kwargs: dict[str, Any], old: str, new: str, function: str) -> Any:
    """The value of the old spelling ``old`` of ``new`` (None: not given), with a
    DeprecationWarning; both given is a TypeError."""
    if old not in kwargs:
        return None
    value = kwargs.pop(old)
    warnings.warn(f"{function}({old}=...) is deprecated and goes in the next minor version: "
                  f"use {new}=", DeprecationWarning, stacklevel=3)
    return value


def measure_keys(measures: Sequence[str] | None) -> list[str] | None:
    """The per-query rows' ``measure_key`` values ``measures`` names: each as given, and as
    the registry spells it (``"map"`` -> ``"AP"``); None: every measure."""
    if measures is None:
        return None
    if isinstance(measures, str):
        measures = [measures]
    keys = list(measures)
    for name in measures:
        try:
            keys.append(parse_measure(name).key)
        except MeasureError:
            continue  # a key the registry does not parse is matched as given
    return list(dict.fromkeys(keys))


def attributes(per_query: DataFrame, *, baseline: Mapping[str, str],
               candidates: Sequence[Mapping[str, str]], queries: DataFrame | None,
               queries_columns: Mapping[str, str] | None, slices: Sequence[str] | None,
               found: Carried | None = None) -> CheckedQueries | None:
    """Each query's weight and slice values: from ``queries`` when given (``slices`` None:
    none), else from the per-query rows of the sides (``slices`` None: every slice they
    carry; a query's value is the baseline's; ``found``: what they carry, when known)."""
    if queries is not None or queries_columns:
        return queries_input(queries, queries_columns, slices)
    conditions = [side_condition(side) if side else F.lit(True)
                  for side in (baseline, *candidates)]
    rows = per_query.where(reduce(or_, conditions))
    return carried(rows, slices=slices, baseline=conditions[0], found=found)


__all__ = ["QUERIES_COLUMNS", "VOCABULARY", "attributes", "candidate_sides", "checked_queries",
           "mapping", "measure_keys", "parse_side", "queries_input", "renamed", "sides"]
