"""Exact, atomic Delta writes for the batch job: one commit each, retried from a fresh snapshot
on a concurrent conflict (the write is idempotent). See docs/design/commits.md.

Tables are written through the DataFrame writer and asked about through Delta's SQL, or
:mod:`releval.runtime.delta_log` where a classic session has a cheaper way."""

from __future__ import annotations

import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from delta.exceptions import base as delta_exceptions
from pyspark.sql import DataFrame, DataFrameWriter, SparkSession
from pyspark.sql import types as T

from releval.errors import SchemaVersionError, WriteConflictError
from releval.io.writers import (
    SCHEMA_VERSION,
    SCHEMA_VERSION_PROPERTY,
    absolute,
    conform,
    create_table_as,
    ensure_table,
)
from releval.runtime.delta_log import find_commit, is_delta_path, properties

#: Delta's exceptions that mean "a concurrent transaction got there first: retry".
CONFLICTS = (
    delta_exceptions.DeltaConcurrentModificationException,
    delta_exceptions.ConcurrentWriteException,
    delta_exceptions.MetadataChangedException,
    delta_exceptions.ProtocolChangedException,
    delta_exceptions.ConcurrentAppendException,
    delta_exceptions.ConcurrentDeleteReadException,
    delta_exceptions.ConcurrentDeleteDeleteException,
    delta_exceptions.ConcurrentTransactionException,
)
_CONFLICT_MARKERS = ("DELTA_CONCURRENT", "ConcurrentAppendException", "ProtocolChangedException",
                     "MetadataChangedException", "ConcurrentDeleteReadException",
                     "ConcurrentDeleteDeleteException", "ConcurrentTransactionException")


def is_conflict(exc: BaseException) -> bool:
    """True for Delta's concurrent-modification errors (also when not converted)."""
    return isinstance(exc, CONFLICTS) or any(m in str(exc) for m in _CONFLICT_MARKERS)


#: Delta's errors while another job is creating the same table but has not committed it yet.
_CREATING_MARKERS = ("DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION", "DELTA_TABLE_NOT_FOUND")


def is_creation_race(
    exc: BaseException, *, existed: bool, spark: SparkSession, path: str | None, table: str | None
) -> bool:
    """True when the table did not exist and another job was creating it at the same time."""
    if existed:
        return False
    return any(m in str(exc) for m in _CREATING_MARKERS) or table_exists(spark, path=path, table=table)


def table_name(path: str | None, table: str | None) -> str:
    """How a table is named in messages."""
    return f"table {table}" if table else f"Delta table {path}"


def table_exists(spark: SparkSession, *, path: str | None, table: str | None) -> bool:
    """Whether the Delta table exists (a catalog name or a folder with a _delta_log)."""
    if table:
        return bool(spark.catalog.tableExists(table))
    return is_delta_path(spark, absolute(path or ""))


def table_properties(
    spark: SparkSession, *, path: str | None, table: str | None
) -> dict[str, str] | None:
    """A table's properties (``SHOW TBLPROPERTIES``); None when there is no table there."""
    return properties(spark, sql_name(path, table))


def read_table(spark: SparkSession, *, path: str | None, table: str | None) -> DataFrame:
    """The rows of a Delta table: a catalog name or a path."""
    return spark.table(table) if table else spark.read.format("delta").load(absolute(path or ""))


def latest_version(spark: SparkSession, *, path: str | None, table: str | None) -> int | None:
    """A Delta table's latest version (``DESCRIBE HISTORY ... LIMIT 1``); None if it has none."""
    rows = spark.sql(f"DESCRIBE HISTORY {sql_name(path, table)} LIMIT 1").select("version").collect()
    return int(rows[0]["version"]) if rows else None


def quote_name(table: str) -> str:
    """A catalog table name with each part back-quoted (back-quotes doubled)."""
    return ".".join("`" + part.replace("`", "``") + "`" for part in table.split("."))


def sql_name(path: str | None, table: str | None) -> str:
    """A table as SQL names it: the quoted catalog name, or delta.`/abs/path`."""
    return quote_name(table) if table else "delta.`" + absolute(path or "").replace("`", "``") + "`"


def table_schema_version(spark: SparkSession, *, path: str | None, table: str | None) -> str:
    """An existing table's ``releval.schema_version`` ("0" when it has none)."""
    return (table_properties(spark, path=path, table=table) or {}).get(SCHEMA_VERSION_PROPERTY, "0")


def check_schema_version(spark: SparkSession, *, path: str | None, table: str | None) -> bool:
    """Fail when an existing table was written by another output schema version.

    Returns:
        Whether the table exists.

    Raises:
        SchemaVersionError: naming the table, its version and the migration to run.
    """
    if not table_exists(spark, path=path, table=table):
        return False
    found = table_schema_version(spark, path=path, table=table)
    if found != SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{table_name(path, table)} has {SCHEMA_VERSION_PROPERTY} = {found!r}, this releval "
            f"writes version {SCHEMA_VERSION!r}; nothing was written. Migrate it first: "
            f"python jobs/migrate.py --config <config> (see docs/migrations.md)"
        )
    return True


@dataclass(frozen=True)
class WriteResult:
    """The commit a write made."""

    version: int
    rows: int
    attempts: int


def table_location(spark: SparkSession, *, path: str | None, table: str | None) -> str:
    """The folder of a Delta table: the path, or a catalog table's location."""
    if not table:
        return absolute(path or "")
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {quote_name(table)}").collect()
    return next(r["data_type"] for r in rows if r["col_name"] == "Location")


