"""The Arrow engine's NumPy function on a hand-made partition (no Spark needed).

Run "r", query q1, scored: D 5, A 4, E 3, B 3, A 1 (a repeat of A, worse).
Qrels of q1: A 2 and A 1 (judged twice: the highest label, 2, counts), B 1, C 1, D 0, X -1.
Ranking: D(1) A(2) E(3) B(4): the repeated A is dropped; E and B tie on 3 and E comes first
(doc id descending). E is unjudged; labels D 0, A 2, B 1. Judged positions: D 1, A 2, B 3.

Run "s", query q1: X 1.0, C 0.5 -> X(1) C(2); X's label is -1. The function reads every
qrels row it receives as a judgment: X is judged and non-relevant (bpref too). Under the
default negative-label rule X's label never reaches it (``releval.core.kernel.engine_rows``
reads it as no judgment; tests/test_judged.py checks both rules end to end).
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

from releval.core.kernel import partition_stats
from releval.core.measures.stats import QrelsStat, RunStat
from releval.core.ranked import segment_sums

RUN = [("r", "q1", "D", 5.0), ("r", "q1", "A", 4.0), ("r", "q1", "E", 3.0), ("r", "q1", "B", 3.0),
       ("r", "q1", "A", 1.0), ("s", "q1", "X", 1.0), ("s", "q1", "C", 0.5)]
QRELS = [("q1", "A", 2), ("q1", "A", 1), ("q1", "B", 1), ("q1", "C", 1), ("q1", "D", 0),
         ("q1", "X", -1)]

SPECS = {
    "num_ret": RunStat("num_ret"),
    "num_ret_j": RunStat("num_ret", judged=True),
    "ret_2": RunStat("ret", cutoff=2),
    "judged_ret_3": RunStat("judged_ret", cutoff=3),
    "rel_ret_l1_3": RunStat("rel_ret", level=1, cutoff=3),
    "rel_ret_l1_3_j": RunStat("rel_ret", judged=True, level=1, cutoff=3),
    "rel_ret_l2_all": RunStat("rel_ret", level=2),
    "first_rel_l1": RunStat("first_rel", level=1),
    "first_rel_l3": RunStat("first_rel", level=3),
    "dcg_4": RunStat("dcg", cutoff=4),
    "dcg_all_j": RunStat("dcg", judged=True),
    "dcg_exp_2": RunStat("dcg", cutoff=2, gain="exponential"),
    "prec_sum_l1": RunStat("prec_sum", level=1),
    "prec_sum_l1_j": RunStat("prec_sum", judged=True, level=1),
    "rel_pos_l1": RunStat("rel_pos", level=1),
    "rel_pos_l1_j": RunStat("rel_pos", judged=True, level=1),
    "nonrel_above_l1": RunStat("nonrel_above", level=1),
}


def partition(run: list[tuple], qrels: list[tuple], order: str = "_order") -> pa.Table:
    """The union the engine sends to the function: run rows, then qrels rows."""
    n, m = len(run), len(qrels)
    return pa.table({
        "run_id": pa.array([r[0] for r in run] + [None] * m, pa.string()),
        "query_id": pa.array([r[1] for r in run] + [q[0] for q in qrels], pa.string()),
        "doc_id": pa.array([r[2] for r in run] + [q[1] for q in qrels], pa.string()),
        order: pa.array([float(r[3]) for r in run] + [None] * m, pa.float64()),
        "relevance": pa.array([None] * n + [q[2] for q in qrels], pa.int32()),
        "_is_run": pa.array([True] * n + [False] * m),
    })


def by_run(table: pa.Table) -> dict[str, dict]:
    return {row["run_id"]: row for row in table.to_pylist()}


def test_statistics_of_a_hand_made_partition():
    got = by_run(partition_stats(
        partition(RUN, QRELS), specs=SPECS, partition_columns=["run_id"], rank_by="score"
    ))
    r = got["r"]
    assert (r["query_id"], r["_in_run"]) == ("q1", True)
    assert r["num_ret"] == 4  # D A E B (the repeated A dropped)
    assert r["_repeated"] == 1  # A 1, counted for the input accounting (duplicate_doc)
    assert r["num_ret_j"] == 3  # D A B
    assert r["ret_2"] == 2
    assert r["judged_ret_3"] == 2  # D, A (E unjudged)
    assert r["rel_ret_l1_3"] == 1  # A
    assert r["rel_ret_l1_3_j"] == 2  # judged positions A 2, B 3
    assert r["rel_ret_l2_all"] == 1  # A (label 2)
    assert r["first_rel_l1"] == 2
    assert r["first_rel_l3"] is None  # no label 3: null, not 0
    # 0/log2(2) + 2/log2(3) + 0 (E unjudged) + 1/log2(5)
    assert r["dcg_4"] == pytest.approx(2 / math.log2(3) + 1 / math.log2(5), abs=1e-12)
    # judged positions: D 1, A 2, B 3 -> 2/log2(3) + 1/log2(4)
    assert r["dcg_all_j"] == pytest.approx(2 / math.log2(3) + 0.5, abs=1e-12)
    assert r["dcg_exp_2"] == pytest.approx((2**2 - 1) / math.log2(3), abs=1e-12)
    assert r["prec_sum_l1"] == pytest.approx(1 / 2 + 2 / 4, abs=1e-12)  # A at 2, B at 4
    assert r["prec_sum_l1_j"] == pytest.approx(1 / 2 + 2 / 3, abs=1e-12)  # A at 2, B at 3
    assert r["rel_pos_l1"] == [2, 4]
    assert r["rel_pos_l1_j"] == [2, 3]
    assert r["nonrel_above_l1"] == [1, 1]  # D (label 0) is above both A and B
    s = got["s"]
    assert (s["num_ret"], s["first_rel_l1"], s["rel_pos_l1"]) == (2, 2, [2])
    assert s["nonrel_above_l1"] == [1]  # X (label -1 < 1, a judgment here) is above C
    assert s["num_ret_j"] == 2  # a negative label it receives is a judgment
    assert s["_repeated"] == 0


def test_rank_by_rank_keeps_the_logged_positions_and_the_best_repeat():
    # logged ranks with a gap: A 1, B 3, A 5 (a repeat, worse) -> positions A 1, B 3
    run = [("r", "q1", "A", 1), ("r", "q1", "B", 3), ("r", "q1", "A", 5)]
    got = by_run(partition_stats(
        partition(run, [("q1", "B", 1)]), specs=SPECS, partition_columns=["run_id"],
        rank_by="rank",
    ))["r"]
    assert (got["num_ret"], got["first_rel_l1"], got["rel_pos_l1"]) == (2, 3, [3])
    assert got["dcg_4"] == pytest.approx(1 / math.log2(4), abs=1e-12)  # B at rank 3


def test_queries_without_qrels_and_qrels_without_run_rows():
    # q2 has no judgments: every count 0, no first relevant; q3's qrels have no run rows
    run = [("r", "q2", "A", 1.0)]
    got = partition_stats(
        partition(run, [("q3", "A", 1)]), specs=SPECS, partition_columns=["run_id"],
        rank_by="score", qrels_specs=QRELS_SPECS,
    ).to_pylist()
    # the run's query row (no qrels: not in the qrels, null qrels statistics), then q3's
    # row as a query of the qrels (no run partition, null run statistics)
    assert [(g["run_id"], g["query_id"], g["_in_run"], g["_in_qrels"], g["num_ret"], g["num_ret_j"],
             g["first_rel_l1"], g["num_rel_l1"]) for g in got] == [
        ("r", "q2", True, False, 1, 0, None, None),
        (None, "q3", False, True, None, None, None, 1),
    ]


QRELS_SPECS = {
    "num_rel_l0": QrelsStat("num_rel", level=0),
    "num_rel_l1": QrelsStat("num_rel", level=1),
    "num_rel_l2": QrelsStat("num_rel", level=2),
    "num_nonrel_l1": QrelsStat("num_nonrel", level=1),
    "idcg_all": QrelsStat("idcg"),
    "idcg_2": QrelsStat("idcg", cutoff=2),
    "idcg_exp_1": QrelsStat("idcg", cutoff=1, gain="exponential"),
}


def test_the_qrels_statistics_of_each_query_from_its_judgments():
    # q1's judgments, one label per doc (the highest): A 2, B 1, C 1, D 0, X -1 (a judgment
    # here, see the module docstring); q4 has one qrels row that is not a judgment (null
    # label: a negative label under the default rule) and no run rows
    qrels = [*QRELS, ("q4", "Z", None)]
    got = partition_stats(partition(RUN, qrels), specs=SPECS, partition_columns=["run_id"],
                          rank_by="score", qrels_specs=QRELS_SPECS).to_pylist()
    rows = {(g["run_id"], g["query_id"]): g for g in got}
    assert set(rows) == {("r", "q1"), ("s", "q1"), (None, "q1"), (None, "q4")}
    ideal = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)  # A 2, B 1, C 1 (D 0, X -1: 0)
    expected_q1 = {
        "num_rel_l0": 4,  # A B C D (X -1 < 0)
        "num_rel_l1": 3,  # A B C
        "num_rel_l2": 1,  # A
        "num_nonrel_l1": 2,  # D 0, X -1
        "idcg_all": pytest.approx(ideal, abs=1e-12),
        "idcg_2": pytest.approx(2 + 1 / math.log2(3), abs=1e-12),
        "idcg_exp_1": pytest.approx(2**2 - 1, abs=1e-12),  # A: 2^2 - 1 at position 1
    }
    for key in (("r", "q1"), ("s", "q1"), (None, "q1")):  # every run partition's row, the same
        assert {k: rows[key][k] for k in QRELS_SPECS} == expected_q1
        assert rows[key]["_in_qrels"] is True
    assert (rows[(None, "q1")]["_in_run"], rows[("r", "q1")]["_in_run"]) == (False, True)
    # q4 is a query of the qrels with no judgment: every count 0
    q4 = rows[(None, "q4")]
    assert (q4["_in_run"], q4["_in_qrels"]) == (False, True)
    assert {k: q4[k] for k in QRELS_SPECS} == {
        "num_rel_l0": 0, "num_rel_l1": 0, "num_rel_l2": 0, "num_nonrel_l1": 0,
        "idcg_all": 0.0, "idcg_2": 0.0, "idcg_exp_1": 0.0,
    }


def test_a_skewed_query_with_100k_judged_documents():
    # one query returns 100k documents, all judged, label 1 on every 4th (by rank), next to a
    # small query: the partition is computed as a whole, the big query is just more rows
    n = 100_000
    run = [("r", "big", f"d{i:06d}", float(n - i)) for i in range(n)] + [("r", "small", "x", 1.0)]
    qrels = [("big", f"d{i:06d}", 1 if i % 4 == 0 else 0) for i in range(n)] + [("small", "x", 1)]
    got = {row["query_id"]: row for row in partition_stats(
        partition(run, qrels), specs=SPECS, partition_columns=["run_id"], rank_by="score"
    ).to_pylist() if row["_in_run"]}
    big = got["big"]
    assert (big["num_ret"], big["num_ret_j"], big["first_rel_l1"]) == (n, n, 1)
    assert big["rel_ret_l1_3"] == 1  # ranks 1, 2, 3: only rank 1 is relevant
    # relevant at ranks 1, 5, 9, ...: the j-th (1-based) is at rank 4j-3 with j relevant so far
    assert big["prec_sum_l1"] == pytest.approx(sum(j / (4 * j - 3) for j in range(1, n // 4 + 1)))
    assert big["nonrel_above_l1"][:3] == [0, 3, 6]
    assert (got["small"]["num_ret"], got["small"]["first_rel_l1"]) == (1, 1)


def test_ranking_by_rank_the_ledger_sets_aside_a_shared_rank():
    # logged ranks of r/q1: A 1, C 1, B 2, A 4 (a repeat, worse), and D 3 rejected by a row
    # rule. The repeated-document rule comes first: A's best occurrence is at 1, the one
    # at 4 is duplicate_doc. Then A and C share rank 1: C comes first in tie order (doc id
    # descending), so A loses it (duplicate_rank) and is not ranked at all (not at 4).
    run = [("r", "q1", "A", 1), ("r", "q1", "C", 1), ("r", "q1", "B", 2), ("r", "q1", "A", 4),
           ("r", "q1", "D", 3)]
    table = partition(run, [("q1", "A", 1)])
    table = table.append_column(
        "_reason", pa.array([None, None, None, None, "invalid_rank", None], pa.string())
    ).append_column("_qrels_label", pa.array([None] * 5 + [1], pa.int32()))
    out = partition_stats(table, specs=SPECS, partition_columns=["run_id"], rank_by="rank").to_pylist()
    (query,) = [r for r in out if r["_in_run"]]
    # ranked: C 1, B 2; A (the only relevant document) is not: no relevant rank
    assert (query["num_ret"], query["_repeated"], query["first_rel_l1"]) == (2, 0, None)
    ledger = sorted((r["_ledger"], r["_rows"]) for r in out if r["_ledger"] and r["run_id"])
    # 5 received = 2 ranked + 1 duplicate_doc + 1 duplicate_rank + 1 invalid_rank (by
    # rank, the repeats come as ledger rows, like the row rules' reasons)
    assert ledger == [("duplicate_doc", 1), ("duplicate_rank", 1), ("invalid_rank", 1),
                      ("received", 5)]


def test_the_ledger_counts_every_row_received_and_uses_only_the_clean_ones():
    # the RUN rows plus two rejected ones (the reasons come from the row rules, before
    # the engine): a run "r" row with an invalid score and a run "t" row without a query id;
    # the QRELS rows plus a row with an invalid label and an exact duplicate of (q1, B, 1)
    qrels = QRELS + [("q1", "Y", None), ("q1", "B", 1)]
    table = partition(RUN + [("r", "q1", "Z", float("nan")), ("t", None, "Y", 1.0)], qrels)
    n_run = len(RUN) + 2
    reasons = ([None] * len(RUN) + ["invalid_score", "missing_query_id"]
               + [None] * len(QRELS) + ["invalid_relevance", None])
    table = table.append_column("_reason", pa.array(reasons, pa.string())).append_column(
        "_qrels_label", pa.array([None] * n_run + [q[2] for q in qrels], pa.int32())
    )
    out = partition_stats(table, specs={"num_ret": RunStat("num_ret"), **SPECS},
                          partition_columns=["run_id"], rank_by="score").to_pylist()
    queries = {(r["run_id"], r["query_id"]): (r["num_ret"], r["_repeated"])
               for r in out if r["_in_run"]}
    ledger = sorted((r["run_id"] or "", r["_ledger"], r["_rows"]) for r in out if r["_ledger"])
    # r: 6 rows received = 4 ranked (D A E B) + 1 repeated (the second A) + 1 invalid_score;
    # s: 2 = 2 ranked; t: 1 = 1 missing_query_id (no query row: nothing was ranked)
    assert queries == {("r", "q1"): (4, 1), ("s", "q1"): (2, 0)}
    # qrels, no run partition: 8 received = 1 invalid_relevance + 7 clean; of the clean,
    # (q1, A, 1) is below (q1, A, 2): conflicting_label; the other 6 are used, the second
    # (q1, B, 1) among them (an exact duplicate); the highest used label is 2
    assert ledger == [("", "qrels:conflicting_label", 1), ("", "qrels:exact_duplicate", 1),
                      ("", "qrels:invalid_relevance", 1), ("", "qrels:max_label", 2),
                      ("", "qrels:received", 8), ("", "qrels:used", 6),
                      ("r", "invalid_score", 1), ("r", "received", 6), ("s", "received", 2),
                      ("t", "missing_query_id", 1), ("t", "received", 1)]
    assert sum(n for _, tag, n in ledger if tag == "received") == n_run
    # the measures read the same labels as without the rejected and duplicate rows
    plain = by_run(partition_stats(partition(RUN, QRELS), specs=SPECS, partition_columns=["run_id"],
                                   rank_by="score"))
    compared = [row for row in out if row["_ledger"] is None and row["_in_run"]]
    assert sorted(row["run_id"] for row in compared) == ["r", "s"]
    for row in compared:
        assert {k: row[k] for k in SPECS} == {k: plain[row["run_id"]][k] for k in SPECS}
    assert all(r["query_id"] is None and r["_in_run"] is False for r in out if r["_ledger"])


def test_each_query_s_qrels_row_says_how_many_run_partitions_retrieved_it():
    # q1 is retrieved by runs r and s (RUN), q2 by r only, q3 by none: it is only judged;
    # run t's one row for q3 was rejected by a row rule, so t did not retrieve it
    run = [*RUN, ("r", "q2", "A", 1.0), ("t", "q3", "A", 1.0)]
    qrels = [*QRELS, ("q2", "A", 1), ("q3", "A", 1)]
    table = partition(run, qrels)
    reasons = [None] * (len(run) - 1) + ["invalid_score"] + [None] * len(qrels)
    table = table.append_column("_reason", pa.array(reasons, pa.string())).append_column(
        "_qrels_label", pa.array([None] * len(run) + [q[2] for q in qrels], pa.int32())
    )
    out = partition_stats(table, specs=SPECS, partition_columns=["run_id"],
                          rank_by="score").to_pylist()
    runs = {(r["run_id"], r["query_id"]): r["_retrieved_by"] for r in out if r["_in_run"]}
    judged = {r["query_id"]: r["_retrieved_by"] for r in out
              if not r["_in_run"] and r["_in_qrels"]}
    # the qrels' row of each query: 0 for q3, which a one-run job then scores as missing
    assert judged == {"q1": 2, "q2": 1, "q3": 0}
    # said there only: the run partitions' rows leave it null
    assert runs == {("r", "q1"): None, ("s", "q1"): None, ("r", "q2"): None}
    # the ledger rows belong to no query
    assert {r["_retrieved_by"] for r in out if r["_ledger"]} == {None}


def test_a_partition_whose_rows_were_all_rejected_gives_its_ledger_only():
    # the shuffle partition holds no clean row (a NaN score, a blank query id): no query
    run, qrels = [("r", "q1", "A", 1.0)], [("", "A", 1)]
    table = partition(run, qrels).append_column(
        "_reason", pa.array(["invalid_score", "missing_query_id"], pa.string())
    ).append_column("_qrels_label", pa.array([None, 1], pa.int32()))
    out = partition_stats(table, specs=SPECS, partition_columns=["run_id"], rank_by="score")
    # only ledger rows: the run's received row and its reason, the qrels' the same
    assert [(r["run_id"], r["_ledger"], r["_rows"], r["query_id"]) for r in out.to_pylist()] == [
        ("r", "received", 1, None), ("r", "invalid_score", 1, None),
        (None, "qrels:received", 1, None), (None, "qrels:missing_query_id", 1, None),
    ]


def test_segment_sums_add_each_rankings_first_rows():
    # rankings [0, 3) and [3, 5) of values 1 2 3 | 4 5: the first 2 rows of each, none,
    # then all of the first and the first row of the second
    values = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    starts = np.array([0, 3])
    assert segment_sums(values, starts, np.array([2, 5])).tolist() == [1 + 2, 4 + 5]
    assert segment_sums(values, starts, np.array([0, 3])).tolist() == [0.0, 0.0]
    assert segment_sums(values.astype(np.int64), starts, np.array([3, 4])).tolist() == [6, 4]
