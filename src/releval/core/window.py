"""The window: each query's k_q, the top documents its consumer used (the run's window column).

A statistic cut at the window counts a ranking's first k_q documents, after the tie-break
and the depth and before a judged-only condensation. A query whose clean run rows disagree
on k_q is set aside whole (``conflicting_window``), so no measure reads part of a ranking.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from releval.core import columns as S
from releval.core.arrays import codes, group_ids, to_numpy
from releval.core.columns import IS_RUN, REASON

#: The row reasons of the window (declared in ``releval.checks.rules.REASONS``).
INVALID_WINDOW = "invalid_window"
CONFLICTING_WINDOW = "conflicting_window"


def _spread(group: np.ndarray, values: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Each group's lowest and highest value (groups without rows: 0 and 0)."""
    low = np.zeros(groups, dtype=np.int64)
    high = np.zeros(groups, dtype=np.int64)
    if len(group):
        order = np.lexsort((values, group))
        g, v = group[order], values[order]
        first = np.searchsorted(g, np.arange(groups))
        last = np.searchsorted(g, np.arange(groups), side="right") - 1
        present = last >= first
        low[present], high[present] = v[first[present]], v[last[present]]
    return low, high


def group_windows(group: np.ndarray, window: np.ndarray, groups: int) -> np.ndarray:
    """Each ranking's k_q from its rows' window values.

    Raises:
        ValueError: the rows of a ranking disagree (the row rules set such queries aside).
    """
    low, high = _spread(group, window.astype(np.int64), groups)
    if np.any(low != high):
        g = int(np.flatnonzero(low != high)[0])
        raise ValueError(f"the run rows of one query disagree on the window ({low[g]} and "
                         f"{high[g]}); the row rules quarantine such a query")
    return low


def mark_conflicting_windows(
    reasons: np.ndarray, rows: np.ndarray, clean: pa.Table, partition_columns: Sequence[str]
) -> int:
    """Give every row of a (run partition, query) whose rows disagree on the window the
    reason ``conflicting_window``, in place; ``rows`` are the positions in ``reasons`` of the
    rows ``clean`` holds. Returns how many rows got it."""
    query, queries = codes(clean.column(S.QUERY_ID))
    group = group_ids(clean, [*partition_columns, S.QUERY_ID], query, len(queries))
    groups = int(group.max()) + 1 if len(group) else 0
    low, high = _spread(group, to_numpy(clean.column(S.WINDOW)).astype(np.int64), groups)
    conflicting = (low != high)[group]
    reasons[rows[conflicting]] = CONFLICTING_WINDOW
    return int(np.count_nonzero(conflicting))


def set_aside_conflicting_windows(table: pa.Table, partition_columns: Sequence[str]) -> pa.Table:
    """The engine's rows with ``conflicting_window`` on the clean run rows of a query whose
    rows disagree on the window (before any row is counted)."""
    clean_run = pc.and_(pc.equal(table.column(IS_RUN), True), pc.is_null(table.column(REASON)))
    rows = np.flatnonzero(to_numpy(clean_run).astype(bool))
    if not len(rows):
        return table
    reasons = to_numpy(table.column(REASON)).astype(object)
    if not mark_conflicting_windows(reasons, rows, table.take(pa.array(rows)), partition_columns):
        return table
    return table.set_column(table.schema.get_field_index(REASON), REASON,
                            pa.array(reasons, pa.string()))


def within_window(group: np.ndarray, ordinal: np.ndarray, window: np.ndarray) -> np.ndarray:
    """For rows in ranking order: True at each ranking's first k_q documents (``ordinal``:
    1-based, every document counted)."""
    return ordinal <= window[group]


def window_sums(
    query: np.ndarray, queries: int, term: np.ndarray, group_query: np.ndarray, window: np.ndarray
) -> np.ndarray:
    """Per ranking: the sum of its query's first k_q ``term`` values (rows sorted by query,
    in order within each); the ideal DCG cut at the window."""
    total = np.concatenate(([0.0], np.cumsum(term)))
    bounds = np.searchsorted(query, np.arange(queries + 1))
    start = bounds[group_query]
    end = np.minimum(start + window, bounds[group_query + 1])
    return total[end] - total[start]


__all__ = [
    "CONFLICTING_WINDOW", "INVALID_WINDOW", "group_windows", "mark_conflicting_windows",
    "set_aside_conflicting_windows", "within_window", "window_sums",
]
