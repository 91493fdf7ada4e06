"""``releval agree``: a config's two qrels versions compared (docs/agreement.md)."""

from __future__ import annotations

import argparse

from releval.cli.evaluate import add_remote_argument, remote_of, session
from releval.errors import ComparisonError, ConfigError


def add_agree_arguments(agree: argparse.ArgumentParser) -> None:
    """The arguments of ``releval agree`` (also ``jobs/agree.py``)."""
    agree.add_argument("--config", required=True,
                       help="the TOML config: [qrels] is the reference, [agree] the other "
                       "version (unset keys taken from [qrels])")
    agree.add_argument("--other-filter", default=None, metavar="SQL",
                       help="the other version's filter, e.g. \"qrels_version = 'llm'\" "
                       "(overrides agree.filter)")
    agree.add_argument("--other-path", default=None,
                       help="the other version's path (overrides agree.path and agree.table)")
    agree.add_argument("--clicks", action="store_true",
                       help="compare the click labels ([clicks]: the click_labels table the job "
                       "writes) with [qrels] instead of [agree]; --other-filter picks one "
                       "partition's labels")
    agree.add_argument("--run", action="store_true",
                       help="also evaluate the config's run under both versions: orderings "
                       "of the run partitions (tau-b, tau_AP) per measure")
    agree.add_argument("--partition", action="append", default=[], metavar="KEY=VALUE",
                       help="with --run: evaluate only these run partitions (repeatable), "
                       "e.g. date=2026-11-28")
    agree.add_argument("--baseline", default=None, metavar="KEY=VALUE[,KEY=VALUE]",
                       help="with --run: compare every other run partition with this one "
                       "under both versions ([comparison] test and correction) and list "
                       "the decisions that differ")
    agree.add_argument("--agreement-id", default=None, help="the agreement's id (default: uuid4)")
    add_remote_argument(agree)


def run(args: argparse.Namespace) -> int:
    from releval.config import load_config
    from releval.evaluation.partitions import parse_side, shared_values
    from releval.job import agree as agree_job

    config = load_config(args.config)
    shared = shared_values(args.partition)
    if (shared or args.baseline) and not args.run:
        flag = "--partition selects" if shared else "--baseline compares"
        raise ConfigError(f"releval agree: {flag} run partitions: add --run")
    unknown = sorted(set(shared) - set(config.run.partition_columns))
    if unknown:
        raise ComparisonError(f"--partition {unknown}: not in run.partition_columns "
                              f"{list(config.run.partition_columns)}")
    baseline = (parse_side(args.baseline, config.run.partition_columns, shared=shared)
                if args.baseline else None)
    spark = session(config, remote_of(args))
    try:
        report = agree_job.run(
            spark, agree_job.with_partitions(config, shared), other_filter=args.other_filter,
            other_path=args.other_path, with_run=args.run, baseline=baseline,
            agreement_id=args.agreement_id, clicks=args.clicks)
    finally:
        spark.stop()
    print(report.render())
    return 0
