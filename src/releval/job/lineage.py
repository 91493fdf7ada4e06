"""Lineage of the batch job: one run-log row per job run.

Every output row carries ``job_run_id``; its run-log row names the code, the config, the
inputs at their Delta versions, the partitions and the output versions the run wrote, so a
join on ``job_run_id`` tells which qrels and code produced a number. See docs/batch_jobs.md.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from importlib import metadata

from pyspark.sql import DataFrame, SparkSession

from releval.config import AnswersSource, Config, QrelsSource, RunSource
from releval.core.frames import local_frame
from releval.io import run_log
from releval.io.atomic import latest_version

#: run-log statuses
SUCCEEDED = "succeeded"
FAILED = "failed"
NOTHING_PENDING = "nothing_pending"


def releval_version() -> str:
    """The installed releval version (``0+unknown`` when not installed)."""
    try:
        return metadata.version("releval")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def canonical_config(config: Config) -> str:
    """The config as canonical JSON without [spark] (which changes how, not what, is computed)."""
    raw = dataclasses.asdict(config)
    raw.pop("spark", None)
    return json.dumps(raw, sort_keys=True, separators=(",", ":"), default=str)


def config_hash(config: Config) -> str:
    """sha256 hex digest of :func:`canonical_config`."""
    return hashlib.sha256(canonical_config(config).encode("utf-8")).hexdigest()


def input_version(
    spark: SparkSession, src: RunSource | QrelsSource | AnswersSource
) -> int | None:
    """The latest Delta version of an input (to pin it for the whole job); None if not Delta."""
    if src.format != "delta":
        return None
    return latest_version(spark, path=src.path, table=src.table)


def run_log_location(config: Config) -> tuple[str | None, str | None]:
    """(path, table) of the run log: configured, or next to the per-query table."""
    return config.located("run_log")


@dataclass(frozen=True)
class RunRecord:
    """One run-log row (fields: :data:`releval.io.run_log.RUN_LOG_SCHEMA`)."""

    job_run_id: str
    status: str
    started_at: datetime
    finished_at: datetime
    releval_version: str
    config_hash: str
    config_json: str
    run_source: str
    run_version: int | None
    run_filter: str | None
    qrels_source: str
    qrels_version: int | None
    qrels_filter: str | None
    selection: str
    replace_predicate: str | None
    partitions: Sequence[Mapping[str, str]] = field(default_factory=tuple)
    per_query_version: int | None = None
    aggregate_version: int | None = None
    per_query_rows: int | None = None
    aggregate_rows: int | None = None
    error: str | None = None

    def to_frame(self, spark: SparkSession) -> DataFrame:
        """A one-row DataFrame of :data:`releval.io.run_log.RUN_LOG_SCHEMA`."""
        values = dataclasses.asdict(self)
        values["partitions"] = [dict(p) for p in self.partitions]
        return local_frame(spark, [tuple(values[f.name] for f in run_log.RUN_LOG_SCHEMA.fields)],
                           run_log.RUN_LOG_SCHEMA)
