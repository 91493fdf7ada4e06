"""Designed per-query rows with known gate outcomes, the same in a classic and a Connect session.

80 queries q000..q079; the first 20 are ``head`` (traffic 100), the rest ``tail`` (traffic 1).
A system's nDCG@10 is the baseline's plus a designed difference ``mean + WIGGLE`` (WIGGLE:
ten deviations with mean 0, repeated), so each difference's mean is exact:

- ``good``: +0.05 on every query (a clear pass of ``change >= -0.01``);
- ``bad``: -0.05 on every query (a clear fail);
- ``mixed``: -0.05 on head, +0.10 on tail: overall +0.0625 (pass), head fails, and the
  traffic-weighted mean (20 x 100 x -0.05 + 60 x 0.10) / 2060 = -0.0456 fails;
- ``small``: +0.01 on the first 10 queries only (inconclusive for ``change > 0``).

Hit@10 is 0/1: ``good`` hits 72 of 80 queries (0.9), ``base`` 60.
"""

from __future__ import annotations

import numpy as np

WIGGLE = np.array([-0.02, 0.02, -0.01, 0.01, 0.0, -0.03, 0.03, 0.015, -0.015, 0.0])
QUERIES = [f"q{i:03d}" for i in range(80)]
HEAD = 20
BASE = 0.3 + 0.1 * (np.arange(80) % 5)  # 0.3, 0.4, ..., 0.7
WIGGLES = np.tile(WIGGLE, 8)
DIFFS = {
    "good": 0.05 + WIGGLES,
    "bad": -0.05 + WIGGLES,
    "mixed": np.where(np.arange(80) < HEAD, -0.05, 0.10) + WIGGLES,
    "small": (0.01 + WIGGLES)[:10],
}
HITS = {"base": np.arange(80) % 4 != 0, "good": np.arange(80) % 10 != 0}
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
