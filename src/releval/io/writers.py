"""Delta table creation: explicit schemas with column comments, partitioning, properties.

The atomic, retried replacement of a table's rows is ``releval.io.atomic``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from releval import schemas as S


def with_comments(schema: T.StructType, comments: Mapping[str, str]) -> T.StructType:
    """The same schema with a ``comment`` in each documented field's metadata."""
    return T.StructType(
        [
            T.StructField(f.name, f.dataType, f.nullable, {**f.metadata, "comment": comments[f.name]})
            if f.name in comments
            else f
            for f in schema.fields
        ]
    )


def conform(df: DataFrame, schema: T.StructType) -> DataFrame:
    """Select and cast ``df``'s columns to ``schema``, in its order.

    A nullable schema column that ``df`` lacks (``job_run_id`` outside a batch job) is null.
    """
    return df.select(
        *[
            (df[f.name] if f.name in df.columns or not f.nullable else F.lit(None))
            .cast(f.dataType)
            .alias(f.name)
            for f in schema.fields
        ]
    )


def absolute(path: str) -> str:
    """A local relative path made absolute (Delta's table builder needs it); URIs unchanged."""
    return path if "://" in path or path.startswith("/") else os.path.abspath(path)


def ensure_table(
    spark: SparkSession,
    *,
    path: str | None,
    table: str | None,
    schema: T.StructType,
    partition_columns: Sequence[str],
    description: str,
) -> None:
    """Create the Delta table with its schema, comments and partitioning if it does not exist."""
    builder = DeltaTable.createIfNotExists(spark)
    builder = builder.tableName(table) if table else builder.location(absolute(path or ""))
    builder = builder.addColumns(schema).comment(description)
    if partition_columns:
        builder = builder.partitionedBy(*partition_columns)
    builder = builder.property(S.SCHEMA_VERSION_PROPERTY, S.SCHEMA_VERSION)
    builder.property("delta.appendOnly", "false").execute()
