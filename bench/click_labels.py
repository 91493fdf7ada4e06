"""Position bias and PBM click labels against one ``groupBy(query, doc, position).count()``.

The issue's shape is 100M impressions (10M searches x 10 positions); ``BENCH_SIZE`` (or
``--size``) scales it: ``tiny`` 100k impressions, ``quick`` 1M, ``full`` 10M, ``100m`` 100M.
``--shape`` is ``tail`` (one query per 20 searches: few impressions a (query, doc, position),
the default) or ``head`` (one per 2,000: many). A PBM log is simulated (``generate``: 4
rankers, 10% shuffled pages) into Parquet, then,
alternated in one session, medians (after a warm-up of each, up to ``full``):

- ``group``: ``groupBy(query_id, doc_id, position).count()`` over the log, written to ``noop``;
- ``labels``: ``releval.click_labels(log)``: its labels written to ``noop`` and its
  ``position_bias`` collected (the checks, the compression, the fit's passes, harvesting);
- ``counts``: the checks and the counts packed per pair alone (what every fit reads), to
  ``noop``.

    .venv/bin/python -m bench.click_labels --size tiny   # -> bench/results/click-labels-tiny.md
    .venv/bin/python -m bench.click_labels --size tiny --shape head   # -> ...-tiny-head.md
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bench.compare import RESULTS, _session, _timed, save
from bench.memory import peak_rss_mib

#: impressions per size (10 positions a search)
SIZES = {"tiny": 100_000, "quick": 1_000_000, "full": 10_000_000, "100m": 100_000_000}
CHUNK_SEARCHES = 500_000
#: searches a query per shape: a sparse tail (about 4 impressions a (query, doc, position)
#: cell at 100M) and a head (about 400 a cell)
SHAPES = {"tail": 20, "head": 2000}
THETA = [1.0, 0.72, 0.55, 0.45, 0.36, 0.3, 0.25, 0.21, 0.18, 0.15]


def generate(path: Path, impressions: int, seed: int = 5, *,
             searches_per_query: int = SHAPES["tail"]) -> None:
    """The log in Parquet, ``CHUNK_SEARCHES`` searches at a time, drawn in NumPy.

    The truth is ``releval.clicks.simulate``'s: 30 documents a query (one query per
    ``searches_per_query`` searches), grades 0-3 with probabilities 0.5/0.25/0.15/0.1 and their attractiveness
    (``GRADE_ATTRACTIVENESS`` +- 0.04); 4 rankers sort by grade + noise (sd 0.5 to 3.0) and
    show their top 10. Each search picks a query and a ranker uniformly; 10% of pages are
    shown in a random order; a click at position k on d with probability THETA[k] * alpha(d).
    Ids are integers (the query's, the pair's, the search's).
    """
    from releval.clicks.simulate import GRADE_ATTRACTIVENESS

    rng = np.random.default_rng(seed)
    k = len(THETA)
    searches = impressions // k
    queries, docs, systems = max(searches // searches_per_query, 10), 30, 4
    grade = rng.choice(4, size=(queries, docs), p=[0.5, 0.25, 0.15, 0.1])
    alpha = np.clip(np.asarray(GRADE_ATTRACTIVENESS)[grade]
                    + rng.uniform(-0.04, 0.04, size=grade.shape), 0.01, 0.99)
    top = np.stack([np.argsort(-(grade + sd * rng.standard_normal(grade.shape)), axis=1)[:, :k]
                    for sd in np.linspace(0.5, 3.0, systems)])
    theta = np.asarray(THETA)
    writer = None
    for first in range(0, searches, CHUNK_SEARCHES):
        n = min(CHUNK_SEARCHES, searches - first)
        q = rng.integers(0, queries, n)
        shown = top[rng.integers(0, systems, n), q]
        mixed = rng.random(n) < 0.1
        order = np.argsort(rng.random((int(mixed.sum()), k)), axis=1)
        shown[mixed] = np.take_along_axis(shown[mixed], order, axis=1)
        clicked = rng.random((n, k)) < theta * alpha[q[:, None], shown]
        table = pa.table({
            "search_id": np.repeat(np.arange(first, first + n, dtype=np.int64), k),
            "query_id": np.repeat(q.astype(np.int64), k),
            "doc_id": (q[:, None] * docs + shown).astype(np.int64).ravel(),
            "position": np.tile(np.arange(1, k + 1, dtype=np.int32), n),
            "clicked": clicked.astype(np.int32).ravel(),
        })
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
    if writer:
        writer.close()


def run(size: str, runs: int, shape: str = "tail") -> dict[str, Any]:
    import releval
    from releval.checks.interactions import check_interactions
    from releval.checks.query_means import impression_cells
    from releval.clicks.position_bias import pack

    spark = _session(**{"spark.sql.shuffle.partitions": "8" if SIZES[size] <= SIZES["full"] else "64",
                        "spark.driver.memory": "6g", "spark.ui.enabled": "false"})
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "log.parquet"
        generate(path, SIZES[size], searches_per_query=SHAPES[shape])
        log = spark.read.parquet(str(path))
        held: dict[str, Any] = {}

        def group() -> None:
            counts = log.groupBy("query_id", "doc_id", "position").count()
            counts.write.format("noop").mode("overwrite").save()

        def labels() -> None:
            if "found" in held:
                held["found"].unpersist()
            held["found"] = found = releval.click_labels(log)
            found.labels.write.format("noop").mode("overwrite").save()
            held["bias"] = found.position_bias.collect()

        def counts() -> None:
            if "found" in held:  # else Spark serves the labels' cached counts
                held["found"].unpersist()
            compressed = pack(impression_cells(check_interactions(log)))
            compressed.write.format("noop").mode("overwrite").save()
            compressed.unpersist()

        if SIZES[size] <= SIZES["full"]:
            group(), labels(), counts()  # warm-up
        t_group, t_labels, t_counts = [], [], []
        for _ in range(runs):
            for step, times in ((group, t_group), (labels, t_labels), (counts, t_counts)):
                times.append(_timed(step)[0])
        memory = peak_rss_mib()
        passes = held["found"].fitted.pbm.iterations if held["found"].fitted else None
    g, lab = statistics.median(t_group), statistics.median(t_labels)
    bias = {r["position"]: r["examination"] for r in held["bias"] if r["method"] == "pbm_em"}
    return {"size": size, "shape": shape, "impressions": SIZES[size], "runs": runs, "group_s": t_group,
            "labels_s": t_labels, "counts_s": t_counts, "group_median_s": g,
            "labels_median_s": lab, "counts_median_s": statistics.median(t_counts),
            "fit_passes": passes, "ratio": lab / g, **memory,
            "max_bias_error": max(abs(bias[k + 1] - t) for k, t in enumerate(THETA))}


def render(r: dict[str, Any]) -> str:
    return "\n".join([
        f"# Click labels: position bias + PBM labels against one groupBy, {r['size']}, "
        f"{r['shape']}",
        "",
        f"{r['impressions']:,} impressions (10 positions a search, "
        f"{SHAPES[r['shape']]:,} searches a query), local[2], medians of {r['runs']} "
        f"alternated runs (`python -m bench.click_labels --size {r['size']} "
        f"--shape {r['shape']}`).",
        "",
        "| step | median s |",
        "|---|---|",
        f"| groupBy(query_id, doc_id, position).count() | {r['group_median_s']:.2f} |",
        f"| click_labels: labels + position_bias | {r['labels_median_s']:.2f} |",
        f"| its checks and counts alone: `pack(impression_cells(check_interactions(log)))` | "
        f"{r['counts_median_s']:.2f} |",
        f"| ratio labels / groupBy | {r['ratio']:.1f}x |",
        f"| ratio checks and counts / groupBy | {r['counts_median_s'] / r['group_median_s']:.1f}x |",
        "",
        f"The rest of click_labels is the PBM fit ({r['fit_passes']} passes over the pairs shown at two "
        "positions or more and clicked), "
        "intervention harvesting (one pass) and the labels.",
        "",
        f"Largest error of the recovered examination: {r['max_bias_error']:.4f}.",
        "",
        f"Peak resident memory of the session (every step): driver JVM {r['jvm_mib']:,.0f} MiB, "
        f"Python {r['python_mib']:,.0f} MiB.",
        "",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default=os.environ.get("BENCH_SIZE", "tiny"),
                        choices=sorted(SIZES))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--shape", default="tail", choices=sorted(SHAPES))
    args = parser.parse_args(argv)
    result = run(args.size, args.runs, args.shape)
    suffix = "" if args.shape == "tail" else f"-{args.shape}"
    save(RESULTS, f"click-labels-{args.size}{suffix}", result, render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
