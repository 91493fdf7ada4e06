"""A per-query table of three systems and a queries input with segments, locales and
traffic, for the comparisons per slice and the queries that moved."""

from __future__ import annotations

import numpy as np
import pandas as pd
from pyspark.sql import types as T

from releval.core import columns as S
from releval.core.measures import parse_measures
from releval.io import tables

PARTS = [T.StructField("system", T.StringType()), T.StructField("date", T.StringType())]
SCHEMA = tables.per_query_schema(PARTS)
MEASURES = ["nDCG@10", "P@5", "P@5[best]"]
SEGMENTS = ["head", "torso", "tail"]
N = 48


def per_query_rows():
    """48 queries x 3 measures x 3 systems; dense lacks q07, bm25 lacks q11 (0 when paired)."""
    rng = np.random.default_rng(5)
    out = []
    for measure in MEASURES:
        m = parse_measures([measure])[0]
        base = rng.uniform(0, 1, N).round(3)
        for system, shift in [("bm25", 0.0), ("dense", 0.04), ("hybrid", -0.03)]:
            # dense helps the tail and hurts the head; hybrid the other way round
            tilt = np.array([(-1, 0, 1)[i % 3] for i in range(N)]) * 0.1 * (
                1 if system == "dense" else -1 if system == "hybrid" else 0)
            values = np.clip(base + shift + tilt + rng.normal(0, 0.08, N).round(3), 0, 1)
            for i, v in enumerate(values):
                if (system, i) in (("dense", 7), ("bm25", 11)):
                    continue
                out.append((system, "2026-11-28", f"q{i:02d}", m.name, m.cutoff, m.rel_level,
                            False, m.key, float(v), 10, 3, 1, None, "unjudged", None, None,
                            None, None, None))
    return out


def queries_rows():
    """q00..q45 listed (q46, q47 unlisted): segment by i % 3 (q05's null), locale by i % 2,
    traffic heavier on the head."""
    out = []
    for i in range(N - 2):
        segment = None if i == 5 else SEGMENTS[i % 3]
        traffic = {0: 50.0, 1: 5.0, 2: 1.0}[i % 3] * (1 + i % 4)
        out.append((f"q{i:02d}", segment, ("de", "en")[i % 2], traffic))
    return out


def pairs_frame(missing):
    """The pairs in pandas: candidate, measure, query, b, c, with each query's attributes."""
    pq = pd.DataFrame(per_query_rows()).iloc[:, [0, 2, 7, 8]]
    pq.columns = ["system", "query_id", "measure_key", "value"]
    wide = pq.pivot_table(index=["measure_key", "query_id"], columns="system", values="value")
    out = []
    for cand in ("dense", "hybrid"):
        w = wide[["bm25", cand]]
        w = w.fillna(0.0) if missing == "zero" else w.dropna()
        out.append(pd.DataFrame({"candidate": cand, "b": w["bm25"], "c": w[cand]}).reset_index())
    pairs = pd.concat(out, ignore_index=True)
    q = pd.DataFrame(queries_rows(), columns=["query_id", "segment", "locale", "weight"])
    q["segment"] = q["segment"].fillna(S.NULL_SLICE)
    pairs = pairs.merge(q, on="query_id", how="left")
    pairs[["segment", "locale"]] = pairs[["segment", "locale"]].fillna(S.UNLISTED_SLICE)
    return pairs
