"""Depth (trec_eval ``-M``): each ranking evaluated at its first M documents; checked by hand,
on both engines, and against trec_eval 10.0's own ``-M 10`` output on three real TREC runs
(``../shared/conformance/real``, 4 decimals: compared at 5e-5).

Run r, query q1, scored: A 5, B 4, C 4, D 4, E 3, F 2, A 1 (a repeat of A, worse). B, C and
D tie on 4: doc id descending puts D C B, so the ranking is A(1) D(2) C(3) B(4) E(5) F(6)
(the repeated A dropped). Qrels of q1: B 1, C 1, E 1, G 1 (not retrieved), D 0, F 0; A is
unjudged. At depth 3 the ranking is A D C: the cut comes after the tie-break (ascending
ties would keep A B C) and before the judged-only condensation (judged rows D(1) C(2); a
condensation first would keep D C B). R = 4 (B C E G), N = 2 (D F).
"""

from __future__ import annotations

import math

import pyarrow as pa
import pytest
from support.helpers import evaluate_rows, values
from support.sql_oracle import ENGINES
from support.trec_eval_text import implemented
from test_kernel import SPECS, by_run, partition
from test_real_runs import DATASETS, REAL, TOLERANCE, read_trec_eval

import releval
from releval.cli import _parser, config_from_args, main
from releval.config import (
    Config,
    EvaluationSettings,
    QrelsSource,
    RunSource,
    config_from_dict,
    validate,
)
from releval.core import columns as S
from releval.core.engine import query_measures
from releval.core.kernel import partition_stats
from releval.core.ranking import check_depth
from releval.errors import ConfigError

RUN = [("r", "q1", "A", 5.0), ("r", "q1", "B", 4.0), ("r", "q1", "C", 4.0), ("r", "q1", "D", 4.0),
       ("r", "q1", "E", 3.0), ("r", "q1", "F", 2.0), ("r", "q1", "A", 1.0)]
QRELS = [("q1", "B", 1), ("q1", "C", 1), ("q1", "E", 1), ("q1", "G", 1), ("q1", "D", 0),
         ("q1", "F", 0)]
NOT_POSITIVE = [0, -3, 2.5, 3.0, True, "10", [3]]


# --- the kernel (no Spark) -----------------------------------------------------------------


def test_the_kernel_cuts_after_the_tie_break_and_before_the_condensation():
    got = by_run(partition_stats(partition(RUN, QRELS), specs=SPECS, partition_columns=["run_id"],
                                 rank_by="score", depth=3))["r"]
    # A D C: 3 evaluated, B E F past the depth, the second A a repeat
    assert (got["num_ret"], got["_beyond_depth"], got["_repeated"]) == (3, 3, 1)
    assert got["num_ret_j"] == 2  # D C (a condensation first would keep D C B: 3)
    assert got["ret_2"] == 2
    assert got["judged_ret_3"] == 2  # D, C (A unjudged)
    assert got["rel_ret_l1_3"] == 1  # C (ties ascending would keep A B C: B and C, 2)
    assert got["rel_ret_l1_3_j"] == 1  # judged positions D 1, C 2: C
    assert got["first_rel_l1"] == 3
    assert got["dcg_4"] == pytest.approx(1 / math.log2(4), abs=1e-12)  # C at 3: 1/log2(4)
    assert got["dcg_all_j"] == pytest.approx(1 / math.log2(3), abs=1e-12)  # C at judged 2
    assert got["prec_sum_l1"] == pytest.approx(1 / 3, abs=1e-12)  # C: 1 relevant / 3
    assert got["prec_sum_l1_j"] == pytest.approx(1 / 2, abs=1e-12)  # C: 1 / judged 2
    assert got["rel_pos_l1"] == [3]
    assert got["rel_pos_l1_j"] == [2]
    assert got["nonrel_above_l1"] == [1]  # D above C


def test_no_depth_or_a_depth_beyond_the_ranking_evaluates_every_document():
    for depth in (None, 6, 100):
        got = by_run(partition_stats(partition(RUN, QRELS), specs=SPECS,
                                     partition_columns=["run_id"], rank_by="score",
                                     depth=depth))["r"]
        # A D C B E F: all 6, relevant at 3, 4, 5
        assert (got["num_ret"], got["_beyond_depth"], got["rel_pos_l1"]) == (6, 0, [3, 4, 5])


def test_ranking_by_rank_keeps_the_first_rows_in_ranking_order_at_their_logged_ranks():
    # logged ranks with gaps: A 1, B 3, D 7, C 9; depth 2 keeps A and B, at ranks 1 and 3
    run = [("r", "q1", "C", 9), ("r", "q1", "A", 1), ("r", "q1", "D", 7), ("r", "q1", "B", 3)]
    got = by_run(partition_stats(partition(run, [("q1", "B", 1), ("q1", "C", 1)]), specs=SPECS,
                                 partition_columns=["run_id"], rank_by="rank", depth=2))["r"]
    assert (got["num_ret"], got["_beyond_depth"], got["rel_pos_l1"]) == (2, 2, [3])


