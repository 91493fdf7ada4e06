"""The ``releval`` command: ad-hoc evaluation of a run file or table against qrels.

    releval evaluate --run PATH --qrels PATH [--format trec|parquet|delta] [--measures LIST]
                     [--output DIR] [--trec-eval-output FILE] [--judged-only] [--explain] [...]
    releval compare --qrels PATH --run PATH --run PATH [...] [--baseline TAG] [--output DIR]
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
    CORRECTIONS,
    FORMATS,
    NEGATIVE_LABELS,
    TESTS,
    ComparisonSettings,
    Config,
    EvaluationSettings,
    OutputSettings,
    QrelsSource,
    RunSource,
    SparkSettings,
    validate,
)
from releval.errors import ConfigError, InputError, RelevalError

if TYPE_CHECKING:  # pyspark is imported only by the commands that start Spark
    from pyspark.sql import Column, DataFrame, SparkSession

    from releval.checks.accounts import QualityReport

DEFAULT_MEASURES = "P@5,P@10,R@100,Hit@10,RR,nDCG@10,AP,AP@100"
#: trec_eval -q always prints these counts; --trec-eval-output adds them to the measures.
TREC_EVAL_COUNTS = "num_ret,num_rel,num_rel_ret"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="releval", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ev = sub.add_parser("evaluate", help="evaluate a run against qrels")
    ev.add_argument("--run", required=True, help="run file, folder or Delta path")
    ev.add_argument("--qrels", required=True, help="qrels file, folder or Delta path")
    ev.add_argument("--format", choices=FORMATS, default="trec",
                    help="format of both inputs (default: trec)")
    ev.add_argument("--qrels-format", choices=FORMATS, default=None,
                    help="format of the qrels when it differs from --format")
    ev.add_argument("--measures", default=DEFAULT_MEASURES,
                    help=f"comma-separated measures (default: {DEFAULT_MEASURES})")
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
    files.add_argument("--master", default=None, help="Spark master (default local[*])")


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
            judged_only=bool(getattr(args, "judged_only", False)),
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
                        judged_only=args.judged_only,
                    )
        finally:
            spark.stop()
    print(summary.render())
    if getattr(args, "profile", False):
        print(phases.render())
    return 0


#: The flags of each ``releval compare`` mode: a config's per-query table, or run files.
TABLE_FLAGS = ("--candidate", "--partition", "--comparison-id")
FILE_FLAGS = ("--qrels", "--run", "--format", "--qrels-format", "--measures",
              "--relevance-level", "--output", "--test", "--correction", "--alpha",
              "--permutations", "--seed", "--master")


def _given(args: argparse.Namespace, flags: Sequence[str]) -> list[str]:
    """The flags among ``flags`` the command line set."""
    def value(flag: str) -> object:
        return getattr(args, flag.lstrip("-").replace("-", "_"))

    return [f for f in flags if value(f) not in (None, [])]


def _compare(args: argparse.Namespace) -> int:
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
    from releval.errors import ComparisonError
    from releval.job import compare as compare_job

    if not args.baseline or not args.candidate:
        raise ConfigError("releval compare --config needs --baseline KEY=VALUE and at least "
                          "one --candidate KEY=VALUE")
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


def _compare_files(args: argparse.Namespace) -> int:
    """``releval compare --qrels Q --run A --run B ...``: one evaluation of every run, then
    each run against the baseline, query by query."""
    from releval.core.measures import parse_measures

    if not args.qrels or len(args.run) < 2:
        raise ConfigError("releval compare: give --qrels and two or more --run (run files), "
                          "or --config with --baseline and --candidate (a per-query table)")
    measures = args.measures or DEFAULT_MEASURES
    level = 1 if args.relevance_level is None else args.relevance_level
    parse_measures([measures], relevance_level=level)  # fail fast
    for name in (*args.run, args.qrels):
        if "://" not in name and not Path(name).exists():
            raise InputError(f"input not found: {name}")
    defaults = ComparisonSettings()
    settings = ComparisonSettings(
        permutations=defaults.permutations if args.permutations is None else args.permutations,
        seed=defaults.seed if args.seed is None else args.seed,
        correction=args.correction or defaults.correction,
        alpha=defaults.alpha if args.alpha is None else args.alpha,
        test=args.test or defaults.test,
    )
    fmt = args.format or "trec"
    master = args.master or "local[*]"
    validate(Config(run=RunSource(path=args.run[0], format=fmt),
                    qrels=QrelsSource(path=args.qrels, format=args.qrels_format or fmt),
                    comparison=settings, spark=SparkSettings(master=master)),
             source="command line")
    spark = _files_session(master, [*args.run, args.qrels])
    try:
        with tempfile.TemporaryDirectory(prefix="releval-") as tmp:
            text = compare_files(
                spark, runs=args.run, qrels=args.qrels, run_format=fmt,
                qrels_format=args.qrels_format or fmt, measures=measures, relevance_level=level,
                baseline=args.baseline, settings=settings, folder=args.output or tmp,
                write_comparison=args.output is not None,
            )
    finally:
        spark.stop()
    print(text)
    return 0


def _files_session(master: str, paths: Sequence[str]) -> SparkSession:
    """The SparkSession of a command over input files: a short job's JVM when they are small
    local files (the rule of :func:`releval.runtime.session.short_job`, over every file)."""
    from releval.runtime.session import SHORT_JOB_BYTES, build_session, local_bytes, local_cores

    sizes = [local_bytes(p) for p in paths]
    known = [size for size in sizes if size is not None]
    short = (bool(local_cores(master)) and len(known) == len(sizes)
             and sum(known) <= SHORT_JOB_BYTES)
    settings = SparkSettings(master=master, app_name="releval-cli", shuffle_partitions=8)
    return build_session(settings, short=short)


def file_tag(path: str) -> str:
    """A run's name when its rows carry no tag: its file or folder name, less ``.parquet``."""
    name = Path(path.rstrip("/")).name
    return name.removesuffix(".parquet") or name


