"""Repeated rows, decided once: which occurrence counts and which are set aside.

* **A document repeated in a query of a run** (``duplicate_doc``): its best-ranked
  occurrence is kept (the ranking order of :mod:`releval.core.ranking`), the others are not
  ranked.
* **Two documents at one logged rank** (``rank_by = "rank"``, ``duplicate_rank``): the
  first in tie order (doc id descending) is kept, the others are not ranked.
* **A document judged more than once** (``conflicting_label``): its highest label is the
  judgment; the rows with a lower label are set aside, and the other rows with the highest
  label are exact duplicates (one judgment, counted once).

These are NumPy functions over a partition's rows, grouped by query (``releval.core.layout``):
the engine (``releval.core.kernel``) applies them to drop and count the rows, and the
checks' labelling (``releval.checks.rules.label_run``, ``label_qrels``) applies the same
functions to name the rows the quarantine keeps. Neither has a rule of its own.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from releval.core import columns as S
from releval.core.arrays import codes, group_ids
from releval.core.ranking import best_first

#: The reasons of the run's repeated-row rules (``releval.checks.rules.REASONS`` declares them).
DUPLICATE_DOC = "duplicate_doc"
DUPLICATE_RANK = "duplicate_rank"


def repeated_documents(group: np.ndarray, doc: np.ndarray, docs: int) -> np.ndarray:
    """For rows in ranking order (best first within each group, ``releval.core.ranking.best_first``):
    True at every occurrence of a (group, doc) after its first.

    Args:
        group: the rows' group (run partition and query) ids.
        doc: the rows' doc id codes, all below ``docs``.
        docs: how many doc id codes there are.
    """
    if not len(group):
        return np.zeros(0, dtype=bool)
    return pd.Series(group * max(docs, 1) + doc).duplicated().to_numpy()


def shared_ranks(group: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """For rows in ranking order with no repeated document (``rank_by = "rank"``): True at a
    row whose logged rank equals the row's before it in its group (the first in tie order,
    doc id descending, keeps the rank)."""
    same = np.zeros(len(group), dtype=bool)
    same[1:] = (group[1:] == group[:-1]) & (rank[1:] == rank[:-1])
    return same


def set_aside(
    group: np.ndarray, primary: np.ndarray, doc: np.ndarray, docs: pa.Array, *, rank_by: str
) -> tuple[np.ndarray, np.ndarray]:
    """The clean run rows of a partition that the repeated-row rules set aside.

    Args:
        group: each row's group (run partition and query) id.
        primary: ``-score`` (``rank_by = "score"``) or the logged rank.
        doc: each row's code in ``docs``; docs: the doc ids.
        rank_by: "score" or "rank" (a shared rank is a rule of ``rank`` only).

    Returns:
        The positions of the rows that repeat a document (``duplicate_doc``) and, ranking
        by rank, of those that share a rank (``duplicate_rank``; empty by score). Rows that
        tie on all of the ranking order keep their given order.
    """
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

    Args:
        reasons: the partition's reasons (an object array over all its rows).
        rows: the positions in ``reasons`` of the clean run rows.
        clean: those rows (partition columns, query_id, doc_id), in that order.
        primary: their ``-score`` or logged rank (see :func:`set_aside`).
        rank_by: "score" or "rank".
        partition_columns: the run's partition columns.

    Returns:
        How many rows got a reason.
    """
    query, queries = codes(clean.column(S.QUERY_ID))
    doc, docs = codes(clean.column(S.DOC_ID))
    group = group_ids(clean, [*partition_columns, S.QUERY_ID], query, len(queries))
    repeated, shared = set_aside(group, primary, doc, docs, rank_by=rank_by)
    reasons[rows[repeated]] = DUPLICATE_DOC
    reasons[rows[shared]] = DUPLICATE_RANK
    return len(repeated) + len(shared)


def highest_labels(key: np.ndarray, label: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The judgments of a partition's (query, doc) keys: each key's highest label.

    Args:
        key: the rows' (query, doc) key codes.
        label: the rows' labels.

    Returns:
        ``order``: the rows by key, highest label first; ``first``: in that order, the
        key's first row (the one that stands for its judgment); ``best``: in that order,
        the highest label of the row's key. So ``label[order] < best`` are the rows set
        aside as ``conflicting_label`` and ``(label[order] == best) & ~first`` the exact
        duplicates.
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
