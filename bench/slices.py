"""Slices and traffic weights side by side with the same evaluation without them, in one
session: ``releval.evaluate(run, qrels, measures=...).aggregate.collect()`` against the same
call with ``queries=`` (one row per query: a 3-value segment, a 40-value locale and a
weight), ``slices=["segment", "locale"]`` and the weight; alternated, medians.

The data is ``bench/generate.py``'s (``quick``: 1M run rows, ``full``: 10M); local[2], a
4 GB driver, the inputs cached before the clock.

    .venv/bin/python -m bench.slices --size full      # -> bench/results/slices-full.md
    .venv/bin/python -m bench.slices --size quick     # -> bench/results/slices-quick.md
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bench.compare import DATA, RESULTS, _alternated, _session
from bench.generate import generate

MEASURES = ["P@10", "R@100", "nDCG@10", "RR", "AP"]
SEGMENTS = ("head", "torso", "tail")
LOCALES = 40


def queries_table(qrels: Path, seed: int = 53) -> pa.Table:
    """One row per judged query: segment (3 values), locale (40), weight (traffic)."""
    ids = pc.unique(pq.read_table(qrels, columns=["query_id"]).column("query_id"))
    rng = np.random.default_rng(seed)
    n = len(ids)
    return pa.table({
        "query_id": ids,
        "segment": pa.array(rng.choice(SEGMENTS, size=n, p=[0.1, 0.3, 0.6])),
        "locale": pa.array([f"l{i:02d}" for i in rng.integers(0, LOCALES, n)]),
        "traffic": pa.array(np.round(rng.pareto(1.2, n) * 10 + 1)),
    })


def run(size: str, runs: int) -> dict[str, Any]:
    import releval

    folder = DATA / size
    info = generate(size, folder)
    spark = _session(**{"spark.driver.memory": "4g", "spark.sql.shuffle.partitions": "16"})
    run_df = spark.read.parquet(str(folder / "run.parquet")).cache()
    qrels_df = spark.read.parquet(str(folder / "qrels.parquet")).cache()
    queries_df = spark.createDataFrame(queries_table(folder / "qrels.parquet")).cache()
    rows = (run_df.count(), qrels_df.count(), queries_df.count())
    held: dict[str, Any] = {}

    def evaluate(name: str, **kwargs: Any):  # noqa: ANN202
        def go() -> None:
            if name in held:
                held[name].unpersist()
            held[name] = releval.evaluate(run_df, qrels_df, measures=MEASURES, **kwargs)
            held[f"{name}_rows"] = held[name].aggregate.collect()
        return go

    plain = evaluate("plain")
    sliced = evaluate("sliced", queries=queries_df, queries_columns={"weight": "traffic"},
                      slices=["segment", "locale"])
    plain(), sliced()  # warm-up
    t_plain, t_sliced = _alternated(plain, sliced, runs)
    overall = {(r.measure_key, r.averaging): r.value for r in held["sliced_rows"]
               if r.slice is None and r.averaging != "weighted"}
    same = max(abs(overall[(r.measure_key, r.averaging)] - r.value)
               for r in held["plain_rows"])
    spark.stop()
    return {"size": size, "run_rows": rows[0], "qrels_rows": rows[1], "queries": rows[2],
            "measures": MEASURES, "generated_s": info.seconds,
            "plain_s": t_plain, "sliced_s": t_sliced,
            "ratio": statistics.median(t_sliced) / statistics.median(t_plain),
            "aggregate_rows_plain": len(held["plain_rows"]),
            "aggregate_rows_sliced": len(held["sliced_rows"]),
            "overall_rows_max_abs_difference": same}


def render(r: dict[str, Any]) -> str:
    def runs(xs: list[float]) -> str:
        return ", ".join(f"{x:.2f}" for x in xs)

    return "\n".join([
        f"# slices and traffic weights: `{r['size']}`", "",
        f"{r['run_rows']:,} run rows, {r['qrels_rows']:,} qrels rows, a queries input of "
        f"{r['queries']:,} rows (segment: 3 values, locale: 40, a weight); measures "
        f"{', '.join(r['measures'])} (and Judged@k); local[2], a 4 GB driver, 16 shuffle "
        "partitions, the inputs cached before the clock.", "",
        "| step | runs (s) | median (s) |", "|---|---|--:|",
        f"| `releval.evaluate(run, qrels, ...).aggregate.collect()` | {runs(r['plain_s'])} | "
        f"{statistics.median(r['plain_s']):.2f} |",
        f"| the same with `queries=`, `slices=[\"segment\", \"locale\"]` and the weight | "
        f"{runs(r['sliced_s'])} | {statistics.median(r['sliced_s']):.2f} |", "",
        f"sliced / plain: **{r['ratio']:.2f}** (target at most 1.2). Aggregate rows: "
        f"{r['aggregate_rows_plain']} without, {r['aggregate_rows_sliced']} with; the rows "
        f"over all queries equal the plain ones to {r['overall_rows_max_abs_difference']:.1e}.",
        ""])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="full", choices=["tiny", "quick", "full"])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    report = run(args.size, args.runs)
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / f"slices-{args.size}.json").write_text(json.dumps(report, indent=1) + "\n")
    (args.results / f"slices-{args.size}.md").write_text(render(report))
    print(render(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
