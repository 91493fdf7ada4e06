"""``--trec-eval-output``: trec_eval's ``-q`` text, in its order, from the job's own rows.

The line builder is checked on hand-made rows (no Spark); the whole file of ``releval
evaluate`` against trec_eval 10.0's own ``-q`` output, line for line, and its Spark jobs.
"""

from __future__ import annotations

import re

import pytest
from support.trec_eval_text import assert_same_lines, expected_lines, implemented, name_of

from releval.cli import main
from releval.core.measures import parse_measures
from releval.errors import RelevalError
from releval.io.trec_eval_format import TREC_ORDER, trec_eval_lines, trec_order

#: releval's order, not trec_eval's; P(rel=2)@5 (an explicit level) and Judged@5 have no name
MEASURES = parse_measures(
    ["P@10,nDCG@10,P@5,AP,RR,num_ret,Judged@5,R@5,Hit@1,AP@100,P(rel=2)@5"]
)
VALUES = {  # per query, in the order of MEASURES
    "q2": [0.5, 0.25, 0.4, 0.1, 1.0, 7.0, 1.0, 0.2, 1.0, 0.1, 0.2],
    "q10": [0.1, 1 / 3, 0.2, 0.1 + 0.2, 0.5, 100.0, 0.8, 0.3, 0.0, 0.3, 0.0],
    "q1": [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
}


def aggregate_rows(run: str = "bm25") -> list[dict]:
    means = {m.key: sum(v[i] for v in VALUES.values()) / 3 for i, m in enumerate(MEASURES)}
    rows = [{"run_id": run, "measure_key": k, "averaging": "macro", "value": v, "num_queries": 3}
            for k, v in means.items() if k != "num_ret"]
    rows.append({"run_id": run, "measure_key": "num_ret", "averaging": "sum", "value": 107.0,
                 "num_queries": 3})
    rows.append({"run_id": run, "measure_key": "P@5", "averaging": "micro", "value": 9.0,
                 "num_queries": 3})
    return rows


def test_lines_are_trec_eval_s_in_its_order():
    lines = trec_eval_lines(MEASURES, list(VALUES.items()), aggregate_rows(),
                            partition_columns=("run_id",))
    per_query = [
        "num_ret               \t{q}\t{num_ret}",
        "map                   \t{q}\t{map}",
        "recip_rank            \t{q}\t{rr}",
        "P_5                   \t{q}\t{p5}",
        "P_10                  \t{q}\t{p10}",
        "recall_5              \t{q}\t{r5}",
        "ndcg_cut_10           \t{q}\t{ndcg}",
        "map_cut_100           \t{q}\t{ap100}",
        "success_1             \t{q}\t{hit}",
    ]
    zero = dict.fromkeys(["num_ret", "map", "rr", "p5", "p10", "r5", "ndcg", "ap100", "hit"], "0")
    expected = [line.format(q="q1", **zero) for line in per_query]  # q1 < q10 < q2, as strings
    expected += [line.format(q="q10", num_ret="100", map="0.30000000000000004", rr="0.5",
                             p5="0.20000000000000001", p10="0.10000000000000001", r5="0.29999999999999999",
                             ndcg="0.33333333333333331", ap100="0.29999999999999999", hit="0")
                 for line in per_query]
    expected += [line.format(q="q2", num_ret="7", map="0.10000000000000001", rr="1",
                             p5="0.40000000000000002", p10="0.5", r5="0.20000000000000001",
                             ndcg="0.25", ap100="0.10000000000000001", hit="1")
                 for line in per_query]
    assert lines[:27] == expected
    assert lines[27:] == [
        "runid                 \tall\tbm25",
        "num_q                 \tall\t3",
        "num_ret               \tall\t107",  # a count's all line: its sum, as an integer
        f"map                   \tall\t{(0.1 + (0.1 + 0.2)) / 3:.17g}",
        f"recip_rank            \tall\t{(1.0 + 0.5) / 3:.17g}",
        f"P_5                   \tall\t{(0.4 + 0.2) / 3:.17g}",  # the macro mean, not micro
        f"P_10                  \tall\t{(0.5 + 0.1) / 3:.17g}",
        f"recall_5              \tall\t{(0.2 + 0.3) / 3:.17g}",
        f"ndcg_cut_10           \tall\t{(0.25 + 1 / 3) / 3:.17g}",
        f"map_cut_100           \tall\t{(0.1 + 0.3) / 3:.17g}",
        f"success_1             \tall\t{1 / 3:.17g}",
    ]


def test_judged_only_values_go_under_the_plain_names():
    measures = parse_measures(["P@5,num_ret"], judged_only=True) + parse_measures(["P@5,RR"])
    assert [m.key for m in measures] == ["P@5[judged]", "num_ret[judged]", "P@5", "RR"]
    means = {"P@5[judged]": 0.5, "num_ret[judged]": 3.0, "P@5": 0.75, "RR": 1.0}
    rows = [{"measure_key": k, "averaging": "sum" if "num_ret" in k else "macro", "value": v,
             "num_queries": 1} for k, v in means.items()]
    lines = trec_eval_lines(measures, [("q1", [0.25, 2.0, 0.75, 1.0])], rows, judged_only=True)
    # the [judged] values under the plain names; the plain keys of measures with a judged
    # variant (P@5, RR) are not what -J prints; no partition columns: no runid line
    assert lines == [
        "num_ret               \tq1\t2",
        "P_5                   \tq1\t0.25",
        "num_q                 \tall\t1",
        "num_ret               \tall\t3",
        "P_5                   \tall\t0.5",
    ]


def test_one_run_only():
    rows = aggregate_rows("bm25") + aggregate_rows("dense")
    with pytest.raises(RelevalError, match="one run"):
        trec_eval_lines(MEASURES, [], rows, partition_columns=("run_id",))


def test_several_partition_columns_make_one_runid():
    rows = [{"system": "bm25", "day": 3, "measure_key": "AP", "averaging": "macro",
             "value": 0.5, "num_queries": 2}]
    lines = trec_eval_lines(parse_measures(["AP"]), [], rows, partition_columns=("system", "day"))
    assert lines[0] == "runid                 \tall\tbm25,3"


def test_trec_order_of_families_and_parameters():
    names = ["zeta_10", "P_100", "set_P", "alpha", "P_5", "gm_map", "ndcg_cut_5", "Rndcg",
             "ndcg", "ndcg_rel", "iprec_at_recall_1.00", "iprec_at_recall_0.10", "zeta_5",
             "map", "num_q", "runid", "P_10", "relative_P_5", "unj_5", "map_cut_5"]
    assert sorted(names, key=trec_order) == [
        "runid", "num_q", "map", "gm_map", "iprec_at_recall_0.10", "iprec_at_recall_1.00",
        "P_5", "P_10", "P_100", "ndcg", "ndcg_rel", "Rndcg", "ndcg_cut_5", "map_cut_5",
        "relative_P_5", "set_P", "unj_5",
        "alpha", "zeta_5", "zeta_10",  # families not in the table: last, by name
    ]


def test_trec_order_is_trec_eval_s_own(conformance_dir):
    """trec_eval's all_trec output, per query and all: its names already in trec_order."""
    for name in ("full.test.q", "full.rel_level.l2.q"):
        lines = (conformance_dir / name).read_text().splitlines()
        for block in ("301", "all"):
            names = [name_of(line) for line in lines if line.split("\t")[1] == block]
            assert names == sorted(names, key=trec_order), (name, block)
            families = {re.sub(r"_\d+(\.\d+)?$", "", n) for n in names}
            assert families <= set(TREC_ORDER)

def test_the_file_is_trec_eval_q_line_for_line(shared_session, conformance_dir, tmp_path, capsys):
    expected_file = conformance_dir / "full.test.q"
    names = implemented({name_of(line) for line in expected_file.read_text().splitlines()})
    out = tmp_path / "releval.q"
    code = main(["evaluate", "--run", str(conformance_dir / "results.test"),
                 "--qrels", str(conformance_dir / "qrels.test"), "--measures", ",".join(names),
                 "--output", str(tmp_path / "tables"), "--trec-eval-output", str(out),
                 "--profile"])
    assert code == 0
    produced = out.read_text().splitlines()
    printed = {name_of(line) for line in produced}
    assert printed == {*names, "runid", "num_q"}
    assert_same_lines(produced, expected_lines(expected_file, printed))
    # the file's phase: one collect of the persisted per-query rows (the all lines are the
    # aggregate's rows, already on the driver)
    profile = capsys.readouterr().out
    found = re.search(r"^  trec_eval file\s+[\d.]+ s\s+(\d+) jobs$", profile, re.MULTILINE)
    assert found, profile[-2000:]
    assert 1 <= int(found[1]) <= 2


@pytest.mark.parametrize(("run", "qrels", "published", "full"), [
    ("results.test", "qrels.test", "out.test", "full.test.q"),
    ("results.comment.test", "qrels.comment.test", "out.comment.test", "full.comment.q"),
])
def test_measures_trec_eval_is_trec_eval_s_default_output(shared_session, conformance_dir,
                                                          tmp_path, run, qrels, published,
                                                          full):
    out = tmp_path / "releval.q"
    code = main(["evaluate", "--run", str(conformance_dir / run),
                 "--qrels", str(conformance_dir / qrels), "--measures", "trec_eval",
                 "--output", str(tmp_path / "tables"), "--trec-eval-output", str(out)])
    assert code == 0
    produced = out.read_text().splitlines()
    # the all block is trec_eval's default output (no -q), printed there to 4 decimals
    summary = [line for line in produced if line.split("\t")[1] == "all"]
    assert_same_lines(summary, (conformance_dir / published).read_text().splitlines(),
                      tol=5e-5 + 1e-12)
    # each query's lines are trec_eval -q's for the same measures, at full precision
    per_query = [line for line in produced if line.split("\t")[1] != "all"]
    names = {name_of(line) for line in per_query}
    assert len(names) == 27  # the 28 default measures but gm_map, which has only an all line
    wanted = [line for line in expected_lines(conformance_dir / full, names)
              if line.split("\t")[1] != "all"]
    assert_same_lines(per_query, wanted)
