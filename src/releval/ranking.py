"""Run -> ranked rows. The tie-break rule lives here and nowhere else.

``rank_by = "score"`` (trec_eval's rule): score descending, ties broken by doc
id descending in byte order; the run's rank column is ignored. Positions are
1, 2, 3, ... in that order.

``rank_by = "rank"`` (production logs): the given rank/position column is the
position, as logged (gaps are kept: a document logged at position 5 counts at
rank 5 even if positions 3 and 4 are absent). Ties are ordered by doc id
descending so the order is deterministic.

A document that appears more than once in one query of one run keeps its
best-ranked occurrence only (trec_eval rejects such runs): the Arrow kernel applies that
rule (``releval.metrics.kernel``) and counts the other occurrences, which the input
accounting reports as ``duplicate_doc`` (``releval.quality``).
"""

from __future__ import annotations

from collections.abc import Sequence

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


def query_window(*, rank_by: str, partition_columns: Sequence[str]) -> WindowSpec:
    """One query of one run, best document first."""
    return Window.partitionBy(*partition_columns, S.QUERY_ID).orderBy(*ranking_order(rank_by))


def position(*, rank_by: str, partition_columns: Sequence[str]) -> Column:
    """The 1-based rank of a document within its query (see the module docstring)."""
    if rank_by == "score":
        window = query_window(rank_by=rank_by, partition_columns=partition_columns)
        return F.row_number().over(window).cast("int")
    return F.col(S.RANK).cast("int")
