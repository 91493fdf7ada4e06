"""``releval compare --queries --slices --weight --worst``: the slice and weighted rows, the
warning when the traffic disagrees with the overall difference, the queries that lost most."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from deltalake import DeltaTable

from releval.cli import main

HEAD = [f"q{i:02d}" for i in range(1, 4)]
TAIL = [f"q{i:02d}" for i in range(4, 13)]


def trec_run(path: Path, tag: str, ranking) -> str:
    path.write_text("".join(f"{q} Q0 {d} {i + 1} {2.0 - i} {tag}\n"
                            for q in HEAD + TAIL for i, d in enumerate(ranking(q))))
    return str(path)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    # each query: r relevant, x judged non-relevant
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{q} 0 r 1\n{q} 0 x 0\n" for q in HEAD + TAIL))
    queries = tmp_path / "queries.csv"
    queries.write_text("query_id,segment,hits\n" + "".join(
        f"{q},{'head' if q in HEAD else 'tail'},{1000 if q in HEAD else 1}\n"
        for q in HEAD + TAIL))
    return {
        "qrels": str(qrels), "queries": str(queries),
        # RR 1/2 on every query
        "base": trec_run(tmp_path / "a.run", "base", lambda q: ("x", "r")),
        # the tail: RR 1 (+1/2); the head loses r: RR 0 (-1/2)
        "better": trec_run(tmp_path / "b.run", "better",
                           lambda q: ("x", "z") if q in HEAD else ("r", "x")),
    }


def test_slices_weights_warning_and_worst(shared_session, files, tmp_path, capsys):
    output = tmp_path / "out"
    code = main(["compare", "--qrels", files["qrels"], "--run", files["base"],
                 "--run", files["better"], "--measures", "P@1,RR", "--test", "t",
                 "--queries", files["queries"], "--slices", "segment", "--weight", "hits",
                 "--worst", "2", "--output", str(output)])
    assert code == 0
    out = [line for line in capsys.readouterr().out.splitlines()
           if not line.startswith("releval: ")]
    text = "\n".join(out)
    # RR: (9 x 1/2 - 3 x 1/2) / 12 = +0.25 over unique queries; weighted by traffic
    # (9 x 1/2 x 1 - 3 x 1/2 x 1000) / 3009 = -1495.5 / 3009 = -0.4970; the head holds
    # 3000 / 3009 = 99.7% of the weight and loses 1/2
    warnings = [line for line in out if "WARNING" in line and "weak" not in line]
    assert warnings == ["  WARNING: RR: run_id=better differs by +0.2500 over all queries but "
                        "weighted -0.4970; segment=head (100% of the weight) -0.5000"]
    # P@1: the tail gains 1, the head ties at 0: no warning for it
    assert "  run_id=better RR:" in out
    at = out.index("  run_id=better RR:")
    # the head's three losses tie at -1/2: ranked by query id; share = 1000 x -1/2 / 3009
    assert out[at + 1].split() == ["1.", "q01", "0.5000", "->", "0.0000", "-0.5000",
                                   "-0.16617", "segment=head", "weight", "1000"]
    assert out[at + 2].split()[:2] == ["2.", "q02"]
    assert "q03" not in "\n".join(out[at:])
    assert "by slice" in text
    slice_line = next(line for line in out if "segment=tail [w]" in line and " RR " in line)
    assert slice_line.split()[4:6] == ["9", "+0.5000"]  # 9 tail queries, every one +1/2
    comparison = DeltaTable(str(output / "comparison")).to_pandas()
    rr = comparison[comparison.measure_key == "RR"]
    got = {tuple(None if pd.isna(x) else x for x in (r.slice, r.slice_value, r.averaging)):
           r.mean_diff for r in rr.itertuples()}
    assert got[(None, None, "macro")] == pytest.approx(0.25)
    assert got[(None, None, "weighted")] == pytest.approx(-1495.5 / 3009)
    assert got[("segment", "head", "macro")] == pytest.approx(-0.5)
    assert got[("segment", "tail", "weighted")] == pytest.approx(0.5)


def test_slices_need_queries_and_a_bad_queries_row_is_an_error(shared_session, files,
                                                                tmp_path, capsys):
    code = main(["compare", "--qrels", files["qrels"], "--run", files["base"], "--run",
                 files["better"], "--slices", "segment"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err == ["releval: error: --slices and --weight name columns of --queries (one row "
                   "per query); give --queries PATH"]
    bad = tmp_path / "bad.csv"
    bad.write_text("query_id,segment,hits\nq01,head,1000\nq02,head,-5\n")
    code = main(["compare", "--qrels", files["qrels"], "--run", files["base"], "--run",
                 files["better"], "--queries", str(bad), "--weight", "hits"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1].startswith(f"releval: error: csv {bad}: column 'hits': invalid_weight")
    assert "'query_id': 'q02'" in err[-1] and "'weight': '-5'" in err[-1]
