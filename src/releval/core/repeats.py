"""Repeated rows, decided once: which occurrence counts and which are set aside.

A repeated document keeps its best-ranked occurrence (``duplicate_doc``); of documents at
one logged rank the first in tie order keeps it (``duplicate_rank``); a document judged
twice keeps its highest label (``conflicting_label``). The engine and the checks' labelling
both call these functions. See docs/design/engine.md.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from releval.core import columns as S
from releval.core.arrays import codes, group_ids
from releval.core.ranking import best_first

#: The run's repeated-row reasons (declared in ``releval.checks.rules.REASONS``).
DUPLICATE_DOC = "duplicate_doc"
DUPLICATE_RANK = "duplicate_rank"


def repeated_documents(group: np.ndarray, doc: np.ndarray, docs: int) -> np.ndarray:
    """For rows in ranking order: True at each repeat of a (group, doc); ``docs``: code count."""
    if not len(group):
        return np.zeros(0, dtype=bool)
    return pd.Series(group * max(docs, 1) + doc).duplicated().to_numpy()


def shared_ranks(group: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """For rows in ranking order, no repeated document: True where a row's rank equals the
    previous row's in its group."""
    same = np.zeros(len(group), dtype=bool)
    same[1:] = (group[1:] == group[:-1]) & (rank[1:] == rank[:-1])
    return same


def set_aside(
    group: np.ndarray, primary: np.ndarray, doc: np.ndarray, docs: pa.Array, *, rank_by: str
) -> tuple[np.ndarray, np.ndarray]:
    """The positions of a partition's ``duplicate_doc`` and ``duplicate_rank`` (by rank only)
    rows; the arguments are those of :func:`releval.core.ranking.best_first`."""
    order = best_first(group, primary, doc, docs)
    repeated = repeated_documents(group[order], doc[order], len(docs))
    if rank_by != "rank":
        return order[repeated], np.zeros(0, dtype=np.int64)
    kept = order[~repeated]
    return order[repeated], kept[shared_ranks(group[kept], primary[kept])]


def mark_repeats(
    reasons: np.ndarray, rows: np.ndarray, clean: pa.Table, primary: np.ndarray, *,
    rank_by: str, partition_columns: Sequence[str],
) -> int:
    """Give the clean run rows :func:`set_aside` sets aside their reason, in place.

    ``rows`` are the positions in ``reasons`` of the rows ``clean`` holds, ``primary`` their
    ``-score`` or logged rank. Returns how many rows got a reason.
    """
    query, queries = codes(clean.column(S.QUERY_ID))
    doc, docs = codes(clean.column(S.DOC_ID))
    group = group_ids(clean, [*partition_columns, S.QUERY_ID], query, len(queries))
    repeated, shared = set_aside(group, primary, doc, docs, rank_by=rank_by)
    reasons[rows[repeated]] = DUPLICATE_DOC
    reasons[rows[shared]] = DUPLICATE_RANK
    return len(repeated) + len(shared)


def highest_labels(key: np.ndarray, label: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each (query, doc) key's highest label, given the rows' key codes and labels.

    Returns:
        ``order`` (by key, highest label first) and, in that order, ``first`` (the key's
        row that stands for its judgment) and ``best`` (its key's highest label):
        ``label[order] < best`` are ``conflicting_label``, ``== best & ~first`` duplicates.
    """
    order = np.lexsort((-label, key))
    sorted_key = key[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = sorted_key[1:] != sorted_key[:-1]
    best = label[order][first][np.cumsum(first) - 1] if len(order) else label[order]
    return order, first, best


__all__ = [
    "DUPLICATE_DOC", "DUPLICATE_RANK", "highest_labels", "mark_repeats", "repeated_documents",
    "set_aside", "shared_ranks",
]
