"""``releval compare``: sides of a config's per-query table, or run files evaluated on the spot."""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from releval.cli.evaluate import (
    DEFAULT_MEASURES,
    add_remote_argument,
    default_master,
    positive_int,
    remote_of,
    session,
)
from releval.cli.queries import add_queries_arguments, queries_source
from releval.config import (
    ANSWER_FORMATS,
    CORRECTIONS,
    FORMATS,
    TESTS,
    AnswersSource,
    ComparisonSettings,
    Config,
    QrelsSource,
    QueriesSource,
    RunSource,
    SparkSettings,
    validate,
)
from releval.errors import ConfigError, InputError

if TYPE_CHECKING:  # pyspark is imported by the commands that start Spark
    from pyspark.sql import SparkSession


def add_compare_arguments(cmp: argparse.ArgumentParser) -> None:
    """The arguments of ``releval compare`` (also ``jobs/compare.py``): a config's per-query
    table (``--config``), or run files evaluated on the spot (``--qrels``, ``--run``)."""
    cmp.add_argument("--baseline", default=None, metavar="KEY=VALUE[,KEY=VALUE] | TAG",
                     help="with --config: the baseline run partition, e.g. system=bm25; "
                     "with --run: the baseline's run tag (default: the first run's)")
    table = cmp.add_argument_group("a config's per-query table")
    table.add_argument("--config", default=None,
                       help="the TOML config whose per-query table to read ([comparison] settings)")
    table.add_argument("--candidate", action="append", default=[],
                       metavar="KEY=VALUE[,KEY=VALUE]",
                       help="a candidate run partition (repeatable), e.g. system=hybrid")
    table.add_argument("--partition", action="append", default=[], metavar="KEY=VALUE",
                       help="values shared by every side, e.g. date=2026-11-28 (repeatable)")
    table.add_argument("--comparison-id", default=None,
                       help="the comparison's id (default: uuid4)")
    files = cmp.add_argument_group(
        "run files (no config)", "each run is evaluated and named by its tag: TREC's 6th "
        "field; for Parquet and Delta the run_id column, else the file name")
    files.add_argument("--qrels", default=None, help="qrels file, folder or Delta path")
    files.add_argument("--run", action="append", default=[],
                       help="a run file, folder or Delta path (repeat: two or more)")
    files.add_argument("--format", choices=FORMATS, default=None,
                       help="format of the runs and the qrels (default: trec)")
    files.add_argument("--qrels-format", choices=FORMATS, default=None,
                       help="format of the qrels when it differs from --format")
    files.add_argument("--measures", default=None,
                       help=f"comma-separated measures (default: {DEFAULT_MEASURES})")
    files.add_argument("--relevance-level", type=int, default=None,
                       help="a label >= this is relevant for binary measures (default 1)")
    files.add_argument("--output", default=None,
                       help="folder for the per_query, aggregate and comparison Delta tables")
    defaults = ComparisonSettings()
    files.add_argument("--test", choices=TESTS, default=None,
                       help=f"whose p-value marks a difference (default {defaults.test})")
    files.add_argument("--correction", choices=CORRECTIONS, default=None,
                       help=f"over all candidates and measures (default {defaults.correction})")
    files.add_argument("--alpha", type=float, default=None,
                       help=f"significance level (default {defaults.alpha})")
    files.add_argument("--permutations", type=int, default=None,
                       help=f"of the randomization test (default {defaults.permutations})")
    files.add_argument("--seed", type=int, default=None,
                       help=f"of the randomization test (default {defaults.seed})")
    files.add_argument("--power", type=float, default=None,
                       help="the t-test's chance to detect min_detectable_diff (default "
                       f"{defaults.power})")
    files.add_argument("--effect-of-interest", type=float, default=None,
                       help="the difference, in the measure's units, queries_needed is for "
                       f"(default {defaults.effect_of_interest})")
    files.add_argument("--answers", default=None,
                       help="answer scores per run and query (columns run_id, query_id, "
                       "answer_score): also how the answered queries moved between the "
                       "attribution cells (docs/answers.md)")
    files.add_argument("--answers-format", choices=ANSWER_FORMATS, default=None,
                       help="format of --answers (default: guessed as releval evaluate does)")
    files.add_argument("--correct-at", type=float, default=None,
                       help=f"an answer is correct when its score >= this (default "
                       f"{AnswersSource.correct_at})")
    files.add_argument("--retrieved-by", default=None,
                       help=f"the measure that says the evidence was retrieved (default "
                       f"{AnswersSource.retrieved_by})")
    files.add_argument("--retrieved-at", type=float, default=None,
                       help=f"retrieved when --retrieved-by >= this (default "
                       f"{AnswersSource.retrieved_at:g})")
    files.add_argument("--master", default=None,
                       help="Spark master (default local[*]; not with a Spark Connect server)")
    sliced = cmp.add_argument_group(
        "slices and the queries that moved (either mode)",
        "with --config, the config's [queries] unless --queries is given")
    add_queries_arguments(sliced)
    sliced.add_argument("--worst", type=positive_int, default=None, metavar="N",
                        help="print the N queries that lost most per candidate and measure")
    add_remote_argument(cmp)


