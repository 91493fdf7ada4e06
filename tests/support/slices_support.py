"""A synthetic search log with segments, locales, traffic and bad queries rows, evaluated with
slices and a weight, and checked against pandas and the linearized formula; the same check
runs on the suite's classic session and as a Spark Connect client (tests/connect)."""

from __future__ import annotations

import numpy as np
from scipy import stats

import releval

SEGMENTS = ("head", "torso", "tail")
LOCALES = ("en", "de", "fr", "ja")
MEASURES = ["nDCG@10", "RR", "P@5"]
#: the bad queries rows the log adds: (query id, weight, segment, locale) -> reason
BAD = {("q000", 5.0, "head", "en"): "duplicate_query_id",      # q000 listed twice
       ("q001", -2.0, "tail", "de"): "invalid_weight",
       ("q002", float("nan"), "tail", "de"): "invalid_weight",
       ("q003", None, "tail", "de"): "invalid_weight",
       (None, 1.0, "tail", "fr"): "missing_query_id"}


def search_log(spark, queries: int = 120, seed: int = 53):
    """(run, qrels, queries) DataFrames: 2 systems; the queries input lists all but the last
    five queries (unlisted), q000 twice and the bad rows of :data:`BAD`."""
    rng = np.random.default_rng(seed)
    qids = [f"q{i:03d}" for i in range(queries)]
    qrels = [(q, f"d{d}", int(rng.integers(1, 3))) for q in qids
             for d in rng.choice(40, size=int(rng.integers(1, 6)), replace=False)]
    run = [(s, q, f"d{d}", float(rng.normal()))
           for s in ("bm25", "dense") for q in qids for d in rng.choice(40, size=15, replace=False)]
    listed = [(q, float(rng.integers(0, 5000)), str(rng.choice(SEGMENTS)),
               None if i % 17 == 0 else str(rng.choice(LOCALES)))
              for i, q in enumerate(qids[:-5]) if q not in ("q001", "q002", "q003")]
    rows = listed + list(BAD)
    return (spark.createDataFrame(run, "system string, query_id string, doc_id string, score double"),
            spark.createDataFrame(qrels, "query_id string, doc_id string, relevance int"),
            spark.createDataFrame(rows, "qid string, traffic double, segment string, locale string"))


def check(spark) -> dict:
    """Evaluate the log with slices and a weight; the largest differences from pandas and the
    formula, the quarantined queries rows by reason and the accounts."""
    run, qrels, queries = search_log(spark)
    result = releval.evaluate(run, qrels, measures=MEASURES, partition_by=["system"],
                              queries=queries,
                              queries_columns={"query_id": "qid", "weight": "traffic"},
                              slices=["segment", "locale"])
    per_query = result.per_query.toPandas()
    attrs = queries.toPandas().rename(columns={"qid": "query_id"})
    attrs = attrs[attrs.query_id.notna() & ~attrs.query_id.duplicated(keep=False)]
    attrs = attrs[np.isfinite(attrs.traffic.astype(float)) & (attrs.traffic >= 0)]
    attrs["locale"] = attrs.locale.fillna("(null)")
    merged = per_query.merge(attrs, on="query_id", how="left")
    merged[["segment", "locale"]] = merged[["segment", "locale"]].fillna("(unlisted)")
    aggregate = result.aggregate.toPandas()
    worst_slice, slice_rows = 0.0, 0
    for name in ("segment", "locale"):
        expected = merged.groupby(["system", "measure_key", name]).value.agg(["mean", "count"])
        got = aggregate[(aggregate.slice == name) & (aggregate.averaging == "macro")]
        for r in got.itertuples():
            e = expected.loc[(r.system, r.measure_key, r.slice_value)]
            assert int(e["count"]) == r.num_queries
            worst_slice = max(worst_slice, abs(float(e["mean"]) - r.value))
            slice_rows += 1
        assert len(got) == len(expected)
    worst_weighted, weighted_rows = 0.0, 0
    weighted = aggregate[aggregate.averaging == "weighted"]
    level = 0.95
    for r in weighted.itertuples():
        rows = merged[(merged.system == r.system) & (merged.measure_key == r.measure_key)
                      & merged.traffic.notna()]
        if isinstance(r.slice, str):
            rows = rows[rows[r.slice] == r.slice_value]
        x, w = rows.value.to_numpy(float), rows.traffic.to_numpy(float)
        n, m = len(x), (w @ x) / w.sum()
        v = n / (n - 1) * np.sum(w**2 * (x - m) ** 2) / w.sum() ** 2
        half = stats.t.ppf((1 + level) / 2, n - 1) * np.sqrt(v)
        worst_weighted = max(worst_weighted, abs(m - r.value), abs(m - half - r.ci_low),
                             abs(m + half - r.ci_high))
        assert r.num_queries == n
        weighted_rows += 1
    quarantine = result.quarantine.where("input = 'queries'").toPandas()
    accounts = result.accounts
    return {
        "worst_slice": worst_slice, "slice_rows": slice_rows,
        "worst_weighted": float(worst_weighted), "weighted_rows": weighted_rows,
        "overall_weighted": int(weighted.slice.isna().sum()),
        "quarantined": quarantine.reason_code.value_counts().sort_index().to_dict(),
        "queries_account": [accounts.queries.input, accounts.queries.used,
                            accounts.queries.quarantined_total],
        "balanced": all(p.balanced for a in accounts.inputs for p in a.partitions),
        "unlisted": accounts.unlisted,
    }


def expected_check() -> dict:
    """What :func:`check` finds when everything is right (120 queries, 2 systems)."""
    return {
        # q000 twice; q001-q003 bad weight; a null id
        "quarantined": {"duplicate_query_id": 2, "invalid_weight": 3, "missing_query_id": 1},
        # 115 listed less q001-q003 (112) + the 5 bad rows = 117 read; 112 - q000 = 111 used
        "queries_account": [117, 111, 6],
        # per system: q000 (duplicated), q001-q003 (rejected), the last 5 (not listed) = 9
        "unlisted": 18,
    }
