"""Retrieval and the answer in Spark: the evaluation's rows with each query's answer score,
the answered queries with their retrieval value, their summaries per run partition in the
executors and the attribution table's rows (the statistics: :mod:`releval.stats.attribution`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql import types as T

from releval.core import columns as S
from releval.core.columns import COVERED, IN_RUN, MEASURES, REASON, RETRIEVAL
from releval.stats.attribution import (
    CELLS,
    NO_QRELS,
    SHARED_CELLS,
    TAU,
    WITH,
    WITHOUT,
    P,
    Thresholds,
    count_column,
    string_column,
    summarize,
    wilson_interval,
)


def _join_null_safe(left: DataFrame, right: DataFrame, keys: Sequence[str]) -> DataFrame:
    """``left`` LEFT JOIN ``right`` on ``keys``, nulls equal (a partition value may be null);
    ``right``'s key columns are dropped."""
    renamed = right.select(*[F.col(k).alias(f"_right_{i}") for i, k in enumerate(keys)],
                           *[c for c in right.columns if c not in keys])
    same = [F.col(k).eqNullSafe(F.col(f"_right_{i}")) for i, k in enumerate(keys)]
    joined = left.join(renamed, on=same, how="left")
    return joined.drop(*[f"_right_{i}" for i in range(len(keys))])


def with_answer_scores(
    queries: DataFrame, labelled: DataFrame, *, partition_columns: Sequence[str]
) -> DataFrame:
    """The evaluation's wide table with each (run partition, query)'s clean ``answer_score``
    (null: not answered), which :func:`releval.core.engine.long_format` writes on every row."""
    keys = [*partition_columns, S.QUERY_ID]
    clean = labelled.where(F.col(REASON).isNull()).select(*keys, S.ANSWER_SCORE)
    return _join_null_safe(queries, clean, keys)


def answered(
    labelled: DataFrame, queries: DataFrame, qrels_queries: DataFrame, *,
    partition_columns: Sequence[str], measure_index: int,
) -> DataFrame:
    """The clean answers with their query's retrieval value (``_retrieval``: the measure at
    ``measure_index`` of the wide table; 0 for a judged query the run partition did not
    retrieve; null when the qrels do not judge the query) and ``_covered`` (the run
    retrieved the query or the qrels judge it).

    Args:
        labelled: :func:`releval.checks.answers.label_answers`.
        queries: the evaluation's wide table (one row per run partition and query).
        qrels_queries: the qrels' query ids (``query_id``), each once.
    """
    keys = [*partition_columns, S.QUERY_ID]
    clean = labelled.where(F.col(REASON).isNull()).select(*keys, S.ANSWER_SCORE)
    value = F.col(MEASURES)[measure_index][S.VALUE]
    wide = queries.select(*keys, F.col(IN_RUN).alias("_in_run"), value.alias("_value"))
    judged = qrels_queries.select(F.col(S.QUERY_ID).alias("_judged_query"),
                                  F.lit(True).alias("_judged"))
    joined = _join_null_safe(clean, wide, keys).join(
        judged, on=F.col(S.QUERY_ID) == F.col("_judged_query"), how="left")
    is_judged = F.coalesce(F.col("_judged"), F.lit(False))
    in_run = F.coalesce(F.col("_in_run"), F.lit(False))
    return joined.select(
        *keys, S.ANSWER_SCORE,
        F.when(is_judged, F.when(in_run, F.col("_value")).otherwise(F.lit(0.0)))
        .cast("double").alias(RETRIEVAL),
        (is_judged | in_run).alias(COVERED),
    )


def summaries(
    answered_rows: DataFrame, *, partition_columns: Sequence[str], thresholds: Thresholds
) -> list[Row]:
    """:func:`summarize` per run partition, in the executors (``applyInPandas``), collected:
    one row per run partition with answers, with its values as strings (``_string_<c>``,
    the ledger's keys) and ``_covered``, the answered queries the run retrieved or the qrels
    judge."""
    parts = list(partition_columns)
    keys = [*parts, *(string_column(c) for c in parts)]
    schema = T.StructType([
        *[answered_rows.schema[c] for c in parts],
        *[T.StructField(string_column(c), T.StringType()) for c in parts],
        *[T.StructField(count_column(c), T.LongType()) for c in CELLS],
        *[T.StructField(c, T.DoubleType()) for c in (TAU, P, WITH, WITHOUT)],
        T.StructField(COVERED, T.LongType()),
    ])

    def one(pdf: pd.DataFrame) -> pd.DataFrame:
        ordered = pdf.sort_values(S.QUERY_ID)  # the means' rounding does not depend on row order
        figures = summarize(ordered[RETRIEVAL].to_numpy(np.float64),
                            ordered[S.ANSWER_SCORE].to_numpy(np.float64), thresholds)
        row = {k: pdf[k].iloc[0] for k in keys}
        return pd.DataFrame([{**row, **figures, COVERED: int(pdf[COVERED].sum())}])

    rows = answered_rows.select(*parts, *[F.col(c).cast("string").alias(string_column(c)) for c in parts],
                                S.QUERY_ID, RETRIEVAL, S.ANSWER_SCORE, COVERED)
    grouped = rows.groupBy(*keys) if keys else rows.groupBy(F.lit(0).alias("_all"))
    return grouped.applyInPandas(one, schema).collect()


def partition_key(summary: Row, partition_columns: Sequence[str]) -> tuple[str | None, ...]:
    """A summary's run partition as the ledger keys it: its values as strings."""
    return tuple(summary[string_column(c)] for c in partition_columns)


def answered_queries(summary: Row) -> int:
    """The answers a summary counts, in every cell (the rows the attribution used)."""
    return sum(int(summary[count_column(c)]) for c in CELLS)


def rows(
    found: Sequence[Row], *, partition_columns: Sequence[str], thresholds: Thresholds
) -> list[dict[str, Any]]:
    """The attribution table's rows (no ``job_run_id``) from the :func:`summaries`: per run
    partition, one per cell, each with the partition's figures; ``no_qrels`` has no share."""
    out = []
    for summary in found:
        attributed = sum(int(summary[count_column(c)]) for c in SHARED_CELLS)
        for cell in CELLS:
            n = int(summary[count_column(cell)])
            shared = cell != NO_QRELS and attributed > 0
            low, high = wilson_interval(n, attributed, thresholds.level) if shared else (None, None)
            out.append({
                **{c: summary[c] for c in partition_columns},
                S.CELL: cell, S.QUERIES: n, S.SHARE: n / attributed if shared else None,
                S.SHARE_CI_LOW: low, S.SHARE_CI_HIGH: high, S.ATTRIBUTED: attributed,
                S.RETRIEVED_BY_MEASURE: thresholds.retrieved_by,
                S.RETRIEVED_AT: thresholds.retrieved_at, S.CORRECT_AT: thresholds.correct_at,
                S.KENDALL_TAU_B: summary[TAU], S.KENDALL_P_VALUE: summary[P],
                S.MEAN_SCORE_WITH_EVIDENCE: summary[WITH],
                S.MEAN_SCORE_WITHOUT_EVIDENCE: summary[WITHOUT], S.CI_LEVEL: thresholds.level,
            })
    return out
