"""The executors' Python on a cluster, checked once at job start: :func:`check_executors` runs
one small Spark job (a task per executor core) so that a missing module or path fails in one
line, not at the first Python task deep in the job. See docs/cluster.md."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from releval.config import URI_SCHEME, Config
from releval.errors import ClusterError
from releval.runtime.mode import CONNECT_NOTE, is_connect, master

#: What the executors' Python imports: releval and its tasks' dependencies (PySpark is there).
EXECUTOR_MODULES = ("numpy", "pandas", "pyarrow", "scipy", "releval")

_LOCAL = re.compile(r"local(\[[^\]]*\])?")


def is_local(master: str) -> bool:
    """``local``, ``local[N]``, ``local[*]``, ``local[N,F]``: driver and executors in one JVM."""
    return bool(_LOCAL.fullmatch(master))


def probe_task(
    modules: Sequence[str], paths: Sequence[str]
) -> Callable[[Iterable[Any]], Iterator[dict[str, Any]]]:
    """The function one probe task runs on an executor (``mapPartitions``).

    Nested, so cloudpickle ships it by value: an executor without releval runs it too. Its record:
    host, Python, ``missing`` (module -> error), ``releval`` (its file) and ``unseen`` paths."""
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
    """``path`` on the local file system as the driver resolves it; None for ``hdfs://`` etc."""
    if path.startswith("file:"):
        return "/" + path[len("file:"):].lstrip("/")
    if URI_SCHEME.match(path):
        return None
    return os.path.abspath(path)


def shared_paths(config: Config) -> list[str]:
    """Local paths every executor must see as the driver does (those the driver has): the inputs
    and each output table's folder (or its parent, before it exists), where executors write."""
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
    """Run :func:`probe_task` once per executor core (at least twice); ClusterError if it fails."""
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
    """Why the probe failed, on one line: the last task failure's reason, or Python error line."""
    text = str(exc)
    lost = _LOST_TASK.search(text)
    reason = lost.group(1).strip() if lost else ""
    if not reason or "Traceback" in reason:
        errors = [line.strip() for line in text.splitlines() if _PYTHON_ERROR.match(line.strip())]
        reason = errors[-1] if errors else reason or type(exc).__name__
    return reason[:300]


def check_executors(spark: SparkSession, config: Config) -> ExecutorReport | None:
    """On a cluster master, check the executors' Python and print what was found (None if local).

    A Spark Connect session cannot run the probe's RDD tasks: on a cluster it prints a note
    and returns None (the server's executors are the server's to set up).

    Raises:
        ClusterError: naming, per host and Python, each module or path that is missing.
    """
    if is_local(master(spark)):
        return None
    if is_connect(spark):
        print(CONNECT_NOTE.format(what="the check of the executors' Python"), flush=True)
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
