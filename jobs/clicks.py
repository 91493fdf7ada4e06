"""spark-submit entry point of the job's click step alone: the ``[clicks]`` interactions
checked, the ``click_labels`` and ``position_bias`` tables written (docs/clicks.md), and the
position bias printed; with ``--sample``, next to the true bias the sample's log was
simulated with (releval.job.sample_clicks).

    spark-submit --jars <delta jars> jobs/clicks.py --config conf/local.toml [--sample]
"""

from __future__ import annotations

import argparse
import sys
import uuid
from collections.abc import Sequence

from releval.clicks.batch import run_clicks
from releval.config import load_config
from releval.display import text_table
from releval.errors import ConfigError, RelevalError
from releval.io.atomic import read_table
from releval.job.sample_clicks import true_examination
from releval.runtime.session import build_session


def bias_rows(rows: Sequence[dict[str, object]], parts: Sequence[str], *, sample: bool
              ) -> tuple[list[list[object]], list[str]]:
    """The position bias by partition and position, one column per method, ``pbm_em`` first
    (and, with ``sample``, the true examination and ``error``: pbm_em - true), for
    :func:`text_table`."""
    methods = sorted({str(r["method"]) for r in rows}, key=lambda m: (m != "pbm_em", m))
    keyed: dict[tuple[object, ...], dict[str, object]] = {}
    for r in rows:
        key = (*[r[c] for c in parts], r["position"])
        keyed.setdefault(key, {})[str(r["method"])] = r["examination"]
    error = sample and "pbm_em" in methods
    columns = [*parts, "position", *(["true"] if sample else []), *methods[:1],
               *(["error"] if error else []), *methods[1:]]
    truth = true_examination(max(int(k[-1]) for k in keyed)) if sample and keyed else None
    table = []
    for key in sorted(keyed, key=lambda k: [str(v) for v in k[:-1]] + [int(k[-1])]):
        found = keyed[key]
        true = [float(truth[int(key[-1]) - 1])] if truth is not None else []
        value = found.get("pbm_em")
        off = ([None if value is None else float(value) - true[0]]  # type: ignore[arg-type]
               if error else [])
        table.append([*key, *true, *[found.get(m) for m in methods[:1]], *off,
                      *[found.get(m) for m in methods[1:]]])
    return table, columns


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The click step: labels and position bias.")
    parser.add_argument("--config", required=True, help="TOML config with a [clicks] section")
    parser.add_argument("--sample", action="store_true",
                        help="print the true position bias of the sample's simulated log too")
    parser.add_argument("--job-run-id", default=None, help="the run's id (default: a new uuid4)")
    args = parser.parse_args(argv)
    try:
        config = load_config(args.config)
        if config.clicks is None:
            raise ConfigError(f"{args.config}: no [clicks] section (the interactions input)")
        spark = build_session(config.spark)
        try:
            done = run_clicks(spark, config, job_run_id=args.job_run_id or str(uuid.uuid4()))
            path, table = config.located("position_bias")
            parts = list(config.clicks.partition_by)
            rows = [r.asDict() for r in read_table(spark, path=path, table=table).collect()]
        finally:
            spark.stop()
    except RelevalError as exc:
        print(f"releval: error: {exc}", file=sys.stderr)
        return 2
    table_rows, columns = bias_rows(rows, parts, sample=args.sample)
    print("position bias: examination by position (1.0 at position 1)"
          + ("; true: the sample's k^-0.8, error: pbm_em - true" if args.sample else ""))
    print(text_table(table_rows, columns, max_rows=100))
    if done is not None:
        print("\n".join(done.render()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
