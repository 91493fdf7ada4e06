"""The ``releval`` command: ad-hoc evaluation of a run file or table against qrels.

    releval evaluate --run PATH --qrels PATH [--format trec|parquet|delta] [--measures LIST]
                     [--output DIR] [--trec-eval-output FILE] [--explain] [--strict] [...]
    releval compare --config FILE --baseline KEY=VALUE --candidate KEY=VALUE [...]
    releval report|sql|views --config FILE [...]
    releval measures

User errors (bad measure, missing file or column) print one line on stderr and exit with 2.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from releval.config import (
    NEGATIVE_LABELS,
    Config,
    EvaluationSettings,
    OutputSettings,
    QrelsSource,
    RunSource,
    SparkSettings,
    validate,
)
from releval.errors import RelevalError

if TYPE_CHECKING:  # pyspark is imported only by the commands that start Spark
    from pyspark.sql import SparkSession

DEFAULT_MEASURES = "P@5,P@10,R@100,Hit@10,RR,nDCG@10,AP,AP@100"
#: trec_eval -q always prints these counts; --trec-eval-output adds them to the measures.
TREC_EVAL_COUNTS = "num_ret,num_rel,num_rel_ret"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="releval", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ev = sub.add_parser("evaluate", help="evaluate a run against qrels")
    ev.add_argument("--run", required=True, help="run file, folder or Delta path")
    ev.add_argument("--qrels", required=True, help="qrels file, folder or Delta path")
    ev.add_argument("--format", choices=["trec", "parquet", "delta"], default="trec",
                    help="format of both inputs (default: trec)")
    ev.add_argument("--qrels-format", choices=["trec", "parquet", "delta"], default=None,
                    help="format of the qrels when it differs from --format")
    ev.add_argument("--measures", default=DEFAULT_MEASURES,
                    help=f"comma-separated measures (default: {DEFAULT_MEASURES})")
    ev.add_argument("--relevance-level", type=int, default=1,
                    help="a label >= this is relevant for binary measures (default 1)")
    ev.add_argument("--rank-by", choices=["score", "rank"], default="score",
                    help="order by score (trec_eval) or by the given rank column")
    ev.add_argument("--missing-queries", choices=["zero", "skip"], default="zero",
                    help="qrels queries absent from the run: score 0 (trec_eval -c) or skip")
    ev.add_argument("--partition-columns", default="",
                    help="comma-separated run partition columns (Parquet/Delta runs); "
                    "a TREC run is partitioned by its tag as run_id")
    ev.add_argument("--output", default=None,
                    help="folder for the per_query and aggregate Delta tables "
                    "(default: a temporary folder)")
    ev.add_argument("--trec-eval-output", default=None,
                    help="also write per-query and 'all' lines in trec_eval -q format")
    ev.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    ev.add_argument("--negative-labels", choices=list(NEGATIVE_LABELS), default=NEGATIVE_LABELS[0],
                    help="what a negative qrels label means: in the pool but not judged "
                    "(unjudged, default, trec_eval) or judged non-relevant (judged)")
    ev.add_argument("--explain", action="store_true",
                    help="print the physical plan of the per-query computation and exit; "
                    "nothing is computed or written")
    ev.add_argument("--profile", action="store_true",
                    help="print the wall time and Spark jobs of each phase at the end")
    ev.add_argument("--strict", action="store_true",
                    help="fail (exit 2) when any input row is quarantined; the quarantine "
                    "table is written first")
    add_compare_arguments(sub.add_parser(
        "compare", help="compare candidate run partitions with a baseline (paired tests)"))
    add_report_arguments(sub.add_parser(
        "report", help="write an HTML report with figures over the output tables"))
    sql = sub.add_parser("sql", help="SQL over the output tables, without Spark (deltalake)")
    sql.add_argument("--config", required=True, help="the TOML config whose output tables to read")
    sql.add_argument("query", help="the SQL; tables: per_query, aggregate, run_log, comparison")
    sub.add_parser("measures", help="list the measures and their formulas")
    views = sub.add_parser("views", help="the wide views of the output tables (docs/warehouse.md): "
                           "created for catalog tables, printed as SQL for paths")
    views.add_argument("--config", required=True, help="the job's TOML config")
    views.add_argument("--dialect", choices=["spark", "duckdb"], default="spark",
                       help="SQL for Spark (default) or DuckDB (delta_scan over the paths)")
    return parser


def add_report_arguments(rep: argparse.ArgumentParser) -> None:
    """The arguments of ``releval report`` (also ``jobs/report.py``)."""
    rep.add_argument("--config", required=True,
                     help="the TOML config whose output tables to read (path tables without "
                     "Spark; catalog tables through a SparkSession built from [spark])")
    rep.add_argument("--output", default="report.html",
                     help="the HTML file to write (default report.html)")
    rep.add_argument("--date", default=None,
                     help="the date of the per-run figures (default: the latest in the tables)")


def add_compare_arguments(cmp: argparse.ArgumentParser) -> None:
    """The arguments of ``releval compare`` (also ``jobs/compare.py``)."""
    cmp.add_argument("--config", required=True,
                     help="the TOML config whose per-query table to read ([comparison] settings)")
    cmp.add_argument("--baseline", required=True, metavar="KEY=VALUE[,KEY=VALUE]",
                     help="the baseline run partition, e.g. system=bm25")
    cmp.add_argument("--candidate", action="append", required=True,
                     metavar="KEY=VALUE[,KEY=VALUE]",
                     help="a candidate run partition (repeatable), e.g. system=hybrid")
    cmp.add_argument("--partition", action="append", default=[], metavar="KEY=VALUE",
                     help="values shared by every side, e.g. date=2026-11-28 (repeatable)")
    cmp.add_argument("--comparison-id", default=None, help="the comparison's id (default: uuid4)")


def config_from_args(args: argparse.Namespace, output: str) -> Config:
    """The job config an ``evaluate`` command line describes."""
    parts = tuple(p.strip() for p in args.partition_columns.split(",") if p.strip())
    if args.format == "trec":
        parts = ("run_id",)
    trec_file = getattr(args, "trec_eval_output", None)
    measures = (args.measures, TREC_EVAL_COUNTS) if trec_file else (args.measures,)
    config = Config(
        run=RunSource(path=args.run, format=args.format, partition_columns=parts,
                      rank_by=args.rank_by),
        qrels=QrelsSource(path=args.qrels, format=args.qrels_format or args.format),
        evaluation=EvaluationSettings(
            measures=measures,
            relevance_level=args.relevance_level,
            missing_queries=args.missing_queries,
            strict=bool(getattr(args, "strict", False)),
            negative_labels=getattr(args, "negative_labels", NEGATIVE_LABELS[0]),
        ),
        output=OutputSettings(
            per_query_path=str(Path(output) / "per_query"),
            aggregate_path=str(Path(output) / "aggregate"),
            quarantine_path=str(Path(output) / "quarantine"),
        ),
        spark=SparkSettings(master=args.master, app_name="releval-cli", shuffle_partitions=8),
    )
    return validate(config, source="command line")


def _session(config: Config) -> SparkSession:
    """A command's SparkSession: a short job's JVM (C1 only) when the inputs are small local
    files (:func:`releval.runtime.session.short_job`)."""
    from releval.runtime.session import build_session, short_job

    return build_session(config.spark, short=short_job(config))


def _evaluate(args: argparse.Namespace) -> int:
    from releval.core.measures import parse_measures
    from releval.io.trec_eval_format import write_trec_eval_file
    from releval.job import pipeline
    from releval.runtime.profile import Phases

    parse_measures([args.measures], relevance_level=args.relevance_level)  # fail fast
    for name in (args.run, args.qrels):
        if "://" not in name and not Path(name).exists():
            raise RelevalError(f"input not found: {name}")
    with tempfile.TemporaryDirectory(prefix="releval-") as tmp:
        config = config_from_args(args, args.output or tmp)
        spark = _session(config)
        if args.explain:
            try:
                print(pipeline.explain(spark, config))
            finally:
                spark.stop()
            return 0
        phases = Phases(spark)
        try:
            summary = pipeline.run(spark, config, phases=phases)
            keys = [m.key for m in pipeline.job_measures(config)]
            print(summary.overview(keys, config.run.partition_columns))
            if args.trec_eval_output:
                with phases.phase("trec_eval file"):
                    write_trec_eval_file(
                        pipeline.read_per_query(spark, config),
                        pipeline.read_aggregate(spark, config),
                        args.trec_eval_output,
                    )
        finally:
            spark.stop()
    print(summary.render())
    if getattr(args, "profile", False):
        print(phases.render())
    return 0


def _compare(args: argparse.Namespace) -> int:
    from releval.config import load_config
    from releval.errors import ComparisonError
    from releval.job import compare as compare_job

    config = load_config(args.config)
    columns = config.run.partition_columns
    shared: dict[str, str] = {}
    for item in args.partition:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ComparisonError(f"--partition {item!r}: expected KEY=VALUE")
        shared[key.strip()] = value.strip()
    baseline = compare_job.parse_side(args.baseline, shared=shared, columns=columns)
    candidates = [compare_job.parse_side(c, shared=shared, columns=columns) for c in args.candidate]
    spark = _session(config)
    try:
        report = compare_job.run(spark, config, baseline=baseline, candidates=candidates,
                                comparison_id=args.comparison_id)
    finally:
        spark.stop()
    print(report.render())
    return 0


def _report(args: argparse.Namespace) -> int:
    from releval import report
    from releval.config import load_config
    from releval.report.data import needs_spark

    config = load_config(args.config)
    if needs_spark(config):  # catalog tables: only Spark knows the metastore
        spark = _session(config)
        try:
            path = report.write(config, args.output, date=args.date, config_name=args.config,
                                spark=spark)
        finally:
            spark.stop()
    else:
        path = report.write(config, args.output, date=args.date, config_name=args.config)
    print(f"releval report: {path} ({path.stat().st_size // 1024} KiB)")
    return 0


def _sql(args: argparse.Namespace) -> int:
    from releval import sql
    from releval.config import load_config

    print(sql.render(sql.query(load_config(args.config), args.query)))
    return 0


def _views(args: argparse.Namespace) -> int:
    from releval.config import load_config
    from releval.io.views import views_command

    config = load_config(args.config)
    spark = _session(config)
    try:
        print(views_command(spark, config, dialect=args.dialect))
    finally:
        spark.stop()
    return 0


def _list_measures() -> int:
    from releval.core.measures import REGISTRY

    for name, spec in sorted(REGISTRY.items()):
        aliases = f" (also {', '.join(spec.aliases)})" if spec.aliases else ""
        print(f"{name}{aliases}, cutoff {spec.cutoff}: {spec.description}")
    print(
        "\nSyntax: NAME[(rel=N)][@k][[judged]]: (rel=N) sets this measure's relevance "
        "threshold; [judged] computes it on judged documents only (condensed list, "
        "trec_eval -J). See docs/incomplete-judgments.md."
    )
    return 0


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
            return _list_measures()
        if args.command == "compare":
            return _compare(args)
        if args.command == "report":
            return _report(args)
        if args.command == "sql":
            return _sql(args)
        if args.command == "views":
            return _views(args)
        return _evaluate(args)
    except RelevalError as exc:
        print(f"releval: error: {one_line(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:  # a Spark analysis error the readers did not name: still one line
        if type(exc).__name__ not in SPARK_USER_ERRORS:
            raise
        print(f"releval: error: {one_line(exc)}", file=sys.stderr)
        return 2


#: Spark exceptions caused by user input (bad table, column or expression), not by a bug.
SPARK_USER_ERRORS = ("AnalysisException", "ParseException", "IllegalArgumentException")


def one_line(exc: BaseException) -> str:
    """The first line of an error message (Spark appends plans and stack traces)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


if __name__ == "__main__":
    sys.exit(main())
