"""One SparkSession for the whole test run: local[2], UI off, few shuffle partitions, Delta on."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from releval.config import SparkSettings
from releval.runtime.session import build_session

CONFORMANCE = Path(
    os.environ.get(
        "RELEVAL_CONFORMANCE_DIR",  # a worktree not next to shared/ can point at it
        Path(__file__).resolve().parents[1].parent / "shared" / "conformance" / "trec_eval",
    )
)


#: Spark compiles Java code (Janino) for each new plan's expressions and stages. A
#: production job compiles once and runs on millions of rows; the tests run hundreds of
#: small plans on a few rows each, where compiling costs more than it saves
#: (docs/performance.md). The tests run interpreted (``factoryMode`` is Spark's own
#: internal switch for its tests); the trec_eval conformance of the production engine
#: switches production's code generation back on (:func:`production_codegen`), and the
#: jobs that slow tests start in their own JVM run as production does.
TEST_CODEGEN = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = build_session(
        SparkSettings(
            master="local[2]",
            app_name="releval-tests",
            shuffle_partitions=2,
            conf={
                "spark.ui.enabled": "false",
                "spark.sql.adaptive.coalescePartitions.initialPartitionNum": "2",
                "spark.default.parallelism": "2",
                "spark.databricks.delta.snapshotPartitions": "2",
                **TEST_CODEGEN,
            },
        )
    )
    yield session
    session.stop()


@contextmanager
def _production_codegen(spark: SparkSession) -> Iterator[None]:
    # production's values are Spark's defaults (build_session sets neither key): unset
    for key in TEST_CODEGEN:
        spark.conf.unset(key)
    try:
        yield
    finally:
        for key, value in TEST_CODEGEN.items():
            spark.conf.set(key, value)


@pytest.fixture(scope="session")
def production_codegen(spark: SparkSession) -> Callable[[], AbstractContextManager[None]]:
    """``with production_codegen():`` runs its block with production's code generation."""
    return lambda: _production_codegen(spark)


@pytest.fixture(scope="session")
def conformance_dir() -> Path:
    if not CONFORMANCE.is_dir():
        pytest.skip(f"trec_eval conformance data not found at {CONFORMANCE} (a user machine without shared/)")
    return CONFORMANCE


@pytest.fixture
def shared_session(spark, monkeypatch):
    """Make the CLI use the test session, and not stop it."""
    monkeypatch.setattr("releval.runtime.session.build_session",
                        lambda settings, *, short=False: spark)
    monkeypatch.setattr(spark, "stop", lambda: None)
    return spark


#: The Spark SQL oracle's name in ``support.sql_oracle.ENGINES``: the cases that run through
#: it are the slow layer's (``make test``); the fast layer runs the production engine.
ORACLE_ENGINE = "sql"
#: The pytest-xdist group (``--dist loadgroup``) of each test: its module's, so that a module's
#: fixtures (inputs written once, a job run once) are made on one worker only; the modules
#: that share one process started for the whole run share a group: the Spark Connect server's.
GROUPS = {"connect": "connect"}


def _runs_the_oracle(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return False
    return any(v == ORACLE_ENGINE or (isinstance(v, tuple) and ORACLE_ENGINE in v)
               for v in callspec.params.values())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _runs_the_oracle(item):
            item.add_marker(pytest.mark.slow)
        group = GROUPS.get(item.path.parent.name, item.path.stem)
        item.add_marker(pytest.mark.xdist_group(group))
