"""The online measures, interleaving and the interactions' accounts on small hand-made logs,
and the online measures of a random log of every kind of search against a plain-Python
reference of the search rules: :func:`check` runs them in any session (classic or Spark
Connect) and returns what the tests compare with :data:`EXPECTED` (worked out by hand next to
the rows)."""

from __future__ import annotations

import numpy as np
from pyspark.sql import functions as F

SCHEMA = ("bucket string, search_id string, query_id string, doc_id string, position int, "
          "clicked int, dwell double, team string")
LOG = [
    # bucket A, q1: s1 a click at 2 (dwell 40); s2 no click
    ("A", "s1", "q1", "a", 1, 0, None, "new"), ("A", "s1", "q1", "b", 2, 1, 40.0, "old"),
    ("A", "s2", "q1", "a", 1, 0, None, "old"), ("A", "s2", "q1", "b", 2, 0, None, "new"),
    # bucket A, q2: s3 clicks at 1 (dwell 5, new) and 2 (old): a tie; s4 new wins
    ("A", "s3", "q2", "c", 1, 1, 5.0, "new"), ("A", "s3", "q2", "d", 2, 1, None, "old"),
    ("A", "s4", "q2", "c", 1, 2, None, "new"), ("A", "s4", "q2", "d", 2, 0, None, "old"),
    # bucket B, q1: s5 a click at 1 (new wins)
    ("B", "s5", "q1", "a", 1, 1, 31.0, "new"), ("B", "s5", "q1", "b", 2, 0, None, "old"),
    # quarantined: a click on a document s5 did not show, a row without a team
    ("B", "s5", None, "z", None, 1, None, None),
    ("B", "s6", "q1", "a", 1, 0, None, None),
]
EXPECTED = {
    # per (bucket, query): ClickRR, Abandonment, Success@30, weight (searches)
    # A q1: s1 RR 1/2, s2 0 -> 1/4; abandonment (0 + 1) / 2; success (1 + 0) / 2
    # A q2: s3 RR 1, s4 RR 1 -> 1; abandonment 0; success 0 (dwell 5; no dwell)
    # B q1: s5 RR 1, abandonment 0, success 1 (dwell 31); s6 (no team, but the online
    #       measures read none) no click: RR (1 + 0) / 2, abandonment 1/2, success 1/2
    "online": [["A", "q1", 0.25, 0.5, 0.5, 2.0], ["A", "q2", 1.0, 0.0, 0.0, 2.0],
               ["B", "q1", 0.5, 0.5, 0.5, 2.0]],
    # Preference of new over old: A q1: s1 loss, s2 tie -> -1/2; A q2: s3 tie, s4 win -> 1/2;
    # B q1: s5 win -> 1 (s6 is quarantined for its team: not a search of the interleaving)
    "preference": [["A", "q1", -0.5], ["A", "q2", 0.5], ["B", "q1", 1.0]],
    # 12 rows = used 11 + quarantined 1 (online: no team read); = used 10 + quarantined 2
    "online_accounts": [12, 11, {"click_not_shown": 1}],
    "interleaving_accounts": [12, 10, {"click_not_shown": 1, "missing_team": 1}],
    # mixed_log(default_rng(3)) against mixed_reference: no key on one side only, no
    # difference, and every (bucket, query, measure) of the reference compared
    "mixed": [[], 0.0, 84],
    # impression_cells of the same log against its used impressions counted in plain Python:
    # no cell on one side only, no difference, 933 cells compared
    "cells": [[], 0.0, 933],
}


def check(spark) -> dict:
    """Run the online measures and interleaving on :data:`LOG`; the values to compare."""
    import releval

    log = spark.createDataFrame(LOG, SCHEMA)
    online = releval.evaluate_clicks(log.drop("team"), measures=["ClickRR", "Abandonment",
                                                                 "Success@30"],
                                     partition_by="bucket")
    rows = {(r.bucket, r.query_id, r.measure_key): (r.value, r.weight)
            for r in online.per_query.collect()}
    found = [[b, q, rows[(b, q, "ClickRR")][0], rows[(b, q, "Abandonment")][0],
              rows[(b, q, "Success@30")][0], rows[(b, q, "ClickRR")][1]]
             for b, q in sorted({(b, q) for b, q, _ in rows})]
    inter = releval.interleaving(log, baseline="old", candidates="new", partition_by="bucket")
    preference = sorted([r.bucket, r.query_id, r.value] for r in inter.per_query.collect()
                        if r.team == "new")

    def account(result) -> list:
        a = result.accounts.interactions
        return [a.input, a.used, a.quarantined]

    return {"online": found,
            "preference": preference,
            "online_accounts": account(online), "interleaving_accounts": account(inter),
            "mixed": check_mixed(spark), "cells": check_cells(spark)}


