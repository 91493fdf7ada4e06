"""trec_eval's ``-q`` text output with its measure names; means printed with ``%.17g`` so
they round-trip exactly, counts as integers (the ``all`` line of a count is its sum).
Judged-only values (``P@5[judged]``) go under the plain names, as ``trec_eval -J`` prints them."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from releval.core import columns as S
from releval.core.measures import REGISTRY, parse_measure
from releval.errors import RelevalError
from releval.io import tables

_NAME_WIDTH = 22


def _format_value(name: str, value: float) -> str:
    if REGISTRY[name].averaging == ("sum",):
        return str(int(round(value)))
    return f"{value:.17g}"


@functools.cache
def _trec_name(key: str, judged_only: bool) -> str | None:
    """trec_eval's name of a measure key, or None: none for an explicit level (``(rel=N)``);
    with ``judged_only`` the name of each ``[judged]`` key, and none for a plain key of a
    measure that has a judged-only variant (it is not what ``-J`` prints)."""
    measure = parse_measure(key)
    if measure.rel_explicit:
        return None
    if not judged_only:
        return measure.trec_name
    if measure.judged_only:
        return dataclasses.replace(measure, judged_only=False).trec_name
    return None if measure.spec.judged_variant else measure.trec_name


def trec_eval_lines(
    per_query: DataFrame, aggregate: DataFrame, *, judged_only: bool = False
) -> list[str]:
    """trec_eval -q lines for one run: per query (sorted by id), then ``all``; measures without
    a trec_eval name are left out.

    Args:
        judged_only: write the judged-only values (``[judged]`` keys) under trec_eval's plain
            names, as ``trec_eval -J -q`` does; the plain keys of those measures are left out.

    Raises:
        RelevalError: the tables hold more than one run partition.
    """
    data_columns = {f.name for f in tables.per_query_schema([]).fields}
    parts = [c for c in per_query.columns if c not in data_columns]
    if parts and per_query.select(*parts).distinct().limit(2).count() > 1:
        raise RelevalError(
            f"trec_eval output holds one run, but the tables hold several ({parts}); "
            "evaluate one run at a time"
        )

    lines: list[str] = []
    rows = per_query.select(S.QUERY_ID, S.MEASURE, S.MEASURE_KEY, S.VALUE).orderBy(
        S.QUERY_ID, S.MEASURE_KEY
    )
    for row in rows.toLocalIterator():
        name = _trec_name(row[S.MEASURE_KEY], judged_only)
        if name and not REGISTRY[row[S.MEASURE]].trec_all_only:
            value = _format_value(row[S.MEASURE], row[S.VALUE])
            lines.append(f"{name:<{_NAME_WIDTH}}\t{row[S.QUERY_ID]}\t{value}")
    summary = aggregate.where(F.col(S.AVERAGING).isin("macro", "sum", "geometric")).orderBy(
        S.MEASURE_KEY
    )
    num_q = None
    for row in summary.collect():
        name = _trec_name(row[S.MEASURE_KEY], judged_only)
        num_q = row[S.NUM_QUERIES]
        if name:
            value = _format_value(row[S.MEASURE], row[S.VALUE])
            lines.append(f"{name:<{_NAME_WIDTH}}\tall\t{value}")
    if num_q is not None:
        lines.append(f"{'num_q':<{_NAME_WIDTH}}\tall\t{num_q}")
    return lines


def write_trec_eval_file(
    per_query: DataFrame, aggregate: DataFrame, path: str | Path, *, judged_only: bool = False
) -> None:
    """Write :func:`trec_eval_lines` to ``path``."""
    lines = trec_eval_lines(per_query, aggregate, judged_only=judged_only)
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")
