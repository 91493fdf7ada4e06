"""The queries input's command-line arguments (``--queries``, ``--slices``, ``--weight``),
shared by the commands that take one."""

from __future__ import annotations

import argparse
from pathlib import Path

from releval.config import ANSWER_FORMATS, QueriesSource
from releval.errors import ConfigError


def add_queries_arguments(parser: argparse.ArgumentParser) -> None:
    """``--queries PATH``, ``--queries-format``, ``--query-id-column``, ``--slices a,b`` and
    ``--weight COLUMN``."""
    parser.add_argument("--queries", default=None, metavar="PATH",
                        help="one row per query with its attributes and traffic (Delta, "
                        "Parquet or CSV with a header): adds rows per slice value and, with "
                        "--weight, traffic-weighted rows (docs/statistics.md)")
    parser.add_argument("--queries-format", choices=ANSWER_FORMATS, default=None,
                        help="format of --queries (default: delta for a folder with a "
                        "_delta_log, parquet for a .parquet path or another folder, else csv)")
    parser.add_argument("--query-id-column", default=QueriesSource.query_id, metavar="COLUMN",
                        help="the --queries column holding the query id (default query_id)")
    parser.add_argument("--slices", default="", metavar="A,B",
                        help="comma-separated --queries columns to slice by")
    parser.add_argument("--weight", default=None, metavar="COLUMN",
                        help="the --queries column holding each query's traffic weight")


def _format(path: str) -> str:
    folder = Path(path)
    if (folder / "_delta_log").is_dir():
        return "delta"
    return "parquet" if path.endswith(".parquet") or folder.is_dir() else "csv"


def queries_source(args: argparse.Namespace) -> QueriesSource | None:
    """The queries input a command line names (None without ``--queries``).

    Raises:
        ConfigError: ``--slices`` or ``--weight`` without ``--queries``.
    """
    path = getattr(args, "queries", None)
    slices = tuple(s.strip() for s in (getattr(args, "slices", "") or "").split(",") if s.strip())
    weight = getattr(args, "weight", None)
    if path is None:
        if slices or weight:
            raise ConfigError("--slices and --weight name columns of --queries (one row per "
                              "query); give --queries PATH")
        return None
    return QueriesSource(path=path, format=getattr(args, "queries_format", None) or _format(path),
                         query_id=getattr(args, "query_id_column", QueriesSource.query_id),
                         weight=weight, slices=slices)
