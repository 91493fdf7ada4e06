"""Whether a SparkSession can read and write Delta tables, asked before releval writes one, so
that a session without Delta (a notebook's default) fails in one line that says what to set."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession

from releval.errors import DeltaUnavailableError

EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
#: A path no table is at: Delta's SQL over it fails with an error of Delta's own.
_PROBE = "delta.`/releval-delta-probe-no-table-here`"


def has_delta(spark: SparkSession) -> bool:
    """Whether ``spark`` has Delta Lake: its extension and catalog are set (what releval's
    sessions and Delta's docs configure), or Delta's SQL answers without them (a platform
    whose Spark has Delta built in)."""
    extensions = str(spark.conf.get("spark.sql.extensions", "") or "")
    catalog = str(spark.conf.get("spark.sql.catalog.spark_catalog", "") or "")
    if EXTENSION in extensions and catalog == CATALOG:
        return True
    try:
        with _quiet_errors():
            spark.sql(f"DESCRIBE HISTORY {_PROBE} LIMIT 1").collect()
    except Exception as exc:  # noqa: BLE001 - which error it is tells whether Delta answered
        return "DELTA_" in str(exc).split("]")[0]
    return True


@contextmanager
def _quiet_errors() -> Iterator[None]:
    """PySpark logs each failed SQL statement on stderr; the probe's failure is expected."""
    from pyspark.logger import PySparkLogger

    loggers = [PySparkLogger.getLogger(name)
               for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def require_delta(spark: SparkSession, what: str) -> None:
    """Raise :class:`DeltaUnavailableError` naming what to configure when ``spark`` has no Delta.

    Args:
        what: what needs Delta, the start of the message (e.g. ``"result.write"``).
    """
    if has_delta(spark):
        return
    from releval.runtime.session import DELTA_PACKAGES

    raise DeltaUnavailableError(
        f"{what} writes Delta tables, and this SparkSession has no Delta Lake: start it with "
        f"Delta's jars (spark.jars.packages={','.join(DELTA_PACKAGES)}, or spark.jars) and "
        f"spark.sql.extensions={EXTENSION}, spark.sql.catalog.spark_catalog={CATALOG} "
        "(on Spark Connect: the server's settings; docs/usage.md)"
    )
