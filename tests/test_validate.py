"""Row-level validation: one chispa test per reason code, and the accounting invariant."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from releval.checks.answers import answers_quarantine, label_answers
from releval.checks.interaction_reasons import INTERACTION_REASONS
from releval.checks.rules import REASONS
from releval.checks.split import split_qrels, split_run
from releval.core import columns as S
from releval.core.columns import UNCAST_PARTITION
from releval.errors import AccountingError

RAW_RUN = "run_id string, query_id string, doc_id string, score string, rank string"
RAW_QRELS = "query_id string, doc_id string, relevance string"
REJECTED = "reason_code string, query_id string, doc_id string"
KEPT = "query_id string, doc_id string"


def rejected(quarantined: DataFrame) -> DataFrame:
    """(reason_code, raw query_id, raw doc_id) of quarantined rows."""
    return quarantined.select(
        S.REASON_CODE,
        F.col(S.RAW)[S.QUERY_ID].alias(S.QUERY_ID),
        F.col(S.RAW)[S.DOC_ID].alias(S.DOC_ID),
    )


def check(
    spark: SparkSession,
    clean: DataFrame,
    quarantined: DataFrame,
    kept: list[tuple],
    reasons: list[tuple],
) -> None:
    assert_df_equality(
        clean.select(S.QUERY_ID, S.DOC_ID), spark.createDataFrame(kept, KEPT),
        ignore_row_order=True, ignore_nullable=True,
    )
    assert_df_equality(
        rejected(quarantined), spark.createDataFrame(reasons, REJECTED),
        ignore_row_order=True, ignore_nullable=True,
    )


# Each case: rank_by, raw run rows (run_id, qid, doc, score, rank), kept (qid, doc), rejected.
RUN_CASES = {
    "missing_query_id": (
        "score",
        [("r", None, "d1", "1.0", "1"), ("r", " ", "d2", "1.0", "2"), ("r", "q", "d3", "1.0", "3")],
        [("q", "d3")],
        [("missing_query_id", None, "d1"), ("missing_query_id", " ", "d2")],
    ),
    "missing_doc_id": (
        "score",
        [("r", "q", None, "1.0", "1"), ("r", "q", "", "1.0", "2"), ("r", "q", "d3", "1.0", "3")],
        [("q", "d3")],
        [("missing_doc_id", "q", None), ("missing_doc_id", "q", "")],
    ),
    "invalid_score": (
        "score",
        # null, non-numeric, NaN, infinite are rejected; the rank is not checked when ranking by score
        [("r", "q", "d1", None, "1"), ("r", "q", "d2", "x", "2"), ("r", "q", "d3", "NaN", "3"),
         ("r", "q", "d4", "-Infinity", "4"), ("r", "q", "d5", "0.5", "nope")],
        [("q", "d5")],
        [("invalid_score", "q", "d1"), ("invalid_score", "q", "d2"), ("invalid_score", "q", "d3"),
         ("invalid_score", "q", "d4")],
    ),
    "invalid_rank": (
        "rank",
        # null, zero, negative, non-integer, non-numeric are rejected; the score is not checked
        [("r", "q", "d1", "1", None), ("r", "q", "d2", "1", "0"), ("r", "q", "d3", "1", "-2"),
         ("r", "q", "d4", "1", "1.5"), ("r", "q", "d5", "1", "x"), ("r", "q", "d6", "x", "3")],
        [("q", "d6")],
        [("invalid_rank", "q", "d1"), ("invalid_rank", "q", "d2"), ("invalid_rank", "q", "d3"),
         ("invalid_rank", "q", "d4"), ("invalid_rank", "q", "d5")],
    ),
    "duplicate_doc": (
        "score",
        # d1 at scores 0.2 and 0.9: the best-ranked (0.9, line 2) is kept; d1 in run s is separate
        [("r", "q", "d1", "0.2", "2"), ("r", "q", "d1", "0.9", "1"), ("r", "q", "d2", "0.5", "3"),
         ("s", "q", "d1", "0.1", "1")],
        [("q", "d1"), ("q", "d2"), ("q", "d1")],
        [("duplicate_doc", "q", "d1")],
    ),
    "duplicate_rank": (
        "rank",
        # d1 and d2 both at rank 1: tie order is doc id descending, so d2 is kept, d1 rejected
        [("r", "q", "d1", "0.9", "1"), ("r", "q", "d2", "0.1", "1"), ("r", "q", "d3", "0.5", "2")],
        [("q", "d2"), ("q", "d3")],
        [("duplicate_rank", "q", "d1")],
    ),
}


@pytest.mark.parametrize("code", sorted(RUN_CASES))
def test_run_reason(spark, code):
    rank_by, rows, kept, reasons = RUN_CASES[code]
    clean, quarantined = split_run(
        spark.createDataFrame(rows, RAW_RUN), rank_by=rank_by, partition_columns=["run_id"]
    )
    check(spark, clean, quarantined, kept, reasons)


# Each case: raw run rows with a window (run_id, qid, doc, score, rank, window), kept, rejected.
WINDOW_CASES = {
    "invalid_window": (
        # null, zero, negative, non-integer, non-numeric are rejected
        [("r", "q", "d1", "1", "1", None), ("r", "q", "d2", "1", "2", "0"),
         ("r", "q", "d3", "1", "3", "-1"), ("r", "q", "d4", "1", "4", "2.5"),
         ("r", "q", "d5", "1", "5", "x"), ("r", "q", "d6", "1", "6", "2")],
        [("q", "d6")],
        [("invalid_window", "q", f"d{i}") for i in range(1, 6)],
    ),
    "conflicting_window": (
        # q1 of r: windows 2 and 3, both rows rejected; q2 of r and q1 of s each agree
        [("r", "q1", "d1", "0.9", "1", "2"), ("r", "q1", "d2", "0.5", "2", "3"),
         ("r", "q2", "d3", "0.9", "1", "2"), ("s", "q1", "d1", "0.9", "1", "5")],
        [("q2", "d3"), ("q1", "d1")],
        [("conflicting_window", "q1", "d1"), ("conflicting_window", "q1", "d2")],
    ),
}


@pytest.mark.parametrize("code", sorted(WINDOW_CASES))
def test_window_reason(spark, code):
    rows, kept, reasons = WINDOW_CASES[code]
    clean, quarantined = split_run(
        spark.createDataFrame(rows, f"{RAW_RUN}, window string"), rank_by="score",
        partition_columns=["run_id"],
    )
    check(spark, clean, quarantined, kept, reasons)


QRELS_CASES = {
    "missing_query_id": (
        [(None, "d1", "1"), ("", "d2", "1"), ("q", "d3", "1")],
        [("q", "d3")],
        [("missing_query_id", None, "d1"), ("missing_query_id", "", "d2")],
    ),
    "missing_doc_id": (
        [("q", None, "1"), ("q", "  ", "1"), ("q", "d3", "0")],
        [("q", "d3")],
        [("missing_doc_id", "q", None), ("missing_doc_id", "q", "  ")],
    ),
    "invalid_relevance": (
        [("q", "d1", None), ("q", "d2", "x"), ("q", "d3", "1.5"), ("q", "d4", "2"), ("q", "d5", "-1")],
        [("q", "d4"), ("q", "d5")],
        [("invalid_relevance", "q", "d1"), ("invalid_relevance", "q", "d2"),
         ("invalid_relevance", "q", "d3")],
    ),
    "conflicting_label": (
        # d1 judged 0, 2 and 2: the highest label (2) is kept twice (exact duplicates), 0 rejected
        [("q", "d1", "0"), ("q", "d1", "2"), ("q", "d1", "2"), ("q", "d2", "1")],
        [("q", "d1"), ("q", "d1"), ("q", "d2")],
        [("conflicting_label", "q", "d1")],
    ),
}


@pytest.mark.parametrize("code", sorted(QRELS_CASES))
def test_qrels_reason(spark, code):
    rows, kept, reasons = QRELS_CASES[code]
    clean, quarantined = split_qrels(spark.createDataFrame(rows, RAW_QRELS))
    check(spark, clean, quarantined, kept, reasons)


# Each case: raw answers rows (run_id, query_id, answer_score, a partition value that did not
# cast), kept (run_id, query_id), rejected (reason, run_id, query_id); the run has run_id r.
ANSWERS_CASES = {
    "missing_query_id": (
        [("r", None, "0.5", False), ("r", " ", "0.5", False), ("r", "q", "0.5", False)],
        [("r", "q")],
        [("missing_query_id", "r", None), ("missing_query_id", "r", " ")],
    ),
    "invalid_answer_score": (
        # null, non-numeric, NaN and outside [0, 1] are rejected; 0 and 1 are scores
        [("r", "q1", None, False), ("r", "q2", "x", False), ("r", "q3", "NaN", False),
         ("r", "q4", "1.01", False), ("r", "q5", "-0.1", False), ("r", "q6", "0", False),
         ("r", "q7", "1", False)],
        [("r", "q6"), ("r", "q7")],
        [("invalid_answer_score", "r", q) for q in ("q1", "q2", "q3", "q4", "q5")],
    ),
    "unknown_partition": (
        # another run id, a null one (the run has none), a value that did not cast
        [("zz", "q", "0.5", False), (None, "q", "0.5", False), ("r", "q2", "0.5", True),
         ("r", "q", "0.5", False)],
        [("r", "q")],
        [("unknown_partition", "zz", "q"), ("unknown_partition", None, "q"),
         ("unknown_partition", "r", "q2")],
    ),
    "duplicate_answer": (
        # q scored twice, even alike: neither is used; q2's second row has no score, so its
        # first is its only clean row and is used
        [("r", "q", "0.5", False), ("r", "q", "0.5", False), ("r", "q2", "0.3", False),
         ("r", "q2", None, False)],
        [("r", "q2")],
        [("duplicate_answer", "r", "q"), ("duplicate_answer", "r", "q"),
         ("invalid_answer_score", "r", "q2")],
    ),
}


@pytest.mark.parametrize("code", sorted(ANSWERS_CASES))
def test_answers_reason(spark, code):
    rows, kept, reasons = ANSWERS_CASES[code]
    raw = spark.createDataFrame(
        rows, f"run_id string, query_id string, answer_score string, {UNCAST_PARTITION} boolean")
    known = spark.createDataFrame([("r",)], "run_id string")
    labelled = label_answers(raw, partition_columns=["run_id"], known=known)
    clean = labelled.where(F.col(S.REASON).isNull()).select("run_id", S.QUERY_ID)
    assert_df_equality(clean, spark.createDataFrame(kept, "run_id string, query_id string"),
                       ignore_row_order=True, ignore_nullable=True)
    quarantined = answers_quarantine(labelled, partition_columns=["run_id"]).select(
        S.REASON_CODE, F.col(S.PARTITION)["run_id"].alias("run_id"),
        F.col(S.RAW)[S.QUERY_ID].alias(S.QUERY_ID))
    assert_df_equality(
        quarantined,
        spark.createDataFrame(reasons, "reason_code string, run_id string, query_id string"),
        ignore_row_order=True, ignore_nullable=True)


def test_every_reason_code_has_a_test():
    # conflicting_gold, duplicate_ranking: tests/test_shapes.py (one row per query)
    assert set(REASONS) == (set(RUN_CASES) | set(WINDOW_CASES) | set(QRELS_CASES)
                            | set(ANSWERS_CASES) | {"conflicting_gold", "duplicate_ranking"}
                            # tests/test_queries_input.py
                            | {"duplicate_query_id", "invalid_weight"}
                            # tests/test_interactions_input.py
                            | {code for code, _ in INTERACTION_REASONS})


def test_quarantine_row_keeps_partition_source_line_and_message(spark):
    raw = spark.createDataFrame(
        [("r", "f.txt", 7, "q", "d1", "x", "1")],
        "run_id string, _source string, _line long, query_id string, doc_id string, "
        "score string, rank string",
    )
    _, quarantined = split_run(raw, rank_by="score", partition_columns=["run_id"])
    row = quarantined.first()
    assert row[S.INPUT] == "run"
    assert (row[S.SOURCE], row[S.LINE]) == ("f.txt", 7)
    assert row[S.PARTITION] == {"run_id": "r"}
    assert row[S.RAW] == {"query_id": "q", "doc_id": "d1", "score": "x", "rank": "1"}
    assert row[S.MESSAGE] == REASONS["invalid_score"].message


def test_clean_rows_are_typed_canonical(spark):
    raw = spark.createDataFrame([("r", "q", "d1", "0.5", "3")], RAW_RUN)
    clean, _ = split_run(raw, rank_by="rank", partition_columns=["run_id"])
    assert [(f.name, f.dataType.simpleString()) for f in clean.schema.fields] == [
        ("run_id", "string"), ("query_id", "string"), ("doc_id", "string"),
        ("score", "double"), ("rank", "int"),
    ]
    assert clean.first()[S.RANK] == 3


DIRTY_RUN = [
    # run r: 5 rows = 2 used + missing_doc_id, invalid_score, duplicate_doc
    ("r", "q1", "d1", "0.9", "1"), ("r", "q1", "d1", "0.3", "2"), ("r", "q1", "", "0.5", "3"),
    ("r", "q2", "d1", "x", "1"), ("r", "q2", "d2", "0.1", "2"),
    # run s: 2 rows = 1 used + missing_query_id
    ("s", None, "d1", "0.9", "1"), ("s", "q1", "d1", "0.2", "1"),
]
DIRTY_QRELS = [
    # 6 rows = 4 used (one exact duplicate) + invalid_relevance + conflicting_label
    ("q1", "d1", "1"), ("q1", "d1", "1"), ("q1", "d1", "0"), ("q1", "d2", "?"),
    ("q2", "d2", "2"), ("q2", "d3", "0"),
]


def test_accounting_fails_when_a_row_disappears():
    # run r: 5 input rows counted, but only 1 used + 3 quarantined: one row is unaccounted for
    from releval.checks.accounts import _input_account

    counts = {'{"run_id":"r"}': {"_input": 5, "_used": 1, "duplicate_doc": 1,
                                  "invalid_score": 1, "missing_doc_id": 1}}
    with pytest.raises(AccountingError, match=r"run_id=r: input rows 5 \(received by the "
                       r"evaluation\) != used 1 \+ quarantined 3"):
        _input_account("run", "sample", counts)


def test_the_engines_ledger_counts_what_the_split_quarantines(spark):
    # the DIRTY sample above through the evaluation with its ledger (the job's path): the
    # accounts built from the engine's counts agree with the rows split_run / split_qrels
    # quarantine, reason by reason
    from releval.checks.accounts import account_ledger, account_qrels_ledger
    from releval.checks.rules import typed_qrels, typed_run
    from releval.core.engine import query_measures
    from releval.core.measures import parse_measures
    from releval.evaluation.counts import query_counts

    raw_run = spark.createDataFrame(DIRTY_RUN, RAW_RUN)
    raw_qrels = spark.createDataFrame(DIRTY_QRELS, RAW_QRELS)
    measures = parse_measures(["P@2"])
    table = query_measures(
        typed_run(raw_run, rank_by="score", partition_columns=["run_id"]),
        typed_qrels(raw_qrels),
        measures=measures, partition_columns=["run_id"], ledger=True,
    )
    # the job's one aggregation over the result: both ledgers
    found = query_counts(table, ["run_id"], missing_queries="zero", measures=measures)
    run = account_ledger("run", "sample", found.run_ledger, partition_columns=["run_id"])
    assert {p.partition: (p.input, p.used, p.quarantined) for p in run.partitions} == {
        "run_id=r": (5, 2, {"duplicate_doc": 1, "invalid_score": 1, "missing_doc_id": 1}),
        "run_id=s": (2, 1, {"missing_query_id": 1}),
    }
    qrels = account_qrels_ledger("qrels", "sample", found.qrels_ledger)
    # 6 rows = 4 used + 2 quarantined; (q1, d1, 1) twice -> 1 exact duplicate; highest label 2
    assert (qrels.input, qrels.used, qrels.quarantined, qrels.exact_duplicates, qrels.used_max) == (
        6, 4, {"conflicting_label": 1, "invalid_relevance": 1}, 1, 2
    )
    assert "run_id=r: input 5 = used 2 + quarantined 3 [ok]" in "\n".join(run.render())
    # the same reasons, row for row, from the quarantine's split
    split = {}
    for quarantined in (split_run(raw_run, rank_by="score", partition_columns=["run_id"])[1],
                        split_qrels(raw_qrels)[1]):
        for r in quarantined.groupBy(S.INPUT, S.REASON_CODE).count().collect():
            split[(r[S.INPUT], r[S.REASON_CODE])] = r["count"]
    from_ledger = {("run", c): n for c, n in run.quarantined.items()}
    from_ledger.update({("qrels", c): n for c, n in qrels.quarantined.items()})
    assert split == from_ledger
    # a qrels row lost inside the engine: one partition's used count one short (6, used 3)
    with pytest.raises(AccountingError, match=r"qrels sample: input rows 6 \(received by the "
                       r"evaluation\) != used 3 \+ quarantined 2"):
        account_qrels_ledger("qrels", "sample", [*found.qrels_ledger, ("used", -1)])


def test_ranking_by_rank_the_engine_sets_aside_the_rows_the_split_quarantines(spark):
    # by rank, the job's evaluation reads the run with the row rules' reasons only and the
    # engine applies the repeated-row rules itself: run r, query q1 logs A 1, C 1, B 2, A 4
    # and D at rank "x". A's occurrence at 4 repeats it (duplicate_doc); A and C share rank
    # 1 and C comes first in tie order (duplicate_rank for A); D is invalid_rank. Ranked:
    # C 1, B 2.
    from releval.checks.accounts import account_ledger
    from releval.checks.rules import typed_qrels, typed_run
    from releval.core.engine import query_measures
    from releval.core.measures import parse_measures
    from releval.evaluation.counts import query_counts

    raw_run = spark.createDataFrame(
        [("r", "q1", "A", "0.5", "1"), ("r", "q1", "C", "0.4", "1"), ("r", "q1", "B", "0.3", "2"),
         ("r", "q1", "A", "0.2", "4"), ("r", "q1", "D", "0.1", "x")], RAW_RUN,
    )
    raw_qrels = spark.createDataFrame([("q1", "A", "1"), ("q1", "B", "1")], RAW_QRELS)
    measures = parse_measures(["P@2"])
    table = query_measures(
        typed_run(raw_run, rank_by="rank", partition_columns=["run_id"]),
        typed_qrels(raw_qrels), measures=measures, rank_by="rank",
        partition_columns=["run_id"], ledger=True,
    )
    found = query_counts(table, ["run_id"], missing_queries="zero", measures=measures)
    run = account_ledger("run", "sample", found.run_ledger, partition_columns=["run_id"])
    assert [(p.input, p.used, p.quarantined) for p in run.partitions] == [
        (5, 2, {"duplicate_doc": 1, "duplicate_rank": 1, "invalid_rank": 1})
    ]
    # P@2 = 1/2: B (relevant) at 2; A, relevant too, is not ranked
    (row,) = table.where(F.col(S.QUERY_ID) == "q1").select("_measures").collect()
    assert [m[S.VALUE] for m in row[0]] == [0.5]
    # the quarantine's split names the same rows
    clean, quarantined = split_run(raw_run, rank_by="rank", partition_columns=["run_id"])
    check(spark, clean, quarantined, [("q1", "C"), ("q1", "B")],
          [("duplicate_rank", "q1", "A"), ("duplicate_doc", "q1", "A"), ("invalid_rank", "q1", "D")])


@pytest.mark.parametrize("score_type", ["float", "double"])
def test_quarantine_raw_of_typed_columns_is_the_original_value(spark, score_type):
    # typed (Parquet-like) columns: rank 0 is invalid and nulled in the clean columns, but the
    # raw map still shows it; a float score 0.5 renders "0.5" (exact in binary), NaN "NaN"
    raw = spark.createDataFrame(
        [("r", "q", "d1", 0.5, 0), ("r", "q", "d2", float("nan"), 2)],
        f"run_id string, query_id string, doc_id string, score {score_type}, rank int",
    )
    _, by_rank = split_run(raw, rank_by="rank", partition_columns=["run_id"])
    assert [r[S.RAW] for r in by_rank.collect()] == [
        {"query_id": "q", "doc_id": "d1", "score": "0.5", "rank": "0"}
    ]
    _, by_score = split_run(raw, rank_by="score", partition_columns=["run_id"])
    assert [r[S.RAW] for r in by_score.collect()] == [
        {"query_id": "q", "doc_id": "d2", "score": "NaN", "rank": "2"}
    ]


def test_the_run_account_comes_from_the_ledger_and_must_balance():
    from releval.checks.accounts import account_ledger

    # run r: the engine received 5 rows, rejected 1 (invalid_score), dropped 2 as
    # repeated documents and ranked 2 -> 5 = 2 + (1 + 2). run s: 2 = 2 + 0.
    ledger = {
        ("r",): {"received": 5, "invalid_score": 1, "duplicate_doc": 2, "used": 2},
        ("s",): {"received": 2, "used": 2},
    }
    done = account_ledger("run", "sample", ledger, partition_columns=["run_id"])
    assert [(p.partition, p.input, p.used, p.quarantined) for p in done.partitions] == [
        ("run_id=r", 5, 2, {"duplicate_doc": 2, "invalid_score": 1}),
        ("run_id=s", 2, 2, {}),
    ]
    assert (done.input, done.used, done.quarantined_total) == (7, 4, 3)
    # a row lost inside the engine: s received 2, ranked 1
    lost = {**ledger, ("s",): {"received": 2, "used": 1}}
    with pytest.raises(AccountingError, match=r"partition run_id=s: input rows 2 \(received by "
                       r"the evaluation\) != used 1 \(ranked\) \+ quarantined 0"):
        account_ledger("run", "sample", lost, partition_columns=["run_id"])
    # rows ranked in a partition the engine did not receive
    extra = {**ledger, ("t",): {"used": 1}}
    with pytest.raises(AccountingError, match="partition run_id=t: input rows 0"):
        account_ledger("run", "sample", extra, partition_columns=["run_id"])


def test_the_qrels_ledger_rows_of_each_engine_partition_are_folded():
    from releval.checks.accounts import account_qrels_ledger

    # partition 1: 3 rows received, all used, highest label 1; partition 2: 2 received,
    # 1 used + 1 conflicting_label, highest label 3 -> input 5 = used 4 + quarantined 1;
    # the counts add up, the highest label is the larger one (3), not the sum (4)
    ledger = [("received", 3), ("used", 3), ("max_label", 1),
              ("received", 2), ("used", 1), ("conflicting_label", 1), ("max_label", 3)]
    qrels = account_qrels_ledger("qrels", "sample", ledger)
    assert (qrels.input, qrels.used, qrels.quarantined, qrels.used_max) == (
        5, 4, {"conflicting_label": 1}, 3
    )
