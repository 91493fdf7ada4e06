"""Designed per-query rows with known gate outcomes, the same in a classic and a Connect session.

400 queries q000..q399; the first 100 are ``head`` (traffic 100), the rest ``tail`` (traffic
1). A system's nDCG@10 is the baseline's plus a designed difference ``mean + WIGGLE`` (WIGGLE:
ten deviations with mean 0, repeated), so each difference's mean is exact:

- ``good``: +0.05 on every query (a clear pass of ``change >= -0.01``);
- ``bad``: -0.05 on every query (a clear fail);
- ``mixed``: -0.10 on head, +0.10 on tail: overall +0.05 (pass), head fails, and the
  traffic-weighted mean (100 x 100 x -0.10 + 300 x 0.10) / 10300 = -0.0942 fails;
- ``small``: +0.01 on the first 10 queries only (inconclusive for ``change > 0``).

Hit@10 is 0/1: ``good`` hits 360 of 400 queries (0.9), ``base`` 300. (A decision valid at
every number of queries needs them: 80 queries cannot rule out a loss of 1 on 4% of them.)
"""

from __future__ import annotations

import numpy as np

WIGGLE = np.array([-0.02, 0.02, -0.01, 0.01, 0.0, -0.03, 0.03, 0.015, -0.015, 0.0])
N = 400
QUERIES = [f"q{i:03d}" for i in range(N)]
HEAD = 100
BASE = 0.3 + 0.1 * (np.arange(N) % 5)  # 0.3, 0.4, ..., 0.7
WIGGLES = np.tile(WIGGLE, N // 10)
DIFFS = {
    "good": 0.05 + WIGGLES,
    "bad": -0.05 + WIGGLES,
    "mixed": np.where(np.arange(N) < HEAD, -0.10, 0.10) + WIGGLES,
    "small": (0.01 + WIGGLES)[:10],
}
HITS = {"base": np.arange(N) % 4 != 0, "good": np.arange(N) % 10 != 0}
SCHEMA = "system string, query_id string, measure string, measure_key string, value double"
QUERIES_SCHEMA = "query_id string, segment string, traffic double"


def values(system: str) -> np.ndarray:
    """A system's nDCG@10 per query (only the queries it scored)."""
    if system == "base":
        return BASE
    d = DIFFS[system]
    return BASE[:len(d)] + d


def per_query_rows() -> list[tuple]:
    rows = []
    for system in ("base", *DIFFS):
        for q, v in zip(QUERIES, values(system), strict=False):
            rows.append((system, q, "nDCG", "nDCG@10", float(v)))
    for system, hits in HITS.items():
        rows += [(system, q, "Hit", "Hit@10", float(h)) for q, h in zip(QUERIES, hits, strict=True)]
    return rows


def queries_rows() -> list[tuple]:
    return [(q, "head" if i < HEAD else "tail", 100.0 if i < HEAD else 1.0)
            for i, q in enumerate(QUERIES)]


def frames(spark):  # -> (per_query, queries)
    return (spark.createDataFrame(per_query_rows(), SCHEMA),
            spark.createDataFrame(queries_rows(), QUERIES_SCHEMA))


# A week of one system's nightly runs (the batch job's gate): 120 queries, each with a
# relevant document r and a non-relevant x. On day k (0-based) query k ranks r second
# (noise: RR 1/2 on one query a day, a different one each day); every other query ranks r
# first (RR 1). On REGRESSING_DAY, 60 queries rank r second: against the day before, RR
# changes by -1/2 on 59 or 60 queries (mean about -0.25). (A quiet night passes
# ``change >= -0.05`` only with about 90 queries or more: fewer cannot rule out a loss of 1
# on 5% of them.)
WEEK = [f"2026-11-{d:02d}" for d in range(23, 30)]
REGRESSING_DAY = 3
NIGHTLY_QUERIES = [f"n{i:03d}" for i in range(120)]
NIGHTLY_RULES = ("RR change >= -0.05", "RR >= 0.6")


def nightly_rr(day: int) -> list[float]:
    """Each query's RR on ``day``."""
    second = set(range(60)) if day == REGRESSING_DAY else {day}
    return [0.5 if i in second else 1.0 for i in range(len(NIGHTLY_QUERIES))]


def write_week(spark, folder) -> tuple[str, str]:
    """The week's run and qrels as Delta tables under ``folder``: (run path, qrels path)."""
    rows = []
    for day, date in enumerate(WEEK):
        for q, rr in zip(NIGHTLY_QUERIES, nightly_rr(day), strict=True):
            order = ("r", "x") if rr == 1.0 else ("x", "r")
            rows += [("prod", date, q, doc, 2.0 - pos, pos + 1) for pos, doc in enumerate(order)]
    run, qrels = str(folder / "log"), str(folder / "qrels")
    spark.createDataFrame(rows, "system string, date string, query_id string, item_id string, "
                          "score double, position int").write.format("delta").partitionBy(
        "system", "date").save(run)
    spark.createDataFrame([(q, d, 1 if d == "r" else 0) for q in NIGHTLY_QUERIES for d in "rx"],
                          "query_id string, doc_id string, relevance int").write.format(
        "delta").save(qrels)
    return run, qrels


def week_config(folder, run: str, qrels: str, *, baseline: str = "previous",
                on_inconclusive: str | None = None):
    """A job config over the week with a ``[gate]``; its path."""
    rules = ", ".join(f'"{r}"' for r in NIGHTLY_RULES)
    extra = f'on_inconclusive = "{on_inconclusive}"' if on_inconclusive else ""
    out = folder / "out"
    text = f"""
[spark]
master = "local[1]"
shuffle_partitions = 2
conf = {{ "spark.ui.enabled" = "false", "spark.default.parallelism" = "2" }}

[run]
path = "{run}"
doc_id = "item_id"
rank = "position"
partition_columns = ["system", "date"]

[qrels]
path = "{qrels}"

[evaluation]
measures = ["RR", "P@1"]

[gate]
rules = [{rules}]
baseline = "{baseline}"
order_by = "date"
{extra}

[output]
per_query_path = "{out / 'per_query'}"
aggregate_path = "{out / 'aggregate'}"
partition_columns = ["date"]
"""
    path = folder / "job.toml"
    path.write_text(text, encoding="utf-8")
    return path
