"""The one place a SparkSession is built, with Delta Lake configured, and the driver JVM's
options for a small local job (docs/performance.md, "Runtime accelerators").

Delta's jars come from ``.jars/`` (or ``RELEVAL_JARS``), else from Maven through Spark's own
resolver; a job that ``spark-submit`` started with Delta's jars keeps those. With a Spark
Connect URL (``[spark] remote``, ``--remote`` or ``SPARK_REMOTE``) the session is a client of
that server, which brings its own Delta; releval sets only its SQL settings there.
"""

from __future__ import annotations

import glob
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from urllib.parse import urlparse

from pyspark import SparkContext
from pyspark.sql import SparkSession

from releval.config import Config, SparkSettings

DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"

DELTA_VERSION = "4.0.1"
SCALA_VERSION = "2.13"
DELTA_PACKAGES = (
    f"io.delta:delta-spark_{SCALA_VERSION}:{DELTA_VERSION}",
    f"io.delta:delta-storage:{DELTA_VERSION}",
)
_PROJECT_ROOT = Path(__file__).resolve().parents[3]


def _jars_folder(jars_dir: str | Path | None) -> Path:
    """The folder of Delta's jars and the class archive: ``jars_dir``, ``RELEVAL_JARS`` or
    the project's ``.jars/``."""
    return Path(jars_dir or os.environ.get("RELEVAL_JARS") or _PROJECT_ROOT / ".jars")


def delta_jars(jars_dir: str | Path | None = None) -> list[Path]:
    """The locally cached Delta jars, or [] when they are not all there."""
    folder = _jars_folder(jars_dir)
    jars = [folder / f"{coord.split(':')[1]}-{DELTA_VERSION}.jar" for coord in DELTA_PACKAGES]
    return jars if all(j.is_file() for j in jars) else []


#: The driver JVM's class-data-sharing archive, next to Delta's jars: the classes a small
#: job loads, written once at install time (``python -m releval.job.class_archive``); a JVM
#: that cannot use it (another JDK or class path) runs without it.
CLASS_ARCHIVE = "releval-classes.jsa"


def class_archive(jars_dir: str | Path | None = None) -> Path | None:
    """The class archive in the jars folder (``RELEVAL_JARS`` or ``.jars/``), or None."""
    path = _jars_folder(jars_dir) / CLASS_ARCHIVE
    return path if path.is_file() else None


def archive_options(archive: Path) -> str:
    """The driver JVM options that map ``archive``; the JVM checks it and, if it cannot
    use it (made by another JDK or for another class path), runs without it, its one-line
    warning silenced."""
    return f'"-XX:SharedArchiveFile={archive}" -Xshare:auto -Xlog:cds=off -Xlog:cds+dynamic=off'


#: A short local job's driver JVM compiles with the quick compiler (C1) only: the
#: optimizing compiler would spend most of a short job on a core the job needs, and pays
#: off only in a long job (:func:`short_job`).
SHORT_JOB_JIT = "-XX:TieredStopAtLevel=1"

#: Local inputs of at most this many bytes (run and qrels together) make a short job.
SHORT_JOB_BYTES = 64 * 2**20


def local_bytes(path: str) -> int | None:
    """The size of the files at a local path or ``file:`` URI (a file, or a folder's files
    at any depth; glob patterns are expanded); 0 for a local path that does not exist (the
    job itself says so). None where the size is not known: another URI scheme (``s3a:``,
    ``hdfs:``: it would take a file system client) or a file that cannot be read."""
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", path):
        parsed = urlparse(path)
        if parsed.scheme != "file":
            return None
        path = parsed.path
    total = 0
    try:
        for match in glob.glob(path) or [path]:
            top = Path(match)
            if top.is_file():
                total += top.stat().st_size
            for folder, _dirs, files in os.walk(top):
                total += sum(Path(folder, name).stat().st_size for name in files)
    except OSError:
        return None
    return total


def short_job(config: Config) -> bool:
    """Whether a job over ``config``'s inputs is short: a local master, and the run and
    qrels are local paths of at most :data:`SHORT_JOB_BYTES` together (a catalog table or
    a URI is of unknown size: not short).

    The commands over a config's output tables (``releval compare``, ``views``, ``report``
    on catalog tables) take the same rule: the tables evaluated from small inputs are small.
    """
    return short_inputs(config.spark.master, [config.run.path, config.qrels.path])


