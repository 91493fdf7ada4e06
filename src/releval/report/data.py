"""The report's inputs: the output Delta tables, read with the ``deltalake`` package.

The report reads Delta tables by path with delta-rs (``deltalake``), not Spark: no JVM
starts, so ``releval report`` on the sample takes about a second instead of the 15 s a
SparkSession costs, and it runs where only the tables' files are reachable. It reads the
aggregate table whole (one row per run partition, measure and averaging: small), the
per-query table for one date and the measures it plots (a partition filter), and the
run-log and comparison tables when they exist. Catalog tables (``output.*_table``) are
resolved by a metastore only Spark knows; the report refuses them with one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from releval import schemas as S
from releval.config import Config
from releval.errors import InputError
from releval.metrics.registry import REGISTRY
from releval.partitions import DEFAULT_DATE_COLUMN

#: Measures without a mean (the aggregate's ``sum`` rows); not plotted.
COUNT_MEASURES = tuple(sorted(n for n, spec in REGISTRY.items() if "macro" not in spec.averaging))
JUDGED = "Judged"
MACRO = "macro"


@dataclass(frozen=True)
class TableRead:
    """Which table version the report read (for the lineage section)."""

    name: str
    path: str
    version: int | None


@dataclass(frozen=True)
class ReportData:
    """Everything the report shows, as pandas frames.

    Attributes:
        aggregate: the aggregate table (all rows); partition values as strings.
        per_query: the per-query rows of ``date`` (every date when the run has no date
            column), measures with a mean only.
        comparison: the comparison table, or None when there is none.
        run_log: the run log rows of the job runs that wrote the aggregate rows, or None.
        run_columns: the partition columns that name a run (the run's partition
            columns without the date column), e.g. ``("system",)``.
        date_column: the date partition column, or None.
        date: the date the per-run figures show (the latest one), or None.
        tables: the tables read and their versions.
    """

    aggregate: pd.DataFrame
    per_query: pd.DataFrame
    comparison: pd.DataFrame | None
    run_log: pd.DataFrame | None
    run_columns: tuple[str, ...]
    date_column: str | None
    date: str | None
    tables: tuple[TableRead, ...]


def table_path(config: Config, name: str) -> str:
    """The path of output table ``name`` (``per_query``, ``aggregate``, ``run_log``,
    ``comparison``); a catalog table is an error."""
    if name in ("per_query", "aggregate"):
        path = getattr(config.output, f"{name}_path")
        table = getattr(config.output, f"{name}_table")
    else:
        path, table = config.located(name)
    if table:
        raise InputError(
            f"releval report reads Delta tables by path (deltalake, no Spark); "
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


def _as_strings(df: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    for c in columns:
        df[c] = df[c].map(lambda v: None if v is None or v != v else str(v))  # NaN -> None
    return df


def read_report_data(config: Config, *, date: str | None = None) -> ReportData:
    """Read the tables a config's batch job wrote.

    Args:
        config: the job config (output paths, run partition columns, measures).
        date: the date the per-run figures show (default: the latest in the aggregate).

    Raises:
        InputError: a table is missing or is a catalog table, or ``date`` has no rows.
    """
    parts = list(config.run.partition_columns)
    date_column = DEFAULT_DATE_COLUMN if DEFAULT_DATE_COLUMN in parts else None
    run_columns = tuple(c for c in parts if c != date_column)
    reads: list[TableRead] = []

    agg_path = table_path(config, "aggregate")
    agg_table = open_table(agg_path)
    if agg_table is None:
        raise InputError(f"aggregate table not found: {agg_path} (run the evaluation job first)")
    aggregate = _as_strings(agg_table.to_pandas(), parts)
    reads.append(TableRead("aggregate", agg_path, agg_table.version()))
    if aggregate.empty:
        raise InputError(f"aggregate table {agg_path} has no rows")

    if date_column is not None:
        dates = sorted(aggregate[date_column].dropna().unique())
        if date is None:
            date = dates[-1]
        elif date not in dates:
            raise InputError(
                f"--date {date}: the aggregate table {agg_path} has no rows for it "
                f"(dates: {', '.join(dates)})"
            )
    elif date is not None:
        raise InputError(f"--date {date}: the run has no {DEFAULT_DATE_COLUMN} partition column")

    pq_path = table_path(config, "per_query")
    pq_table = open_table(pq_path)
    if pq_table is None:
        raise InputError(f"per-query table not found: {pq_path}")
    reads.append(TableRead("per_query", pq_path, pq_table.version()))
    filters = [(S.MEASURE, "not in", list(COUNT_MEASURES))]
    if date_column is not None:
        pq_schema = {f.name: f.type for f in pq_table.schema().fields}
        # the partition value in the column's own type (string, or date)
        value = pd.Timestamp(date).date() if "date" in str(pq_schema[date_column]) else date
        filters.append((date_column, "=", value))
    columns = [*parts, S.QUERY_ID, S.MEASURE, S.CUTOFF, S.MEASURE_KEY, S.VALUE, S.NUM_RET]
    per_query = _as_strings(pq_table.to_pandas(columns=columns, filters=filters), parts)

    comparison = None
    cmp_path, _ = config.located("comparison")
    if cmp_path and (cmp_table := open_table(cmp_path)) is not None:
        comparison = cmp_table.to_pandas()
        reads.append(TableRead("comparison", cmp_path, cmp_table.version()))

    run_log = None
    log_path, _ = config.located("run_log")
    if log_path and (log_table := open_table(log_path)) is not None:
        ids = sorted(aggregate[S.JOB_RUN_ID].dropna().unique())
        log = log_table.to_pandas()
        run_log = log[log[S.JOB_RUN_ID].isin(ids)].sort_values("started_at")
        reads.append(TableRead("run_log", log_path, log_table.version()))

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


def run_label(row: pd.Series | dict, run_columns: Sequence[str]) -> str:
    """A run's name in the figures: its run partition values joined by '/'."""
    return "/".join(str(row[c]) for c in run_columns) if run_columns else "run"
