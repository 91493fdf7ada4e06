"""The executors' Python on a cluster: what it must have, checked once at job start.

On local Spark the driver and the executors share one machine and one Python. On a
cluster each executor runs its own Python (``spark.pyspark.python``) on its own machine,
and a job that lacks a module there fails only when the first Python task runs, deep in
the job, with a worker traceback. :func:`check_executors` runs one small Spark job first:
one task per executor core imports :data:`EXECUTOR_MODULES` and looks for the local
paths the job reads and writes, and the job stops with one line naming what is missing
and where. It does nothing on a ``local`` master (that check would add a Spark job to
every local run, with nothing to find).

The task is pickled by value (a nested function, see :func:`probe_task`), so it runs even
on an executor that cannot import releval, and says so.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from releval.config import URI_SCHEME, Config
from releval.errors import ClusterError

#: What the executors' Python imports: releval itself (``--py-files dist/releval.zip``, or
#: the wheel installed there) and the runtime dependencies its tasks use: NumPy and pandas
#: (the Arrow engine's kernel, pandas UDFs), PyArrow (the Arrow batches), SciPy (the t
#: quantiles of the intervals, computed in a pandas UDF). PySpark comes with Spark.
EXECUTOR_MODULES = ("numpy", "pandas", "pyarrow", "scipy", "releval")

_LOCAL = re.compile(r"local(\[[^\]]*\])?")


def is_local(master: str) -> bool:
    """``local``, ``local[N]``, ``local[*]``, ``local[N,F]``: driver and executors in one
    process (``local-cluster[...]`` starts executor processes: not local)."""
    return bool(_LOCAL.fullmatch(master))


def probe_task(
    modules: Sequence[str], paths: Sequence[str]
) -> Callable[[Iterable[Any]], Iterator[dict[str, Any]]]:
    """The function one probe task runs on an executor (``mapPartitions``).

    It is a nested function, so Spark's cloudpickle ships its code by value: the executor
    needs no releval to run it. It yields one record: the host, the Python (path and
    version), ``missing`` (module -> import error), ``releval`` (where releval was
    imported from) and ``unseen`` (the paths that do not exist there).
    """
    wanted, looked_for = tuple(modules), tuple(paths)

    def task(_: Iterable[Any]) -> Iterator[dict[str, Any]]:
        import importlib
        import os
        import socket
        import sys

        missing: dict[str, str] = {}
        found: dict[str, str] = {}
        for name in wanted:
            try:
                module = importlib.import_module(name)
            except Exception as exc:  # noqa: BLE001 - ImportError, or a module failing at import
                missing[name] = f"{type(exc).__name__}: {exc}"
            else:
                found[name] = str(getattr(module, "__file__", "") or "")
        yield {
            "host": socket.gethostname(),
            "python": sys.executable,
            "version": ".".join(str(v) for v in sys.version_info[:3]),
            "missing": missing,
            "releval": found.get("releval", ""),
            "unseen": [p for p in looked_for if not os.path.exists(p)],
        }

    return task


def _local_path(path: str) -> str | None:
    """The local file system path of ``path`` as the driver resolves it; None for a URI of
    another file system (``hdfs://``, ``s3a://``: every executor reaches those alike)."""
    if path.startswith("file:"):
        return "/" + path[len("file:"):].lstrip("/")
    if URI_SCHEME.match(path):
        return None
    return os.path.abspath(path)


def shared_paths(config: Config) -> list[str]:
    """Local paths every executor must see as the driver does.

    The run and qrels paths (executors read the files: TREC text, Parquet, Delta), and for
    each output table (per-query, aggregate, quarantine, run log) its folder or, when that
    does not exist yet, its parent folder: executors write the table's data files there,
    and a folder only the driver has would leave commits pointing at files on other
    machines. Only paths that exist on the driver are listed (a missing input is the
    reader's error, with its own message).
    """
    outputs = [config.output.per_query_path, config.output.aggregate_path]
    outputs += [config.located(name)[0] for name in ("quarantine", "run_log")]
    candidates: list[str] = []
    for path in (config.run.path, config.qrels.path):
        local = _local_path(path) if path else None
        if local:
            candidates.append(local)
    for path in outputs:
        local = _local_path(path.rstrip("/")) if path else None
        if local:
            candidates.append(local if os.path.exists(local) else os.path.dirname(local))
    return sorted({p for p in candidates if os.path.exists(p)})


@dataclass(frozen=True)
class ExecutorReport:
    """What the probe tasks found, one record per task (see :func:`probe_task`)."""

    records: tuple[dict[str, Any], ...]

    def problems(self) -> list[str]:
        """One phrase per (host, Python) with something missing; empty when all is there."""
        found: dict[tuple[str, str, str], tuple[dict[str, str], set[str]]] = {}
        for r in self.records:
            missing, unseen = found.setdefault((r["host"], r["python"], r["version"]), ({}, set()))
            missing.update(r["missing"])
            unseen.update(r["unseen"])
        phrases = []
        for (host, python, version), (missing, unseen) in sorted(found.items()):
            parts = [f"cannot import {name} ({error})" for name, error in sorted(missing.items())]
            parts += [f"cannot see {path}" for path in sorted(unseen)]
            if parts:
                phrases.append(f"on {host} (Python {version} {python}): " + ", ".join(parts))
        return phrases

    def render(self) -> str:
        """The line the job prints when everything is there."""
        pythons = sorted({f"{r['host']} (Python {r['version']} {r['python']})" for r in self.records})
        origins = sorted({r["releval"] for r in self.records})
        return (
            f"releval: executors checked ({len(self.records)} tasks): {', '.join(pythons)}; "
            f"releval from {', '.join(origins)}"
        )


def probe_executors(
    spark: SparkSession, *, modules: Sequence[str] = EXECUTOR_MODULES, paths: Sequence[str] = ()
) -> ExecutorReport:
    """Run :func:`probe_task` once per executor core (at least twice) and collect.

    Raises:
        ClusterError: the probe job itself failed (the executors' Python could not start,
            or runs another Python version than the driver's).
    """
    sc = spark.sparkContext
    tasks = max(sc.defaultParallelism, 2)
    sc.setJobDescription("releval: check the executors' Python")
    try:
        records = sc.parallelize(range(tasks), tasks).mapPartitions(probe_task(modules, paths))
        return ExecutorReport(tuple(records.collect()))
    except Exception as exc:  # noqa: BLE001 - Py4JJavaError: the message holds the cause
        raise ClusterError(
            f"the executors could not run a Python task ({_cause(exc)}); spark.pyspark.python "
            "must name a Python of the driver's version, on every executor (docs/cluster.md)"
        ) from None
    finally:
        sc.setLocalProperty("spark.job.description", None)  # type: ignore[arg-type]


_LOST_TASK = re.compile(r"most recent failure: Lost task .*?executor [^)]*\): (.+)")
_PYTHON_ERROR = re.compile(r"^[\w.]+(?:Error|Exception): .+")


def _cause(exc: BaseException) -> str:
    """Why the probe's tasks failed, on one line, from a (Java) exception's text: the last
    task failure's reason, or for a Python traceback its last error line."""
    text = str(exc)
    lost = _LOST_TASK.search(text)
    reason = lost.group(1).strip() if lost else ""
    if not reason or "Traceback" in reason:
        errors = [line.strip() for line in text.splitlines() if _PYTHON_ERROR.match(line.strip())]
        reason = errors[-1] if errors else reason or type(exc).__name__
    return reason[:300]


def check_executors(spark: SparkSession, config: Config) -> ExecutorReport | None:
    """On a cluster master, check the executors' Python before the job starts.

    Does nothing (returns None) on a local master. Prints one line saying which Pythons
    were checked and where releval came from.

    Raises:
        ClusterError: one line naming, per host and Python, each module that cannot be
            imported and each path the executors cannot see.
    """
    if is_local(spark.sparkContext.master):
        return None
    report = probe_executors(spark, paths=shared_paths(config))
    problems = report.problems()
    if problems:
        raise ClusterError(
            "the executors' Python is not set up for releval: " + "; ".join(problems)
            + ". Install releval's wheel there (pip install dist/releval-*.whl: it brings "
            "numpy, pandas, pyarrow, scipy) or ship dist/releval.zip with --py-files to a "
            "Python that has them (spark.pyspark.python); give every executor the same "
            "paths (a shared file system, HDFS or object storage). See docs/cluster.md"
        )
    print(report.render(), flush=True)
    return report
