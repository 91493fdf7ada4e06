"""The repeated-row rules (``releval.core.repeats``, ``releval.core.ranking.best_first``) on
hand-made arrays, and the quarantine's labelling that applies them to a partition's rows
(no Spark needed). The engine applies the same functions: tests/test_kernel.py."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from releval.checks.rules import REASON, _label_conflicting_qrels_rows, _label_repeated_run_rows
from releval.core import columns as S
from releval.core.ranking import best_first
from releval.core.repeats import highest_labels, repeated_documents, shared_ranks


def test_best_first_orders_by_group_then_primary_then_doc_id_descending():
    # group 0: A at -4, B at -5, C at -4 (ties with A: C before A, doc id descending);
    # group 1: A at -1. Codes: A 0, B 1, C 2.
    docs = pa.array(["A", "B", "C"])
    group = np.array([0, 0, 0, 1])
    primary = np.array([-4.0, -5.0, -4.0, -1.0])
    doc = np.array([0, 1, 2, 0])
    # B (row 1) first at -5, then C (row 2) and A (row 0) at -4, then group 1's A (row 3)
    assert best_first(group, primary, doc, docs).tolist() == [1, 2, 0, 3]


def test_best_first_keeps_the_given_order_of_full_ties():
    # the same document twice at the same score: the sort is stable, so the row given first
    # (the quarantine gives them in file order) comes first
    docs = pa.array(["A"])
    assert best_first(np.array([0, 0]), np.array([-1.0, -1.0]), np.array([0, 0]), docs).tolist() == [0, 1]
    assert best_first(np.array([0, 0, 0]), np.array([-1.0, -1.0, -2.0]), np.array([0, 0, 0]),
                      docs).tolist() == [2, 0, 1]


def test_best_first_of_rows_already_in_order_breaks_their_ties_by_doc_id():
    # given in ranking order but for ties: group 0 holds A -5, B -4, A -4, C -4 (B, A, C
    # tie at -4: C, B, A by doc id descending); group 1 holds B -2, C -1 (no tie)
    docs = pa.array(["A", "B", "C"])
    group = np.array([0, 0, 0, 0, 1, 1])
    primary = np.array([-5.0, -4.0, -4.0, -4.0, -2.0, -1.0])
    doc = np.array([0, 1, 0, 2, 1, 2])
    assert best_first(group, primary, doc, docs).tolist() == [0, 3, 1, 2, 4, 5]
    # without the tie the order is the rows' own
    assert best_first(group[4:], primary[4:], doc[4:], docs).tolist() == [0, 1]


def test_a_documents_later_occurrences_are_repeated():
    # in ranking order: group 0 holds docs 5, 3, 5 (the second 5 repeats); group 1 holds 5, 5
    group = np.array([0, 0, 0, 1, 1])
    doc = np.array([5, 3, 5, 5, 5])
    assert repeated_documents(group, doc, 6).tolist() == [False, False, True, False, True]
    assert repeated_documents(np.array([], dtype=np.int64), np.array([], dtype=np.int64), 0).tolist() == []


def test_a_shared_rank_goes_to_the_first_in_tie_order():
    # group 0: ranks 1, 1, 2 (the second row at rank 1 loses it); group 1: rank 1 (its own)
    assert shared_ranks(np.array([0, 0, 0, 1]), np.array([1, 1, 2, 1])).tolist() == [
        False, True, False, False,
    ]


def test_the_highest_label_is_the_judgment():
    # key 7 judged 0, 2, 2; key 2 judged 1. By key, highest label first: rows 3 (key 2),
    # 1 and 2 (key 7, label 2), 0 (key 7, label 0).
    order, first, best = highest_labels(np.array([7, 7, 7, 2]), np.array([0, 2, 2, 1]))
    assert order.tolist() == [3, 1, 2, 0]
    assert first.tolist() == [True, True, False, False]
    assert best.tolist() == [1, 2, 2, 2]
    label = np.array([0, 2, 2, 1])[order]
    assert (label < best).tolist() == [False, False, False, True]  # row 0: conflicting_label
    assert ((label == best) & ~first).tolist() == [False, False, True, False]  # row 2: exact duplicate


def _run_rows(rows: list[tuple]) -> pa.Table:
    return pa.table({
        "run_id": [r[0] for r in rows], S.QUERY_ID: [r[1] for r in rows],
        S.DOC_ID: [r[2] for r in rows], S.SCORE: pa.array([r[3] for r in rows], pa.float64()),
        S.RANK: pa.array([r[4] for r in rows], pa.int32()), "_source": ["f"] * len(rows),
        "_line": pa.array([r[5] for r in rows], pa.int64()),
        REASON: pa.array([r[6] for r in rows], pa.string()),
    })


def test_the_quarantine_names_the_occurrences_the_engine_drops():
    # run r, query q, by score: d1 at 0.5 on lines 3 (rank 1), 1 (rank 1) and 0 (rank 2),
    # d1 at 0.9 on line 5 (the best: kept); d2 on line 2 is rejected already (its reason
    # stays, and it takes part in no rule). Run s's d1 is another run's: kept.
    rows = [("r", "q", "d1", 0.5, 1, 3, None), ("r", "q", "d1", 0.5, 1, 1, None),
            ("r", "q", "d1", 0.5, 2, 0, None), ("r", "q", "d1", 0.9, 4, 5, None),
            ("r", "q", "d2", 0.7, 1, 2, "invalid_rank"), ("s", "q", "d1", 0.5, 1, 4, None)]
    labelled = _label_repeated_run_rows(_run_rows(rows), rank_by="score", partition_columns=["run_id"])
    assert labelled.column(REASON).to_pylist() == [
        "duplicate_doc", "duplicate_doc", "duplicate_doc", None, "invalid_rank", None,
    ]
    # by rank: d1's best occurrence is the one at rank 1 with the highest score, then the
    # earliest line: line 1 (score 0.5 ties with line 3; line 5 is at rank 4)
    rows = [("r", "q", "d1", 0.5, 1, 3, None), ("r", "q", "d1", 0.5, 1, 1, None),
            ("r", "q", "d1", 0.9, 4, 5, None), ("r", "q", "d3", 0.1, 1, 6, None),
            ("r", "q", "d2", 0.1, 2, 7, None)]
    labelled = _label_repeated_run_rows(_run_rows(rows), rank_by="rank", partition_columns=["run_id"])
    # d3 and d1 share rank 1: d3 comes first in tie order (doc id descending), d1 loses it
    assert labelled.column(REASON).to_pylist() == [
        "duplicate_doc", "duplicate_rank", "duplicate_doc", None, None,
    ]


def test_the_quarantine_names_the_conflicting_judgments():
    # q/d1 judged 0, 2, 2 and q/d2 judged 1; q/d3's row is rejected already
    qrels = pa.table({
        S.QUERY_ID: ["q", "q", "q", "q", "q"], S.DOC_ID: ["d1", "d1", "d1", "d2", "d3"],
        S.RELEVANCE: pa.array([0, 2, 2, 1, None], pa.int32()),
        REASON: pa.array([None, None, None, None, "invalid_relevance"], pa.string()),
    })
    assert _label_conflicting_qrels_rows(qrels).column(REASON).to_pylist() == [
        "conflicting_label", None, None, None, "invalid_relevance",
    ]
