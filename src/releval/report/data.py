"""The report's inputs: the output Delta tables, as pandas frames.

Path tables are read with delta-rs (``deltalake``), so no JVM starts; catalog tables need
the metastore, so they are read with the SparkSession the caller passes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from releval.config import Config
from releval.core import columns as S
from releval.core.measures.registry import REGISTRY
from releval.errors import InputError
from releval.evaluation.partitions import DEFAULT_DATE_COLUMN

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Measures without a mean (the aggregate's ``sum`` rows); not plotted.
COUNT_MEASURES = tuple(sorted(n for n, spec in REGISTRY.items() if "macro" not in spec.averaging))


@dataclass(frozen=True)
class TableRead:
    """Which table version the report read (for the lineage section)."""

    name: str
    path: str
    version: int | None


@dataclass(frozen=True)
class ReportData:
    """Everything the report shows, as pandas frames; partition values as strings.

    Attributes:
        per_query: the per-query rows of ``date`` (every date without a date column), measures
            with a mean only; with ``window_size`` when the table has it.
        run_log: the run-log rows of the runs that wrote the aggregate rows, or None.
        run_columns: the partition columns that name a run (all but the date column).
        date: the date the per-run figures show (the latest one), or None.
    """

    aggregate: pd.DataFrame
    per_query: pd.DataFrame
    comparison: pd.DataFrame | None
    run_log: pd.DataFrame | None
    run_columns: tuple[str, ...]
    date_column: str | None
    date: str | None
    tables: tuple[TableRead, ...]


def location(config: Config, name: str) -> tuple[str | None, str | None]:
    """(path, catalog table) of output table ``name``, e.g. ``per_query``."""
    if name in ("per_query", "aggregate"):
        return getattr(config.output, f"{name}_path"), getattr(config.output, f"{name}_table")
    return config.located(name)


def needs_spark(config: Config) -> bool:
    """True when one of the tables the report reads is a catalog table."""
    return any(location(config, n)[1]
               for n in ("per_query", "aggregate", "run_log", "comparison", "gate"))


def table_path(config: Config, name: str) -> str:
    """The path of output table ``name``; a catalog table is an error (deltalake only)."""
    path, table = location(config, name)
    if table:
        raise InputError(
            f"releval sql reads Delta tables by path (deltalake, no Spark); "
            f"output.{name}_table = {table!r} is a catalog table: set output.{name}_path"
        )
    if not path:
        raise InputError(f"no path for the {name} table: set output.{name}_path")
    return path


def open_table(path: str):  # deltalake.DeltaTable, or None when there is none
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        return DeltaTable(path)
    except TableNotFoundError:
        return None


#: A row filter: (column, "=" or "not in", value); partition values compared as strings.
Filter = tuple[str, str, object]


@dataclass(frozen=True)
class _Opened:
    """One table, opened: where it is, its version, and how to read rows of it."""

    where: str
    version: int | None
    read: Callable[[Sequence[str] | None, Sequence[Filter]], pd.DataFrame]
    #: the table's column names
    names: frozenset[str] = frozenset()


def _open_path(path: str) -> _Opened | None:
    table = open_table(path)
    if table is None:
        return None
    types = {f.name: str(f.type) for f in table.schema().fields}

    def read(columns: Sequence[str] | None, filters: Sequence[Filter]) -> pd.DataFrame:
        typed = []
        for column, op, value in filters:  # a date partition value as a date
            if op == "=" and "date" in types.get(column, ""):
                value = pd.Timestamp(str(value)).date()
            typed.append((column, op, value))
        return table.to_pandas(columns=list(columns) if columns else None, filters=typed or None)

    return _Opened(path, table.version(), read, frozenset(types))


def _open_catalog(spark: SparkSession, name: str) -> _Opened | None:
    from pyspark.sql import functions as F

    from releval.io.atomic import latest_version

    if not spark.catalog.tableExists(name):
        return None
    version = latest_version(spark, path=None, table=name)

    def read(columns: Sequence[str] | None, filters: Sequence[Filter]) -> pd.DataFrame:
        df = spark.read.option("versionAsOf", version).table(name)
        for column, op, value in filters:
            df = df.where(F.col(column).cast("string") == str(value) if op == "="
                          else ~F.col(column).isin(list(value)))  # type: ignore[call-overload]
        return (df.select(*columns) if columns else df).toPandas()

    return _Opened(name, version, read, frozenset(spark.table(name).columns))


def open_output(config: Config, name: str, spark: SparkSession | None) -> _Opened | None:
    """Output table ``name``, or None when it does not exist (or has no location)."""
    path, table = location(config, name)
    if table:
        if spark is None:
            raise InputError(f"output.{name}_table = {table!r} is a catalog table: the "
                             "report needs a SparkSession to read it")
        return _open_catalog(spark, table)
    return _open_path(path) if path else None


def as_strings(df: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    for c in columns:
        df[c] = df[c].map(lambda v: None if v is None or v != v else str(v))  # NaN -> None
    return df


def read_report_data(
    config: Config, *, date: str | None = None, spark: SparkSession | None = None
) -> ReportData:
    """Read the tables a config's batch job wrote.

    Args:
        date: the date the per-run figures show (default: the latest in the aggregate).
        spark: the session that reads catalog tables (path tables never need one).

    Raises:
        InputError: a table is missing, or ``date`` has no rows.
    """
    parts = list(config.run.partition_columns)
    date_column = DEFAULT_DATE_COLUMN if DEFAULT_DATE_COLUMN in parts else None
    run_columns = tuple(c for c in parts if c != date_column)
    reads: list[TableRead] = []

    agg = open_output(config, "aggregate", spark)
    if agg is None:
        where = location(config, "aggregate")
        raise InputError(f"aggregate table not found: {where[1] or where[0]} "
                         "(run the evaluation job first)")
    aggregate = as_strings(agg.read(None, ()), parts)
    reads.append(TableRead("aggregate", agg.where, agg.version))
    if aggregate.empty:
        raise InputError(f"aggregate table {agg.where} has no rows")

    if date_column is not None:
        dates = sorted(aggregate[date_column].dropna().unique())
        if date is None:
            date = dates[-1]
        elif date not in dates:
            raise InputError(
                f"--date {date}: the aggregate table {agg.where} has no rows for it "
                f"(dates: {', '.join(dates)})"
            )
    elif date is not None:
        raise InputError(f"--date {date}: the run has no {DEFAULT_DATE_COLUMN} partition column")

    pq = open_output(config, "per_query", spark)
    if pq is None:
        where = location(config, "per_query")
        raise InputError(f"per-query table not found: {where[1] or where[0]}")
    reads.append(TableRead("per_query", pq.where, pq.version))
    filters: list[Filter] = [(S.MEASURE, "not in", list(COUNT_MEASURES))]
    if date_column is not None:
        filters.append((date_column, "=", date))
    columns = [*parts, S.QUERY_ID, S.MEASURE, S.CUTOFF, S.MEASURE_KEY, S.VALUE, S.NUM_RET,
               *([S.WINDOW_SIZE] if S.WINDOW_SIZE in pq.names else [])]
    per_query = as_strings(pq.read(columns, filters), parts)

    comparison = None
    if (cmp := open_output(config, "comparison", spark)) is not None:
        comparison = cmp.read(None, ())
        reads.append(TableRead("comparison", cmp.where, cmp.version))

    run_log = None
    if (log_table := open_output(config, "run_log", spark)) is not None:
        ids = sorted(aggregate[S.JOB_RUN_ID].dropna().unique())
        log = log_table.read(None, ())
        run_log = log[log[S.JOB_RUN_ID].isin(ids)].sort_values("started_at")
        reads.append(TableRead("run_log", log_table.where, log_table.version))

    return ReportData(
        aggregate=aggregate,
        per_query=per_query,
        comparison=comparison,
        run_log=run_log,
        run_columns=run_columns,
        date_column=date_column,
        date=date,
        tables=tuple(reads),
    )


def latest_comparison(comparison: pd.DataFrame | None) -> pd.DataFrame | None:
    """The rows of the latest comparison (one run of ``releval compare``, by ``compared_at``);
    None when there is no comparison table, an empty frame when it has no rows."""
    if comparison is None or comparison.empty:
        return comparison
    latest = comparison.sort_values(S.COMPARED_AT).iloc[-1][S.COMPARISON_ID]
    return comparison[comparison[S.COMPARISON_ID] == latest]


def run_label(row: pd.Series | dict, run_columns: Sequence[str]) -> str:
    """A run's name in the figures: its run partition values joined by '/'."""
    return "/".join(str(row[c]) for c in run_columns) if run_columns else "run"