def commit_of(
    spark: SparkSession, *, path: str | None, table: str | None, user_metadata: str
) -> tuple[int, int]:
    """(version, numOutputRows) of the latest commit whose userMetadata is ``user_metadata``,
    else (-1, 0) (:func:`releval.runtime.delta_log.find_commit`)."""
    return find_commit(
        spark, location=lambda: table_location(spark, path=path, table=table),
        sql_name=sql_name(path, table), user_metadata=user_metadata,
    )


def _save(writer: DataFrameWriter, *, path: str | None, table: str | None) -> None:
    if table:
        writer.saveAsTable(table)
    else:
        writer.save(absolute(path or ""))


def _create(
    data: DataFrame,
    *,
    path: str | None,
    table: str | None,
    schema: T.StructType,
    partition_columns: Sequence[str],
    description: str,
    user_metadata: str,
    properties: Mapping[str, str] | None = None,
) -> bool:
    """Create the table with ``data`` in one commit; else :func:`ensure_table` and False, for the
    caller to write. Conflicts and creation races are raised for the caller to retry."""
    spark = data.sparkSession
    try:
        create_table_as(
            data, path=path, table=table, schema=schema, partition_columns=partition_columns,
            description=description, user_metadata=user_metadata, properties=properties,
        )
        return True
    except Exception as exc:  # noqa: BLE001 - conflicts and races are the caller's to retry
        if is_conflict(exc) or is_creation_race(
            exc, existed=False, spark=spark, path=path, table=table
        ):
            raise
    ensure_table(spark, path=path, table=table, schema=schema,
                 partition_columns=partition_columns, description=description,
                 properties=properties)
    return False


def replace_partitions(
    df: DataFrame,
    *,
    path: str | None,
    table: str | None,
    schema: T.StructType,
    partition_columns: Sequence[str],
    description: str,
    predicate: str | None,
    user_metadata: str,
    properties: Mapping[str, str] | None = None,
    max_attempts: int = 5,
    backoff_seconds: float = 1.0,
) -> WriteResult:
    """Replace the rows matching ``predicate`` with ``df`` in one atomic Delta commit.

    Args:
        df: the new rows, cast to ``schema``; each must match ``predicate``.
        predicate: the ``replaceWhere`` SQL predicate; None replaces the whole table.
        user_metadata: the commit's ``userMetadata``, by which a run finds its own commit.
        max_attempts: attempts when a concurrent transaction conflicts.
        backoff_seconds: first back-off; doubled each attempt, with jitter.

    Raises:
        SchemaVersionError: the existing table has another schema version.
        WriteConflictError: still conflicting after ``max_attempts``.
    """
    spark = df.sparkSession
    existed = check_schema_version(spark, path=path, table=table)
    data = conform(df, schema)
    for attempt in range(1, max_attempts + 1):
        if attempt > 1:
            existed = table_exists(spark, path=path, table=table)
        try:
            if not existed:
                if _create(data, path=path, table=table, schema=schema,
                           partition_columns=partition_columns, description=description,
                           user_metadata=user_metadata, properties=properties):
                    break
            writer = data.write.format("delta").mode("overwrite").option("userMetadata", user_metadata)
            if predicate is not None:
                writer = writer.option("replaceWhere", predicate)
            _save(writer, path=path, table=table)
            break
        except Exception as exc:  # noqa: BLE001 - only Delta's conflicts are retried
            conflict = is_conflict(exc)
            racing = is_creation_race(exc, existed=existed, spark=spark, path=path, table=table)
            if not (conflict or racing) or (attempt == max_attempts and not conflict):
                raise
            if attempt == max_attempts:
                raise WriteConflictError(
                    f"{table_name(path, table)}: a concurrent job kept changing the rows of "
                    f"replaceWhere {predicate!r}; gave up after {attempt} attempts "
                    f"({type(exc).__name__}: {str(exc).splitlines()[0][:300]})"
                ) from None
            delay = backoff_seconds * 2 ** (attempt - 1) * (0.5 + random.random())
            why = (f"concurrent commit conflicts with ours ({type(exc).__name__})" if conflict
                   else "another job is creating the table at the same time")
            print(
                f"releval: {table_name(path, table)}: {why}; retrying in {delay:.1f}s "
                f"(attempt {attempt + 1})",
                flush=True,
            )
            time.sleep(delay)
    version, rows = commit_of(spark, path=path, table=table, user_metadata=user_metadata)
    return WriteResult(version=version, rows=rows, attempts=attempt)


def append_row(
    df: DataFrame,
    *,
    path: str | None,
    table: str | None,
    schema: T.StructType,
    description: str,
    user_metadata: str,
) -> int:
    """Append ``df`` (the run log's row) in one commit; blind appends never conflict.

    Returns:
        The version committed.
    """
    spark = df.sparkSession
    existed = check_schema_version(spark, path=path, table=table)
    for attempt in range(1, 6):
        if attempt > 1:
            existed = table_exists(spark, path=path, table=table)
        try:
            if not existed and _create(
                conform(df, schema), path=path, table=table, schema=schema,
                partition_columns=(), description=description, user_metadata=user_metadata,
            ):
                break
            writer = conform(df, schema).write.format("delta").mode("append")
            writer = writer.option("userMetadata", user_metadata)
            _save(writer, path=path, table=table)
            break
        except Exception as exc:  # noqa: BLE001 - only conflicts and creation races are retried
            racing = is_creation_race(exc, existed=existed, spark=spark, path=path, table=table)
            if not (is_conflict(exc) or racing) or attempt == 5:
                raise
            time.sleep(0.5 * attempt)
    return commit_of(spark, path=path, table=table, user_metadata=user_metadata)[0]
