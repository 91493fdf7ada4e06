"""The queries that moved: each candidate's difference from the baseline, query by query,
ranked, with the query's slice values and its share of the mean difference.

Everything runs in the executors (a group per pair, then window functions over each
candidate and measure); nothing is collected. See docs/statistics.md."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from releval.core import columns as S
from releval.frames.compared_in_executors import (
    BASELINE_ROWS,
    CANDIDATE_ROWS,
    PAIR_CANDIDATE,
    executor_pairs,
)
from releval.frames.comparison import side_rows
from releval.stats import kernel
from releval.stats import paired_groups as G

BASELINE_VALUE, CANDIDATE_VALUE, DIFF = "baseline_value", "candidate_value", "diff"
LOSS_RANK, GAIN_RANK, SHARE_OF_DIFF = "loss_rank", "gain_rank", "share_of_diff"


def changes(
    per_query: DataFrame,
    *,
    baseline: Mapping[str, str],
    candidates: Mapping[str, Mapping[str, str]],
    missing_queries: str,
    measures: Sequence[str] | None = None,
    queries: DataFrame | None = None,
    slices: Sequence[str] = (),
    weighted: bool = False,
) -> DataFrame:
    """One row per (candidate, measure both sides have, paired query).

    Args:
        baseline, candidates: run partitions (column -> value); candidates by label.
        missing_queries: ``zero`` (a query either side scored, 0 where missing) or ``skip``.
        measures: the measure keys to keep (None: every compared measure).
        queries: the checked queries input (``query_id``, ``weight``, the ``slices``).
        weighted: ``share_of_diff`` is the query's part of the weighted mean difference.

    Returns:
        ``candidate``, ``measure_key``, ``query_id``, ``baseline_value``, ``candidate_value``,
        ``diff`` (candidate - baseline; within 1e-12 of 0 is 0), ``loss_rank`` (1 = the most
        negative diff; ties by query id; null unless diff < 0), ``gain_rank`` (1 = the most
        positive; ties by query id; null unless diff > 0), one column per slice (an unlisted
        query's value is ``(unlisted)``), ``weight`` (null: unlisted or unweighted) and
        ``share_of_diff``: ``w * diff / sum(w)`` (weighted; null for an unlisted query) or
        ``diff / n``, which add up to the (weighted) mean difference. A repeated per-query
        row fails the first action on the frame.
    """
    labels = list(candidates)
    rows = side_rows(per_query, [baseline, *candidates.values()], seed=0)
    if measures is not None:
        rows = rows.where(F.col(S.MEASURE_KEY).isin(list(measures)))
    pairs = executor_pairs(rows, len(labels), keyed=False)
    nb, nc = F.col(BASELINE_ROWS), F.col(CANDIDATE_ROWS)
    if missing_queries == "skip":
        pairs = pairs.where((nb > 0) & (nc > 0))
    group = Window.partitionBy(S.CANDIDATE, S.MEASURE_KEY)
    label = F.element_at(F.array(*[F.lit(x) for x in labels]), F.col(PAIR_CANDIDATE))
    twice = F.when((nb > 1) | (nc > 1), F.raise_error(F.concat(
        F.lit("releval.changes: a side has more than one per-query row for query "),
        F.col(S.QUERY_ID), F.lit(" and measure "), F.col(S.MEASURE_KEY),
        F.lit(": give the value of every partition column that tells the run partitions "
              "apart"))))
    raw = F.coalesce(F.col(G.C), F.lit(0.0)) - F.coalesce(F.col(G.B), F.lit(0.0))
    paired = pairs.select(
        label.alias(S.CANDIDATE), S.MEASURE_KEY, S.QUERY_ID,
        F.coalesce(F.col(G.B), F.lit(0.0)).alias(BASELINE_VALUE),
        F.coalesce(F.col(G.C), F.lit(0.0)).alias(CANDIDATE_VALUE),
        F.when(F.abs(raw) <= kernel.TIE_TOLERANCE, F.lit(0.0)).otherwise(raw).alias(DIFF),
        F.coalesce(twice, F.lit(0)).alias("_twice"), BASELINE_ROWS, CANDIDATE_ROWS)
    paired = paired.withColumn(  # the measures both sides have
        "_both", (F.max(nb).over(group) > 0) & (F.max(nc).over(group) > 0)).where("_both")
    if queries is not None:
        listed = queries.select(
            F.col(S.QUERY_ID).cast("string").alias(S.QUERY_ID),
            F.col(S.WEIGHT).cast("double").alias(S.WEIGHT) if weighted
            else F.lit(None).cast("double").alias(S.WEIGHT),
            *[F.col(s).cast("string").alias(f"_slice{i}") for i, s in enumerate(slices)])
        paired = paired.join(listed, S.QUERY_ID, "left")
    else:
        paired = paired.withColumn(S.WEIGHT, F.lit(None).cast("double"))
    d, qid = F.col(DIFF), F.col(S.QUERY_ID)
    share = (F.col(S.WEIGHT) * d / F.sum(S.WEIGHT).over(group) if weighted
             else d / F.count(F.lit(1)).over(group))
    return paired.where(F.col("_twice") == 0).select(
        S.CANDIDATE, S.MEASURE_KEY, S.QUERY_ID, BASELINE_VALUE, CANDIDATE_VALUE, DIFF,
        # the losses come first in ascending order and the gains in descending order
        F.when(d < 0, F.row_number().over(group.orderBy(d.asc(), qid.asc()))).alias(LOSS_RANK),
        F.when(d > 0, F.row_number().over(group.orderBy(d.desc(), qid.asc()))).alias(GAIN_RANK),
        *[F.coalesce(F.col(f"_slice{i}"), F.lit(S.UNLISTED_SLICE)).alias(s)
          for i, s in enumerate(slices)],
        S.WEIGHT, share.alias(SHARE_OF_DIFF),
    )
