"""``releval compare --qrels Q --run A --run B ...``: run files compared with no config."""

from __future__ import annotations

from pathlib import Path

import pytest
from deltalake import DeltaTable

from releval.cli import main

ROOT = Path(__file__).resolve().parents[1]
QUERIES = [f"q{i}" for i in range(1, 11)]


def trec_run(path: Path, tag: str, order: tuple[str, str]) -> str:
    """Every query ranks ``order``: two documents, scores 2 and 1."""
    first, second = order
    path.write_text("".join(f"{q} Q0 {first} 1 2.0 {tag}\n{q} Q0 {second} 2 1.0 {tag}\n"
                            for q in QUERIES))
    return str(path)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    # each query: r relevant, x judged non-relevant
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{q} 0 r 1\n{q} 0 x 0\n" for q in QUERIES))
    return {
        "qrels": str(qrels),
        "base": trec_run(tmp_path / "a.run", "base", ("x", "r")),
        "better": trec_run(tmp_path / "b.run", "better", ("r", "x")),
        "same": trec_run(tmp_path / "c.run", "same", ("x", "r")),
    }


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str], list[str]]:
    code = main(argv)
    captured = capsys.readouterr()
    out = [line for line in captured.out.splitlines() if not line.startswith("releval: ")]
    return code, out, [line for line in captured.err.splitlines() if line.strip()]


def test_compare_run_files_prints_the_comparison_and_writes_three_tables(
    shared_session, files, tmp_path, capsys
):
    output = tmp_path / "out"
    code, out, _ = run_cli(
        ["compare", "--qrels", files["qrels"], "--run", files["base"], "--run", files["better"],
         "--run", files["same"], "--measures", "P@1,RR", "--output", str(output),
         "--power", "0.9", "--effect-of-interest", "0.1"], capsys)
    assert code == 0
    # base and same rank x (judged 0) above r (relevant): P@1 = 0, RR = 1/2; better ranks r
    # first: P@1 = 1, RR = 1; every top 1 is judged: Judged@1 = 1. better wins all 10
    # queries: sign-flip p = 2 / 2^10 ~ 0.002, times at most 6 (holm, 2 runs x 3 measures)
    # < 0.05; same ties every query: p = 1
    assert out[:5] == [
        "releval compare: 3 runs, 10 queries; baseline base",
        "  run     P@1      RR       Judged@1",
        "  base    0.0000   0.5000   1.0000",
        "  better  1.0000*  1.0000*  1.0000",
        "  same    0.0000   0.5000   1.0000",
    ]
    assert out[5].startswith("  * differs from base: randomization test, holm correction "
                             "over 6 comparisons")
    per_query = DeltaTable(str(output / "per_query")).to_pandas()
    assert len(per_query) == 3 * 10 * 3  # runs x queries x measures
    assert set(per_query["run_id"]) == {"base", "better", "same"}
    aggregate = DeltaTable(str(output / "aggregate")).to_pandas()
    macro = aggregate[aggregate["averaging"] == "macro"]
    assert {(r.run_id, r.measure_key): r.value for r in macro.itertuples()
            if r.measure_key == "RR"} == {("base", "RR"): 0.5, ("better", "RR"): 1.0,
                                          ("same", "RR"): 0.5}
    comparison = DeltaTable(str(output / "comparison")).to_pandas()
    assert len(comparison) == 2 * 3  # candidates x measures
    assert set(comparison["baseline"]) == {"run_id=base"}
    assert {(r.candidate, r.measure_key) for r in comparison.itertuples() if r.significant} == {
        ("run_id=better", "P@1"), ("run_id=better", "RR")}
    # every difference is the same on all 10 queries (1, 1/2 or 0): no spread, no power
    assert comparison["min_detectable_diff"].isna().all()
    assert comparison["queries_needed"].isna().all()


