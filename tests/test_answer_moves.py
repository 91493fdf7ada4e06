"""How the answered queries moved between the attribution cells from a baseline to a
candidate: the pure count, its one-sentence reading, and ``releval compare --config``."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pandas as pd
import pytest
from pyspark.sql import SparkSession

from releval import report
from releval.cli import main
from releval.config import load_config
from releval.core import columns as S
from releval.job import compare as compare_job
from releval.job.batch import run_job
from releval.report import figures
from releval.report.answers import cells_figure, read_answers
from releval.report.data import latest_comparison, read_report_data
from releval.stats.attribution import SHARED_CELLS
from releval.stats.moves import moves

pytestmark = pytest.mark.slow  # compare's moves over the tables of whole batch jobs

# Six queries answered by both systems, Hit@10 the retrieval measure, correct at 0.5:
#   query  base: retrieved, answer -> cell            cand: retrieved, answer -> cell
#   q1     no,  0.1 -> retrieval_miss                 yes, 0.9  -> success
#   q2     no,  0.2 -> retrieval_miss                 yes, 0.6  -> success
#   q3     yes, 0.3 -> generation_miss                yes, 0.5  -> success
#   q4     yes, 0.9 -> success                        yes, 0.4  -> generation_miss
#   q5     yes, 0.8 -> success                        no,  0.2  -> retrieval_miss
#   q6     no,  0.7 -> answered_without_evidence      no,  0.95 -> answered_without_evidence
# correct answers: base q4 q5 q6 = 3, cand q1 q2 q3 q6 = 4: net +1
#   gained 3: from retrieval 2 (q1, q2: retrieval_miss -> success),
#             from generation 1 (q3: generation_miss -> success)
#   lost 2:   to retrieval 1 (q5: success -> retrieval_miss),
#             to generation 1 (q4: success -> generation_miss); 3 - 2 = +1
BASE = {"q1": "retrieval_miss", "q2": "retrieval_miss", "q3": "generation_miss",
        "q4": "success", "q5": "success", "q6": "answered_without_evidence"}
CAND = {"q1": "success", "q2": "success", "q3": "success", "q4": "generation_miss",
        "q5": "retrieval_miss", "q6": "answered_without_evidence"}
#          to: success  generation_miss  retrieval_miss  answered_without_evidence
COUNTS = ((0, 1, 1, 0),   # from success: q4, q5
          (1, 0, 0, 0),   # from generation_miss: q3
          (2, 0, 0, 0),   # from retrieval_miss: q1, q2
          (0, 0, 0, 1))   # from answered_without_evidence: q6
READING = ("system=cand: answers gained: 2 from retrieval (retrieval_miss -> success), 1 from "
           "generation (generation_miss -> success 1); lost: 1 to retrieval (success -> "
           "retrieval_miss), 1 to generation (success -> generation_miss 1); net +1 of 6 "
           "queries answered on both sides")


def test_six_queries_moved_by_hand() -> None:
    found = moves(BASE, CAND, label="system=cand")
    assert found.counts == COUNTS
    assert (found.paired, found.baseline_only, found.candidate_only) == (6, 0, 0)
    assert found.reading() == READING
    assert found.render()[1].split()[-4:] == list(SHARED_CELLS)


def test_queries_on_one_side_are_counted_apart_and_no_qrels_is_refused() -> None:
    # q7 answered by the baseline only, q8 by the candidate only: six pairs as above
    found = moves({**BASE, "q7": "success"}, {**CAND, "q8": "retrieval_miss"}, label="c")
    assert (found.counts, found.baseline_only, found.candidate_only) == (COUNTS, 1, 1)
    assert found.render()[-1] == ("  answered on one side only (not in the counts): baseline 1, "
                                  "candidate 1")
    # nothing moved: every query on the diagonal, no answer gained or lost
    same = moves(BASE, BASE, label="c")
    assert same.reading() == ("c: answers gained: 0 from retrieval (retrieval_miss -> success), 0 "
                              "from generation; lost: 0 to retrieval (success -> "
                              "retrieval_miss), 0 to generation; net +0 of 6 queries answered "
                              "on both sides")
    with pytest.raises(ValueError, match="no_qrels"):
        moves({"q1": "no_qrels"}, {"q1": "success"}, label="c")


def write_hand_inputs(folder: Path) -> Path:
    """The six queries as a Parquet run and qrels and CSV answers, and a job config."""
    # each query qN has one relevant document eN; a side that misses it returns xN instead
    retrieved = {"base": {"q3", "q4", "q5"}, "cand": {"q1", "q2", "q3", "q4"}}
    queries = [f"q{i}" for i in range(1, 7)]
    pd.DataFrame(
        [(s, q, f"e{q[1:]}" if q in retrieved[s] else f"x{q[1:]}", 1.0)
         for s in ("base", "cand") for q in queries],
        columns=["system", "query_id", "doc_id", "score"],
    ).to_parquet(folder / "run.parquet")
    pd.DataFrame([(q, f"e{q[1:]}", 1) for q in queries],
                 columns=["query_id", "doc_id", "relevance"]).to_parquet(folder / "qrels.parquet")
    scores = {"base": (0.1, 0.2, 0.3, 0.9, 0.8, 0.7), "cand": (0.9, 0.6, 0.5, 0.4, 0.2, 0.95)}
    pd.DataFrame([(s, q, v) for s, vs in scores.items() for q, v in zip(queries, vs, strict=True)],
                 columns=["system", "query_id", "answer_score"]).to_csv(
        folder / "answers.csv", index=False)
    out = folder / "out"
    config = folder / "job.toml"
    config.write_text(f"""
[spark]
master = "local[1]"
shuffle_partitions = 2

