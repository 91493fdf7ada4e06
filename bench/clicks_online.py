"""Online measures side by side with one ``groupBy(query, doc, position).count()`` over the
same impressions, in one session: ``releval.evaluate_clicks(log, measures=...).per_query``
written to Spark's ``noop`` sink (the checks, the searches, the queries) against the count's
rows written to the same sink; alternated, medians.

The log is generated here (NumPy, seeded): ``searches`` searches of 10 positions over 20k
query keys and 2 buckets, clicks from a position-based model, a dwell on each click;
local[2], a 4 GB driver, the input cached before the clock.

    .venv/bin/python -m bench.clicks_online --searches 1000000   # 10M rows
    .venv/bin/python -m bench.clicks_online --searches 200000    # 2M rows (quick)
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bench.compare import DATA, RESULTS, _alternated, _session
from bench.memory import peak_rss_mib

MEASURES = ["CTR@5", "Abandonment", "ClickRR", "Clicks", "Success@30"]
POSITIONS = 10


def impressions(searches: int, seed: int = 60) -> pa.Table:
    """One row per shown result: bucket, search_id, query_id, doc_id, position, clicked,
    dwell (null without a click)."""
    rng = np.random.default_rng(seed)
    rows = searches * POSITIONS
    search = np.repeat(np.arange(searches), POSITIONS)
    query = np.repeat(rng.zipf(1.3, searches) % 20_000, POSITIONS)
    position = np.tile(np.arange(1, POSITIONS + 1), searches)
    doc = (query * 31 + rng.integers(0, 40, rows)) % 500_000
    clicked = (rng.random(rows) < 0.5 / position).astype(np.int32)
    dwell = np.where(clicked == 1, rng.exponential(40.0, rows), np.nan)
    return pa.table({
        "bucket": pa.array(np.where(search % 2 == 0, "A", "B")),
        "search_id": pa.array(search.astype(np.int64)),
        "query_id": pa.array(query.astype(np.int64)),
        "doc_id": pa.array(doc.astype(np.int64)),
        "position": pa.array(position.astype(np.int32)),
        "clicked": pa.array(clicked),
        "dwell": pa.array(dwell, from_pandas=True),
    })


def run(searches: int, runs: int) -> dict[str, Any]:
    import releval

    path = DATA / f"clicks-{searches}" / "impressions.parquet"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(impressions(searches), path)
    spark = _session(**{"spark.driver.memory": "4g", "spark.sql.shuffle.partitions": "16"})
    log = spark.read.parquet(str(path)).cache()
    rows = log.count()

    def count() -> None:
        log.groupBy("query_id", "doc_id", "position").count().write.format("noop").mode(
            "overwrite").save()

    def online() -> None:
        result = releval.evaluate_clicks(log, measures=MEASURES, partition_by=["bucket"])
        result.per_query.write.format("noop").mode("overwrite").save()

    count(), online()  # warm-up
    t_count, t_online = _alternated(count, online, runs)
    memory = peak_rss_mib()
    spark.stop()
    return {"searches": searches, "rows": rows, "measures": MEASURES, "count_s": t_count,
            "online_s": t_online,
            "ratio": statistics.median(t_online) / statistics.median(t_count), **memory}


def render(r: dict[str, Any]) -> str:
    def runs(xs: list[float]) -> str:
        return ", ".join(f"{x:.2f}" for x in xs)

    return "\n".join([
        f"# online measures: {r['rows']:,} impressions", "",
        f"{r['searches']:,} searches x {POSITIONS} positions, 2 buckets; measures "
        f"{', '.join(r['measures'])}; local[2], a 4 GB driver, 16 shuffle partitions, the "
        "input cached before the clock; each written to the `noop` sink.", "",
        "| step | runs (s) | median (s) |", "|---|---|--:|",
        f"| `groupBy(query_id, doc_id, position).count()` | {runs(r['count_s'])} | "
        f"{statistics.median(r['count_s']):.2f} |",
        f"| `releval.evaluate_clicks(...).per_query` | {runs(r['online_s'])} | "
        f"{statistics.median(r['online_s']):.2f} |", "",
        f"online / count: **{r['ratio']:.2f}** (target at most 1.5).", "",
        f"Peak resident memory of the session (both steps): driver JVM {r['jvm_mib']:,.0f} MiB, "
        f"Python {r['python_mib']:,.0f} MiB.", ""])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--searches", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    report = run(args.searches, args.runs)
    args.results.mkdir(parents=True, exist_ok=True)
    name = f"clicks-online-{report['rows']}"
    (args.results / f"{name}.json").write_text(json.dumps(report, indent=1) + "\n")
    (args.results / f"{name}.md").write_text(render(report))
    print(render(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
