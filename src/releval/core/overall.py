"""Which rows of the aggregate and comparison tables are the overall ones: over all queries of
a run partition (``slice`` null), not a slice value's. Every reader of an overall number asks
here, whether it holds rows, a pandas frame, a Spark DataFrame or SQL text."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from pyspark.sql import Column
from pyspark.sql import functions as F

from releval.core.columns import AVERAGING, SLICE

#: The averaging of a plain mean over queries (with an interval); the rows a summary shows.
MACRO = "macro"
#: The averagings whose value is a measure's headline number: the mean, the sum of a count,
#: the geometric mean of GMAP and GM_bpref.
HEADLINE = (MACRO, "sum", "geometric")
#: The SQL condition of the overall rows.
OVERALL_SQL = f"{SLICE} IS NULL"

T = TypeVar("T")


def _get(row: Any, name: str) -> Any:
    """``row[name]`` of a mapping or a Spark Row; None when it has no such field."""
    if isinstance(row, Mapping):
        return row.get(name)
    return row[name] if name in getattr(row, "__fields__", ()) else None


def is_overall(row: Any, averaging: str | Iterable[str] | None = None) -> bool:
    """True for a row over all queries (``slice`` null or absent); with ``averaging``, of
    that averaging (or one of those; a row without the column counts as macro)."""
    if _get(row, SLICE) is not None:
        return False
    if averaging is None:
        return True
    return (_get(row, AVERAGING) or MACRO) in _listed(averaging)


def overall_column(averaging: str | Iterable[str] | None = None) -> Column:
    """:func:`is_overall` as a Spark condition."""
    found = F.col(SLICE).isNull()
    if averaging is None:
        return found
    return found & F.col(AVERAGING).isin(_listed(averaging))


def overall(table: T, averaging: str | Iterable[str] | None = None) -> T:
    """The overall rows of ``table`` (see :func:`is_overall`): rows (a list back), a pandas
    frame or a Spark DataFrame (the same kind back).

    Example:
        >>> rows = [{"slice": None, "averaging": "macro", "value": 0.5},
        ...         {"slice": "lang", "averaging": "macro", "value": 0.9},
        ...         {"slice": None, "averaging": "weighted", "value": 0.4}]
        >>> [r["value"] for r in overall(rows, "macro")]
        [0.5]
    """
    if hasattr(table, "sparkSession"):  # a Spark DataFrame
        if SLICE not in table.columns:  # type: ignore[attr-defined]
            return table if averaging is None else table.where(  # type: ignore[attr-defined]
                F.col(AVERAGING).isin(_listed(averaging)))
        return table.where(overall_column(averaging))  # type: ignore[attr-defined]
    if hasattr(table, "iloc"):  # a pandas frame
        keep = (table[SLICE].isna() if SLICE in table.columns  # type: ignore[attr-defined]
                else True)
        if averaging is not None and AVERAGING in table.columns:  # type: ignore[attr-defined]
            keep = keep & table[AVERAGING].fillna(MACRO).isin(  # type: ignore[index]
                _listed(averaging))
        return table if keep is True else table[keep]  # type: ignore[index]
    return [r for r in table if is_overall(r, averaging)]  # type: ignore[attr-defined, return-value]


def _listed(averaging: str | Iterable[str]) -> list[str]:
    return [averaging] if isinstance(averaging, str) else list(averaging)


__all__ = ["HEADLINE", "MACRO", "OVERALL_SQL", "is_overall", "overall", "overall_column"]