def test_the_ledger_still_receives_every_row_and_the_rows_past_the_depth_are_counted():
    table = partition(RUN, QRELS)
    table = table.append_column(
        "_reason", pa.array([None] * table.num_rows, pa.string())
    ).append_column("_qrels_label", pa.array([None] * len(RUN) + [q[2] for q in QRELS],
                                             pa.int32()))
    out = partition_stats(table, specs=SPECS, partition_columns=["run_id"], rank_by="score",
                          depth=3).to_pylist()
    (query,) = [r for r in out if r["_in_run"]]
    received = [r["_rows"] for r in out if r["_ledger"] == "received" and r["run_id"] == "r"]
    # 7 received = 3 evaluated (num_ret) + 3 past the depth + 1 repeat: none lost
    assert received == [7]
    assert query["num_ret"] + query["_beyond_depth"] + query["_repeated"] == 7


@pytest.mark.parametrize("depth", NOT_POSITIVE)
def test_a_depth_that_is_not_a_positive_integer_is_refused_by_the_engine(depth):
    with pytest.raises(ValueError, match=r"depth must be a positive integer"):
        check_depth(depth)


def test_the_engine_checks_the_depth_before_planning_anything():
    with pytest.raises(ValueError, match=r"depth must be a positive integer .* got 0"):
        query_measures(None, None, measures=[], partition_columns=(), depth=0)  # type: ignore[arg-type]


# --- config, command line, API ---------------------------------------------------------------


BASE = {"run": {"path": "r"}, "qrels": {"path": "q"}}


def test_the_config_key_and_its_default():
    assert config_from_dict(BASE).evaluation.depth is None
    assert config_from_dict({**BASE, "evaluation": {"depth": 10}}).evaluation.depth == 10


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (0, r"evaluation.depth = 0; expected a positive integer"),
        (-3, r"evaluation.depth = -3; expected a positive integer"),
        (2.5, r"evaluation.depth must be an integer, got 2.5"),
        (True, r"evaluation.depth must be an integer, got True"),
        ("10", r"evaluation.depth must be an integer, got '10'"),
    ],
)
def test_the_config_refuses_a_depth_that_is_not_a_positive_integer(value, message):
    with pytest.raises(ConfigError, match=message):
        config_from_dict({**BASE, "evaluation": {"depth": value}})


@pytest.mark.parametrize("depth", NOT_POSITIVE)
def test_a_config_built_in_code_is_checked_too(depth):
    config = Config(run=RunSource(path="r"), qrels=QrelsSource(path="q"),
                    evaluation=EvaluationSettings(depth=depth))
    with pytest.raises(ConfigError, match=r"^code: evaluation.depth = .*; expected a positive"):
        validate(config, source="code")


def test_depth_from_the_command_line(tmp_path, capsys):
    base = ["evaluate", "--run", "r.txt", "--qrels", "q.txt"]
    assert config_from_args(_parser().parse_args(base), str(tmp_path)).evaluation.depth is None
    ten = config_from_args(_parser().parse_args([*base, "--depth", "10"]), str(tmp_path))
    assert ten.evaluation.depth == 10
    for bad in ("0", "-1", "2.5", "ten"):
        with pytest.raises(SystemExit) as exit_:
            _parser().parse_args([*base, "--depth", bad])
        assert exit_.value.code == 2
        assert f"argument --depth: expected a positive integer, got '{bad}'" in (
            capsys.readouterr().err)


@pytest.mark.parametrize("depth", NOT_POSITIVE)
def test_the_api_refuses_a_depth_that_is_not_a_positive_integer(spark, depth):
    run = spark.createDataFrame([("q1", "A", 1.0)], "query_id string, doc_id string, score double")
    qrels = spark.createDataFrame([("q1", "A", 1)], "query_id string, doc_id string, relevance int")
    with pytest.raises(ConfigError, match=r"^depth = .*; expected a positive integer"):
        releval.evaluate(run, qrels, measures=["P@1"], depth=depth)


# --- end to end, both engines ------------------------------------------------------------------


MEASURES = ("num_ret,P@2,P@5,RR,AP,R@5,bpref,Judged@5,num_ret[judged],P@2[judged],RR[judged],"
            "AP[judged]")
