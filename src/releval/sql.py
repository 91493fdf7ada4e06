"""``releval sql``: SQL over the output Delta tables without Spark (deltalake's DataFusion)."""

from __future__ import annotations

import pandas as pd

from releval.config import Config
from releval.errors import InputError
from releval.report.data import open_table, table_path

#: The tables ``releval sql`` registers; the first two must exist.
TABLES = ("per_query", "aggregate", "run_log", "comparison", "attribution", "agreement",
          "click_labels", "position_bias")


def query(config: Config, sql: str) -> pd.DataFrame:
    """Run ``sql`` over the config's output tables.

    Raises:
        InputError: the per-query or aggregate table is missing, or the query fails.
    """
    from deltalake import QueryBuilder

    builder = QueryBuilder()
    for name in TABLES:
        required = name in ("per_query", "aggregate")
        try:
            path = table_path(config, name)
        except InputError:
            if required:
                raise
            continue
        table = open_table(path)
        if table is None:
            if required:
                raise InputError(f"{name} table not found: {path} (run the evaluation job first)")
            continue
        builder = builder.register(name, table)
    try:
        result = builder.execute(sql).read_all()
    except Exception as exc:  # DataFusion raises plain exceptions for SQL errors
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"sql: {first}") from None
    import pyarrow as pa

    return pa.table(result).to_pandas()


def render(frame: pd.DataFrame) -> str:
    """The result as aligned text, every row, floats to 4 decimals."""
    if frame.empty:
        return "(no rows)"
    return frame.to_string(index=False, float_format=lambda v: f"{v:.4f}")
