"""PySpark's Python worker daemon, with workers that start cheaply (local master only).

Run as ``python -m releval.runtime.daemon pyspark.worker`` (Spark's
``spark.python.daemon.module``, set by :func:`releval.runtime.session.worker_daemon`), it
runs PySpark's daemon after three changes in its own process: a zip importer re-reads its
archive only when the file changed (PySpark's worker invalidates the import caches at every
task), ``pyspark`` is imported from the installed package's compiled files rather than
``pyspark.zip``, and the engine's modules are imported once, before workers are forked.
Workers and daemon are otherwise PySpark's. See docs/performance.md.
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
