"""Run slices: a run column that holds one value per query of a run partition (a device, a
locale the run was served in), carried per (run partition, query) so the aggregate can be
sliced by it.

A query whose clean run rows disagree on a slice column is set aside whole
(``conflicting_slice``), as a query whose rows disagree on the window is: no slice value
would be right for it. A null value is the slice value ``(null)``; a query a run partition did
not retrieve (scored 0 under ``missing_queries = "zero"``) has no run row to give one and gets
``(not retrieved)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from releval.core import columns as S
from releval.core.arrays import codes, group_ids, to_numpy
from releval.core.columns import IS_RUN, REASON
from releval.errors import ConfigError

#: The row reason of a run slice (declared in ``releval.checks.rules.REASONS``).
CONFLICTING_SLICE = "conflicting_slice"
#: The run slice value of a query a run partition did not retrieve.
UNRETRIEVED_SLICE = "(not retrieved)"
#: Names a run slice cannot have: the run's read columns and the evaluation's own (as are
#: the hidden ones, starting with ``_``).
RESERVED = (S.QUERY_ID, S.DOC_ID, S.SCORE, S.RANK, S.WINDOW, S.NUM_RET, S.NEGATIVE_LABELS,
            S.DEPTH, S.WINDOW_SIZE, S.ANSWER_SCORE, S.SLICE, S.SLICE_VALUE, S.WEIGHT)


def check_slice_names(slices: Sequence[str]) -> tuple[str, ...]:
    """``slices`` when no name is :data:`RESERVED` or starts with ``_``.

    Raises:
        ConfigError: naming the slice and the reserved names.
    """
    for name in slices:
        if name in RESERVED or name.startswith("_"):
            raise ConfigError(f"run slice {name!r} is a name releval uses itself "
                              f"({', '.join(RESERVED)}, or _...); rename the run column")
    return tuple(slices)


def mark_conflicting_slices(
    reasons: np.ndarray, rows: np.ndarray, clean: pa.Table, partition_columns: Sequence[str],
    slices: Sequence[str],
) -> int:
    """Give every row of a (run partition, query) whose rows disagree on a slice column the
    reason ``conflicting_slice``, in place; ``rows`` are the positions in ``reasons`` of the
    rows ``clean`` holds. Returns how many rows got it."""
    if not slices or not clean.num_rows:
        return 0
    query, queries = codes(clean.column(S.QUERY_ID))
    group = group_ids(clean, [*partition_columns, S.QUERY_ID], query, len(queries))
    groups = int(group.max()) + 1
    conflicting = np.zeros(clean.num_rows, dtype=bool)
    for name in slices:
        value, _ = codes(clean.column(name))
        low = np.full(groups, np.iinfo(np.int64).max, dtype=np.int64)
        high = np.full(groups, -1, dtype=np.int64)
        np.minimum.at(low, group, value)
        np.maximum.at(high, group, value)
        conflicting |= (low != high)[group]
    reasons[rows[conflicting]] = CONFLICTING_SLICE
    return int(np.count_nonzero(conflicting))


def set_aside_conflicting_slices(
    table: pa.Table, partition_columns: Sequence[str], slices: Sequence[str]
) -> pa.Table:
    """The engine's rows with ``conflicting_slice`` on the clean run rows of a query whose
    rows disagree on a slice column (before any row is counted)."""
    clean_run = pc.and_(pc.equal(table.column(IS_RUN), True), pc.is_null(table.column(REASON)))
    rows = np.flatnonzero(to_numpy(clean_run).astype(bool))
    if not len(rows):
        return table
    reasons = to_numpy(table.column(REASON)).astype(object)
    if not mark_conflicting_slices(reasons, rows, table.take(pa.array(rows)),
                                   partition_columns, slices):
        return table
    return table.set_column(table.schema.get_field_index(REASON), REASON,
                            pa.array(reasons, pa.string()))


__all__ = ["CONFLICTING_SLICE", "RESERVED", "UNRETRIEVED_SLICE", "mark_conflicting_slices",
           "check_slice_names", "set_aside_conflicting_slices"]
