"""``releval evaluate``: a run file or table against qrels, through the batch job's pipeline."""

from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from releval.cli.queries import add_queries_arguments, queries_source
from releval.config import (
    ANSWER_FORMATS,
    FORMATS,
    NEGATIVE_LABELS,
    AnswersSource,
    Config,
    EvaluationSettings,
    OutputSettings,
    QrelsSource,
    RunSource,
    SparkSettings,
    check_remote,
    validate,
)
from releval.errors import RelevalError

DEFAULT_MEASURES = "P@5,P@10,R@100,Hit@10,RR,nDCG@10,AP,AP@100"

if TYPE_CHECKING:  # pyspark is imported by the commands that start Spark
    from pyspark.sql import SparkSession


#: trec_eval -q always prints these counts; --trec-eval-output adds them to the measures.
TREC_EVAL_COUNTS = "num_ret,num_rel,num_rel_ret"


def add_evaluate_arguments(ev: argparse.ArgumentParser) -> None:
    """The arguments of ``releval evaluate``."""
    ev.add_argument("--run", required=True, help="run file, folder or Delta path")
    ev.add_argument("--qrels", default=None, help="qrels file, folder or Delta path "
                    "(without it, --relevant or --graded name the run's gold columns)")
    ev.add_argument("--format", choices=FORMATS, default="trec",
                    help="format of both inputs (default: trec)")
    ev.add_argument("--qrels-format", choices=FORMATS, default=None,
                    help="format of the qrels when it differs from --format")
    ev.add_argument("--measures", default=DEFAULT_MEASURES,
                    help="comma-separated measures, or trec_eval / all_trec for trec_eval's "
                    f"default set / all its measures (default: {DEFAULT_MEASURES})")
    ev.add_argument("--relevance-level", type=int, default=1,
                    help="a label >= this is relevant for binary measures (default 1)")
    ev.add_argument("--judged-only", action="store_true",
                    help="evaluate every measure on the judged documents only (trec_eval -J); "
                    "--trec-eval-output then prints them under trec_eval's names")
    ev.add_argument("--rank-by", choices=["score", "rank"], default="score",
                    help="order by score (trec_eval) or by the given rank column")
    ev.add_argument("--missing-queries", choices=["zero", "skip"], default="zero",
                    help="qrels queries absent from the run: score 0 (trec_eval -c) or skip")
    ev.add_argument("--partition-columns", default="",
                    help="comma-separated run partition columns (Parquet/Delta runs); "
                    "a TREC run is partitioned by its tag as run_id")
    ev.add_argument("--output", default=None,
                    help="folder for the per_query, aggregate, quarantine (and with "
                    "--answers attribution) Delta tables (default: a temporary folder)")
    ev.add_argument("--trec-eval-output", default=None,
                    help="also write trec_eval -q's text: per-query and 'all' lines, in its order")
    ev.add_argument("--master", default=None,
                    help="Spark master (default local[*]; not with a Spark Connect server)")
    add_remote_argument(ev)
    ev.add_argument("--negative-labels", choices=list(NEGATIVE_LABELS), default=NEGATIVE_LABELS[0],
                    help="what a negative qrels label means: in the pool but not judged "
                    "(unjudged, default, trec_eval) or judged non-relevant (judged)")
    ev.add_argument("--depth", type=positive_int, default=None, metavar="M",
                    help="evaluate only the top M documents of each ranking, after the "
                    "tie-break (trec_eval -M; default: all)")
    ev.add_argument("--run-slices", default=None, metavar="A,B",
                    help="comma-separated run columns to slice by, each holding one value per "
                    "query of a run partition (Parquet/Delta runs; a query whose rows "
                    "disagree gets the slice value (conflicting))")
    ev.add_argument("--window", default=None, metavar="COLUMN",
                    help="the run column holding each query's window k_q, the top documents "
                    "its consumer used, read by the @window measures (Parquet/Delta runs)")
    ev.add_argument("--explain", action="store_true",
                    help="print the physical plan of the per-query computation and exit; "
                    "nothing is computed or written")
    ev.add_argument("--profile", action="store_true",
                    help="print the wall time and Spark jobs of each phase at the end")
    ev.add_argument("--strict", action="store_true",
                    help="fail (exit 2) when any input row is quarantined; the quarantine "
                    "table is written first")
    ev.add_argument("--ranked", default=None, metavar="COLUMN",
                    help="the run column holding each query's ranking as an array, one row "
                    "per run partition and query (Parquet/Delta/JSON Lines runs)")
    ev.add_argument("--relevant", default=None, metavar="COLUMN",
                    help="the qrels (or, without --qrels, the run) column holding each "
                    "query's relevant ids as an array, label 1 each")
    ev.add_argument("--graded", default=None, metavar="COLUMN",
                    help="as --relevant, a map id -> grade (or an array of {id, grade})")
    ev.add_argument("--mlflow", action="store_true",
                    help="log the macro means, settings and per-query rows to MLflow (the "
                    "tracking URI of MLFLOW_TRACKING_URI; pip install 'releval[mlflow]')")
    ev.add_argument("--answers", default=None,
                    help="answer scores in [0, 1] per run partition and query (columns "
                    "query_id, answer_score and the run partition columns; run_id for a TREC "
                    "run): adds answer_score to the per-query table and writes the "
                    "attribution table (docs/answers.md)")
    ev.add_argument("--answers-format", choices=ANSWER_FORMATS, default=None,
                    help="format of --answers (default: delta for a folder with a _delta_log, "
                    "parquet for a .parquet path or another folder, else csv)")
    ev.add_argument("--correct-at", type=float, default=AnswersSource.correct_at,
                    help="an answer is correct when its score >= this (default 0.5)")
    ev.add_argument("--retrieved-by", default=AnswersSource.retrieved_by,
                    help="the measure that says the evidence was retrieved (default "
                    "Hit@window with --window, else Hit@10)")
    ev.add_argument("--retrieved-at", type=float, default=AnswersSource.retrieved_at,
                    help="the evidence was retrieved when --retrieved-by >= this (default 1)")
    add_queries_arguments(ev)


