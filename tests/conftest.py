"""One SparkSession for the whole test run: local[2], UI off, few shuffle partitions, Delta on."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from releval.config import SparkSettings
from releval.session import build_session

CONFORMANCE = Path(
    os.environ.get(
        "RELEVAL_CONFORMANCE_DIR",  # a worktree not next to shared/ can point at it
        Path(__file__).resolve().parents[1].parent / "shared" / "conformance" / "trec_eval",
    )
)


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
            },
        )
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def conformance_dir() -> Path:
    if not CONFORMANCE.is_dir():
        pytest.skip(f"trec_eval conformance data not found at {CONFORMANCE} (a user machine without shared/)")
    return CONFORMANCE
