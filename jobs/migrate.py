"""spark-submit entry point that migrates the output tables of a config (docs/migrations.md).

    spark-submit --jars <delta jars> jobs/migrate.py --config conf/local.toml
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from releval.config import load_config
from releval.errors import RelevalError
from releval.evaluation.inputs import quarantine_target
from releval.job.compare import comparison_location
from releval.job.lineage import run_log_location
from releval.job.migrations import migrate_table
from releval.runtime.session import build_session


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Migrate releval's output tables in place.")
    parser.add_argument("--config", required=True, help="the config whose output tables to migrate")
    args = parser.parse_args(argv)
    try:
        config = load_config(args.config)
        spark = build_session(config.spark)
        try:
            out = config.output
            for kind, (path, table) in (
                ("per_query", (out.per_query_path, out.per_query_table)),
                ("aggregate", (out.aggregate_path, out.aggregate_table)),
                ("quarantine", quarantine_target(config)),
                ("run_log", run_log_location(config)),
                ("comparison", comparison_location(config)),
                ("attribution", config.located("attribution")),
                ("agreement", config.located("agreement")),
                ("gate", config.located("gate")),
                ("click_labels", config.located("click_labels")),
                ("position_bias", config.located("position_bias")),
            ):
                steps = migrate_table(spark, kind=kind, path=path, table=table, config=config)
                print(f"{kind}: " + (" -> ".join(steps) if steps else "no table"))
        finally:
            spark.stop()
    except RelevalError as exc:
        print(f"releval: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
