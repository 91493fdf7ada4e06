"""Classic or Spark Connect: the one place that asks which kind of session runs releval, and
answers what only one kind knows (the default parallelism, a plan's text, Spark job counts).

A classic session lives in this process with a driver JVM (Py4J: ``sparkContext``, ``_jvm``,
``_jdf``); a Spark Connect session is a client of a server, and answers only the DataFrame
API, SQL and ``spark.conf``. No module outside ``releval.runtime`` reaches into the JVM.
"""

from __future__ import annotations

import re

from pyspark.sql import DataFrame, SparkSession

#: What a Spark Connect session cannot do that a classic one can, said once where it matters.
CONNECT_NOTE = "releval: {what} is not available on Spark Connect"

_SPLITS = re.compile(r"\bRange \(0, 1, step=1, splits=(\d+)\)")


def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect session (a client of a Connect server)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def master(spark: SparkSession) -> str:
    """The session's master (``local[2]``, ``spark://...``, ``yarn``); "" when not known."""
    return str(spark.conf.get("spark.master", "") or "")


def default_parallelism(spark: SparkSession) -> int:
    """The tasks Spark runs a new scan in by default: one per executor core.

    Classic: ``sparkContext.defaultParallelism``. Connect: ``spark.default.parallelism`` when
    set, else the splits of a one-row range in its physical plan (planned, not run)."""
    if not is_connect(spark):
        return int(spark.sparkContext.defaultParallelism)
    configured = spark.conf.get("spark.default.parallelism", None)
    if configured:
        return int(configured)
    found = _SPLITS.search(explain_string(spark.range(1), "simple"))
    if found is None:
        return int(spark.conf.get("spark.sql.shuffle.partitions", "2") or 2)
    return int(found.group(1))


def explain_string(df: DataFrame, mode: str) -> str:
    """``df``'s plan as ``DataFrame.explain(mode)`` prints it, as a string (runs nothing)."""
    if is_connect(df.sparkSession):
        return str(df._explain_string(mode=mode))  # type: ignore[attr-defined]
    jvm = df.sparkSession.sparkContext._jvm
    return str(jvm.PythonSQLUtils.explainString(df._jdf.queryExecution(), mode))


def counts_jobs(spark: SparkSession) -> bool:
    """Whether the session can count the Spark jobs a piece of code ran (classic only)."""
    return not is_connect(spark)
