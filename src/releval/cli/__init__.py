"""The ``releval`` command: ad-hoc evaluation of a run file or table against qrels.

    releval evaluate --run PATH --qrels PATH [--format trec|parquet|delta] [--measures LIST]
                     [--output DIR] [--trec-eval-output FILE] [--judged-only] [--explain] [...]
    releval compare --qrels PATH --run PATH --run PATH [...] [--baseline TAG] [--output DIR]
    releval compare --config FILE --baseline KEY=VALUE --candidate KEY=VALUE [...]
    releval gate --qrels PATH --run BASE --run CAND --rule RULE [--rule RULE ...] [...]
    releval gate --config FILE --baseline KEY=VALUE --candidate KEY=VALUE [--rule RULE ...]
    releval agree --config FILE [--other-filter SQL] [--run [--baseline KEY=VALUE]] [...]
    releval report|sql|views --config FILE [...];  releval measures
    releval clicks labels|measures|interleaving --events PATH [...]

User errors (bad measure, missing file or column) print one line on stderr and exit with 2;
``releval gate`` exits 0 on a pass, 1 on a fail and 3 when inconclusive.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence

from releval.cli import agree, clicks, compare, evaluate, gate, tables
from releval.cli.agree import add_agree_arguments
from releval.cli.clicks import add_clicks_arguments
from releval.cli.compare import add_compare_arguments
from releval.cli.evaluate import add_evaluate_arguments, add_remote_argument, config_from_args
from releval.cli.gate import add_gate_arguments
from releval.cli.tables import add_report_arguments
from releval.errors import RelevalError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="releval", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    add_evaluate_arguments(sub.add_parser("evaluate", help="evaluate a run against qrels"))
    add_compare_arguments(sub.add_parser(
        "compare", help="compare candidate run partitions with a baseline (paired tests)"))
    add_gate_arguments(sub.add_parser(
        "gate", help="a release decision: rules with margins; exit 0 pass, 1 fail, "
        "3 inconclusive"))
    add_agree_arguments(sub.add_parser(
        "agree", help="agreement of two qrels versions: labels (kappa) and, with --run, "
        "system orderings (tau) and significance decisions"))
    add_report_arguments(sub.add_parser(
        "report", help="write an HTML report with figures over the output tables"))
    add_clicks_arguments(sub.add_parser(
        "clicks", help="a search log's impressions and clicks: labels and the position bias, "
        "online measures, interleaving"))
    sql = sub.add_parser("sql", help="SQL over the output tables, without Spark (deltalake)")
    sql.add_argument("--config", required=True, help="the TOML config whose output tables to read")
    sql.add_argument("query", help="the SQL; tables: per_query, aggregate, run_log, comparison, "
                     "attribution, agreement, click_labels, position_bias")
    sql.add_argument("--remote", default=None, metavar="sc://HOST:PORT",
                     help="accepted as by the other commands; sql reads the tables without Spark")
    sub.add_parser("measures", help="list the measures and their formulas")
    views = sub.add_parser("views", help="the wide views of the output tables (docs/warehouse.md): "
                           "created for catalog tables, printed as SQL for paths")
    views.add_argument("--config", required=True, help="the job's TOML config")
    views.add_argument("--dialect", choices=["spark", "duckdb"], default="spark",
                       help="SQL for Spark (default) or DuckDB (delta_scan over the paths)")
    add_remote_argument(views)
    return parser


def quiet_spark_error_logs() -> None:
    """Stop PySpark from logging analysis errors to stderr as JSON lines.

    The readers turn those errors into one-line InputErrors; the log would only repeat them.
    """
    import logging

    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``releval`` command."""
    args = _parser().parse_args(argv)
    quiet_spark_error_logs()
    try:
        if args.command == "measures":
            return tables.list_measures()
        if args.command == "compare":
            return compare.run(args)
        if args.command == "gate":
            return gate.run(args)
        if args.command == "agree":
            return agree.run(args)
        if args.command == "clicks":
            return clicks.run(args)
        if args.command == "report":
            return tables.report(args)
        if args.command == "sql":
            return tables.sql(args)
        if args.command == "views":
            return tables.views(args)
        return evaluate.run(args)
    except RelevalError as exc:
        print(f"releval: error: {one_line(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:  # a Spark analysis error the readers did not name: still one line
        if type(exc).__name__ not in SPARK_USER_ERRORS:
            raise
        print(f"releval: error: {one_line(exc)}", file=sys.stderr)
        return 2


def run(argv: Sequence[str] | None = None) -> None:
    """The ``releval`` command as a process: :func:`main`, then exit with its code.

    deltalake (the tables read without Spark) can abort the interpreter's teardown, so once
    it was imported the process exits right after flushing its output. A reader that closes
    the pipe early (``releval measures | head``) ends the process quietly with status 141, as
    a SIGPIPE ends other commands."""
    try:
        code = main(argv)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 128 + signal.SIGPIPE
    sys.stderr.flush()
    if "deltalake" in sys.modules:
        os._exit(code)
    sys.exit(code)


#: Spark exceptions caused by user input (bad table, column or expression), not by a bug.
SPARK_USER_ERRORS = ("AnalysisException", "ParseException", "IllegalArgumentException")


def one_line(exc: BaseException) -> str:
    """The first line of an error message (Spark appends plans and stack traces)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


__all__ = ["add_compare_arguments", "add_report_arguments", "config_from_args", "main", "run"]
