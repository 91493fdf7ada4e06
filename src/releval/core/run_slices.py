"""Run slices: a run column that holds one value per query of a run partition (a device, a
locale the run was served in), carried per (run partition, query) so the aggregate can be
sliced by it.

A query whose run rows disagree on a slice column keeps its rows and its overall score; only
its attribution to that slice column is set aside: its slice value is ``(conflicting)``
(:data:`CONFLICTING_SLICE`). A null value is the slice value ``(null)``; a query a run
partition did not retrieve (scored 0 under ``missing_queries = "zero"``) has no run row to
give one and gets ``(not retrieved)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from releval.core import columns as S
from releval.core.arrays import codes
from releval.errors import ConfigError

#: The run slice value of a query whose run rows disagree on that slice column.
CONFLICTING_SLICE = "(conflicting)"
#: The run slice value of a query a run partition did not retrieve.
UNRETRIEVED_SLICE = "(not retrieved)"
#: Names a run slice cannot have: the run's read columns and the evaluation's own (as are
#: the hidden ones, starting with ``_``).
RESERVED = (S.QUERY_ID, S.DOC_ID, S.SCORE, S.RANK, S.WINDOW, S.NUM_RET, S.NEGATIVE_LABELS,
            S.DEPTH, S.WINDOW_SIZE, S.ANSWER_SCORE, S.SLICE, S.SLICE_VALUE, S.WEIGHT,
            S.SLICES)


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


def slice_values(column: pa.ChunkedArray | pa.Array, group: np.ndarray, groups: int,
                 first_row: np.ndarray) -> pa.Array:
    """Each group's (run partition, query's) value of a run slice column: the value of its
    row ``first_row``, or :data:`CONFLICTING_SLICE` when its rows disagree.

    Args:
        column: the slice column of the run rows.
        group: each row's group, in ``0 .. groups - 1``.
        first_row: the row (a position in ``column``) that gives each group's value.
    """
    value, _ = codes(column)
    low = np.full(groups, np.iinfo(np.int64).max, dtype=np.int64)
    high = np.full(groups, -1, dtype=np.int64)
    np.minimum.at(low, group, value)
    np.maximum.at(high, group, value)
    taken = column.take(pa.array(first_row))
    if isinstance(taken, pa.ChunkedArray):
        taken = taken.combine_chunks()
    return pc.if_else(pa.array(low != high), pa.scalar(CONFLICTING_SLICE, pa.string()),
                      taken.cast(pa.string()))


__all__ = ["CONFLICTING_SLICE", "RESERVED", "UNRETRIEVED_SLICE", "check_slice_names",
           "slice_values"]
