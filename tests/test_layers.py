"""The package's layers import one way: a module imports its own layer and those below it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "releval"
#: lowest first; ``core`` may import only ``errors`` of the top-level modules, the other
#: layers also ``config`` and ``display``; the top-level modules may import any layer
LAYERS = ("core", "checks", "stats", "frames", "runtime", "io", "evaluation", "job")
SHARED = {"core": {"errors"}}
DEFAULT_SHARED = {"errors", "config", "display"}


def imported_modules(source: str, package: list[str]) -> list[tuple[int, str]]:
    """(line, absolute module) of every import in ``source``; relative imports resolved
    against ``package`` (the importing module's package, e.g. ``["releval", "core"]``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def violations(source: str, layer: str, package: list[str]) -> list[str]:
    """The imports of a module of ``layer`` that point up, or at a top-level module it may not use."""
    allowed_top = SHARED.get(layer, DEFAULT_SHARED)
    out = []
    for line, module in imported_modules(source, package):
        parts = module.split(".")
        if parts[0] != "releval" or len(parts) < 2:
            continue
        target = parts[1]
        if target in LAYERS:
            if LAYERS.index(target) > LAYERS.index(layer):
                out.append(f"line {line}: {layer} imports {module}")
        elif target not in allowed_top and _is_module(target):
            out.append(f"line {line}: {layer} imports the top-level {module}")
    return out


def _is_module(name: str) -> bool:
    return (PACKAGE / f"{name}.py").is_file() or (PACKAGE / name).is_dir()


def test_no_layer_imports_upward():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        if len(parts) < 2 or parts[0] not in LAYERS:
            continue
        package = ["releval", *parts[:-1]]
        for problem in violations(path.read_text(), parts[0], package):
            found.append(f"{path.relative_to(PACKAGE)}: {problem}")
    assert found == []


#: What ``stats/`` may not import: it holds pure statistics (NumPy, SciPy, pandas); the Spark
#: frames that feed it are in ``frames/``
NOT_IN_STATS = ("pyspark", "py4j", "delta")


def spark_imports(source: str) -> list[str]:
    """The imports of :data:`NOT_IN_STATS` in ``source``."""
    return [f"line {line}: import {module}" for line, module in imported_modules(source, [])
            if module.split(".")[0] in NOT_IN_STATS]


def test_stats_imports_no_spark():
    found = [f"{path.relative_to(PACKAGE)}: {use}"
             for path in sorted((PACKAGE / "stats").rglob("*.py"))
             for use in spark_imports(path.read_text())]
    assert found == []


@pytest.mark.parametrize("source", ["from pyspark.sql import DataFrame\n",
                                    "import pyspark.sql.functions as F\n"])
def test_a_spark_import_is_found(source):
    assert spark_imports(source)


def test_numpy_and_scipy_pass():
    assert spark_imports("import numpy as np\nfrom scipy import special\n") == []


@pytest.mark.parametrize(
    ("layer", "package", "source"),
    [
        ("core", ["releval", "core"], "from releval.job import pipeline\n"),
        ("stats", ["releval", "stats"], "from releval.frames import comparison\n"),
        ("core", ["releval", "core"], "from releval.config import Config\n"),
        ("checks", ["releval", "checks"], "from ..stats import kernel\n"),
        ("stats", ["releval", "stats"], "import releval.io.atomic\n"),
        ("io", ["releval", "io"], "from releval import report\n"),
        ("job", ["releval", "job"], "from releval.cli import main\n"),
    ],
)
def test_a_wrong_import_is_found(layer, package, source):
    assert violations(source, layer, package)


@pytest.mark.parametrize(
    ("layer", "package", "source"),
    [
        ("core", ["releval", "core"], "from releval.errors import MeasureError\n"),
        ("core", ["releval", "core", "measures"], "from .. import columns\n"),
        ("checks", ["releval", "checks"], "from releval.core import columns\n"),
        ("job", ["releval", "job"], "from releval.config import Config\nimport releval.io.tables\n"),
    ],
)
def test_a_right_import_passes(layer, package, source):
    assert violations(source, layer, package) == []


#: What only a classic session has: its JVM (Py4J), its SparkContext and RDDs, and Delta's
#: Python ``DeltaTable`` (a JVM handle); only ``releval.runtime`` may use them, each behind a
#: function with a path for Spark Connect too.
CLASSIC_ATTRIBUTES = {"sparkContext", "_jvm", "_jsc", "_jdf", "_jsparkSession", "_sc", "rdd",
                      "_gateway"}
CLASSIC_IMPORTS = {"SparkContext", "RDD", "delta.tables", "py4j"}


def classic_only_uses(source: str) -> list[str]:
    """(line: what) of each use of :data:`CLASSIC_ATTRIBUTES` and :data:`CLASSIC_IMPORTS`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in CLASSIC_ATTRIBUTES:
            found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Name) and node.id in CLASSIC_IMPORTS:
            found.append(f"line {node.lineno}: {node.id}")
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names]
            module = getattr(node, "module", None) or ""
            for name in [module, *names, *(f"{module}.{n}" for n in names)]:
                if name in CLASSIC_IMPORTS or name.split(".")[0] == "py4j":
                    found.append(f"line {node.lineno}: import {name}")
                    break
    return found


def test_only_the_runtime_layer_reaches_into_a_classic_session():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        if parts[0] == "runtime":
            continue
        found += [f"{path.relative_to(PACKAGE)}: {use}" for use in classic_only_uses(path.read_text())]
    jobs = PACKAGE.parents[1] / "jobs"
    for path in sorted(jobs.glob("*.py")):
        found += [f"jobs/{path.name}: {use}" for use in classic_only_uses(path.read_text())]
    assert found == []


@pytest.mark.parametrize("source", [
    "n = df.sparkSession.sparkContext.defaultParallelism\n",
    "rows = df.rdd.collect()\n",
    "plan = df._jdf.queryExecution()\n",
    "from pyspark import SparkContext\n",
    "from delta.tables import DeltaTable\n",
    "jvm = spark._jvm\n",
])
def test_a_classic_only_use_is_found(source):
    assert classic_only_uses(source)


def test_the_dataframe_api_passes():
    source = "n = spark.conf.get('spark.master')\nrows = df.select('a').collect()\n"
    assert classic_only_uses(source) == []


#: The public functions' modules: they share the evaluation with the jobs through
#: ``releval.evaluation`` and import nothing of ``releval.job``
PUBLIC = ("api", "arguments", "gating", "result", "sources", "shown")


def test_the_public_functions_import_nothing_from_the_jobs():
    found = [f"{name}.py: line {line}: {module}" for name in PUBLIC
             for line, module in imported_modules((PACKAGE / f"{name}.py").read_text(),
                                                  ["releval"])
             if module.split(".")[:2] == ["releval", "job"]]
    assert found == []


def test_every_package_folder_is_a_regular_package():
    """A folder of modules without ``__init__.py`` imports in a checkout (a namespace
    package) but is left out of the wheel that ``make dist`` ships to a cluster."""
    folders = {p.parent for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    assert sorted(str(f.relative_to(PACKAGE)) for f in folders
                  if not (f / "__init__.py").exists()) == []
