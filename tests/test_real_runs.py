"""``releval evaluate --trec-eval-output F`` against trec_eval 10.0 on three real TREC runs
(``../shared/conformance/real``, ``-q -c -m all_trec`` at ``-l1``, ``-l2`` and ``-J``; 4
decimals: compared at 5e-5), every measure of ``all_trec``; and ``--judged-only`` by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.trec_eval_text import implemented

from releval.cli import main

pytestmark = pytest.mark.slow  # real TREC submissions, every measure against trec_eval's output (large inputs)

#: trec_eval rounds to 4 decimals: half a unit of the 4th, plus the float error of a value
#: on the half (robust03's P_200 all is 0.06035: trec_eval's sum rounds up, releval's is below)
TOLERANCE = 5e-5 + 1e-12
REAL = Path(__file__).resolve().parents[1].parent / "shared" / "conformance" / "real"
DATASETS = ("covid-bm25-complete", "dl19-passage-splade", "robust03-rutcor03100")


def read_trec_eval(path: Path) -> dict[tuple[str, str], float]:
    """{(trec_eval name, query id or 'all'): value} of a trec_eval -q file (numbers only)."""
    values = {}
    for line in path.read_text().splitlines():
        name, qid, value = (part.strip() for part in line.split("\t"))
        try:
            values[(name, qid)] = float(value)
        except ValueError:  # runid, relstring
            continue
    return values

def evaluate_judged_only(run: Path, qrels: Path, measures: str, tmp_path: Path,
                         options: tuple[str, ...] = ("--judged-only",)) -> Path:
    out = tmp_path / "te.txt"
    code = main(["evaluate", "--run", str(run), "--qrels", str(qrels), *options,
                 "--measures", measures, "--output", str(tmp_path / "tables"),
                 "--trec-eval-output", str(out)])
    assert code == 0
    return out


def test_judged_only_values_under_trec_eval_names(shared_session, tmp_path):
    # ranking u (unjudged), x (judged 0), r (relevant): -J keeps x r, so r is at rank 2 of 2
    # P@1 = 0/1 = 0, P@2 = 1/2, recip_rank = 1/2, num_ret = 2 (judged), num_rel = 1
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 u 1 3.0 t\nq1 Q0 x 2 2.0 t\nq1 Q0 r 3 1.0 t\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 x 0\nq1 0 r 1\n")
    out = evaluate_judged_only(run, qrels, "P@1,P@2,RR", tmp_path)
    assert read_trec_eval(out) == {
        ("P_1", "q1"): 0.0, ("P_2", "q1"): 0.5, ("recip_rank", "q1"): 0.5,
        ("num_ret", "q1"): 2.0, ("num_rel", "q1"): 1.0, ("num_rel_ret", "q1"): 1.0,
        ("P_1", "all"): 0.0, ("P_2", "all"): 0.5, ("recip_rank", "all"): 0.5,
        ("num_ret", "all"): 2.0, ("num_rel", "all"): 1.0, ("num_rel_ret", "all"): 1.0,
        ("num_q", "all"): 1.0,
    }


#: trec_eval output file -> the options that reproduce it
OUTPUTS = {"te_l1.txt": (), "te_l2.txt": ("--relevance-level", "2"),
           "te_J.txt": ("--judged-only",)}


@pytest.mark.parametrize("output", sorted(OUTPUTS))
@pytest.mark.parametrize("dataset", DATASETS)
def test_every_measure_agrees_with_trec_eval_on_real_runs(shared_session, production_codegen,
                                                          tmp_path, dataset, output):
    folder = REAL / dataset
    if not folder.is_dir():
        pytest.skip(f"real TREC runs not found at {folder}")
    expected = read_trec_eval(folder / output)
    numeric = {name for name, _ in expected} - {"num_q"}
    names = implemented(numeric)
    assert sorted(numeric - set(names)) == []  # every numeric line of all_trec
    with production_codegen():  # the production engine, as production compiles it
        out = evaluate_judged_only(folder / "run.trec", folder / "qrels.trec", "all_trec",
                                   tmp_path, OUTPUTS[output])
    produced = read_trec_eval(out)
    if output == "te_l2.txt":
        # trec_eval's -c recounts num_rel's all line from the raw qrels as label > 0, not -l
        del expected[("num_rel", "all")], produced[("num_rel", "all")]
    assert produced.keys() == expected.keys()
    mismatches = [(k, v, produced[k]) for k, v in sorted(expected.items())
                  if abs(produced[k] - v) > TOLERANCE]
    assert not mismatches, f"{len(mismatches)} of {len(expected)}, first: {mismatches[:5]}"
