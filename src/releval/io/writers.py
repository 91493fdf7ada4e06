"""Delta table creation: explicit schemas with column comments, partitioning, properties, through
the DataFrame writer and SQL (what classic and Spark Connect sessions both answer)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from releval.config import URI_SCHEME
from releval.runtime.delta_log import is_missing_table

#: Table property holding the version of the output schemas (docs/migrations.md).
SCHEMA_VERSION_PROPERTY = "releval.schema_version"
SCHEMA_VERSION = "12"


#: Held while a CTAS has its userMetadata in the session's settings (:func:`create_table_as`).
_SESSION_METADATA = threading.Lock()


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
    """Select and cast ``df``'s columns to ``schema``, in its order; missing nullable ones null."""
    return df.select(
        *[
            (df[f.name] if f.name in df.columns or not f.nullable else F.lit(None))
            .cast(f.dataType)
            .alias(f.name)
            for f in schema.fields
        ]
    )


def absolute(path: str) -> str:
    """A local relative path made absolute, against this process's working directory (a Spark
    Connect server would resolve it against its own); URIs (``s3a://``, ``dbfs:/``) unchanged."""
    return path if URI_SCHEME.match(path) or path.startswith("/") else os.path.abspath(path)


def create_table_as(
    data: DataFrame,
    *,
    path: str | None,
    table: str | None,
    schema: T.StructType,
    partition_columns: Sequence[str],
    description: str,
    user_metadata: str,
    properties: Mapping[str, str] | None = None,
) -> None:
    """Create the Delta table and write ``data`` (conformed to ``schema``) in one commit.

    Comments, partitioning, description and properties are set by the same commit, which
    saves the second commit and snapshots of :func:`ensure_table` plus a write.

    Raises:
        Spark's or Delta's error when the table exists meanwhile (the caller retries
        as a replacement) or the folder holds other files.
    """
    spark = data.sparkSession
    commented = data.select(
        *[F.col(f.name).alias(f.name, metadata=f.metadata) for f in schema.fields]
    )
    name = table or "delta.`" + absolute(path or "").replace("`", "``") + "`"
    writer = (
        commented.writeTo(name)
        .using("delta")
        .tableProperty("comment", description)
        .tableProperty(SCHEMA_VERSION_PROPERTY, SCHEMA_VERSION)
        .tableProperty("delta.appendOnly", "false")
    )
    for key, value in (properties or {}).items():
        writer = writer.tableProperty(key, value)
    if partition_columns:
        writer = writer.partitionedBy(*[F.col(c) for c in partition_columns])
    # a CTAS takes no userMetadata option: Delta reads it from the session for this commit,
    # so two threads of a process create their tables one at a time
    key = "spark.databricks.delta.commitInfo.userMetadata"
    with _SESSION_METADATA:
        previous = spark.conf.get(key, None)
        spark.conf.set(key, user_metadata)
        try:
            writer.create()
        finally:
            if previous is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, previous)


def sql_string(text: str) -> str:
    """``text`` as a SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def column_ddl(field: T.StructField) -> str:
    """A column of ``CREATE TABLE``: its quoted name, type, NOT NULL and comment.

    SQL's types have no NOT NULL inside an array or a map: their elements are nullable."""
    ddl = f"`{field.name.replace('`', '``')}` {field.dataType.simpleString()}"
    if not field.nullable:
        ddl += " NOT NULL"
    if "comment" in field.metadata:
        ddl += f" COMMENT {sql_string(str(field.metadata['comment']))}"
    return ddl


def ensure_table(
    spark: SparkSession,
    *,
    path: str | None,
    table: str | None,
    schema: T.StructType,
    partition_columns: Sequence[str],
    description: str,
    properties: Mapping[str, str] | None = None,
) -> None:
    """Create the Delta table with its schema, comments, partitioning and ``properties`` if
    it does not exist (``CREATE TABLE IF NOT EXISTS``).

    ``IF NOT EXISTS`` takes any non-empty folder for an existing table: a path's table is read
    back, waiting a few seconds for another job that is creating it to commit.

    Raises:
        Delta's error (``DELTA_MISSING_DELTA_TABLE``) when ``path`` holds other files.
    """
    name = table or "delta.`" + absolute(path or "").replace("`", "``") + "`"
    props = {SCHEMA_VERSION_PROPERTY: SCHEMA_VERSION, **(properties or {}),
             "delta.appendOnly": "false"}
    statement = (
        f"CREATE TABLE IF NOT EXISTS {name} ({', '.join(column_ddl(f) for f in schema.fields)}) "
        "USING delta"
        + (f" PARTITIONED BY ({', '.join(f'`{c}`' for c in partition_columns)})"
           if partition_columns else "")
        + f" COMMENT {sql_string(description)}"
        + " TBLPROPERTIES ("
        + ", ".join(f"{sql_string(k)} = {sql_string(v)}" for k, v in props.items()) + ")"
    )
    spark.sql(statement)
    if table:
        return
    for wait in (*CREATION_WAITS, None):
        try:
            spark.sql(f"SHOW TBLPROPERTIES {name}").collect()
            return
        except Exception as exc:  # noqa: BLE001 - a table another job has not committed yet
            if wait is None or not is_missing_table(exc):
                raise
            time.sleep(wait)


#: How long :func:`ensure_table` waits, in turn, for another job's table to be committed.
CREATION_WAITS = (0.2, 0.4, 0.8, 1.6, 3.2, 6.4)
