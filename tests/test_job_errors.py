"""Job-level problems: one clear line, exit code 2, nothing written; config unknown keys; strict."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from releval.cli import main
from releval.config import load_config
from releval.core import columns as S
from releval.errors import ConfigError
from releval.runtime.session import SHORT_JOB_BYTES

ROOT = Path(__file__).resolve().parents[1]

QRELS_TXT = "q1 0 d1 1\nq1 0 d2 0\n"
RUN_TXT = "q1 Q0 d1 1 0.9 r\nq1 Q0 d2 2 0.5 r\n"


def run_cli(argv: list[str], capsys) -> tuple[int, list[str]]:
    code = main(argv)
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    return code, err


def write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def parquet(spark, path: Path, rows: list[tuple], schema: str) -> str:
    spark.createDataFrame(rows, schema).write.mode("overwrite").parquet(str(path))
    return str(path)


def assert_one_line_error(code: int, err: list[str], *fragments: str) -> None:
    assert code == 2
    assert len(err) == 1, err
    assert err[0].startswith("releval: error: ")
    assert "Traceback" not in err[0]
    for fragment in fragments:
        assert fragment in err[0], err[0]


def test_missing_input_path(tmp_path, capsys):
    qrels = write(tmp_path / "qrels.txt", QRELS_TXT)
    code, err = run_cli(["evaluate", "--run", str(tmp_path / "nope.txt"), "--qrels", qrels], capsys)
    assert_one_line_error(code, err, "input not found", "nope.txt")


def test_unknown_measure_names_the_closest(tmp_path, capsys):
    run, qrels = write(tmp_path / "r.txt", RUN_TXT), write(tmp_path / "q.txt", QRELS_TXT)
    code, err = run_cli(["evaluate", "--run", run, "--qrels", qrels, "--measures", "nDGC@10"], capsys)
    assert_one_line_error(code, err, "unknown measure 'nDGC'", "did you mean", "nDCG")


@pytest.mark.parametrize("measure", ["P@0", "P@x", "P@-3"])
def test_cutoff_not_a_positive_integer(tmp_path, capsys, measure):
    run, qrels = write(tmp_path / "r.txt", RUN_TXT), write(tmp_path / "q.txt", QRELS_TXT)
    code, err = run_cli(["evaluate", "--run", run, "--qrels", qrels, "--measures", measure], capsys)
    assert_one_line_error(code, err, "positive integer")


def test_malformed_trec_line_names_file_and_line(shared_session, tmp_path, capsys):
    # line 3 (after a comment line) has 5 fields: the tag is missing
    run = write(tmp_path / "r.txt", "# header\nq1 Q0 d1 1 0.9 r\nq1 Q0 d2 2 0.5\n")
    qrels = write(tmp_path / "q.txt", QRELS_TXT)
    code, err = run_cli(["evaluate", "--run", run, "--qrels", qrels, "--output", str(tmp_path / "o")], capsys)
    assert_one_line_error(code, err, "r.txt:3:", "malformed TREC line", "at least 6 fields")
    assert not (tmp_path / "o").exists()  # nothing written


def test_non_numeric_trec_score_names_file_and_line(shared_session, tmp_path, capsys):
    run = write(tmp_path / "r.txt", "q1 Q0 d1 1 0.9 r\nq1 Q0 d2 2 high r\n")
    qrels = write(tmp_path / "q.txt", QRELS_TXT)
    code, err = run_cli(["evaluate", "--run", run, "--qrels", qrels], capsys)
    assert_one_line_error(code, err, "r.txt:2:", "numeric score")


def test_malformed_trec_qrels_line(shared_session, tmp_path, capsys):
    run = write(tmp_path / "r.txt", RUN_TXT)
    qrels = write(tmp_path / "q.txt", "q1 0 d1 1\nq1 d2 0\n")
    code, err = run_cli(["evaluate", "--run", run, "--qrels", qrels], capsys)
    assert_one_line_error(code, err, "q.txt:2:", "4 fields")


def test_empty_run(shared_session, tmp_path, capsys):
    run = write(tmp_path / "r.txt", "# nothing was retrieved\n\n")
    qrels = write(tmp_path / "q.txt", QRELS_TXT)
    code, err = run_cli(["evaluate", "--run", run, "--qrels", qrels, "--output", str(tmp_path / "o")], capsys)
    assert_one_line_error(code, err, "run trec", "has no rows")
    assert not (tmp_path / "o").exists()


def test_missing_column_lists_expected_found_and_key(shared_session, tmp_path, capsys):
    spark = shared_session
    run = parquet(spark, tmp_path / "run", [("q1", "d1", 1)], "query_id string, doc_id string, rank int")
    qrels = parquet(spark, tmp_path / "qrels", [("q1", "d1", 1)], "query_id string, doc_id string, relevance int")
    code, err = run_cli(["evaluate", "--format", "parquet", "--run", run, "--qrels", qrels], capsys)
    assert_one_line_error(
        code, err, "missing column(s) ['score']", "run.score = 'score'",
        "found columns ['query_id', 'doc_id', 'rank']",
    )


def test_column_of_a_type_that_cannot_be_cast(shared_session, tmp_path, capsys):
    spark = shared_session
    run = parquet(spark, tmp_path / "run", [("q1", "d1", [0.5])],
                  "query_id string, doc_id string, score array<double>")
    qrels = parquet(spark, tmp_path / "qrels", [("q1", "d1", 1)], "query_id string, doc_id string, relevance int")
    code, err = run_cli(["evaluate", "--format", "parquet", "--run", run, "--qrels", qrels], capsys)
    assert_one_line_error(code, err, "column 'score' (run.score)", "array<double>", "cannot be cast")


def test_strict_fails_after_writing_the_quarantine(shared_session, tmp_path, capsys):
    spark = shared_session
    run = write(tmp_path / "r.txt", RUN_TXT + "q1 Q0 d1 3 0.1 r\n")  # d1 again: duplicate_doc
    qrels = write(tmp_path / "q.txt", QRELS_TXT)
    out = tmp_path / "o"
    code, err = run_cli(
        ["evaluate", "--run", run, "--qrels", qrels, "--output", str(out), "--strict"], capsys
    )
    assert_one_line_error(code, err, "strict mode: 1 input row(s) quarantined (run duplicate_doc 1)")
    quarantine = spark.read.format("delta").load(str(out / "quarantine"))
    row = quarantine.first()
    assert quarantine.count() == 1
    assert (row[S.REASON_CODE], row[S.LINE], row["run_id"], row[S.QRELS_KEY]) == ("duplicate_doc", 3, "r", None)
    assert not (out / "per_query").exists()  # the metrics were not written


# --- the config-file job (jobs/evaluate.py) ----------------------------------------------------


def load_job():
    spec = importlib.util.spec_from_file_location("evaluate_job", ROOT / "jobs" / "evaluate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


CONFIG = """\
[run]
format = "parquet"
path = "{run}"
partition_columns = ["date"]
filter = "{filter}"

