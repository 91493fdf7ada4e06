"""Run -> ranked rows. The tie-break rule lives here and nowhere else.

``rank_by = "score"`` (trec_eval's rule): score descending, ties broken by doc
id descending in byte order; the run's rank column is ignored. Positions are
1, 2, 3, ... in that order.

``rank_by = "rank"`` (production logs): the given rank/position column is the
position, as logged (gaps are kept: a document logged at position 5 counts at
rank 5 even if positions 3 and 4 are absent). Ties are ordered by doc id
descending so the order is deterministic.

A document that appears more than once in one query of one run keeps its
best-ranked occurrence only (trec_eval rejects such runs).

The functions are split so the pipeline can attach labels *before* the
ranking window: positions and every running statistic then share one sort
(see :func:`query_window`).

The job quarantines the other occurrences first (``duplicate_doc``, see
``releval.validate``), so this dedupe only guards direct callers of :func:`rank_run`.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, Window, WindowSpec
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


def deduplicate(
    run: DataFrame, *, rank_by: str, partition_columns: Sequence[str], count_as: str | None = None
) -> DataFrame:
    """One row per (run partition, query, doc): its best-ranked occurrence.

    An aggregation, not a window: on a run already partitioned by query id it
    needs neither a shuffle nor a sort.

    Returns:
        The partition columns, query_id, doc_id and the ranking column (score or rank);
        with ``count_as``, also that column: how many rows the document had.
    """
    keys = [*partition_columns, S.QUERY_ID, S.DOC_ID]
    best = F.max(S.SCORE).alias(S.SCORE) if rank_by == "score" else F.min(S.RANK).alias(S.RANK)
    counted = [F.count(F.lit(1)).alias(count_as)] if count_as else []
    return run.groupBy(*keys).agg(best, *counted)


def rank_run(run: DataFrame, *, rank_by: str, partition_columns: Sequence[str]) -> DataFrame:
    """Rank each query's documents and drop repeated documents.

    Args:
        run: canonical run rows (partition columns, query_id, doc_id, score, rank).
        rank_by: "score" or "rank" (see the module docstring).
        partition_columns: the columns that identify one run (run_id, date, ...).

    Returns:
        The partition columns, query_id, doc_id and ``position`` (1-based).
    """
    deduplicated = deduplicate(run, rank_by=rank_by, partition_columns=partition_columns)
    return deduplicated.select(
        *partition_columns,
        S.QUERY_ID,
        S.DOC_ID,
        position(rank_by=rank_by, partition_columns=partition_columns).alias(S.POSITION),
    )