def check_mixed(spark, *, integer_queries: bool = False) -> list:
    """The online measures of :func:`mixed_log` against :func:`mixed_reference` (:func:`gaps`);
    ``integer_queries``: its query ids as integers (``q3``: 3)."""
    import releval

    rows = mixed_log(np.random.default_rng(3))
    frame = spark.createDataFrame(rows, SCHEMA).drop("team")
    if integer_queries:
        frame = frame.withColumn("query_id", F.substring("query_id", 2, 9).cast("long"))
    got = releval.evaluate_clicks(frame, measures=MIXED_MEASURES, partition_by="bucket")
    return gaps({(r.bucket, r.query_id, r.measure_key): (r.value, r.weight)
                 for r in got.per_query.collect()},
                {(b, q[1:] if integer_queries else q, m): v
                 for (b, q, m), v in mixed_reference(rows).items()})


MIXED_MEASURES = ["CTR@1", "CTR@3", "Abandonment", "ClickRR", "Clicks", "Success@30"]


def mixed_log(rng: np.random.Generator, searches: int = 60) -> list[tuple]:
    """Searches of every kind the search rules tell apart, at random: clean pages, pages with
    a repeated position, pages whose rows disagree on the query, pages deeper than 62, click
    rows (no position) on a shown and on an unshown document, a search of click rows only;
    a null bucket."""
    rows = []
    for s in range(searches):
        bucket = [None, "A", "B"][s % 3]
        query = f"q{rng.integers(0, 5)}"
        depth = int(rng.choice([3, 5, 70]))
        start = int(rng.choice([1, 60]))
        kind = rng.choice(["clean", "repeat", "conflict", "click_rows", "clean", "only_clicks"])
        if kind == "only_clicks":
            rows.append((bucket, f"s{s}", None if s % 2 else query, "d0", None, 1, None, None))
            continue
        for i in range(depth):
            position = start + i
            if kind == "repeat" and i == 1:
                position = start
            q = f"q{(int(query[1:]) + 1) % 5}" if kind == "conflict" and i == 2 else query
            clicks = int(rng.choice([0, 0, 0, 1, 2]))
            dwell = float(rng.uniform(0, 60)) if clicks else None
            rows.append((bucket, f"s{s}", q, f"d{i}", position, clicks, dwell, None))
        if kind == "click_rows":
            for doc in (f"d{rng.integers(0, depth)}", "unshown"):
                rows.append((bucket, f"s{s}", None, doc, None, 1, float(rng.uniform(0, 60)),
                             None))
    return rows


def used_impressions(rows: list[tuple]) -> list[tuple[str | None, str, list[list]]]:
    """Per search of :func:`mixed_log`'s rows with a used impression, by the rules of
    docs/clicks.md in plain Python: (bucket, query, [doc, position, clicks, dwell] per used
    impression). A search whose impressions disagree on the query is dropped; the impressions
    at a repeated position are dropped; a click row's clicks (and dwell) go to the shown
    document's best-placed impression, or nowhere when it was not shown."""
    by_search: dict[tuple, list[tuple]] = {}
    for r in rows:
        by_search.setdefault((r[0], r[1]), []).append(r)
    out = []
    for (bucket, _), rs in by_search.items():
        shown = [r for r in rs if r[4] is not None]
        if len({r[2] for r in shown}) != 1:
            continue
        count = {p: sum(1 for r in shown if r[4] == p) for p in {r[4] for r in shown}}
        kept = [[r[3], r[4], r[5], r[6]] for r in shown if count[r[4]] == 1]
        if not kept:
            continue
        for r in rs:
            if r[4] is None:
                mine = sorted((k for k in kept if k[0] == r[3]), key=lambda k: k[1])
                if mine:
                    mine[0][2] += r[5]
                    mine[0][3] = max(d for d in (mine[0][3], r[6]) if d is not None)
        out.append((bucket, shown[0][2], kept))
    return out