def read_runs(spark: SparkSession, paths: Sequence[str], *, run_format: str) -> tuple[DataFrame, list[str]]:
    """Every run's rows with its tag as ``run_id``, as one DataFrame (raw values, for the row
    rules), and the tags in the order of ``paths``.

    A run's tag is its rows' tag (TREC: the 6th field; Parquet, Delta: the ``run_id``
    column), else :func:`file_tag`. One pass over the runs finds the tags.

    Raises:
        InputError: a run has no rows, a malformed TREC line or several tags; two runs have
            the same tag.
    """
    from functools import reduce

    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    from releval.core import columns as S
    from releval.core.columns import RAW_MALFORMED
    from releval.io.readers import TREC_RUN_ID, raw_run_input, read_run_raw

    raws = []
    for path in paths:
        if run_format == "trec":
            src = RunSource(path=path, format="trec", partition_columns=(TREC_RUN_ID,))
            raws.append(read_run_raw(spark, src))
            continue
        try:
            loaded = spark.read.format(run_format).load(path)
        except Exception as exc:  # Spark's AnalysisException: not a table of this format
            raise InputError(f"cannot read {run_format} {path}: {one_line(exc)}") from None
        tagged = (TREC_RUN_ID,) if TREC_RUN_ID in loaded.columns else ()
        raws.append(raw_run_input(loaded, RunSource(path=path, format=run_format,
                                                    partition_columns=tagged)))

    def probe(i: int, rows: DataFrame) -> DataFrame:
        def column(name: str, otherwise: object, dtype: str) -> Column:
            return (F.col(name) if name in rows.columns else F.lit(otherwise)).cast(dtype)

        return rows.select(F.lit(i).alias("_run"), column(TREC_RUN_ID, None, "string").alias("tag"),
                           column(RAW_MALFORMED, False, "boolean").alias("bad"))

    found = {r["_run"]: r for r in reduce(
        DataFrame.unionByName, [probe(i, raw.rows) for i, raw in enumerate(raws)]
    ).groupBy("_run").agg(F.min("tag").alias("first"), F.max("tag").alias("last"),
                          F.count_if("bad").alias("malformed")).collect()}
    tags: list[str] = []
    for i, (path, raw) in enumerate(zip(paths, raws, strict=True)):
        row = found.get(i)
        if row is None:
            raise InputError(f"run {path} has no rows: nothing to evaluate")
        if row["malformed"]:
            raw.fail_on_malformed()
        if row["first"] != row["last"]:
            raise InputError(f"run {path} holds several run tags ({row['first']!r} ... "
                             f"{row['last']!r}): compare one run per file")
        tag = row["first"] if row["first"] is not None else file_tag(path)
        if tag in tags:
            raise InputError(f"runs {paths[tags.index(tag)]} and {path} have the same run tag "
                             f"{tag!r}: give each run its own tag")
        tags.append(tag)
    run = reduce(DataFrame.unionByName, [
        raw.rows.select(F.lit(tag).alias(TREC_RUN_ID), S.QUERY_ID, S.DOC_ID, S.SCORE, S.RANK)
        for raw, tag in zip(raws, tags, strict=True)
    ])
    return run, tags