#: The flags of each ``releval compare`` mode: a config's per-query table, or run files.
TABLE_FLAGS = ("--candidate", "--partition", "--comparison-id")


FILE_FLAGS = ("--qrels", "--run", "--format", "--qrels-format", "--measures",
              "--relevance-level", "--output", "--test", "--correction", "--alpha",
              "--permutations", "--seed", "--power", "--effect-of-interest", "--answers",
              "--answers-format", "--correct-at", "--retrieved-by", "--retrieved-at", "--master")


def _given(args: argparse.Namespace, flags: Sequence[str]) -> list[str]:
    """The flags among ``flags`` the command line set."""
    def value(flag: str) -> object:
        return getattr(args, flag.lstrip("-").replace("-", "_"))

    return [f for f in flags if value(f) not in (None, [])]


def run(args: argparse.Namespace) -> int:
    if args.config is not None:
        mixed = _given(args, FILE_FLAGS)
        if mixed:
            raise ConfigError(
                f"releval compare: --config compares a config's per-query table, "
                f"{', '.join(mixed)} compare run files; use one or the other"
            )
        return _compare_table(args)
    mixed = _given(args, TABLE_FLAGS)
    if mixed:
        raise ConfigError(f"releval compare: {', '.join(mixed)} needs --config (a config's "
                          "per-query table); run files are compared with --qrels and --run")
    return _compare_files(args)


def _compare_table(args: argparse.Namespace) -> int:
    from releval.config import load_config
    from releval.evaluation.partitions import parse_side, shared_values
    from releval.job import compare as compare_job

    if not args.baseline or not args.candidate:
        raise ConfigError("releval compare --config needs --baseline KEY=VALUE and at least "
                          "one --candidate KEY=VALUE")
    config = load_config(args.config)
    columns = config.run.partition_columns
    shared = shared_values(args.partition)
    baseline = parse_side(args.baseline, columns, shared=shared)
    candidates = [parse_side(c, columns, shared=shared) for c in args.candidate]
    spark = session(config, remote_of(args))
    try:
        queries = _checked_queries(spark, queries_source(args))  # else the config's
        report = compare_job.run(spark, config, baseline=baseline, candidates=candidates,
                                comparison_id=args.comparison_id, queries=queries,
                                worst=args.worst or 0)
    finally:
        spark.stop()
    print(report.render())
    return 0


