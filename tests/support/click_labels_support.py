"""A hand-made search log and a small simulated one for ``releval.click_labels``, checked the
same way in the default session (tests/test_click_labels.py) and over Spark Connect
(tests/connect/test_connect_click_labels.py)."""

from __future__ import annotations

import numpy as np

#: four searches of query q over a, b, c, plus a fifth with two results at position 1
#: s1: a1 click, b2, c3 click (last click 3)    s2: a1, b2 click, c3 (last 2)
#: s3: a1, b2, c3 click (last 3)                s4: b1, a2 click, c3 (last 2)
HAND_LOG = [
    ("s1", "q", "a", 1, 1),
    ("s1", "q", "b", 2, 0),
    ("s1", "q", "c", 3, 1),
    ("s2", "q", "a", 1, 0),
    ("s2", "q", "b", 2, 1),
    ("s2", "q", "c", 3, 0),
    ("s3", "q", "a", 1, 0),
    ("s3", "q", "b", 2, 0),
    ("s3", "q", "c", 3, 1),
    ("s4", "q", "b", 1, 0),
    ("s4", "q", "a", 2, 1),
    ("s4", "q", "c", 3, 0),
    ("s5", "q", "a", 1, 0),
    ("s5", "q", "b", 1, 1),
]
HAND_SCHEMA = "search_id string, query_id string, doc_id string, position int, clicked int"

#: the simplified DBN's counts by hand:
#: a: examined in s1..s4 (4), clicked s1, s4 (2), last click in s4 -> alpha 2/4, sigma 1/2
#: b: examined in s1..s4 (4), clicked s2 (1), its last click -> alpha 1/4, sigma 1/1
#: c: examined in s1, s3 only (below the last click in s2, s4), clicked both, both last ->
#:    alpha 2/2, sigma 2/2
#: relevance at the cut points 0.1, 0.3, 0.5, 0.7: a 0.5 -> 3, b 0.25 -> 1, c 1.0 -> 4
EXPECTED = {
    "labels": [
        ["a", 3, 0.5, 0.5, 4, 2, "clicks:sdbn"],
        ["b", 1, 0.25, 1.0, 4, 1, "clicks:sdbn"],
        ["c", 4, 1.0, 1.0, 4, 2, "clicks:sdbn"],
    ],
    # Wilson 2 of 4: centre 0.5, half z / (1 + z^2/4) sqrt(1/16 + z^2/64) = 0.3500
    "a_interval": [0.1500, 0.8500],
    "accounts": [14, 12, {"duplicate_position": 2}, 3, 3, 0],
    "under_five": [0, 3],
    "pbm_matches_reference": True,
    "bias_methods": ["intervention_harvesting", "pbm_em"],
}


def reference_em(pair, pos, n, c, pairs, positions, tol=1e-14, max_iter=200_000):
    """The PBM's EM (Chuklin et al. 2015, sec. 4.2), plain numpy, then scaled to theta_1 = 1.

    E step: P(attractive | no click) = a (1 - t) / (1 - t a), P(examined | no click) =
    t (1 - a) / (1 - t a); M step: each parameter is its expected successes over impressions.
    """
    alpha, theta = np.full(pairs, 0.5), np.full(positions, 0.5)
    for _ in range(max_iter):
        p = theta[pos] * alpha[pair]
        a_post = alpha[pair] * (1 - theta[pos]) / (1 - p)
        e_post = theta[pos] * (1 - alpha[pair]) / (1 - p)
        new_a = np.bincount(pair, c + (n - c) * a_post, pairs) / np.bincount(pair, n, pairs)
        new_t = np.bincount(pos, c + (n - c) * e_post, positions) / np.bincount(pos, n, positions)
        change = max(np.abs(new_a - alpha).max(), np.abs(new_t - theta).max())
        alpha, theta = new_a, new_t
        if change < tol:
            break
    return theta / theta[0], alpha * theta[0]


def pbm_against_reference(spark) -> bool:
    """click_labels' PBM (examination and attractiveness) equals the reference EM to 1e-6."""
    from releval import click_labels
    from releval.clicks.simulate import random_truth, rankings, simulate_pbm, to_spark

    truth = random_truth(queries=4, docs=5, seed=3)
    log = simulate_pbm(
        truth,
        rankings(truth, depth=5, seed=3),
        shuffle=1.0,
        searches=1500,
        examination=[1.0, 0.6, 0.4, 0.3, 0.2],
        seed=5,
    )
    g = log.groupby(["query_id", "doc_id", "position"])["clicked"].agg(["size", "sum"])
    g = g.reset_index()
    pair = g.groupby(["query_id", "doc_id"]).ngroup().to_numpy()
    keys = g.drop_duplicates(["query_id", "doc_id"])
    theta, alpha = reference_em(
        pair,
        g["position"].to_numpy() - 1,
        g["size"].to_numpy(float),
        g["sum"].to_numpy(float),
        pair.max() + 1,
        5,
    )
    found = click_labels(to_spark(spark, log), min_impressions=1)
    bias = {
        r["position"]: r["examination"]
        for r in found.position_bias.collect()
        if r["method"] == "pbm_em"
    }
    got = {(r["query_id"], r["doc_id"]): r["attractiveness"] for r in found.labels.collect()}
    want = dict(zip(zip(keys["query_id"], keys["doc_id"], strict=True), alpha, strict=True))
    return bool(
        max(abs(bias[k + 1] - theta[k]) for k in range(5)) < 1e-6
        and set(got) == set(want)
        and max(abs(got[k] - want[k]) for k in want) < 1e-6
    )


def check(spark) -> dict:
    """What the default-session and the Connect tests compare with :data:`EXPECTED`."""
    from releval import click_labels

    log = spark.createDataFrame(HAND_LOG, HAND_SCHEMA)
    found = click_labels(log, model="sdbn", min_impressions=4)
    rows = found.labels.orderBy("doc_id").collect()
    a = found.accounts
    under = click_labels(log, model="sdbn", min_impressions=5).accounts
    return {
        "labels": [
            [
                r["doc_id"],
                r["relevance"],
                r["attractiveness"],
                r["satisfaction"],
                r["impressions"],
                r["clicks"],
                r["label_source"],
            ]
            for r in rows
        ],
        "a_interval": [
            round(rows[0]["attractiveness_low"], 4),
            round(rows[0]["attractiveness_high"], 4),
        ],
        "accounts": [
            a.impressions_read,
            a.impressions_used,
            a.quarantined,
            a.pairs,
            a.pairs_labelled,
            a.pairs_under_min_impressions,
        ],
        "under_five": [under.pairs_labelled, under.pairs_under_min_impressions],
        "pbm_matches_reference": pbm_against_reference(spark),
        "bias_methods": sorted({r["method"] for r in found.position_bias.collect()}),
    }
