"""spark-submit entry point of the evaluation job.

    spark-submit --jars <delta jars> jobs/evaluate.py --config conf/local.toml
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from releval import pipeline
from releval.cli import quiet_spark_error_logs
from releval.config import load_config
from releval.errors import RelevalError
from releval.session import build_session


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Evaluate a run table against qrels.")
    parser.add_argument("--config", required=True, help="TOML config file (see conf/)")
    parser.add_argument("--show", type=int, default=60, help="run partitions to print")
    parser.add_argument("--strict", action="store_true", default=None,
                        help="fail when any input row is quarantined (overrides evaluation.strict)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    quiet_spark_error_logs()
    try:
        config = load_config(args.config)
        spark = build_session(config.spark)
        try:
            summary = pipeline.run(spark, config, strict=args.strict)
            pipeline.read_overview(spark, config).show(args.show, truncate=False)
        finally:
            spark.stop()
    except RelevalError as exc:
        print(f"releval: error: {str(exc).strip().splitlines()[0]}", file=sys.stderr)
        return 2
    print(summary.render())
    return 0 if summary.ok else 1


if __name__ == "__main__":
    sys.exit(main())