def short_inputs(master: str | None, paths: Sequence[str | None]) -> bool:
    """A local master, and ``paths`` are local files of at most :data:`SHORT_JOB_BYTES`
    together (None, a table, or a URI is of unknown size: not short)."""
    if not local_cores(master):
        return False
    sizes = [None if path is None else local_bytes(path) for path in paths]
    known = [size for size in sizes if size is not None]
    return len(known) == len(sizes) and sum(known) <= SHORT_JOB_BYTES


def driver_options(*, archive: Path | None, short: bool) -> str:
    """The driver JVM options releval adds: the class archive's (None: none), and C1 only
    for a short job (:data:`SHORT_JOB_JIT`)."""
    return " ".join(
        [*([archive_options(archive)] if archive is not None else []),
         *([SHORT_JOB_JIT] if short else [])]
    )


def with_driver_options(conf: Mapping[str, str], options: str) -> dict[str, str]:
    """``conf`` with ``options`` (:func:`driver_options`; "": ``conf`` as is) in the driver
    JVM's options.

    Only for a session whose driver JVM this process starts. The user's own
    ``spark.driver.extraJavaOptions`` come after releval's, and win where they differ.
    """
    out = dict(conf)
    if options:
        user = out.get(DRIVER_JAVA_OPTIONS, "")
        out[DRIVER_JAVA_OPTIONS] = f"{options} {user}".strip()
    return out


def stop_jvm(spark: SparkSession, *, timeout: float = 600) -> None:
    """Stop ``spark`` and the driver JVM this process started, and wait until it has exited
    (the JVM exits when its stdin closes; an exiting JVM writes its class archive and
    finishes its logs)."""
    gateway = SparkContext._gateway
    if gateway is None or getattr(gateway, "proc", None) is None:
        raise RuntimeError("no driver JVM that this process started")
    spark.stop()
    gateway.shutdown()
    gateway.proc.stdin.close()
    gateway.proc.wait(timeout=timeout)


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
    from pyspark import SparkConf

    SparkContext._ensure_initialized()  # connects to spark-submit's JVM (starts nothing)
    conf = SparkConf()  # loads the JVM's spark.* properties: what spark-submit was given
    return "delta-spark" in f"{conf.get('spark.jars', '')},{conf.get('spark.jars.packages', '')}"


#: PySpark's key for recording the Python call site of each DataFrame and Column call.
DATAFRAME_DEBUGGING = "spark.python.sql.dataFrameDebugging.enabled"
#: The shuffle partition size adaptive execution merges small partitions up to.
ADVISORY_PARTITION_SIZE = "spark.sql.adaptive.advisoryPartitionSizeInBytes"


def remote_url(settings: SparkSettings) -> str | None:
    """The Spark Connect server to use: ``settings.remote``, else ``SPARK_REMOTE``; None: classic."""
    return settings.remote or os.environ.get("SPARK_REMOTE") or None


#: releval's SQL settings, on every session it builds (classic or Spark Connect).
SQL_SETTINGS = {
    # a join on (query id, doc id) may reuse a partitioning by query id alone
    "spark.sql.requireAllClusterKeysForCoPartition": "false",
    "spark.sql.session.timeZone": "UTC",
    # the Arrow engine receives a shuffle partition in batches of this many rows
    "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
    # adaptive execution merges the engine's shuffle partitions up to this size, about 1M
    # run rows: a Python task's fixed start stays small beside its work, and there are still
    # enough tasks to share the cores
    ADVISORY_PARTITION_SIZE: "16m",
}


def connect_session(settings: SparkSettings, url: str) -> SparkSession:
    """A Spark Connect session at ``url`` with releval's SQL settings and ``settings``' SQL
    keys (a server's static settings, its jars, memory and cores, stay the server's).

    ``settings.master`` does not apply to a Connect session: a note says so."""
    if settings.master:
        print(f"releval: [spark] master = {settings.master!r} is ignored: the session is a Spark "
              f"Connect client of {url}", file=sys.stderr, flush=True)
    builder = SparkSession.builder.remote(url)
    conf = {**SQL_SETTINGS, **settings.spark_conf(), **settings.conf}
    for key, value in conf.items():
        if key.startswith("spark.sql.") or key.startswith("spark.databricks."):
            builder = builder.config(key, value)
    return builder.getOrCreate()