[run]
format = "parquet"
path = "{folder / 'run.parquet'}"
partition_columns = ["system"]

[qrels]
format = "parquet"
path = "{folder / 'qrels.parquet'}"

[evaluation]
measures = ["P@1"]

[answers]
format = "csv"
path = "{folder / 'answers.csv'}"

[comparison]
permutations = 100

[output]
per_query_path = "{out / 'per_query'}"
aggregate_path = "{out / 'aggregate'}"
""", encoding="utf-8")
    return config


def test_compare_prints_the_moves_of_the_answers(spark: SparkSession, tmp_path: Path) -> None:
    config = load_config(write_hand_inputs(tmp_path))
    run_job(spark, config, job_run_id="hand")
    compared = compare_job.run(spark, config, baseline={"system": "base"},
                               candidates=[{"system": "cand"}])
    assert compared.answers is not None
    (moved,) = compared.answers.moves
    assert (moved.candidate, moved.counts) == ("system=cand", COUNTS)
    text = compared.render()
    assert ("retrieval and the answer, query by query against system=base: evidence retrieved "
            "when Hit@10 >= 1, correct when answer_score >= 0.5 (docs/answers.md)") in text
    assert "  " + READING in text

    # the report: the cells' figure and the moves, with the counts above
    page = report.build(config)
    assert '<figure data-figure="cells">' in page
    assert f'<p data-moves="system=cand">{html.escape(READING)}.</p>' in page
    moves_table = re.search(r'<table class="moves">.*?<tbody>(.*?)</tbody>', page, re.S)
    assert moves_table is not None
    assert [[int(n) for n in re.findall(r"<td>(\d+)</td>", row)]
            for row in re.findall(r"<tr>(.*?)</tr>", moves_table.group(1))] == [
        list(r) for r in COUNTS]
    data = read_report_data(config)
    found = read_answers(config, data, latest_comparison(data.comparison))
    assert found is not None
    # base: success q4 q5 = 2/6, generation_miss q3 = 1/6, retrieval_miss q1 q2 = 2/6,
    # answered_without_evidence q6 = 1/6; cand: 3/6, 1/6, 1/6, 1/6
    shares = {(r["system"], r[S.CELL]): r[S.SHARE] for _, r in found.attribution.iterrows()}
    assert shares[("base", "retrieval_miss")] == pytest.approx(2 / 6)
    assert shares[("cand", "success")] == pytest.approx(3 / 6)
    fig = cells_figure(found.attribution, run_columns=("system",))
    assert fig is not None and figures.layout_problems(fig) == []
    bars = [p.get_width() for p in fig.axes[0].patches]
    # four cells x two runs, runs bottom-up (cand, base): success 3/6 then 2/6, ...
    assert bars == pytest.approx([3 / 6, 2 / 6, 1 / 6, 1 / 6, 1 / 6, 2 / 6, 1 / 6, 1 / 6])


def test_compare_without_answers_prints_no_moves(spark: SparkSession, tmp_path: Path) -> None:
    path = write_hand_inputs(tmp_path)
    text = path.read_text(encoding="utf-8")
    path.write_text(text[:text.index("[answers]")] + text[text.index("[comparison]"):],
                    encoding="utf-8")
    config = load_config(path)
    run_job(spark, config, job_run_id="plain")
    found = compare_job.run(spark, config, baseline={"system": "base"},
                            candidates=[{"system": "cand"}])
    assert found.answers is None
    assert "retrieval and the answer" not in found.render()
    page = report.build(config)
    assert 'data-figure="cells"' not in page and 'class="moves"' not in page
    assert 'id="answers"' not in page


def test_compare_of_run_files_takes_answers(shared_session, tmp_path: Path, capsys) -> None:
    # the six queries as TREC runs tagged base and cand, and their answers by run_id
    retrieved = {"base": {"q3", "q4", "q5"}, "cand": {"q1", "q2", "q3", "q4"}}
    for tag, found in retrieved.items():
        (tmp_path / f"{tag}.txt").write_text("".join(
            f"q{i} Q0 {'e' if f'q{i}' in found else 'x'}{i} 1 1.0 {tag}\n" for i in range(1, 7)))
    (tmp_path / "qrels.txt").write_text("".join(f"q{i} 0 e{i} 1\n" for i in range(1, 7)))
    scores = {"base": (0.1, 0.2, 0.3, 0.9, 0.8, 0.7), "cand": (0.9, 0.6, 0.5, 0.4, 0.2, 0.95)}
    (tmp_path / "answers.csv").write_text("run_id,query_id,answer_score\n" + "".join(
        f"{tag},q{i},{v}\n" for tag, vs in scores.items() for i, v in enumerate(vs, 1)))
    out = tmp_path / "out"
    code = main(["compare", "--qrels", str(tmp_path / "qrels.txt"),
                 "--run", str(tmp_path / "base.txt"), "--run", str(tmp_path / "cand.txt"),
                 "--measures", "P@1", "--permutations", "100",
                 "--answers", str(tmp_path / "answers.csv"), "--output", str(out)])
    printed = capsys.readouterr().out
    assert code == 0
    assert ("retrieval and the answer, query by query against run_id=base: evidence retrieved "
            "when Hit@10 >= 1") in printed
    assert "  " + READING.replace("system=cand", "run_id=cand") in printed
    assert (out / "attribution" / "_delta_log").is_dir()
    assert main(["compare", "--qrels", str(tmp_path / "qrels.txt"), "--run",
                 str(tmp_path / "base.txt"), "--run", str(tmp_path / "cand.txt"),
                 "--correct-at", "0.7"]) == 2
    assert capsys.readouterr().err.strip() == (
        "releval: error: releval compare: --answers-format, --correct-at, --retrieved-by and "
        "--retrieved-at need --answers")
