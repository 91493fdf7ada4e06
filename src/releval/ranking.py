"""Run -> ranked rows. The tie-break rule lives here and nowhere else.

``rank_by = "score"`` (trec_eval's rule): score descending, ties broken by doc
id descending in byte order; the run's rank column is ignored. Positions are
1, 2, 3, ... in that order.

``rank_by = "rank"`` (production logs): the given rank/position column is the
position, as logged (gaps are kept: a document logged at position 5 counts at
rank 5 even if positions 3 and 4 are absent). Ties are ordered by doc id
descending so the order is deterministic.

The order is written twice, in the two languages that sort: as Spark columns
(:func:`ranking_order`, for windows) and as a NumPy sort of a partition's rows
(:func:`best_first`, what the engine and the checks' labelling use).

A document that appears more than once in one query of one run keeps its
best-ranked occurrence only (trec_eval rejects such runs): ``releval.repeats`` decides
which rows that drops, for the engine (``releval.metrics.kernel``, which counts them) and
for the quarantine, which names them ``duplicate_doc`` (``releval.quality``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, Window, WindowSpec
from pyspark.sql import functions as F

from releval import schemas as S


def ranking_order(rank_by: str) -> list[Column]:
    """The sort order of a query's documents, best first."""
    if rank_by == "score":
        return [F.col(S.SCORE).desc(), F.col(S.DOC_ID).desc()]
    if rank_by == "rank":
        return [F.col(S.RANK).asc(), F.col(S.DOC_ID).desc()]
    raise ValueError(f"rank_by must be 'score' or 'rank', got {rank_by!r}")


def best_first(group: np.ndarray, primary: np.ndarray, doc: np.ndarray, docs: pa.Array) -> np.ndarray:
    """The rows' order by group, then ``primary`` ascending, then doc id descending (byte
    order): :func:`ranking_order` as a NumPy sort (stable: rows that tie on all three keep
    their order).

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


def query_window(*, rank_by: str, partition_columns: Sequence[str]) -> WindowSpec:
    """One query of one run, best document first."""
    return Window.partitionBy(*partition_columns, S.QUERY_ID).orderBy(*ranking_order(rank_by))


def position(*, rank_by: str, partition_columns: Sequence[str]) -> Column:
    """The 1-based rank of a document within its query (see the module docstring)."""
    if rank_by == "score":
        window = query_window(rank_by=rank_by, partition_columns=partition_columns)
        return F.row_number().over(window).cast("int")
    return F.col(S.RANK).cast("int")