def add_remote_argument(parser: argparse.ArgumentParser) -> None:
    """``--remote``: the Spark Connect server a command's session is a client of."""
    parser.add_argument(
        "--remote", default=None, metavar="sc://HOST:PORT",
        help="run on this Spark Connect server (default: SPARK_REMOTE when set, else a "
        "classic session; a --master or [spark] master is then ignored)")


def remote_of(args: argparse.Namespace) -> str | None:
    """The command line's ``--remote`` (checked), else None (then the config's ``remote``,
    else ``SPARK_REMOTE``, decides: :func:`releval.runtime.session.remote_url`)."""
    remote = getattr(args, "remote", None)
    check_remote(remote, "--remote")
    return remote


def default_master(args: argparse.Namespace) -> str | None:
    """``--master``, else ``local[*]`` unless the session is a Spark Connect client."""
    connect = remote_of(args) or os.environ.get("SPARK_REMOTE")
    return args.master or (None if connect else "local[*]")


def answers_format(path: str) -> str:
    """The format of an answers path given without ``--answers-format``."""
    folder = Path(path)
    if (folder / "_delta_log").is_dir():
        return "delta"
    return "parquet" if path.endswith(".parquet") or folder.is_dir() else "csv"


def _answers(args: argparse.Namespace) -> AnswersSource | None:
    path = getattr(args, "answers", None)
    if path is None:
        return None
    return AnswersSource(path=path, format=args.answers_format or answers_format(path),
                         correct_at=args.correct_at, retrieved_by=args.retrieved_by,
                         retrieved_at=args.retrieved_at)