[qrels]
format = "parquet"
path = "{qrels}"

[evaluation]
measures = ["P@1"]

[output]
per_query_path = "{out}/per_query"
aggregate_path = "{out}/aggregate"
"""


def job_config(spark, tmp_path: Path, filter_: str, extra: str = "") -> str:
    run = parquet(spark, tmp_path / "run", [("2024-05-01", "q1", "d1", 0.5, 1)],
                  "date string, query_id string, doc_id string, score double, rank int")
    qrels = parquet(spark, tmp_path / "qrels", [("q1", "d1", 1)], "query_id string, doc_id string, relevance int")
    text = CONFIG.format(run=run, qrels=qrels, out=tmp_path / "o", filter=filter_) + extra
    return write(tmp_path / "job.toml", text)


def test_unknown_config_key_names_file_and_line(tmp_path, capsys):
    path = write(tmp_path / "job.toml", '[run]\npath = "x"\n\n[qrels]\npath = "y"\nrelevence = "rel"\n')
    with pytest.raises(ConfigError, match=r"job\.toml:6: unknown key 'relevence' in \[qrels\]"):
        load_config(path)
    code = load_job().main(["--config", path])
    assert_one_line_error(code, [line for line in capsys.readouterr().err.splitlines() if line], "job.toml:6:")


def test_config_strict_must_be_a_boolean(tmp_path):
    path = write(tmp_path / "job.toml", '[run]\npath = "x"\n[qrels]\npath = "y"\n[evaluation]\nstrict = "yes"\n')
    with pytest.raises(ConfigError, match="evaluation.strict must be true or false"):
        load_config(path)


def test_filter_that_does_not_match_the_partition_columns(shared_session, tmp_path, capsys, monkeypatch):
    job = load_job()
    monkeypatch.setattr(job, "build_session", lambda settings, *, short=False: shared_session)
    path = job_config(shared_session, tmp_path, "day = '2024-05-01'")
    code = job.main(["--config", path])
    err = [line for line in capsys.readouterr().err.splitlines() if line]
    assert_one_line_error(code, err, "run.filter \"day = '2024-05-01'\" must reference run partition",
                          "columns only (['date'])", "`day` cannot be resolved")
    assert not (tmp_path / "o").exists()  # refused before anything was read or written


@pytest.mark.parametrize("filter_", ["query_id = 'q1'", "date = '2024-05-01' AND score > 0.1"])
def test_batch_filter_on_a_non_partition_column_is_refused_before_anything_is_written(
    shared_session, tmp_path, capsys, monkeypatch, filter_
):
    # a row filter would make the job replace whole partitions with part of their rows
    job = load_job()
    monkeypatch.setattr(job, "build_session", lambda settings, *, short=False: shared_session)
    path = job_config(shared_session, tmp_path, filter_)
    code = job.main(["--config", path])
    err = [line for line in capsys.readouterr().err.splitlines() if line]
    assert_one_line_error(code, err, f"run.filter {filter_!r} must reference run partition columns only")
    assert not (tmp_path / "o").exists()  # no output, no quarantine, no run-log row


def test_empty_partition_for_the_requested_date(shared_session, tmp_path, capsys, monkeypatch):
    job = load_job()
    monkeypatch.setattr(job, "build_session", lambda settings, *, short=False: shared_session)
    path = job_config(shared_session, tmp_path, "date = '2024-05-02'")
    code = job.main(["--config", path])
    err = [line for line in capsys.readouterr().err.splitlines() if line]
    assert_one_line_error(code, err, "has no rows matching run.filter \"date = '2024-05-02'\"")
    # no results and no quarantine were written; the batch job's run log records the failure
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["run_log"]
    log = shared_session.read.format("delta").load(str(tmp_path / "o" / "run_log")).collect()
    assert [(r["status"], r["error"].startswith("run parquet")) for r in log] == [("failed", True)]


def test_the_command_and_the_job_ask_for_a_short_jobs_jvm_on_small_local_inputs(
    tmp_path, capsys, monkeypatch
):
    # what each entry point asks build_session for, stopped right there (no Spark at all):
    # the RelevalError it raises ends the command and the job with their one-line error
    from releval.errors import RelevalError

    asked: list[bool] = []

    def build_session(settings, *, short=False):
        asked.append(short)
        raise RelevalError("stopped at build_session")

    monkeypatch.setattr("releval.runtime.session.build_session", build_session)
    run, qrels = write(tmp_path / "r.txt", RUN_TXT), write(tmp_path / "q.txt", QRELS_TXT)
    assert main(["evaluate", "--run", run, "--qrels", qrels]) == 2  # local[*], 54 bytes: short
    big = tmp_path / "big.txt"
    with big.open("wb") as out:
        out.truncate(SHORT_JOB_BYTES)  # a sparse file: with the qrels, above the limit
    assert main(["evaluate", "--run", str(big), "--qrels", qrels]) == 2
    job = load_job()
    monkeypatch.setattr(job, "build_session", build_session)
    # the job's config (its inputs are only measured here, never read)
    config = write(tmp_path / "job.toml", CONFIG.format(
        run=run, qrels=qrels, out=tmp_path / "o", filter="true") + '\n[spark]\nmaster = "local[2]"\n')
    assert job.main(["--config", config]) == 2
    no_master = write(tmp_path / "cluster.toml", CONFIG.format(
        run=run, qrels=qrels, out=tmp_path / "o", filter="true"))
    assert job.main(["--config", no_master]) == 2  # spark-submit's master: not short
    # the commands over the config's output tables take the same rule
    sides = ["--baseline", "date=2024-05-01", "--candidate", "date=2024-05-02"]
    assert main(["compare", "--config", config, *sides]) == 2
    assert main(["compare", "--config", no_master, *sides]) == 2
    assert asked == [True, False, True, False, True, False]
    assert capsys.readouterr().err.count("releval: error: stopped at build_session") == 6
