"""``releval gate``: a release decision a CI step acts on, over run files evaluated on the spot
or a config's per-query table. Exit codes: 0 pass, 1 fail, 3 inconclusive (2: a usage or
input error); ``--on-inconclusive pass|fail`` maps the inconclusive outcome."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from releval.cli.evaluate import add_remote_argument, default_master, remote_of, session
from releval.cli.queries import add_queries_arguments, queries_source
from releval.config import FORMATS
from releval.config.gate import ON_INCONCLUSIVE
from releval.errors import ConfigError, InputError

if TYPE_CHECKING:  # pyspark is imported by the commands that start Spark
    from pyspark.sql import DataFrame, SparkSession

    from releval.config import QueriesSource
    from releval.gating import Gate

def add_gate_arguments(cmd: argparse.ArgumentParser) -> None:
    """The arguments of ``releval gate``."""
    cmd.add_argument("--rule", action="append", default=[],
                     help="a rule (repeatable), e.g. 'nDCG@10 change >= -0.01', "
                     "'RR change >= -2%%', 'Hit@10 >= 0.9', 'weighted nDCG@10 change > 0 "
                     "per segment'; with --config, default: the config's [gate] rules")
    cmd.add_argument("--baseline", default=None, metavar="TAG | KEY=VALUE[,KEY=VALUE]",
                     help="with --run: the baseline's run tag (default: the first run's); "
                     "with --config: the baseline run partition")
    cmd.add_argument("--alpha", type=float, default=None,
                     help="each test's level (default 0.05; with --config, [gate] alpha)")
    cmd.add_argument("--mode", choices=("confidence", "point"), default=None,
                     help="point: the estimates alone decide (MLflow's thresholds); default "
                     "confidence (with --config, [gate] mode)")
    cmd.add_argument("--on-inconclusive", choices=ON_INCONCLUSIVE, default=None,
                     help="exit as a pass (0) or a fail (1) when the gate is inconclusive "
                     "(default: exit 3; with --config, [gate] on_inconclusive)")
    add_queries_arguments(cmd)
    table = cmd.add_argument_group("a config's per-query table")
    table.add_argument("--config", default=None, help="the TOML config whose per-query table "
                       "to read")
    table.add_argument("--candidate", default=None, metavar="KEY=VALUE[,KEY=VALUE]",
                       help="the candidate run partition")
    table.add_argument("--partition", action="append", default=[], metavar="KEY=VALUE",
                       help="values shared by both sides, e.g. date=2026-11-28 (repeatable)")
    files = cmd.add_argument_group("run files (no config)")
    files.add_argument("--qrels", default=None, help="qrels file, folder or Delta path")
    files.add_argument("--run", action="append", default=[],
                       help="a run file, folder or Delta path: give two, baseline and candidate")
    files.add_argument("--format", choices=FORMATS, default=None,
                       help="format of the runs and the qrels (default: trec)")
    files.add_argument("--qrels-format", choices=FORMATS, default=None,
                       help="format of the qrels when it differs from --format")
    files.add_argument("--relevance-level", type=int, default=None,
                       help="a label >= this is relevant for binary measures (default 1)")
    files.add_argument("--master", default=None,
                       help="Spark master (default local[*]; not with a Spark Connect server)")
    add_remote_argument(cmd)


def run(args: argparse.Namespace) -> int:
    from releval.config.gate import check_alpha
    from releval.stats.gate import parse_rule

    if args.alpha is not None:
        check_alpha(args.alpha, "--alpha")
    for rule in args.rule:
        parse_rule(rule)  # an invalid rule fails before Spark starts
    if args.config is not None:
        mixed = [f for f, v in (("--qrels", args.qrels), ("--run", args.run),
                                ("--format", args.format), ("--master", args.master)) if v]
        if mixed:
            raise ConfigError(f"releval gate: --config gates a config's per-query table, "
                              f"{', '.join(mixed)} gate run files; use one or the other")
        return _gate_table(args)
    if args.candidate or args.partition:
        raise ConfigError("releval gate: --candidate and --partition need --config; run files "
                          "are gated with --qrels and two --run")
    return _gate_files(args)


def _report(gate: Gate, on_inconclusive: str | None) -> int:
    print(gate.render())
    from releval.stats.gate import exit_code

    code = exit_code(gate.decision, on_inconclusive)
    if gate.decision == "inconclusive" and on_inconclusive is not None:
        print(f"inconclusive counted as {on_inconclusive} (--on-inconclusive): exit {code}")
    return code


def _queries(spark: SparkSession, src: QueriesSource | None) -> DataFrame | None:
    """The queries input as read (checked by :func:`releval.gate`)."""
    from releval.io.readers import read_queries

    if src is None:
        return None
    if src.path and "://" not in src.path and not Path(src.path).exists():
        raise InputError(f"input not found: {src.path}")
    return read_queries(spark, src)


def _gate(per_query: DataFrame, *, baseline, candidate, rules, alpha: float, mode: str,
          src: QueriesSource | None) -> Gate:
    from releval.api import gate

    queries = _queries(per_query.sparkSession, src)
    columns = {"query_id": src.query_id, "weight": src.weight} if src is not None else None
    if queries is not None:
        missing = [s for s in src.slices if s not in queries.columns]
        if missing:
            raise InputError(f"queries {src.path or src.table}: no column {missing[0]!r} "
                             f"(a slice); it has columns {queries.columns}")
    return gate(per_query, baseline=baseline, candidates=candidate, rules=rules, alpha=alpha,
                queries=queries, queries_columns=columns, mode=mode)


def _gate_files(args: argparse.Namespace) -> int:
    """Both runs evaluated in one :func:`releval.evaluate` on the measures the rules name,
    then gated."""
    from releval import adhoc, api
    from releval.config import QrelsSource
    from releval.core import columns as S
    from releval.errors import ComparisonError
    from releval.io.readers import TREC_RUN_ID, read_qrels_raw
    from releval.stats.gate import parse_rule

    if not args.qrels or len(args.run) != 2:
        raise ConfigError("releval gate: give --qrels and two --run (baseline and candidate), "
                          "or --config with --baseline and --candidate (a per-query table)")
    if not args.rule:
        raise ConfigError("releval gate: give at least one --rule, e.g. "
                          "'nDCG@10 change >= -0.01'")
    for name in (*args.run, args.qrels):
        if "://" not in name and not Path(name).exists():
            raise InputError(f"input not found: {name}")
    measures = sorted({parse_rule(r).measure_key for r in args.rule})
    src = queries_source(args)
    fmt = args.format or "trec"
    spark = _files_session(default_master(args), [*args.run, args.qrels], remote_of(args))
    try:
        run, tags = adhoc.read_runs(spark, args.run, run_format=fmt)
        base = args.baseline if args.baseline is not None else tags[0]
        if base not in tags:
            raise ComparisonError(f"--baseline {base!r} is not the tag of a run; the runs' "
                                  f"tags are {tags}")
        cand = next(t for t in tags if t != base)
        qrels = read_qrels_raw(spark, QrelsSource(path=args.qrels,
                                                  format=args.qrels_format or fmt))
        if qrels.malformed is not None and qrels.malformed.take(1):
            qrels.fail_on_malformed()
        result = api.evaluate(
            run, qrels.rows.select(S.QUERY_ID, S.DOC_ID, S.RELEVANCE), measures=measures,
            partition_by=[TREC_RUN_ID],
            relevance_level=1 if args.relevance_level is None else args.relevance_level)
        found = _gate(result.per_query, baseline={TREC_RUN_ID: base},
                      candidate={TREC_RUN_ID: cand}, rules=args.rule,
                      alpha=0.05 if args.alpha is None else args.alpha,
                      mode=args.mode or "confidence", src=src)
        return _report(found, args.on_inconclusive)
    finally:
        spark.stop()


def _gate_table(args: argparse.Namespace) -> int:
    """The config's per-query table: ``--baseline`` against ``--candidate``, the rules,
    alpha, mode and on_inconclusive defaulting to the config's ``[gate]``."""
    from releval.config import GateSettings, load_config
    from releval.evaluation.partitions import parse_side, shared_values
    from releval.io.atomic import read_table

    if not args.baseline or not args.candidate:
        raise ConfigError("releval gate --config needs --baseline KEY=VALUE and "
                          "--candidate KEY=VALUE")
    config = load_config(args.config)
    settings = config.gate or GateSettings()
    rules = args.rule or list(settings.rules)
    if not rules:
        raise ConfigError(f"releval gate: no --rule and no [gate] rules in {args.config}")
    columns = config.run.partition_columns
    shared = shared_values(args.partition)
    baseline = parse_side(args.baseline, columns, shared=shared)
    candidate = parse_side(args.candidate, columns, shared=shared)
    src = queries_source(args) or config.queries
    spark = session(config, remote_of(args))
    try:
        per_query = read_table(spark, path=config.output.per_query_path,
                               table=config.output.per_query_table)
        found = _gate(per_query, baseline=baseline, candidate=candidate, rules=rules,
                      alpha=settings.alpha if args.alpha is None else args.alpha,
                      mode=args.mode or settings.mode, src=src)
        return _report(found, args.on_inconclusive or settings.on_inconclusive)
    finally:
        spark.stop()


def _files_session(master: str | None, paths: list[str], remote: str | None) -> SparkSession:
    from releval.cli.compare import _files_session as files_session

    return files_session(master, paths, remote)
