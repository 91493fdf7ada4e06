"""The `releval` command as a user runs it: a real process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.trec_eval_text import assert_same_lines, expected_lines

RELEVAL = [sys.executable, "-m", "releval.cli"]


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*RELEVAL, *args], capture_output=True, text=True, timeout=600, cwd=cwd)


@pytest.mark.slow  # a subprocess with its own JVM
def test_trec_eval_output_matches_trec_eval(conformance_dir, tmp_path):
    out = tmp_path / "releval.q"
    result = run_cli(
        "evaluate", "--run", str(conformance_dir / "results.trunc"),
        "--qrels", str(conformance_dir / "qrels.test"),
        "--measures", "P_5,map,ndcg_cut_10,recip_rank,num_ret",
        "--output", str(tmp_path / "tables"), "--trec-eval-output", str(out),
        "--master", "local[2]",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "queries scored (run partition x query): 2" in result.stdout
    # trec_eval -q -c qrels.test results.trunc, full precision (302 is missing: scored 0),
    # line for line; the three counts trec_eval -q always prints are there though not asked
    # for, and runid is the run's tag
    names = {"P_5", "map", "ndcg_cut_10", "recip_rank", "num_ret", "num_rel", "num_rel_ret",
             "num_q", "runid"}
    assert_same_lines(out.read_text().splitlines(),
                      expected_lines(conformance_dir / "full.trunc.qc", names))
    # the per-query and aggregate Delta tables are there too
    assert (tmp_path / "tables" / "per_query" / "_delta_log").is_dir()
    assert (tmp_path / "tables" / "aggregate" / "_delta_log").is_dir()


def test_unknown_measure_is_one_line_and_exit_2(tmp_path):
    result = run_cli("evaluate", "--run", "x", "--qrels", "y", "--measures", "P@5,nDGC@10")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "unknown measure 'nDGC'" in lines[0] and "nDCG" in lines[0]


def test_missing_input_is_one_line_and_exit_2(tmp_path):
    result = run_cli("evaluate", "--run", str(tmp_path / "missing.run"), "--qrels", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"releval: error: input not found: {tmp_path / 'missing.run'}"]


def test_measures_lists_every_registered_measure():
    result = run_cli("measures")
    assert result.returncode == 0
    names = {line.split(" ")[0].rstrip(",") for line in result.stdout.splitlines()}
    assert {"P", "R", "Hit", "RR", "nDCG", "AP", "num_ret"} <= names


def test_a_reader_that_closes_the_pipe_ends_the_command_quietly():
    # `releval measures | head -1`, with the reader gone before the first line: no traceback,
    # and the status a SIGPIPE gives (128 + 13)
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run([*RELEVAL, "measures"], stdout=write_end, stderr=subprocess.PIPE,
                                text=True, timeout=120)
    finally:
        os.close(write_end)
    assert (result.returncode, result.stderr) == (141, "")


@pytest.mark.slow  # a subprocess with its own JVM
def test_explain_prints_the_plan_and_writes_nothing(conformance_dir, tmp_path):
    result = run_cli(
        "evaluate", "--run", str(conformance_dir / "results.test"),
        "--qrels", str(conformance_dir / "qrels.test"), "--measures", "P@10,nDCG@10,AP",
        "--output", str(tmp_path / "tables"), "--explain", "--master", "local[2]",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    plan = result.stdout
    assert "== Physical Plan ==" in plan
    # the Arrow engine: the run and qrels rows go together through one NumPy function per
    # partition after a shuffle by query id; no sort of the run rows for ranking
    assert "MapInArrow" in plan
    assert "hashpartitioning(query_id" in plan
    assert not (tmp_path / "tables").exists()  # nothing was run or written


def test_compare_names_a_side_that_is_not_one_run_partition():
    # conf/local.toml partitions runs by system and date: a side without a date is refused
    # before any Spark session starts, in one line, exit code 2
    config = Path(__file__).resolve().parents[1] / "conf" / "local.toml"
    result = run_cli("compare", "--config", str(config), "--baseline", "system=bm25",
                     "--candidate", "system=dense")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "releval: error: 'system=bm25' (with --partition {}) must name one run partition: "
        "a value for each of ['system', 'date']; missing ['date']"
    ]


def test_views_of_path_tables_print_sql_and_nothing_else(tmp_path):
    # no JVM starts: stderr holds none of Spark's start-up warnings
    import pyarrow as pa
    from deltalake import write_deltalake

    write_deltalake(str(tmp_path / "warehouse" / "releval" / "aggregate"),
                    pa.table({"measure_key": ["nDCG@10", "AP"]}))
    config = Path(__file__).resolve().parents[1] / "conf" / "local.toml"
    result = run_cli("views", "--config", str(config), "--dialect", "duckdb", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stderr == ""
    assert result.stdout.startswith('CREATE OR REPLACE VIEW "per_query_wide" AS\n')
    assert "AS ap,\n  MAX(CASE WHEN measure_key = 'nDCG@10' THEN value END) AS ndcg_at_10," in (
        result.stdout)
