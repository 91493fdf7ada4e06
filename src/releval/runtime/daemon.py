"""PySpark's Python worker daemon, without re-reading zip archives at every task.

PySpark 4.0's worker calls :func:`importlib.invalidate_caches` at the start of every task
(``pyspark.worker_util.setup_spark_files``), so that files added to the session since
the last task can be imported. On Python 3.11 that makes every cached
:class:`zipimport.zipimporter` read its archive's whole directory again, and a worker's
``sys.path`` holds three archives that never change during a session: ``pyspark.zip``,
Py4J's zip and the ``spark-core`` jar (Spark's ``PythonUtils.sparkPythonPath``), each
cached once per package directory imported from it. Measured on a 2-core machine: 260 ms
of every Python task, whatever its rows (issue 11: most of a small job's Python tasks).

Run as ``python -m releval.runtime.daemon pyspark.worker`` (Spark's command for the daemon module
``spark.python.daemon.module``), this makes a zip importer re-read its archive only when
the archive file changed (its size or modification time), which is all that re-reading
can find, then runs PySpark's daemon, which forks PySpark's workers from this process.
Everything else is PySpark's daemon and worker unchanged. ``releval.runtime.session.
build_session`` names this module for a local master whose workers run this interpreter
(where releval is importable when the daemon starts); a cluster's executors keep
PySpark's daemon.

Two more things make a new worker cheap, both measured on a 2-core machine:

- PySpark's own package is imported from the installed directory, whose bytecode pip
  compiled, instead of ``pyspark.zip``, from which every module is compiled from source
  (importing ``pyspark.worker``: 1.4 s from the zip, 0.4 s from the directory). Only when
  the zip is the one inside that same installed package, of the same version, and only
  that package: ``sys.path`` is not changed, so no other module resolves differently.
- The engine's modules (``releval.core.kernel``: NumPy, PyArrow, pandas and releval's
  own) are imported once in the daemon, so each worker forked from it has them (about
  0.65 s per worker otherwise).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
import zipfile
import zipimport
from collections.abc import Sequence
from pathlib import Path

#: imported by the daemon before it forks workers: what the engine's tasks import
#: (``pyspark.worker`` is imported by PySpark's daemon itself)
PRELOAD = ("releval.core.kernel",)

_reread = zipimport.zipimporter.invalidate_caches


def _stamp(archive: str) -> tuple[int, int] | None:
    try:
        stat = os.stat(archive)
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


def _invalidate_if_changed(self: zipimport.zipimporter) -> None:
    """Re-read the archive's directory (the standard method) only if the file changed."""
    stamp = _stamp(self.archive)
    if stamp is None or getattr(self, "_releval_stamp", None) != stamp:
        _reread(self)
        self._releval_stamp = stamp  # type: ignore[attr-defined]


def install() -> None:
    """Make zip importers re-read their archive only when it changed (this process)."""
    zipimport.zipimporter.invalidate_caches = _invalidate_if_changed  # type: ignore[method-assign]


def _version(text: str) -> str | None:
    for line in text.splitlines():
        if line.startswith("__version__"):
            return line.split("=", 1)[1].strip().strip("'\"")
    return None


def installed_pyspark(path: Sequence[str]) -> str | None:
    """The folder that holds the installed ``pyspark`` package, when ``path`` has that
    package's own ``pyspark/python/lib/pyspark.zip`` and both say the same version."""
    for entry in path:
        zipped = Path(entry)
        if zipped.name != "pyspark.zip":
            continue
        package = zipped.parent.parent.parent  # .../site-packages/pyspark
        try:
            with zipfile.ZipFile(zipped) as zf:
                zipped_version = _version(zf.read("pyspark/version.py").decode())
            installed_version = _version((package / "version.py").read_text())
        except (OSError, KeyError, zipfile.BadZipFile, UnicodeDecodeError):
            continue
        if (package.name == "pyspark" and zipped_version is not None
                and zipped_version == installed_version):
            return str(package.parent)
    return None


def import_pyspark_from(folder: str) -> None:
    """Import the ``pyspark`` package from ``folder``, leaving ``sys.path`` as it is: its
    modules then load from that folder (the package's ``__path__``), nothing else moves."""
    spec = importlib.machinery.PathFinder.find_spec("pyspark", [folder])
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["pyspark"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules["pyspark"]
        raise


if __name__ == "__main__":
    import runpy

    install()
    folder = installed_pyspark(sys.path)
    if folder is not None:
        import_pyspark_from(folder)
    for module in PRELOAD:
        importlib.import_module(module)
    runpy.run_module("pyspark.daemon", run_name="__main__")  # argv[1]: the worker module