def compare_files(
    spark: SparkSession,
    *,
    runs: Sequence[str],
    qrels: str,
    run_format: str,
    qrels_format: str,
    measures: str,
    relevance_level: int,
    baseline: str | None,
    settings: ComparisonSettings,
    folder: str,
    write_comparison: bool,
) -> str:
    """Evaluate every run in one :func:`releval.evaluate` (partitioned by ``run_id``), write
    ``folder``/per_query and aggregate, compare each run with ``baseline`` (default: the
    first run) and, with ``write_comparison``, write ``folder``/comparison.

    Returns:
        The comparison as text (:func:`render_comparison`).

    Raises:
        InputError: as :func:`read_runs`; a malformed TREC qrels line.
        ComparisonError: ``baseline`` is none of the runs' tags.
    """
    import releval
    from releval.core import columns as S
    from releval.core.measures import parse_measures
    from releval.core.measures.judged import with_judged_measures
    from releval.errors import ComparisonError
    from releval.io.atomic import read_table
    from releval.io.readers import TREC_RUN_ID, read_qrels_raw

    run, tags = read_runs(spark, runs, run_format=run_format)
    base = baseline if baseline is not None else tags[0]
    if base not in tags:
        raise ComparisonError(f"--baseline {base!r} is not the tag of a run; the runs' tags "
                              f"are {tags}")
    raw_qrels = read_qrels_raw(spark, QrelsSource(path=qrels, format=qrels_format))
    if raw_qrels.malformed is not None and raw_qrels.malformed.take(1):
        raw_qrels.fail_on_malformed()
    result = releval.evaluate(
        run, raw_qrels.rows.select(S.QUERY_ID, S.DOC_ID, S.RELEVANCE), measures=[measures],
        partition_by=[TREC_RUN_ID], relevance_level=relevance_level,
    )
    out = Path(folder)
    result.write(per_query=str(out / "per_query"), aggregate=str(out / "aggregate"))
    per_query = read_table(spark, path=str(out / "per_query"), table=None)
    candidates = [t for t in tags if t != base]
    table = releval.compare(
        per_query, baseline={TREC_RUN_ID: base},
        candidates=[{TREC_RUN_ID: t} for t in candidates], alpha=settings.alpha,
        correction=settings.correction, test=settings.test,
        permutations=settings.permutations, seed=settings.seed,
    )
    rows = [r.asDict() for r in table.collect()]
    if write_comparison:
        _write_comparison(spark, rows, baseline=_label(base), settings=settings,
                          path=str(out / "comparison"))
    keys = [m.key for m in with_judged_measures(
        parse_measures([measures], relevance_level=relevance_level),
        relevance_level=relevance_level)]
    return render_comparison(rows, tags=[base, *candidates], baseline=base, measure_keys=keys,
                             settings=settings, accounts=result.accounts)


def _label(tag: str) -> str:
    """The comparison's name of a run: its partition label (``run_id=bm25``)."""
    from releval.io.readers import TREC_RUN_ID
    from releval.job.partitions import partition_label

    return partition_label({TREC_RUN_ID: tag}, [TREC_RUN_ID])


def _write_comparison(
    spark: SparkSession, rows: Sequence[dict], *, baseline: str, settings: ComparisonSettings,
    path: str,
) -> None:
    """The comparison rows as the comparison table (``releval compare --config``'s schema)."""
    import uuid
    from datetime import UTC, datetime

    from releval.core import columns as S
    from releval.core.frames import local_frame
    from releval.io import tables

    comparison_id = str(uuid.uuid4())
    fixed = {
        S.COMPARISON_ID: comparison_id, S.COMPARED_AT: datetime.now(UTC), S.BASELINE: baseline,
        S.PAIRING: "zero", S.CORRECTION: settings.correction, S.ALPHA: float(settings.alpha),
        S.TEST: settings.test, S.PERMUTATIONS: settings.permutations, S.SEED: settings.seed,
    }
    schema = tables.comparison_schema([])
    frame = local_frame(spark, [tuple({**r, **fixed}.get(f.name) for f in schema.fields)
                                for r in rows], schema)
    tables.write_comparison(frame, path=path, table=None, partition_fields=[],
                            output_partition_columns=(), predicate="true",
                            comparison_id=comparison_id)


