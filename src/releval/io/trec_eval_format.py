"""trec_eval's ``-q`` text output with its measure names, in its order; means printed with
``%.17g`` so they round-trip exactly, counts as integers (the ``all`` line of a count is its sum).
Judged-only values (``P@5[judged]``) go under the plain names, as ``trec_eval -J`` prints them.

:func:`trec_eval_lines` makes the lines from rows on the driver (no Spark);
:func:`write_trec_eval_file` collects the per-query values once (one Spark job) and writes them.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from releval.core import columns as S
from releval.core.columns import IN_QRELS, MEASURES
from releval.core.measures import Measure, parse_measure
from releval.core.measures.trec_sets import ALL_TREC
from releval.core.overall import HEADLINE, overall
from releval.errors import RelevalError

_PARAMETER = re.compile(r"^(.+)_(\d+(?:\.\d+)?)$")


def _family(name: str) -> str:
    found = _PARAMETER.match(name)
    return found[1] if found else name


#: trec_eval's order of its measure families (its ``all_trec`` list, ``runid`` and ``num_q``
#: first as its ``all`` block prints them): a family's names ``P_5``, ``P_10`` ... follow
#: their parameter numerically; a name of a family not listed here comes last, alphabetically.
_FAMILIES = list(dict.fromkeys(map(_family, ALL_TREC)))
#: ``relstring`` (text, not a measure, so not in ``all_trec``) prints right after ``P``
TREC_ORDER: tuple[str, ...] = ("runid", "num_q", *_FAMILIES[:_FAMILIES.index("P") + 1],
                               "relstring", *_FAMILIES[_FAMILIES.index("P") + 1:])
_PLACE = {family: i for i, family in enumerate(TREC_ORDER)}
_NAME_WIDTH = 22


def trec_order(name: str) -> tuple[int, str, float]:
    """Sort key of a trec_eval measure name: its family's place in :data:`TREC_ORDER` (a family
    not there after all of them, by name), then its parameter (``P_5`` before ``P_10``)."""
    if name in _PLACE:
        return _PLACE[name], name, -1.0
    found = _PARAMETER.match(name)
    family, parameter = (found[1], float(found[2])) if found else (name, -1.0)
    return _PLACE.get(family, len(TREC_ORDER)), family, parameter


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


def _is_count(key: str) -> bool:
    return parse_measure(key).spec.averaging == ("sum",)


def _line(name: str, query: str, value: str) -> str:
    return f"{name:<{_NAME_WIDTH}}\t{query}\t{value}"


def _format(value: float, count: bool) -> str:
    return str(int(round(value))) if count else f"{value:.17g}"


def run_id(aggregate: Iterable[Mapping[str, Any]], partition_columns: Sequence[str]) -> str | None:
    """The ``runid`` of the run the aggregate rows describe: its partition's values joined by
    ``,`` (a TREC run's tag: its ``run_id``), None without partition columns.

    Raises:
        RelevalError: the rows hold more than one run partition.
    """
    found = {tuple(row[c] for c in partition_columns) for row in aggregate}
    if len(found) > 1:
        raise RelevalError(
            f"trec_eval output holds one run, but the tables hold several "
            f"({list(partition_columns)}); evaluate one run at a time"
        )
    if not partition_columns or not found:
        return None
    return ",".join(str(v) for v in found.pop())


def trec_eval_lines(
    measures: Sequence[Measure],
    query_values: Iterable[tuple[str, Sequence[float]]],
    aggregate: Iterable[Mapping[str, Any]],
    *,
    partition_columns: Sequence[str] = (),
    judged_only: bool = False,
) -> list[str]:
    """The lines of :func:`iter_trec_eval_lines`, in a list."""
    return list(iter_trec_eval_lines(
        measures, query_values, aggregate, partition_columns=partition_columns,
        judged_only=judged_only,
    ))


def iter_trec_eval_lines(
    measures: Sequence[Measure],
    query_values: Iterable[tuple[str, Sequence[float]]],
    aggregate: Iterable[Mapping[str, Any]],
    *,
    partition_columns: Sequence[str] = (),
    judged_only: bool = False,
) -> Iterator[str]:
    """trec_eval -q lines for one run: each query's (by query id as a string), then ``all``:
    ``runid``, ``num_q`` and each measure's mean (the sum for a count, the geometric mean
    for GMAP and GM_bpref, which have only this line); in each block the
    measures in trec_eval's order (:func:`trec_order`). Measures without a trec_eval name
    are left out.

    Args:
        measures: the measures of the values, in their order.
        query_values: (query id, values of ``measures``) of each scored query.
        aggregate: the aggregate rows of the run (``measure_key``, ``averaging``, ``value``,
            ``num_queries`` and the partition columns); the macro and sum rows are printed.
        partition_columns: the run partition columns; their values are the ``runid``
            (:func:`run_id`; no ``runid`` line without them).
        judged_only: write the judged-only values (``[judged]`` keys) under trec_eval's plain
            names, as ``trec_eval -J -q`` does; the plain keys of those measures are left out.

    Raises:
        RelevalError: the aggregate rows hold more than one run partition.
    """
    aggregate = list(aggregate)
    runid = run_id(aggregate, partition_columns)
    printed = sorted(
        ((name, i, _is_count(m.key)) for i, m in enumerate(measures)
         if (name := _trec_name(m.key, judged_only)) and not m.spec.trec_all_only),
        key=lambda entry: trec_order(entry[0]),
    )
    heads = [(f"{name:<{_NAME_WIDTH}}\t", i, count) for name, i, count in printed]
    for query, values in sorted(query_values, key=lambda qv: qv[0]):
        for head, i, count in heads:
            yield f"{head}{query}\t{_format(values[i], count)}"
    yield from _all_lines(aggregate, runid, judged_only)


def _all_lines(aggregate: list[Mapping[str, Any]], runid: str | None, judged_only: bool) -> list[str]:
    means = overall(aggregate, HEADLINE)
    lines = [] if runid is None else [_line("runid", "all", runid)]
    if means:
        lines.append(_line("num_q", "all", str(max(int(r[S.NUM_QUERIES]) for r in means))))
    found = []
    for row in means:
        name = _trec_name(row[S.MEASURE_KEY], judged_only)
        if name:
            value = _format(row[S.VALUE], _is_count(row[S.MEASURE_KEY]))
            found.append((trec_order(name), _line(name, "all", value)))
    return lines + [line for _, line in sorted(found)]


def query_values(queries: DataFrame) -> list[tuple[str, list[float]]]:
    """(query id, measure values in the array's order) of each scored query (in the qrels) of
    the engine's wide rows (:func:`releval.core.engine.query_measures`): one Spark job."""
    table = queries.where(F.col(IN_QRELS)).select(
        S.QUERY_ID, F.col(f"{MEASURES}.{S.VALUE}").alias(S.VALUE)
    ).toArrow()
    return list(zip(table.column(0).to_pylist(), table.column(1).to_pylist(), strict=True))


def write_trec_eval_file(
    queries: DataFrame,
    measures: Sequence[Measure],
    aggregate: Iterable[Mapping[str, Any]],
    path: str | Path,
    *,
    partition_columns: Sequence[str] = (),
    judged_only: bool = False,
) -> None:
    """Write :func:`trec_eval_lines` of one run to ``path``: the per-query values collected
    from the engine's wide rows (:func:`query_values`, best persisted), the ``all`` lines from
    the aggregate rows on the driver."""
    aggregate = list(aggregate)
    run_id(aggregate, partition_columns)  # one run, checked before any Spark job
    lines = iter_trec_eval_lines(
        measures, query_values(queries), aggregate,
        partition_columns=partition_columns, judged_only=judged_only,
    )
    with Path(path).open("w", encoding="utf-8") as out:
        out.writelines(f"{line}\n" for line in lines)
