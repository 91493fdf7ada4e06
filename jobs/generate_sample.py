"""spark-submit entry point that writes the synthetic sample as Delta tables.

    spark-submit --jars <delta jars> jobs/generate_sample.py --config conf/local.toml
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from releval.config import load_config
from releval.job.sample import write_sample
from releval.runtime.session import build_session


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write the synthetic sample run and qrels.")
    parser.add_argument("--config", required=True, help="the config whose inputs to write")
    args = parser.parse_args(argv)
    config = load_config(args.config)
    if not (config.run.path and config.qrels.path and config.run.format == "delta"):
        print("releval: error: the sample is written to Delta paths (run.path, qrels.path)",
              file=sys.stderr)
        return 2
    spark = build_session(config.spark)
    try:
        answers = config.answers.path if config.answers else None
        queries = config.queries.path if config.queries else None
        interactions = config.clicks.path if config.clicks else None
        run_rows, qrels_rows, answers_rows = write_sample(
            spark, run_path=config.run.path, qrels_path=config.qrels.path, answers_path=answers,
            queries_path=queries, interactions_path=interactions,
        )
    finally:
        spark.stop()
    print(f"sample written: {run_rows} run rows to {config.run.path}, "
          f"{qrels_rows} qrels rows to {config.qrels.path}"
          + (f", {answers_rows} answers rows to {answers}" if answers else "")
          + (f", the queries to {queries}" if queries else "")
          + (f", the interactions log to {interactions}" if interactions else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