def render_comparison(
    rows: Sequence[dict],
    *,
    tags: Sequence[str],
    baseline: str,
    measure_keys: Sequence[str],
    settings: ComparisonSettings,
    accounts: QualityReport | None = None,
) -> str:
    """The comparison as a table for people: one line per run (the baseline first), one column
    per measure with its mean; ``*`` marks a significant difference from the baseline. The
    inputs' ``accounts`` are shown when rows were quarantined."""
    from releval.core import columns as S
    from releval.stats.intervals import FEW_QUERIES

    by_label = {_label(t): t for t in tags}
    cells: dict[tuple[str, str], str] = {}
    pairs: set[int] = set()
    for r in rows:
        tag, key = by_label[r[S.CANDIDATE]], r[S.MEASURE_KEY]
        cells[(baseline, key)] = f"{r[S.BASELINE_MEAN]:.4f}"
        cells[(tag, key)] = f"{r[S.CANDIDATE_MEAN]:.4f}" + ("*" if r[S.SIGNIFICANT] else "")
        pairs.add(int(r[S.NUM_PAIRS]))
    keys = [k for k in measure_keys if any((t, k) in cells for t in tags)]
    header = ["run", *keys]
    table = [[t, *(cells.get((t, k), "-") for k in keys)] for t in tags]
    widths = [max(len(line[i]) for line in [header, *table]) for i in range(len(header))]

    def line(values: Sequence[str]) -> str:
        return "  " + "  ".join(f"{v:<{w}}" for v, w in zip(values, widths, strict=True)).rstrip()

    low, high = (min(pairs), max(pairs)) if pairs else (0, 0)
    n = f"{low}" if low == high else f"{low} to {high}"
    if settings.test == "tukey":
        test = (f"randomized Tukey HSD (all pairs of runs, one family per measure), "
                f"alpha {settings.alpha}")
    else:
        test = (f"{settings.test} test, {settings.correction} correction over {len(rows)} "
                f"comparisons (runs x measures), alpha {settings.alpha}")
    lines = [
        f"releval compare: {len(tags)} runs, {n} queries; baseline {baseline}",
        line(header),
        *(line(values) for values in table),
        f"  * differs from {baseline}: {test}; randomization with {settings.permutations} "
        f"permutations, seed {settings.seed}",
    ]
    if low < FEW_QUERIES:
        lines.append(f"  WARNING: fewer than {FEW_QUERIES} queries: weak comparisons")
    if accounts is not None and accounts.quarantined:
        lines.append(accounts.render())
    return "\n".join(lines)


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

    config = load_config(args.config)
    out = config.output
    if not (out.per_query_table or out.aggregate_table):
        print(path_views_sql(config, dialect=args.dialect))
        return 0
    from releval.io.views import views_command

    spark = _session(config)
    try:
        print(views_command(spark, config, dialect=args.dialect))
    finally:
        spark.stop()
    return 0


def path_views_sql(config: Config, *, dialect: str) -> str:
    """``releval views`` of path tables: the views' SQL over the aggregate table's measure keys,
    read with deltalake (no Spark).

    Raises:
        InputError: the aggregate table does not exist yet.
    """
    import pyarrow.compute as pc

    from releval.core import columns as S
    from releval.io.views import sort_keys, view_statements
    from releval.report.data import open_table

    path = config.output.aggregate_path
    table = open_table(path) if path else None
    if table is None:
        raise InputError(f"Delta table {path} does not exist: run the evaluation job first "
                         "(its measure keys are the views' columns)")
    keys = pc.unique(table.to_pyarrow_table(columns=[S.MEASURE_KEY])[S.MEASURE_KEY])
    statements = view_statements(config, measure_keys=sort_keys(keys.to_pylist()),
                                 dialect=dialect)
    return ";\n\n".join(statements) + ";"


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
