"""Run -> ranked rows. The tie-break rule lives here and nowhere else.

``rank_by = "score"`` (trec_eval's rule): score descending, ties by doc id descending in
byte order; the run's rank column is ignored. ``rank_by = "rank"`` (production logs): the
logged rank is the position, gaps kept; ties by doc id descending.

:func:`best_first` is used by the engine and the checks' labelling; the tests' SQL oracle
writes the same rule as a Spark window order. See docs/design/engine.md.
"""

from __future__ import annotations

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
    order = np.lexsort((primary, group))
    g, p = group[order], primary[order]
    if not np.any((g[1:] == g[:-1]) & (p[1:] == p[:-1])):
        return order
    doc_rank = np.empty(len(docs), dtype=np.int64)
    doc_rank[pc.sort_indices(docs).to_numpy(zero_copy_only=False)] = np.arange(len(docs))
    return np.lexsort((-doc_rank[doc], primary, group))


__all__ = ["best_first"]
