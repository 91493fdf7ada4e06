"""Arrow columns as NumPy codes, to group a partition's rows (engine and checks)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def to_numpy(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A column's values as one NumPy array (a copy when it must be)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    return column.to_numpy(zero_copy_only=False)


def codes(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Dense int64 codes of a column's values (nulls get a code too), and the dictionary."""
    if isinstance(column, pa.ChunkedArray):  # one dictionary, not one per chunk to unify
        column = column.combine_chunks()
    encoded = pc.dictionary_encode(column, null_encoding="encode")
    return to_numpy(encoded.indices).astype(np.int64), encoded.dictionary


def gain_of(label: np.ndarray, gain: str) -> np.ndarray:
    """Each label's gain: the label ("linear") or 2^label - 1 ("exponential"); 0 when <= 0."""
    positive = np.where(label > 0, label, 0).astype(np.float64)
    return positive if gain == "linear" else np.where(label > 0, np.exp2(positive) - 1.0, 0.0)


def dense(values: np.ndarray, size: int) -> np.ndarray:
    """Codes in 0..size-1 renumbered to 0..distinct-1, keeping their order."""
    present = np.zeros(size, dtype=bool)
    present[values] = True
    return (np.cumsum(present) - 1)[values]


def group_ids(table: pa.Table, columns: Sequence[str], query: np.ndarray, queries: int) -> np.ndarray:
    """Group id (0..groups-1) of each row by ``columns``, ordered by their codes; ``query``
    holds the query id's :func:`codes` (``queries`` of them)."""
    if len(columns) == 1:  # the query id alone: its codes, made dense
        return dense(query, queries)
    code = np.zeros(table.num_rows, dtype=np.int64)
    for name in columns:
        values, dictionary = codes(table.column(name))
        width = max(len(dictionary), 1)
        if int(code.max(initial=0)) >= (1 << 62) // width:  # re-densify before it could overflow
            code = np.unique(code, return_inverse=True)[1].astype(np.int64)
        code = code * width + values
    return np.unique(code, return_inverse=True)[1].astype(np.int64)


def sort_rank(column: pa.ChunkedArray | pa.Array, *, descending: bool = False) -> np.ndarray:
    """Each value's dense rank in sort order (nulls last either way): a NumPy sort key."""
    order = "descending" if descending else "ascending"
    ranked = pc.rank(column, sort_keys=order, tiebreaker="dense")
    return to_numpy(ranked).astype(np.int64)


__all__ = ["codes", "dense", "group_ids", "sort_rank", "to_numpy"]