def mixed_reference(rows: list[tuple]) -> dict[tuple, tuple[float, float]]:
    """The per-query values of :func:`mixed_log`'s rows (:func:`used_impressions`)."""
    per_query: dict[tuple, list[dict]] = {}
    for bucket, query, kept in used_impressions(rows):
        hits = [k for k in kept if k[2] > 0]
        values = {
            "CTR@1": float(any(k[1] <= 1 for k in hits)),
            "CTR@3": float(any(k[1] <= 3 for k in hits)),
            "Abandonment": float(not hits),
            "ClickRR": 1.0 / min(k[1] for k in hits) if hits else 0.0,
            "Clicks": float(sum(k[2] for k in kept)),
            "Success@30": float(any(k[3] is not None and k[3] >= 30 for k in hits)),
        }
        per_query.setdefault((bucket, query), []).append(values)
    return {(b, q, m): (sum(v[m] for v in vs) / len(vs), float(len(vs)))
            for (b, q), vs in per_query.items() for m in MIXED_MEASURES}


def check_cells(spark, *, integer_queries: bool = False) -> list:
    """``impression_cells`` of :func:`mixed_log` against the used impressions counted in plain
    Python (impressions, clicked ones) per (bucket, query, doc, position) (:func:`gaps`)."""
    from releval.checks.interactions import check_interactions
    from releval.checks.query_means import impression_cells

    rows = mixed_log(np.random.default_rng(3))
    frame = spark.createDataFrame(rows, SCHEMA).drop("team")
    if integer_queries:
        frame = frame.withColumn("query_id", F.substring("query_id", 2, 9).cast("long"))
    cells = impression_cells(check_interactions(frame, partition_by="bucket"))
    expected: dict[tuple, list[float]] = {}
    for bucket, query, kept in used_impressions(rows):
        for doc, position, clicks, _ in kept:
            key = (bucket, query[1:] if integer_queries else query, doc, position)
            counts = expected.setdefault(key, [0.0, 0.0])
            counts[0] += 1
            counts[1] += clicks > 0
    return gaps({(r.bucket, str(r.query_id), r.doc_id, r.position): (r.impressions, r.clicks)
                 for r in cells.collect()},
                {k: tuple(v) for k, v in expected.items()})


def gaps(got: dict[tuple, tuple[float, float]],
         expected: dict[tuple, tuple[float, float]]) -> list:
    """The keys only one side has, and the largest difference of a value or a weight."""
    both = got.keys() & expected.keys()
    largest = max((abs(a - b) for k in both for a, b in zip(got[k], expected[k], strict=True)),
                  default=0.0)
    return [sorted(map(str, got.keys() ^ expected.keys())), round(largest, 12), len(both)]


def team_draft_aa(rng: np.random.Generator, *, logs: int, queries: int, searches: int,
                  positions: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """A/A team-draft interleaving: a ranker against itself, so each pair of positions goes
    to the two teams in an order a coin flip picks; clicks by position only (a position-based
    model with examination 1/position and attractiveness 0.4), independent of the team.

    Returns:
        team (logs, queries, searches, positions): 1 candidate, 0 baseline; clicked (same
        shape): 0/1.
    """
    pairs = (positions + 1) // 2
    first = rng.integers(0, 2, size=(logs, queries, searches, pairs))
    team = np.stack([first, 1 - first], axis=-1).reshape(logs, queries, searches, -1)
    team = team[..., :positions]
    examined = 1.0 / np.arange(1, positions + 1)
    clicked = (rng.random((logs, queries, searches, positions)) < 0.4 * examined).astype(int)
    return team, clicked


def preferences(team: np.ndarray, clicked: np.ndarray) -> np.ndarray:
    """Per (log, query): the mean over searches of sign(candidate clicks - baseline clicks)."""
    cand = (clicked * (team == 1)).sum(axis=-1)
    base = (clicked * (team == 0)).sum(axis=-1)
    return np.sign(cand - base).mean(axis=-1)
