"""TREC text read in blocks split by Spark: exact file:line for errors and quarantine rows.

Every test here forces blocks of 64 bytes (about three lines), so each file is read as
several blocks in several Spark partitions, and the bad lines sit in later blocks.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import functions as F

from releval.cli import main
from releval.config import QrelsSource, RunSource
from releval.core import columns as S
from releval.io.readers import (
    RAW_BLOCK,
    RAW_LINE,
    RAW_MALFORMED,
    RAW_SOURCE,
    read_qrels_raw,
    read_run,
    read_run_raw,
)

# a.txt: LF line ends, with a trailing newline
RUN_A = [
    "# run a",  # 1
    "q1 Q0 d1 1 0.9 r",  # 2
    "q1 Q0 d2 2 0.8 r",  # 3
    "",  # 4
    "q1 Q0 d3 3 0.7 r",  # 5
    "# a comment",  # 6
    "q2 Q0 d1 1 0.9 r",  # 7
    "q2 Q0 d2 2 0.8 r",  # 8
    "q2 Q0 d3 3 0.7 r",  # 9
    "q2 Q0 d4 4 0.6 r",  # 10
    "q1 Q0 d2 5 0.5 r",  # 11  d2 again in q1, lower score: duplicate_doc
    "",  # 12
    "q2 Q0 d5 5 NaN r",  # 13  invalid_score
]
# b.txt: CRLF line ends, no trailing newline
RUN_B = [
    "# run b",  # 1
    "",  # 2
    "q3 Q0 d1 1 0.9 r",  # 3
    "q3 Q0 d2 2 0.8 r",  # 4
    "# c",  # 5
    "q3 Q0 d3 3 0.7 r",  # 6
    "q3 Q0 d4 4 0.6 r",  # 7
    "",  # 8
    "q3 Q0 d1 1 0.9 r",  # 9  line 3 again (same score and rank): the later line is duplicate_doc
    "q3 Q0 d6 6 0.05 r",  # 10
]
QRELS = [
    "# qrels",  # 1
    "q1 0 d1 1",  # 2
    "q1 0 d2 0",  # 3
    "q1 0 d3 2",  # 4
    "",  # 5
    "q2 0 d1 1",  # 6
    "q2 0 d2 x",  # 7  invalid_relevance
    "q2 0 d3 1",  # 8
    "# note",  # 9
    "q2 0 d3 0",  # 10  d3 judged 1 on line 8: conflicting_label
    "q3 0 d1 1",  # 11
    "q3 0 d4 1",  # 12
]


@pytest.fixture
def small_splits(spark, monkeypatch):
    """The test session with 64-byte file blocks; the CLI uses it and does not stop it."""
    settings = {"spark.sql.files.maxPartitionBytes": "64", "spark.sql.files.openCostInBytes": "1"}
    saved = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    monkeypatch.setattr("releval.runtime.session.build_session", lambda _, *, short=False: spark)
    monkeypatch.setattr(spark, "stop", lambda: None)
    yield spark
    for key, value in saved.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)


def write_inputs(tmp_path: Path, run_a=RUN_A, run_b=RUN_B, qrels=QRELS) -> tuple[str, str]:
    """The run as a folder of two files (a.txt LF, b.txt CRLF without a last newline); qrels."""
    (tmp_path / "run").mkdir()
    (tmp_path / "qrels").mkdir()
    (tmp_path / "run" / "a.txt").write_bytes(("\n".join(run_a) + "\n").encode())
    (tmp_path / "run" / "b.txt").write_bytes("\r\n".join(run_b).encode())
    (tmp_path / "qrels" / "q.txt").write_bytes(("\n".join(qrels) + "\n").encode())
    return str(tmp_path / "run"), str(tmp_path / "qrels")


def evaluate(run: str, qrels: str, out: Path, capsys) -> tuple[int, list[str]]:
    code = main(["evaluate", "--run", run, "--qrels", qrels, "--output", str(out)])
    return code, [line for line in capsys.readouterr().err.splitlines() if line.strip()]


def where(rows) -> list[tuple[str, int]]:
    """(file name, line) of rows with ``_source`` and ``_line``, sorted."""
    return sorted((Path(r[RAW_SOURCE]).name, r[RAW_LINE]) for r in rows)


def test_text_is_read_in_several_blocks_and_partitions(small_splits, tmp_path):
    run, _ = write_inputs(tmp_path)
    rows = read_run_raw(small_splits, RunSource(path=run, format="trec")).rows
    # a.txt is 175 bytes: blocks at 0, 64, 128; b.txt 125 bytes: blocks at 0, 64
    assert rows.rdd.getNumPartitions() >= 4
    blocks = rows.groupBy(RAW_SOURCE).agg(F.count_distinct(RAW_BLOCK)).collect()
    assert sorted((Path(r[0]).name, r[1]) for r in blocks) == [("a.txt", 3), ("b.txt", 2)]


def test_every_data_line_gets_its_physical_line_number(small_splits, tmp_path):
    run, qrels = write_inputs(tmp_path)
    raw_run = read_run_raw(small_splits, RunSource(path=run, format="trec"))
    assert raw_run.rows.where(RAW_LINE + " is not null").count() == 0  # not numbered when read
    # the non-blank, non-comment lines of the listings above, counted by hand
    assert where(raw_run.number_lines(raw_run.rows).collect()) == [
        *[("a.txt", n) for n in (2, 3, 5, 7, 8, 9, 10, 11, 13)],
        *[("b.txt", n) for n in (3, 4, 6, 7, 9, 10)],
    ]
    raw_qrels = read_qrels_raw(small_splits, QrelsSource(path=qrels, format="trec"))
    assert where(raw_qrels.number_lines(raw_qrels.rows).collect()) == [
        ("q.txt", n) for n in (2, 3, 4, 6, 7, 8, 10, 11, 12)
    ]


def test_quarantine_rows_have_their_file_and_line(small_splits, tmp_path, capsys):
    run, qrels = write_inputs(tmp_path)
    code, err = evaluate(run, qrels, tmp_path / "o", capsys)
    assert code == 0, err
    rows = small_splits.read.format("delta").load(str(tmp_path / "o" / "quarantine")).collect()
    assert sorted((r[S.INPUT], Path(r[S.SOURCE]).name, r[S.LINE], r[S.REASON_CODE]) for r in rows) == [
        ("qrels", "q.txt", 7, "invalid_relevance"),
        ("qrels", "q.txt", 10, "conflicting_label"),
        ("run", "a.txt", 11, "duplicate_doc"),
        ("run", "a.txt", 13, "invalid_score"),
        ("run", "b.txt", 9, "duplicate_doc"),  # not line 3: the first in file order is kept
    ]


def test_malformed_run_line_in_a_later_block(small_splits, tmp_path, capsys):
    run_a = list(RUN_A)
    run_a[7] = "q2 Q0 d2 2 0.8"  # line 8: no tag
    run_a[10] = "q1 Q0 d2"  # line 11: malformed too, but later
    run_b = [*RUN_B[:-1], "q3 Q0 d6 6 high r"]  # line 10 of b.txt: non-numeric score
    run, qrels = write_inputs(tmp_path, run_a=run_a, run_b=run_b)
    code, err = evaluate(run, qrels, tmp_path / "o", capsys)
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith("releval: error: ") and "a.txt:8: malformed TREC line" in err[0], err
    assert "'q2 Q0 d2 2 0.8'" in err[0] and "at least 6 fields" in err[0]
    assert not (tmp_path / "o").exists()  # nothing written


def test_malformed_line_at_the_end_of_a_crlf_file(small_splits, tmp_path, capsys):
    run, qrels = write_inputs(tmp_path, run_b=[*RUN_B[:-1], "q3 Q0 d6 6 high r"])
    code, err = evaluate(run, qrels, tmp_path / "o", capsys)
    assert code == 2 and len(err) == 1, err
    assert "b.txt:10: malformed TREC line 'q3 Q0 d6 6 high r'" in err[0], err  # no '\r' left


def test_malformed_qrels_line_in_a_later_block(small_splits, tmp_path, capsys):
    run, qrels = write_inputs(tmp_path, qrels=[*QRELS[:-1], "q3 0 d4"])
    code, err = evaluate(run, qrels, tmp_path / "o", capsys)
    assert code == 2 and len(err) == 1, err
    assert "q.txt:12: malformed TREC line 'q3 0 d4'" in err[0] and "4 fields" in err[0], err


def test_fields_are_split_on_any_white_space_as_trec_eval_reads_them(small_splits, tmp_path):
    # trec_eval skips white space (C's isspace) before, between and after the fields; a
    # line of white space only is blank, and a '#' after white space starts a comment
    run_lines = [
        "q1\tQ0\td1\t1\t0.9\tr",  # 1  tabs between the fields
        "  q1  Q0 d2   2 0.8 r  ",  # 2  spaces before, between (several) and after
        "\tq1 Q0 d3 3 0.7 r\t",  # 3  a tab before and after: no empty first or last field
        "q1 Q0 d4 4 0.6 r\x0b\x0c",  # 4  a vertical tab and a form feed after
        "\t \t",  # 5  white space only: blank
        "\t# a comment after a tab",  # 6
        "q1 Q0 d5 5 0.5 r more",  # 7  fields after the tag are ignored, as in trec_eval
    ]
    qrels_lines = ["q1\t0\td1\t1", " q1 0  d2 2 ", "q1 0 d3 0\t"]  # 3: 4 fields, then a tab
    run, qrels = write_inputs(tmp_path, run_a=run_lines, run_b=["q9 Q0 d1 1 1 r"], qrels=qrels_lines)
    src = RunSource(path=run, format="trec", partition_columns=("run_id",))
    raw = read_run_raw(small_splits, src)
    got = raw.number_lines(raw.rows).where(F.col(RAW_SOURCE).endswith("a.txt")).collect()
    assert sorted(
        (r[RAW_LINE], r["run_id"], r[S.QUERY_ID], r[S.DOC_ID], r[S.RANK], r[S.SCORE], r[RAW_MALFORMED])
        for r in got
    ) == [
        (1, "r", "q1", "d1", "1", "0.9", False),
        (2, "r", "q1", "d2", "2", "0.8", False),
        (3, "r", "q1", "d3", "3", "0.7", False),
        (4, "r", "q1", "d4", "4", "0.6", False),
        (7, "r", "q1", "d5", "5", "0.5", False),
    ]
    typed = read_run(small_splits, src)
    assert sorted(tuple(r) for r in typed.where(F.col(S.QUERY_ID) == "q1").collect()) == [
        ("r", "q1", f"d{n}", score, n) for n, score in [(1, 0.9), (2, 0.8), (3, 0.7), (4, 0.6), (5, 0.5)]
    ]
    raw_qrels = read_qrels_raw(small_splits, QrelsSource(path=qrels, format="trec"))
    assert sorted(
        (r[RAW_LINE], r[S.QUERY_ID], r[S.DOC_ID], r[S.RELEVANCE], r[RAW_MALFORMED])
        for r in raw_qrels.number_lines(raw_qrels.rows).collect()
    ) == [(1, "q1", "d1", "1", False), (2, "q1", "d2", "2", False), (3, "q1", "d3", "0", False)]