def test_parquet_runs_are_named_by_their_files(shared_session, tmp_path, capsys):
    spark = shared_session
    schema = "query_id string, doc_id string, score double"
    for name, order in (("bm25", ("x", "r")), ("dense", ("r", "x"))):
        rows = [(q, d, s) for q in QUERIES[:2] for d, s in zip(order, (2.0, 1.0), strict=True)]
        spark.createDataFrame(rows, schema).write.parquet(str(tmp_path / f"{name}.parquet"))
    spark.createDataFrame([(q, d, rel) for q in QUERIES[:2] for d, rel in (("r", 1), ("x", 0))],
                          "query_id string, doc_id string, relevance int"
                          ).write.parquet(str(tmp_path / "qrels"))
    code, out, _ = run_cli(
        ["compare", "--format", "parquet", "--qrels", str(tmp_path / "qrels"),
         "--run", str(tmp_path / "bm25.parquet"), "--run", str(tmp_path / "dense.parquet"),
         "--baseline", "dense", "--measures", "P@1"], capsys)
    assert code == 0
    # 2 queries: the smallest sign-flip p is 2 / 2^2 = 1/2, nothing is significant
    assert out[:4] == [
        "releval compare: 2 runs, 2 queries; baseline dense",
        "  run    P@1     Judged@1",
        "  dense  1.0000  1.0000",
        "  bm25   0.0000  1.0000",
    ]
    # without --output the tables go to a temporary folder
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bm25.parquet", "dense.parquet",
                                                          "qrels"]


def test_two_runs_with_one_tag_is_an_error_naming_both(shared_session, files, tmp_path, capsys):
    again = trec_run(tmp_path / "again.run", "base", ("r", "x"))
    code, _, err = run_cli(["compare", "--qrels", files["qrels"], "--run", files["base"],
                            "--run", again], capsys)
    assert code == 2
    assert err == [f"releval: error: runs {files['base']} and {again} have the same run tag "
                   "'base': give each run its own tag"]


def test_baseline_that_is_no_run_tag(shared_session, files, capsys):
    code, _, err = run_cli(["compare", "--qrels", files["qrels"], "--run", files["base"],
                            "--run", files["better"], "--baseline", "bm25"], capsys)
    assert code == 2
    assert err == ["releval: error: --baseline 'bm25' is not the tag of a run; the runs' tags "
                   "are ['base', 'better']"]


def test_power_flags_are_checked_before_spark(files, capsys, monkeypatch):
    def no_spark(*args, **kwargs):
        raise AssertionError("no SparkSession for a command-line error")

    monkeypatch.setattr("releval.runtime.session.build_session", no_spark)
    runs = ["--qrels", files["qrels"], "--run", files["base"], "--run", files["better"]]
    for flags, message in [
        (["--power", "1.5"], "comparison.power = 1.5; expected a probability strictly between "
                             "0 and 1, e.g. 0.8"),
        (["--effect-of-interest", "-0.02"], "comparison.effect_of_interest = -0.02; expected "
                                            "a difference > 0 in the measure's units, e.g. 0.02"),
    ]:
        code, _, err = run_cli(["compare", *runs, *flags], capsys)
        assert (code, err) == (2, [f"releval: error: command line: {message}"])
    # a --config comparison takes them from the config's [comparison]
    code, _, err = run_cli(["compare", "--config", str(ROOT / "conf" / "local.toml"),
                            "--baseline", "system=bm25", "--candidate", "system=dense",
                            "--power", "0.9"], capsys)
    assert code == 2 and "--power compare run files" in err[0]


@pytest.mark.parametrize("argv, message", [
    (["--config", str(ROOT / "conf" / "local.toml"), "--baseline", "system=bm25",
      "--candidate", "system=dense", "--run", "a.run"],
     "releval compare: --config compares a config's per-query table, --run compare run "
     "files; use one or the other"),
    (["--qrels", "q", "--run", "a", "--run", "b", "--candidate", "system=dense"],
     "releval compare: --candidate needs --config (a config's per-query table); run files are "
     "compared with --qrels and --run"),
    (["--qrels", "q", "--run", "a"],
     "releval compare: give --qrels and two or more --run (run files), or --config with "
     "--baseline and --candidate (a per-query table)"),
    (["--config", str(ROOT / "conf" / "local.toml"), "--baseline", "system=bm25"],
     "releval compare --config needs --baseline KEY=VALUE and at least one --candidate "
     "KEY=VALUE"),
])
def test_the_two_modes_do_not_mix(argv, message, capsys, monkeypatch):
    def no_spark(*args, **kwargs):
        raise AssertionError("no SparkSession for a command-line error")

    monkeypatch.setattr("releval.runtime.session.build_session", no_spark)
    code, _, err = run_cli(["compare", *argv], capsys)
    assert code == 2
    assert err == [f"releval: error: {message}"]