# q2 is shorter than the depth: X 2, Y 1, Y relevant; it is evaluated whole
SHORT = [("q2", "X", 2.0), ("q2", "Y", 1.0)]


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_every_measure_sees_the_top_of_the_ranking(spark, engine):
    run = [(q, d, s) for _, q, d, s in RUN] + SHORT
    ev = evaluate_rows(spark, run, [*QRELS, ("q2", "Y", 1)], MEASURES, depth=3, engine=engine)
    got = values(ev)
    q1 = {k: v for (q, k), v in got.items() if q == "q1"}
    assert q1 == pytest.approx({
        "num_ret": 3.0,  # A D C (6 without the depth)
        "P@2": 0.0,  # A D
        "P@5": 1 / 5,  # C in A D C, divided by 5 (without the depth: C B E, 3/5)
        "RR": 1 / 3,  # C at 3
        "AP": (1 / 3) / 4,  # C at 3: precision 1/3; R = 4
        "R@5": 1 / 4,
        "bpref": (1 - 1 / 2) / 4,  # C: D above, 1 - min(1, 4) / min(2, 4); R = 4
        "Judged@5": 2 / 3,  # D C judged of A D C (fewer than 5: divides by the 3)
        "num_ret[judged]": 2.0,  # D C (a condensation first: D C B)
        "P@2[judged]": 1 / 2,  # D C
        "RR[judged]": 1 / 2,  # C at judged position 2
        "AP[judged]": (1 / 2) / 4,  # C at 2 (a condensation first: (1/2 + 2/3) / 4)
    }, abs=1e-12)
    assert got[("q2", "num_ret")] == 2.0 and got[("q2", "RR")] == 1 / 2  # X Y: Y at 2
    rows = ev.per_query.collect() + ev.aggregate.collect()
    assert {r[S.DEPTH] for r in rows} == {3}
    aggregate = {(r[S.MEASURE_KEY], r[S.AVERAGING]): r[S.VALUE] for r in ev.aggregate.collect()}
    assert aggregate[("num_ret", "sum")] == 5.0  # 3 + 2
    assert aggregate[("RR", "macro")] == pytest.approx((1 / 3 + 1 / 2) / 2, abs=1e-12)


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_ranking_by_rank_keeps_the_first_documents_in_ranking_order(spark, engine):
    # logged ranks A 1, B 3, D 7, C 9 (score unused); depth 2: A B, at ranks 1 and 3
    run = [("q", "C", 0.0, 9), ("q", "A", 0.0, 1), ("q", "D", 0.0, 7), ("q", "B", 0.0, 3)]
    got = values(evaluate_rows(spark, run, [("q", "B", 1), ("q", "C", 1)], "num_ret,RR,P@10",
                               rank_by="rank", depth=2, engine=engine))
    # B at logged rank 3: RR 1/3; P@10 = 1/10 (2/10 without the depth: B and C)
    assert got == pytest.approx({("q", "num_ret"): 2.0, ("q", "RR"): 1 / 3,
                                 ("q", "P@10"): 1 / 10}, abs=1e-12)


def test_without_a_depth_the_tables_say_null(spark):
    ev = evaluate_rows(spark, [(q, d, s) for _, q, d, s in RUN], QRELS, "P@5")
    assert {r[S.DEPTH] for r in ev.per_query.collect() + ev.aggregate.collect()} == {None}
    assert values(ev)[("q1", "P@5")] == pytest.approx(3 / 5)  # C B E in A D C B E


def test_rows_past_the_depth_are_used_rows_of_the_accounts(spark):
    run = spark.createDataFrame([(q, d, s) for _, q, d, s in RUN] + SHORT,
                                "query_id string, doc_id string, score double")
    qrels = spark.createDataFrame([*QRELS, ("q2", "Y", 1)],
                                  "query_id string, doc_id string, relevance int")
    result = releval.evaluate(run, qrels, measures=["P@2"], depth=3)
    accounts = result.accounts.run
    # 9 rows = 8 used (3 + 2 evaluated, B E F past the depth) + 1 duplicate_doc (the second A)
    assert (accounts.input, accounts.used, accounts.quarantined) == (9, 8, {"duplicate_doc": 1})
    assert {r[S.DEPTH] for r in result.per_query.collect() + result.aggregate.collect()} == {3}



# --- trec_eval -M 10 on real runs ------------------------------------------------------------


@pytest.mark.parametrize("dataset", DATASETS)
def test_depth_output_is_trec_eval_minus_m(shared_session, production_codegen, tmp_path, dataset):
    folder = REAL / dataset
    if not folder.is_dir():
        pytest.skip(f"real TREC runs not found at {folder}")
    expected = read_trec_eval(folder / "te_M10.txt")
    names = implemented({name for name, _ in expected})
    assert {"P_10", "P_100", "map", "ndcg_cut_10", "bpref", "Rprec", "num_ret"} <= set(names)
    out = tmp_path / "te.txt"
    with production_codegen():  # the production engine, as production compiles it
        code = main(["evaluate", "--run", str(folder / "run.trec"),
                     "--qrels", str(folder / "qrels.trec"), "--depth", "10",
                     "--measures", ",".join(names), "--output", str(tmp_path / "tables"),
                     "--trec-eval-output", str(out)])
    assert code == 0
    produced = read_trec_eval(out)
    wanted = {k: v for k, v in expected.items() if k[0] in names or k[0] == "num_q"}
    assert produced.keys() == wanted.keys()
    mismatches = [(k, v, produced[k]) for k, v in sorted(wanted.items())
                  if abs(produced[k] - v) > TOLERANCE]
    assert not mismatches, f"{len(mismatches)} of {len(wanted)}, first: {mismatches[:5]}"
    # every ranking was cut at 10 (the runs retrieve 100 or 1,000 documents per query)
    assert max(v for (name, q), v in produced.items() if name == "num_ret" and q != "all") == 10
