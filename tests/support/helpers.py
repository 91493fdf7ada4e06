"""Small builders for test inputs written inline."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from releval.core import columns as S
from releval.core.engine import IN_QRELS, MEASURES
from releval.core.measures import Measure, parse_measures
from releval.evaluation.evaluate import Evaluation, evaluate
from releval.io.readers import QRELS_SCHEMA, RUN_SCHEMA
from support.sql_oracle import ENGINES

#: The engine ``evaluate_rows`` uses (a name of ``sql_oracle.ENGINES``: production's Arrow
#: engine or the SQL oracle); test modules that check both set it per test.
ENGINE = "arrow"


def run_df(spark: SparkSession, rows: Sequence[tuple]) -> DataFrame:
    """Rows of (query_id, doc_id, score[, rank])."""
    full = [(*r, None) if len(r) == 3 else r for r in rows]
    return spark.createDataFrame(full, RUN_SCHEMA)


def qrels_df(spark: SparkSession, rows: Sequence[tuple[str, str, int]]) -> DataFrame:
    return spark.createDataFrame(rows, QRELS_SCHEMA)


def evaluate_rows(
    spark: SparkSession,
    run: Sequence[tuple],
    qrels: Sequence[tuple[str, str, int]],
    measures: str,
    **kwargs: object,
) -> Evaluation:
    return evaluate(
        run_df(spark, run),
        qrels_df(spark, qrels),
        measures=parse_measures([measures], relevance_level=int(kwargs.pop("relevance_level", 1))),
        run_stats=ENGINES[str(kwargs.pop("engine", ENGINE))],
        **kwargs,  # type: ignore[arg-type]
    )


def values(evaluation: Evaluation) -> dict[tuple[str, str], float]:
    """{(query_id, measure_key): value} of the per-query table."""
    return {
        (r[S.QUERY_ID], r[S.MEASURE_KEY]): r[S.VALUE]
        for r in evaluation.per_query.select(S.QUERY_ID, S.MEASURE_KEY, S.VALUE).collect()
    }


def as_queries(
    per_query: DataFrame, measures: Sequence[Measure], partition_columns: Sequence[str]
) -> DataFrame:
    """Per-query table rows -> the evaluation's wide table that :func:`releval.frames.aggregate.
    aggregate` reads: one row per (partition, query), scored, the measures in an array in
    the order of ``measures`` (null where a query has no row of that measure)."""
    parts = list(partition_columns)
    entry = F.struct(S.VALUE, S.NUM_REL, S.NUM_REL_RET)
    return per_query.groupBy(*parts, S.QUERY_ID).agg(
        F.lit(True).alias(IN_QRELS),
        F.first(S.NUM_RET).alias(S.NUM_RET),
        F.first(S.NEGATIVE_LABELS).alias(S.NEGATIVE_LABELS),
        F.first(S.DEPTH).alias(S.DEPTH),
        F.array(*[
            F.first(F.when(F.col(S.MEASURE_KEY) == m.key, entry), ignorenulls=True)
            for m in measures
        ]).alias(MEASURES),
    )
