"""spark-submit entry point of the evaluation job.

    spark-submit --jars <delta jars> jobs/evaluate.py --config conf/local.toml \
        [--partition date=2026-11-29 ...] [--from 2026-11-27 --to 2026-11-29] [--pending]

Without a partition option the job evaluates every run partition and replaces the
whole output tables; with one it evaluates only those partitions and replaces exactly
them (see docs/batch_jobs.md). With a ``[gate]``, once every table is committed, it exits 1
when a gate fails and 3 when one is inconclusive (unless ``[gate] on_inconclusive`` maps it).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from releval.clicks.batch import run_job_with_clicks
from releval.config import load_config
from releval.errors import RelevalError
from releval.evaluation.partitions import DEFAULT_DATE_COLUMN, parse_selection
from releval.job import pipeline
from releval.runtime.executors import check_executors
from releval.runtime.profile import Phases
from releval.runtime.session import build_session, short_job
from releval.runtime.testhooks import pause


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Evaluate a run table against qrels.")
    parser.add_argument("--config", required=True, help="TOML config file (see conf/)")
    parser.add_argument("--show", type=int, default=60, help="run partitions to print")
    parser.add_argument("--strict", action="store_true", default=None,
                        help="fail when any input row is quarantined (overrides evaluation.strict)")
    parser.add_argument("--partition", action="append", default=[], metavar="KEY=VALUE",
                        help="evaluate only these run partitions: KEY=VALUE, KEY=V1,V2 or "
                        "KEY=LOW..HIGH (repeatable; all must hold)")
    parser.add_argument("--from", dest="date_from", default=None,
                        help="first date (inclusive) of --date-column to evaluate")
    parser.add_argument("--to", dest="date_to", default=None,
                        help="last date (inclusive) of --date-column to evaluate")
    parser.add_argument("--date-column", default=DEFAULT_DATE_COLUMN,
                        help=f"the partition column --from/--to apply to (default {DEFAULT_DATE_COLUMN})")
    parser.add_argument("--pending", action="store_true",
                        help="only the (selected) run partitions the outputs do not hold yet")
    parser.add_argument("--job-run-id", default=None, help="the run's id (default: a new uuid4)")
    parser.add_argument("--profile", action="store_true",
                        help="print the wall time and Spark jobs of each phase at the end")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        config = load_config(args.config)
        selection = parse_selection(
            args.partition,
            date_from=args.date_from,
            date_to=args.date_to,
            date_column=args.date_column,
            pending=args.pending,
            run_partition_columns=config.run.partition_columns,
        )
        spark = build_session(config.spark, short=short_job(config))
        phases = Phases(spark)
        try:
            check_executors(spark, config)  # a cluster's executors: their Python and paths
            result, clicks = run_job_with_clicks(
                spark, config, selection, job_run_id=args.job_run_id, strict=args.strict,
                phases=phases,
            )
            if args.show and result.summary is not None:
                keys = [m.key for m in pipeline.job_measures(config)]
                overview = result.summary.overview(keys, config.run.partition_columns)
                print("\n".join(overview.splitlines()[: args.show + 4]))
        finally:
            spark.stop()
    except RelevalError as exc:
        print(f"releval: error: {exc}", file=sys.stderr)
        return 2
    print(result.render())
    if clicks is not None:
        print("\n".join(clicks.render()))
    if args.profile:
        print(phases.render())
    pause("before_exit")
    return result.exit_code()


if __name__ == "__main__":
    sys.exit(main())