def positive_int(text: str) -> int:
    """An argparse type: a positive integer, else the argument's error (exit code 2)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _names(text: str | None) -> tuple[str, ...]:
    """The names of a comma-separated list (``"a, b"`` -> ``("a", "b")``)."""
    return tuple(s.strip() for s in (text or "").split(",") if s.strip())


def config_from_args(args: argparse.Namespace, output: str) -> Config:
    """The job config an ``evaluate`` command line describes."""
    parts = tuple(p.strip() for p in args.partition_columns.split(",") if p.strip())
    if args.format == "trec":
        parts = ("run_id",)
    trec_file = getattr(args, "trec_eval_output", None)
    measures = (args.measures, TREC_EVAL_COUNTS) if trec_file else (args.measures,)
    ranked = getattr(args, "ranked", None)
    qrels = getattr(args, "qrels", None)
    config = Config(
        run=RunSource(path=args.run, format=args.format, partition_columns=parts,
                      rank_by="rank" if ranked else args.rank_by,
                      window=getattr(args, "window", None), ranked=ranked,
                      slices=_names(getattr(args, "run_slices", None))),
        qrels=QrelsSource(path=qrels or args.run,
                          format=(args.qrels_format or args.format) if qrels else args.format,
                          relevant=getattr(args, "relevant", None),
                          graded=getattr(args, "graded", None)),
        evaluation=EvaluationSettings(
            measures=measures,
            relevance_level=args.relevance_level,
            missing_queries=args.missing_queries,
            strict=bool(getattr(args, "strict", False)),
            judged_only=bool(getattr(args, "judged_only", False)),
            negative_labels=getattr(args, "negative_labels", NEGATIVE_LABELS[0]),
            depth=getattr(args, "depth", None),
        ),
        output=OutputSettings(
            per_query_path=str(Path(output) / "per_query"),
            aggregate_path=str(Path(output) / "aggregate"),
            quarantine_path=str(Path(output) / "quarantine"),
            attribution_path=str(Path(output) / "attribution"),
            mlflow=bool(getattr(args, "mlflow", False)),
        ),
        spark=SparkSettings(
            master=default_master(args), remote=remote_of(args), app_name="releval-cli",
            shuffle_partitions=8),
        answers=_answers(args),
        queries=queries_source(args),
    )
    return validate(config, source="command line")


def session(config: Config, remote: str | None = None) -> SparkSession:
    """A command's SparkSession: a short job's JVM (C1 only) when the inputs are small local
    files (:func:`releval.runtime.session.short_job`); a client of ``remote`` (a Spark Connect
    URL, ``--remote``) when given. It must have Delta Lake (the commands read or write it)."""
    from releval.runtime.delta import require_delta
    from releval.runtime.session import build_session, short_job

    if remote:
        config = dataclasses.replace(config, spark=dataclasses.replace(config.spark, remote=remote))
    spark = build_session(config.spark, short=short_job(config))
    require_delta(spark, "releval")
    return spark


def run(args: argparse.Namespace) -> int:
    from releval.core.measures import check_window, parse_measures
    from releval.io.trec_eval_format import write_trec_eval_file
    from releval.job import pipeline
    from releval.runtime.profile import Phases

    check_window(parse_measures([args.measures], relevance_level=args.relevance_level),
                 getattr(args, "window", None))  # fail fast
    if args.qrels is None and not (args.relevant or args.graded):
        raise RelevalError("--qrels is required unless --relevant or --graded names the "
                           "run's gold label column")
    for name in (args.run, *([args.qrels] if args.qrels else []),
                 *([args.answers] if args.answers else []),
                 *([args.queries] if args.queries else [])):
        if "://" not in name and not Path(name).exists():
            raise RelevalError(f"input not found: {name}")
    with tempfile.TemporaryDirectory(prefix="releval-") as tmp:
        config = config_from_args(args, args.output or tmp)
        spark = session(config)
        if args.explain:
            try:
                print(pipeline.explain(spark, config))
            finally:
                spark.stop()
            return 0
        phases = Phases(spark)

        def trec_eval_file(done: pipeline.Results) -> None:
            # from the job's persisted rows and its aggregate rows: the tables are not read back
            with phases.phase("trec_eval file"):
                write_trec_eval_file(
                    done.queries, done.measures, done.aggregate, args.trec_eval_output,
                    partition_columns=done.partition_columns, judged_only=args.judged_only,
                )

        try:
            summary = pipeline.run(
                spark, config, phases=phases,
                then=trec_eval_file if args.trec_eval_output else None,
            )
            keys = [m.key for m in pipeline.job_measures(config)]
            print(summary.overview(keys, config.run.partition_columns))
            if config.output.mlflow:  # before the temporary folder goes
                from releval.job.mlflow_out import log_summary

                print(f"MLflow run: {log_summary(spark, config, summary)}")
        finally:
            spark.stop()
    print(summary.render())
    if getattr(args, "profile", False):
        print(phases.render())
    return 0
