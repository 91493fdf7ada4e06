"""Online measures side by side with one ``groupBy(query, doc, position).count()`` over the
same impressions, in one session: ``releval.evaluate_clicks(log, measures=...).per_query``
written to Spark's ``noop`` sink (the checks, the searches, the queries) against the count's
rows written to the same sink; alternated, medians. A third step is the floor: the same
per-query means from one ``groupBy`` per search and one per query, with no row checks.

The log is generated here (NumPy, seeded): ``searches`` searches of 10 positions over 20k
query keys and 2 buckets, clicks from a position-based model, a dwell on each click;
local[2], a 4 GB driver; the input is cached before the clock up to ``CACHE_ROWS`` rows and
read from Parquet by every step above that (with no warm-up: one pass takes minutes).

    .venv/bin/python -m bench.clicks_online --searches 1000000   # 10M rows
    .venv/bin/python -m bench.clicks_online --searches 200000    # 2M rows (quick)
    .venv/bin/python -m bench.clicks_online --searches 10000000 --runs 1  # 100M rows
    .venv/bin/python -m bench.clicks_online --ids text     # the ids as strings
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bench.compare import DATA, RESULTS, _session, _timed, save
from bench.memory import peak_rss_mib

MEASURES = ["CTR@5", "Abandonment", "ClickRR", "Clicks", "Success@30"]
POSITIONS = 10
CACHE_ROWS = 20_000_000
CHUNK_SEARCHES = 1_000_000


def impressions(searches: int, seed: int = 60, first: int = 0, *, text: bool = False
                ) -> pa.Table:
    """One row per shown result: bucket, search_id, query_id, doc_id, position, clicked,
    dwell (null without a click); search ids from ``first``; ``text``: the ids as strings."""
    rng = np.random.default_rng(seed)
    rows = searches * POSITIONS
    search = np.repeat(np.arange(first, first + searches), POSITIONS)
    query = np.repeat(rng.zipf(1.3, searches) % 20_000, POSITIONS)
    position = np.tile(np.arange(1, POSITIONS + 1), searches)
    doc = (query * 31 + rng.integers(0, 40, rows)) % 500_000
    clicked = (rng.random(rows) < 0.5 / position).astype(np.int32)
    dwell = np.where(clicked == 1, rng.exponential(40.0, rows), np.nan)
    def ids(values: np.ndarray) -> pa.Array:
        out = pa.array(values.astype(np.int64))
        return out.cast(pa.string()) if text else out

    return pa.table({
        "bucket": pa.array(np.where(search % 2 == 0, "A", "B")),
        "search_id": ids(search),
        "query_id": ids(query),
        "doc_id": ids(doc),
        "position": pa.array(position.astype(np.int32)),
        "clicked": pa.array(clicked),
        "dwell": pa.array(dwell, from_pandas=True),
    })


def run(searches: int, runs: int, *, text: bool = False) -> dict[str, Any]:
    import releval

    path = DATA / f"clicks-{searches}{'-text' if text else ''}" / "impressions.parquet"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        _write(path, searches, text=text)
    spark = _session(**{"spark.driver.memory": "4g", "spark.sql.shuffle.partitions": "16"})
    log = spark.read.parquet(str(path))
    cached = searches * POSITIONS <= CACHE_ROWS
    if cached:
        log = log.cache()
    rows = log.count()

    def count() -> None:
        log.groupBy("query_id", "doc_id", "position").count().write.format("noop").mode(
            "overwrite").save()

    def online() -> None:
        result = releval.evaluate_clicks(log, measures=MEASURES, partition_by=["bucket"])
        result.per_query.write.format("noop").mode("overwrite").save()
        result.unpersist()  # else the next call reads the sums this one keeps

    def floor() -> None:
        floor_plan(log).write.format("noop").mode("overwrite").save()

    gap = None
    if cached:  # a warm-up, and the floor checked against releval (a long pass above that)
        count(), online(), floor()
        checked = releval.evaluate_clicks(log, measures=MEASURES, partition_by=["bucket"])
        gap = floor_gap(checked, floor_plan(log))
        checked.unpersist()
    t_count, t_online, t_floor = [], [], []
    for _ in range(runs):
        for step, times in ((count, t_count), (online, t_online), (floor, t_floor)):
            times.append(_timed(step)[0])
    memory = peak_rss_mib()
    spark.stop()
    return {"searches": searches, "rows": rows, "measures": MEASURES, "cached": cached,
            "ids": "text" if text else "integers",
            "count_s": t_count, "online_s": t_online, "floor_s": t_floor,
            "ratio": statistics.median(t_online) / statistics.median(t_count),
            "floor_ratio": statistics.median(t_floor) / statistics.median(t_count),
            "floor_gap": gap, **memory}


#: the floor's column of each measure
FLOOR_COLUMNS = {"CTR@5": "ctr5", "Abandonment": "abandonment", "ClickRR": "rr",
                 "Clicks": "clicks", "Success@30": "success"}


def floor_gap(result: Any, floor: Any) -> float:
    """The largest difference between releval's and the floor's sum of per-query values per
    measure (the floor does the same work: about 0)."""
    from pyspark.sql import functions as F

    ours = {r["measure_key"]: r["total"] for r in result.per_query.groupBy("measure_key").agg(
        F.sum("value").alias("total")).collect()}
    row = floor.agg(*[F.sum(c).alias(c) for c in FLOOR_COLUMNS.values()]).first()
    return max(abs(ours[m] - row[c]) for m, c in FLOOR_COLUMNS.items())


def _write(path: Path, searches: int, *, text: bool = False) -> None:
    """The log in Parquet, ``CHUNK_SEARCHES`` searches at a time (bounded memory)."""
    writer = None
    for i, first in enumerate(range(0, searches, CHUNK_SEARCHES)):
        table = impressions(min(CHUNK_SEARCHES, searches - first), seed=60 + i, first=first,
                            text=text)
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
    if writer:
        writer.close()


def floor_plan(log: Any) -> Any:
    """The per-query means of ``MEASURES`` with nothing else: one ``groupBy`` per search and
    its query (three aggregates of its rows: the first click's position, which gives CTR@5,
    Abandonment and ClickRR, the clicks and the success), one per (bucket, query); no row or
    search checks."""
    from pyspark.sql import functions as F

    click = F.col("clicked") > 0
    first = F.min(F.when(click, F.col("position")))
    searches = log.groupBy("bucket", "search_id", "query_id").agg(
        F.coalesce(first <= 5, F.lit(False)).cast("int").alias("ctr5"),
        first.isNull().cast("int").alias("abandonment"),
        F.coalesce(1 / first, F.lit(0.0)).alias("rr"),
        F.sum("clicked").alias("clicks"),
        F.max(F.when(click & (F.col("dwell") >= 30), 1).otherwise(0)).alias("success"),
    )
    return searches.groupBy("bucket", "query_id").agg(
        *[F.avg(c).alias(c) for c in ("ctr5", "abandonment", "rr", "clicks", "success")],
        F.count(F.lit(1)).alias("searches"))


def render(r: dict[str, Any]) -> str:
    def runs(xs: list[float]) -> str:
        return ", ".join(f"{x:.2f}" for x in xs)

    return "\n".join([
        f"# online measures: {r['rows']:,} impressions", "",
        f"{r['searches']:,} searches x {POSITIONS} positions, 2 buckets, ids as "
        f"{r.get('ids', 'integers')}; measures "
        f"{', '.join(r['measures'])}; local[2], a 4 GB driver, 16 shuffle partitions, the "
        + ("input cached before the clock" if r.get("cached", True) else
           "input read from Parquet by each step")
        + "; each written to the `noop` sink. The floor: the same per-query means from one "
        "`groupBy` per search and one per query, no checks (`floor_plan`).", "",
        "| step | runs (s) | median (s) |", "|---|---|--:|",
        f"| `groupBy(query_id, doc_id, position).count()` | {runs(r['count_s'])} | "
        f"{statistics.median(r['count_s']):.2f} |",
        f"| `releval.evaluate_clicks(...).per_query` | {runs(r['online_s'])} | "
        f"{statistics.median(r['online_s']):.2f} |",
        f"| floor: `floor_plan(log)` | {runs(r['floor_s'])} | "
        f"{statistics.median(r['floor_s']):.2f} |", "",
        f"online / count: **{r['ratio']:.2f}** (target at most 1.5); floor / count: "
        f"{r['floor_ratio']:.2f}; online / floor: "
        f"{statistics.median(r['online_s']) / statistics.median(r['floor_s']):.2f}."
        + ("" if r.get("floor_gap") is None else
           f" The floor's per-query values summed per measure differ from releval's by at most "
           f"{r['floor_gap']:.1e}."), "",
        f"Peak resident memory of the session (every step): driver JVM {r['jvm_mib']:,.0f} MiB, "
        f"Python {r['python_mib']:,.0f} MiB.", ""])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--searches", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--ids", choices=("integers", "text"), default="integers",
                        help="the log's search, query and document ids")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    report = run(args.searches, args.runs, text=args.ids == "text")
    suffix = "-text" if args.ids == "text" else ""
    save(args.results, f"clicks-online-{report['rows']}{suffix}", report, render(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
