"""Run -> ranked rows. The tie-break rule lives here and nowhere else.

``rank_by = "score"`` (trec_eval's rule): score descending, ties by doc id descending in
byte order; the run's rank column is ignored. ``rank_by = "rank"`` (production logs): the
logged rank is the position, gaps kept; ties by doc id descending. A depth (trec_eval
``-M``) keeps each ranking's first documents in that order: the cut comes after the
tie-break, and before anything else reads the ranking.

:func:`best_first` is used by the engine and the checks' labelling; the tests' SQL oracle
writes the same rule as a Spark window order. See docs/design/engine.md.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def best_first(group: np.ndarray, primary: np.ndarray, doc: np.ndarray, docs: pa.Array) -> np.ndarray:
    """The rows' ranking order: by group, ``primary`` ascending, doc id descending (stable).

    Args:
        group: each row's (run partition, query) id.
        primary: ``-score`` (``rank_by = "score"``) or the logged rank.
        doc: each row's code in ``docs``.
        docs: the doc ids; sorted only when two documents of a group tie on ``primary``.
    """
    # a ranked list usually arrives in ranking order: one linear check spares the sort
    in_order = np.all((group[1:] > group[:-1])
                      | ((group[1:] == group[:-1]) & (primary[1:] >= primary[:-1])))
    order = np.arange(len(group)) if in_order else np.lexsort((primary, group))
    g, p = group[order], primary[order]
    tied = (g[1:] == g[:-1]) & (p[1:] == p[:-1])
    if not np.any(tied):
        return order
    doc_rank = np.empty(len(docs), dtype=np.int64)
    doc_rank[pc.sort_indices(docs).to_numpy(zero_copy_only=False)] = np.arange(len(docs))
    # within each run of equal (group, primary): doc id descending; the runs keep their order
    run = np.concatenate(([0], np.cumsum(~tied)))
    key = run * len(docs) + (len(docs) - 1 - doc_rank[doc[order]])
    return order[np.argsort(key, kind="stable")]


def check_depth(depth: object) -> int | None:
    """``depth`` as an int when it is a positive integer; None (no depth) stays None.

    Raises:
        ValueError: anything else (0, a negative number, a float, a bool, a string).
    """
    if depth is None:
        return None
    if isinstance(depth, bool) or not isinstance(depth, Integral) or depth < 1:
        raise ValueError(f"depth must be a positive integer (the documents evaluated per "
                         f"ranking) or None (all), got {depth!r}")
    return int(depth)


def beyond_depth(group: np.ndarray, depth: int | None) -> np.ndarray:
    """For rows in ranking order (``group`` ascending): True at the rows after each group's
    first ``depth`` (all False when ``depth`` is None)."""
    if depth is None or not len(group):
        return np.zeros(len(group), dtype=bool)
    ordinal = np.arange(len(group)) - np.searchsorted(group, group)
    return ordinal >= depth


__all__ = ["best_first", "beyond_depth", "check_depth"]
