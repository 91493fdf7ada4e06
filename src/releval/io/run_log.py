"""The run-log table's schema and its one writer: one row per batch job run (lineage)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from releval.core import columns as C
from releval.io.atomic import append_row
from releval.io.comments import RUN_LOG_COMMENTS
from releval.io.writers import with_comments

RUN_LOG_SCHEMA = T.StructType(
    [
        T.StructField(C.JOB_RUN_ID, T.StringType(), False),
        T.StructField("status", T.StringType(), False),
        T.StructField("started_at", T.TimestampType(), False),
        T.StructField("finished_at", T.TimestampType(), False),
        T.StructField("releval_version", T.StringType(), False),
        T.StructField("config_hash", T.StringType(), False),
        T.StructField("config_json", T.StringType(), False),
        T.StructField("run_source", T.StringType(), False),
        T.StructField("run_version", T.LongType(), True),
        T.StructField("run_filter", T.StringType(), True),
        T.StructField("qrels_source", T.StringType(), False),
        T.StructField("qrels_version", T.LongType(), True),
        T.StructField("qrels_filter", T.StringType(), True),
        T.StructField("selection", T.StringType(), False),
        T.StructField("replace_predicate", T.StringType(), True),
        T.StructField(
            "partitions", T.ArrayType(T.MapType(T.StringType(), T.StringType()), False), False
        ),
        T.StructField("per_query_version", T.LongType(), True),
        T.StructField("aggregate_version", T.LongType(), True),
        T.StructField("per_query_rows", T.LongType(), True),
        T.StructField("aggregate_rows", T.LongType(), True),
        T.StructField("error", T.StringType(), True),
    ]
)


def write_run_log(row: DataFrame, *, path: str | None, table: str | None, job_run_id: str) -> int:
    """Append the run-log row ``row`` (:data:`RUN_LOG_SCHEMA`) in one commit; its version."""
    return append_row(
        row,
        path=path,
        table=table,
        schema=with_comments(RUN_LOG_SCHEMA, RUN_LOG_COMMENTS),
        description="releval run log: one row per batch job run (lineage of the output rows).",
        user_metadata=f"releval job_run_id={job_run_id}",
    )
