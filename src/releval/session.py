"""The one place a SparkSession is built, with Delta Lake configured.

Delta's jars are fetched once at install time (``make jars``, Maven) into the
project's ``.jars/`` folder, or the folder named by ``RELEVAL_JARS``. When that
folder holds them they are put on ``spark.jars``; otherwise Spark resolves the
pinned Maven coordinates itself (``spark.jars.packages``) and caches them. A job
that ``spark-submit`` started with Delta's jars (``--jars``, ``--packages``: a
cluster's jars folder or Maven) keeps those.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pyspark.sql import SparkSession

from releval.config import SparkSettings

DELTA_VERSION = "4.0.1"
SCALA_VERSION = "2.13"
DELTA_PACKAGES = (
    f"io.delta:delta-spark_{SCALA_VERSION}:{DELTA_VERSION}",
    f"io.delta:delta-storage:{DELTA_VERSION}",
)
_PROJECT_ROOT = Path(__file__).resolve().parents[2]


def delta_jars(jars_dir: str | Path | None = None) -> list[Path]:
    """The locally cached Delta jars, or [] when they are not all there."""
    folder = Path(jars_dir or os.environ.get("RELEVAL_JARS") or _PROJECT_ROOT / ".jars")
    jars = [folder / f"{coord.split(':')[1]}-{DELTA_VERSION}.jar" for coord in DELTA_PACKAGES]
    return jars if all(j.is_file() for j in jars) else []


def local_cores(master: str | None) -> int | None:
    """The cores of a ``local``, ``local[N]`` or ``local[*]`` master; None for a cluster."""
    if not master or not master.startswith("local"):
        return None
    inside = master[len("local["):].split(",")[0].rstrip("]") if "[" in master else "1"
    return os.cpu_count() or 1 if inside == "*" else int(inside)


def submitted_delta() -> bool:
    """Whether ``spark-submit`` already gave Delta's jars (``--jars`` or ``--packages``).

    Only a driver that ``spark-submit`` started has a running JVM before the session is
    built (``PYSPARK_GATEWAY_PORT``); its Spark conf then says what was submitted. In any
    other process the JVM starts with the session's own conf, so this returns False
    without starting one.
    """
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return False
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()  # connects to spark-submit's JVM (starts nothing)
    conf = SparkConf()  # loads the JVM's spark.* properties: what spark-submit was given
    return "delta-spark" in f"{conf.get('spark.jars', '')},{conf.get('spark.jars.packages', '')}"


def build_session(settings: SparkSettings = SparkSettings()) -> SparkSession:
    """Build (or get) the SparkSession with Delta Lake's extension and catalog.

    Args:
        settings: master, application name, the cluster keys (shuffle partitions, executor
            memory and cores, adaptive execution, warehouse) and extra Spark conf.

    Returns:
        The active SparkSession.
    """
    # On local Spark the Arrow engine's Python workers need this interpreter's packages
    # (NumPy, PyArrow); an explicit PYSPARK_PYTHON wins. A cluster's executors have their
    # own Python (spark.pyspark.python), which this does not touch.
    if (settings.master or "").startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(settings.app_name)
    if settings.master:
        builder = builder.master(settings.master)
    jars = delta_jars()
    if submitted_delta():
        pass  # spark-submit's --jars / --packages stand (a cluster's jars folder or Maven)
    elif jars:
        builder = builder.config("spark.jars", ",".join(str(j) for j in jars))
    else:
        builder = builder.config("spark.jars.packages", ",".join(DELTA_PACKAGES))
    builder = (
        builder.config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        # Let the label join reuse the run's partitioning by query id (a subset of the
        # join keys query id, doc id): the pipeline's one shuffle. See pipeline.evaluate.
        .config("spark.sql.requireAllClusterKeysForCoPartition", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.showConsoleProgress", "false")
        # the Arrow engine receives a shuffle partition in batches of this many rows
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "100000")
    )
    # shuffle partitions, executor memory and cores, adaptive execution, warehouse
    for key, value in settings.spark_conf().items():
        builder = builder.config(key, value)
    cores = local_cores(settings.master)
    if cores:
        # Delta rebuilds each table's snapshot in 50 partitions by default: on one machine
        # most of a small job's Delta bookkeeping (issue 11: 11 s -> 1.2 s of a 400-query
        # run at 2). A cluster keeps Delta's default unless [spark.conf] sets it.
        builder = builder.config("spark.databricks.delta.snapshotPartitions", str(2 * cores))
    for key, value in settings.conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def fetch_jars(jars_dir: str | Path) -> list[Path]:
    """Resolve Delta's jars with Spark's own resolver (no Maven) and copy them to ``jars_dir``.

    The fallback of ``make jars`` on a machine without ``mvn``.
    """
    import shutil

    ivy = _PROJECT_ROOT / ".ivy2"
    spark = (
        SparkSession.builder.master("local[1]")
        .config("spark.jars.packages", ",".join(DELTA_PACKAGES))
        .config("spark.jars.ivy", str(ivy))
        .getOrCreate()
    )
    spark.stop()
    folder = Path(jars_dir)
    folder.mkdir(parents=True, exist_ok=True)
    copied = []
    for coord in DELTA_PACKAGES:
        group, artifact, version = coord.split(":")
        source = ivy / "jars" / f"{group}_{artifact}-{version}.jar"
        target = folder / f"{artifact}-{version}.jar"
        shutil.copyfile(source, target)
        copied.append(target)
    return copied


if __name__ == "__main__":
    import sys

    if len(sys.argv) == 3 and sys.argv[1] == "--fetch-jars":
        for jar in fetch_jars(sys.argv[2]):
            print(f"fetched {jar}")
    else:
        print("usage: python -m releval.session --fetch-jars DIR", file=sys.stderr)
        sys.exit(2)
