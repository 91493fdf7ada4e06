"""A Delta table's existence and commits, each with a path for both kinds of session.

A classic session reads the table's ``_delta_log`` on the driver through Hadoop's file system
(any storage Spark writes to; no Spark job); a Spark Connect session has no driver JVM to ask
and uses Delta's SQL (``SHOW TBLPROPERTIES``, and ``DESCRIBE HISTORY``, which runs Spark jobs).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from pyspark.sql import SparkSession

from releval.runtime.mode import is_connect

_COMMIT_FILE = re.compile(r"(\d{20})\.json")
#: Spark's and Delta's error conditions for a table that is not there.
_MISSING = ("DELTA_MISSING_DELTA_TABLE", "TABLE_OR_VIEW_NOT_FOUND", "DELTA_TABLE_NOT_FOUND",
            "DELTA_PATH_DOES_NOT_EXIST", "PATH_NOT_FOUND")
#: The newest commits a Connect session's :func:`find_commit` reads first; the whole history
#: only when the commit is older (more concurrent commits than this came after it).
RECENT_COMMITS = 20


def is_missing_table(exc: BaseException) -> bool:
    """True for the errors of a SQL statement over a table (or path) that is not a table."""
    condition = getattr(exc, "getCondition", lambda: None)()
    return condition in _MISSING or any(f"[{m}]" in str(exc) for m in _MISSING)


def properties(spark: SparkSession, sql_name: str) -> dict[str, str] | None:
    """A table's properties (``SHOW TBLPROPERTIES``, from its metadata: no Spark job); None
    when there is no table there."""
    try:
        rows = spark.sql(f"SHOW TBLPROPERTIES {sql_name}").collect()
    except Exception as exc:  # noqa: BLE001 - a missing table is an answer; the rest is raised
        if is_missing_table(exc):
            return None
        raise
    return {r["key"]: r["value"] for r in rows}


def is_delta_path(spark: SparkSession, path: str) -> bool:
    """Whether the folder ``path`` (absolute, or a URI) holds a Delta table."""
    if is_connect(spark):
        return properties(spark, "delta.`" + path.replace("`", "``") + "`") is not None
    from delta.tables import DeltaTable

    return bool(DeltaTable.isDeltaTable(spark, path))


def find_commit(
    spark: SparkSession, *, location: Callable[[], str], sql_name: str, user_metadata: str
) -> tuple[int, int]:
    """(version, numOutputRows) of the latest commit whose userMetadata is ``user_metadata``,
    else (-1, 0).

    Args:
        location: the table's folder (called on a classic session only: its log files).
        sql_name: the table as SQL names it (a Connect session reads its history).
    """
    if is_connect(spark):
        return _from_history(spark, sql_name, user_metadata)
    log = f"{location().rstrip('/')}/_delta_log"
    versions = sorted(
        (int(m.group(1)) for name in _list_names(spark, log)
         if (m := _COMMIT_FILE.fullmatch(name))),
        reverse=True,
    )
    for version in versions:
        for line in _read_text(spark, log, f"{version:020d}.json").splitlines():
            if '"commitInfo"' not in line:
                continue
            info = json.loads(line).get("commitInfo", {})
            if info.get("userMetadata") == user_metadata:
                metrics = info.get("operationMetrics") or {}
                return version, int(metrics.get("numOutputRows", 0))
    return -1, 0


def _from_history(spark: SparkSession, sql_name: str, user_metadata: str) -> tuple[int, int]:
    for limit in (RECENT_COMMITS, None):
        query = f"DESCRIBE HISTORY {sql_name}" + (f" LIMIT {limit}" if limit else "")
        rows = spark.sql(query).select("version", "userMetadata", "operationMetrics").collect()
        for row in rows:  # newest first
            if row["userMetadata"] == user_metadata:
                metrics = row["operationMetrics"] or {}
                return int(row["version"]), int(metrics.get("numOutputRows", 0))
        if limit is not None and len(rows) < limit:
            break
    return -1, 0


def _file_system(spark: SparkSession, folder: str):  # (Hadoop FileSystem, Path)
    jvm = spark.sparkContext._jvm
    if jvm is None:
        raise RuntimeError("the SparkSession has no JVM")
    path = jvm.org.apache.hadoop.fs.Path(folder)
    return path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), path


def _list_names(spark: SparkSession, folder: str) -> list[str]:
    """The names of the files in ``folder``, through Hadoop's file system, on the driver."""
    fs, path = _file_system(spark, folder)
    return [status.getPath().getName() for status in fs.listStatus(path)]


def _read_text(spark: SparkSession, folder: str, name: str) -> str:
    """The text of the file ``name`` in ``folder``, read on the driver (UTF-8)."""
    fs, path = _file_system(spark, folder)
    jvm = spark.sparkContext._jvm
    stream = fs.open(jvm.org.apache.hadoop.fs.Path(path, name))
    try:
        return str(jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
    finally:
        stream.close()