def _compare_files(args: argparse.Namespace) -> int:
    """``releval compare --qrels Q --run A --run B ...``: one evaluation of every run, then
    each run against the baseline, query by query."""
    from releval import adhoc
    from releval.core.measures import parse_measures

    if not args.qrels or len(args.run) < 2:
        raise ConfigError("releval compare: give --qrels and two or more --run (run files), "
                          "or --config with --baseline and --candidate (a per-query table)")
    measures = args.measures or DEFAULT_MEASURES
    level = 1 if args.relevance_level is None else args.relevance_level
    parse_measures([measures], relevance_level=level)  # fail fast
    answers = _answers(args)
    queries = queries_source(args)
    for name in (*args.run, args.qrels, *([args.answers] if args.answers else []),
                 *([args.queries] if args.queries else [])):
        if "://" not in name and not Path(name).exists():
            raise InputError(f"input not found: {name}")
    defaults = ComparisonSettings()
    settings = ComparisonSettings(
        permutations=defaults.permutations if args.permutations is None else args.permutations,
        seed=defaults.seed if args.seed is None else args.seed,
        correction=args.correction or defaults.correction,
        alpha=defaults.alpha if args.alpha is None else args.alpha,
        test=args.test or defaults.test,
        power=defaults.power if args.power is None else args.power,
        effect_of_interest=(defaults.effect_of_interest if args.effect_of_interest is None
                            else args.effect_of_interest),
    )
    fmt = args.format or "trec"
    remote, master = remote_of(args), default_master(args)
    validate(Config(run=RunSource(path=args.run[0], format=fmt),
                    qrels=QrelsSource(path=args.qrels, format=args.qrels_format or fmt),
                    comparison=settings, spark=SparkSettings(master=master)),
             source="command line")
    spark = _files_session(master, [*args.run, args.qrels], remote)
    try:
        with tempfile.TemporaryDirectory(prefix="releval-") as tmp:
            text = adhoc.compare_files(
                spark, runs=args.run, qrels=args.qrels, run_format=fmt,
                qrels_format=args.qrels_format or fmt, measures=measures, relevance_level=level,
                baseline=args.baseline, settings=settings, folder=args.output or tmp,
                write_comparison=args.output is not None, answers=answers,
                queries=queries, worst=args.worst or 0,
            )
    finally:
        spark.stop()
    print(text)
    return 0


def _checked_queries(spark: SparkSession, src: QueriesSource | None):
    """The queries input checked (None: none): a rejected row is an error."""
    from releval.checks.queries import check_queries
    from releval.evaluation.compare_slices import refuse_rejected
    from releval.io.readers import read_queries, source_name

    if src is None:
        return None
    checked = check_queries(read_queries(spark, src), query_id=src.query_id,
                            weight=src.weight, slices=src.slices, name=source_name(src))
    refuse_rejected(checked, query_id=src.query_id, weight=src.weight)
    return checked


def _answers(args: argparse.Namespace) -> AnswersSource | None:
    """The ``--answers`` source, its thresholds defaulting as in ``[answers]``."""
    from releval.cli.evaluate import answers_format

    if args.answers is None:
        if any(v is not None for v in (args.answers_format, args.correct_at, args.retrieved_by,
                                       args.retrieved_at)):
            raise ConfigError("releval compare: --answers-format, --correct-at, "
                              "--retrieved-by and --retrieved-at need --answers")
        return None
    d = AnswersSource()
    return AnswersSource(
        path=args.answers, format=args.answers_format or answers_format(args.answers),
        correct_at=d.correct_at if args.correct_at is None else args.correct_at,
        retrieved_by=args.retrieved_by or d.retrieved_by,
        retrieved_at=d.retrieved_at if args.retrieved_at is None else args.retrieved_at,
    )


def _files_session(master: str | None, paths: Sequence[str], remote: str | None) -> SparkSession:
    """The SparkSession of a command over input files (a short job's JVM for small ones; a
    client of ``remote``, a Spark Connect server, when given)."""
    from releval.runtime.delta import require_delta
    from releval.runtime.session import build_session, short_inputs

    settings = SparkSettings(master=master, remote=remote, app_name="releval-cli",
                             shuffle_partitions=8)
    spark = build_session(settings, short=short_inputs(master, paths))
    require_delta(spark, "releval compare")
    return spark
