"""Run -> ranked rows. The tie-break rule lives here and nowhere else.

``rank_by = "score"`` (trec_eval's rule): score descending, ties broken by doc
id descending in byte order; the run's rank column is ignored. Positions are
1, 2, 3, ... in that order.

``rank_by = "rank"`` (production logs): the given rank/position column is the
position, as logged (gaps are kept: a document logged at position 5 counts at
rank 5 even if positions 3 and 4 are absent). Ties are ordered by doc id
descending so the order is deterministic.

:func:`best_first` sorts a partition's rows in that order with NumPy: the engine
(``releval.core.kernel``) ranks with it, and the checks' labelling (``releval.checks.rules``)
finds a repeated document's best occurrence with it. The tests' SQL oracle
(``tests/support/sql_oracle.py``) writes the same rule as a Spark window order, independently.

A document that appears more than once in one query of one run keeps its
best-ranked occurrence only (trec_eval rejects such runs): ``releval.core.repeats`` decides
which rows that drops, for the engine (which counts them) and for the quarantine, which
names them ``duplicate_doc``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def best_first(group: np.ndarray, primary: np.ndarray, doc: np.ndarray, docs: pa.Array) -> np.ndarray:
    """The rows' order by group, then ``primary`` ascending, then doc id descending (byte
    order): the ranking order of each group (stable: rows that tie on all three keep their
    order).

    Args:
        group: each row's group (run partition and query) id.
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