def build_session(settings: SparkSettings = SparkSettings(), *, short: bool = False) -> SparkSession:
    """Build (or get) the SparkSession with Delta Lake's extension and catalog; with a Spark
    Connect URL (:func:`remote_url`), a client of that server (:func:`connect_session`).

    Args:
        settings: master, application name, the cluster keys (shuffle partitions, executor
            memory and cores, adaptive execution, warehouse) and extra Spark conf.
        short: a short job (:func:`short_job`): a driver JVM this process starts on a
            local master compiles with C1 only (:data:`SHORT_JOB_JIT`); a JVM that
            ``spark-submit`` started keeps its options (``--driver-options CONFIG`` below).

    Returns:
        The active SparkSession.
    """
    url = remote_url(settings)
    if url:
        return connect_session(settings, url)
    # local workers need this interpreter's packages; an explicit PYSPARK_PYTHON wins
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
        .config("spark.ui.showConsoleProgress", "false")
        # the Python call site of every DataFrame call, for Spark's error context, costs
        # most of the Py4J calls of planning; releval names its errors itself
        .config(DATAFRAME_DEBUGGING, "false")
    )
    for key, value in SQL_SETTINGS.items():
        builder = builder.config(key, value)
    # shuffle partitions, executor memory and cores, adaptive execution, warehouse
    for key, value in settings.spark_conf().items():
        builder = builder.config(key, value)
    cores = local_cores(settings.master)
    if cores:
        # Delta rebuilds each table's snapshot in 50 partitions by default, most of a small
        # local job's Delta bookkeeping; a cluster keeps Delta's default.
        builder = builder.config("spark.databricks.delta.snapshotPartitions", str(2 * cores))
    starts_jvm = "PYSPARK_GATEWAY_PORT" not in os.environ and SparkContext._gateway is None
    conf = with_driver_options(settings.conf, driver_options(
        archive=class_archive() if starts_jvm else None,
        short=starts_jvm and short and cores is not None,
    ))
    for key, value in conf.items():
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


def archive_classes(jars_dir: str | Path, workload: Callable[[SparkSession], None]) -> Path:
    """Write the class archive (:data:`CLASS_ARCHIVE`) into ``jars_dir``.

    ``workload`` runs in a driver JVM of its own that dumps the classes it loaded when it
    exits; the finished archive is then moved into place (a partial one is never used).
    """
    folder = Path(jars_dir)
    target = folder / CLASS_ARCHIVE
    partial = folder / f"{CLASS_ARCHIVE}.partial"
    target.unlink(missing_ok=True)  # the JVM that writes an archive must not map one
    partial.unlink(missing_ok=True)
    os.environ["RELEVAL_JARS"] = str(folder)
    spark = build_session(SparkSettings(
        master="local[2]", app_name="releval-class-archive", shuffle_partitions=2,
        conf={DRIVER_JAVA_OPTIONS: f'"-XX:ArchiveClassesAtExit={partial}" -Xlog:cds=off'},
    ))
    workload(spark)
    stop_jvm(spark)  # the JVM writes the archive as it exits
    if not partial.is_file():
        raise RuntimeError(f"the JVM wrote no class archive at {partial}")
    partial.replace(target)
    return target


if __name__ == "__main__":
    import sys

    if len(sys.argv) == 3 and sys.argv[1] == "--fetch-jars":
        for jar in fetch_jars(sys.argv[2]):
            print(f"fetched {jar}")
    elif len(sys.argv) == 3 and sys.argv[1] == "--driver-options":
        # for spark-submit, whose driver JVM starts before any releval code runs
        from releval.config import load_config

        print(driver_options(archive=class_archive(),
                             short=short_job(load_config(sys.argv[2]))))
    else:
        print("usage: python -m releval.runtime.session --fetch-jars DIR"
              " | --driver-options CONFIG", file=sys.stderr)
        sys.exit(2)
