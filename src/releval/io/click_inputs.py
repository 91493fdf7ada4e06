"""The interactions input a ``[clicks]`` section names, read as it is (its filter applied);
its rows are checked by :func:`releval.checks.interactions.check_interactions`."""

from __future__ import annotations

import dataclasses
import os

from pyspark.sql import DataFrame, SparkSession

from releval.config.clicks import ClicksSettings
from releval.errors import InputError
from releval.io.atomic import latest_version
from releval.io.writers import absolute


def interactions_name(src: ClicksSettings) -> str:
    """How the interactions are named in messages: their format and path or table."""
    return f"interactions {src.format} {'table ' + src.table if src.table else src.path}"


def interactions_label(src: ClicksSettings) -> str:
    """The interactions' lineage label: ``delta:/abs/path`` or ``delta:table:db.name``."""
    if src.table:
        return f"{src.format}:table:{src.table}"
    path = src.path or ""
    return f"{src.format}:{path if '://' in path else os.path.abspath(path)}"


def pinned(spark: SparkSession, src: ClicksSettings) -> ClicksSettings:
    """``src`` at its latest Delta version (read once, so every pass reads the same rows);
    files stay as they are."""
    if src.format != "delta" or src.version is not None:
        return src
    return dataclasses.replace(src, version=latest_version(spark, path=src.path, table=src.table))


def read_interactions(spark: SparkSession, src: ClicksSettings) -> DataFrame:
    """The interactions as read: Delta (at ``src.version``), Parquet, CSV with a header or
    JSON Lines, ``src.filter`` applied.

    Raises:
        InputError: the input cannot be read, or the filter does not match its columns.
    """
    try:
        if src.format == "csv":
            df = spark.read.option("header", "true").option("inferSchema", "true").csv(
                absolute(src.path or ""))
        elif src.format == "jsonl":
            df = spark.read.json(absolute(src.path or ""))
        else:
            reader = spark.read.format(src.format)
            if src.version is not None:
                reader = reader.option("versionAsOf", src.version)
            df = reader.table(src.table) if src.table else reader.load(absolute(src.path or ""))
    except Exception as exc:  # noqa: BLE001 - Spark's AnalysisException: a user error
        raise InputError(f"cannot read {interactions_name(src)}: "
                         f"{str(exc).splitlines()[0]}") from None
    if not src.filter:
        return df
    try:
        return df.where(src.filter)
    except Exception as exc:  # noqa: BLE001 - the user's expression
        raise InputError(f"{interactions_name(src)}: clicks.filter {src.filter!r} does not "
                         f"match its columns {df.columns}: {str(exc).splitlines()[0]}") from None
