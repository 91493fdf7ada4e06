"""``releval gate``: the verdict first, then the table, and every exit code (in process, on
the suite's session)."""

from __future__ import annotations

from pathlib import Path

import pytest

from releval.cli import main
from releval.stats.gate import exit_code

QUERIES = [f"q{i:02d}" for i in range(40)]


def trec_run(path: Path, tag: str, first: list[bool]) -> str:
    """Query i ranks its relevant document r first when ``first[i]`` (RR 1), else second
    (RR 1/2)."""
    lines = []
    for q, hit in zip(QUERIES, first, strict=True):
        a, b = ("r", "x") if hit else ("x", "r")
        lines.append(f"{q} Q0 {a} 1 2.0 {tag}\n{q} Q0 {b} 2 1.0 {tag}\n")
    path.write_text("".join(lines))
    return str(path)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{q} 0 r 1\n{q} 0 x 0\n" for q in QUERIES))
    # 40 queries: fewer could not rule out a rare loss of 1, whatever their differences
    alternate = [i % 2 == 0 for i in range(40)]  # RR 1, 1/2, 1, 1/2, ...
    # two queries swap: q00 loses 1/2, q01 gains 1/2: mean difference 0
    swapped = [not h if i < 2 else h for i, h in enumerate(alternate)]
    return {
        "qrels": str(qrels),
        "base": trec_run(tmp_path / "base.run", "base", alternate),
        "better": trec_run(tmp_path / "better.run", "better", [True] * 40),
        "worse": trec_run(tmp_path / "worse.run", "worse", [False] * 40),
        "swapped": trec_run(tmp_path / "swapped.run", "swapped", swapped),
    }


def gate(files, cand, *rules, extra=(), capsys):
    argv = ["gate", "--qrels", files["qrels"], "--run", files["base"], "--run", files[cand]]
    for r in rules:
        argv += ["--rule", r]
    code = main([*argv, *extra])
    return code, capsys.readouterr()


def test_pass_exits_0_and_prints_the_verdict_first(shared_session, files, capsys):
    # better: RR 1 on every query; base 1 on half, 1/2 on the other: differences 0 or 1/2,
    # mean 1/4, far above -0.01
    code, out = gate(files, "better", "RR change >= -0.01", "P@1 >= 0.5", capsys=capsys)
    assert code == 0
    lines = out.out.splitlines()
    assert lines[0] == ("gate: PASS (2 pass; 2 rules) - run_id=better against run_id=base, "
                        "alpha 0.05")
    assert lines[1].split()[:3] == ["rule", "slice_value", "estimate"]
    assert "RR change >= -0.01" in out.out and "0.2500" in out.out


def test_fail_exits_1(shared_session, files, capsys):
    # worse: RR 1/2 everywhere: differences -1/2 on half the queries, mean -1/4
    code, out = gate(files, "worse", "RR change >= -0.01", capsys=capsys)
    assert code == 1
    assert out.out.startswith("gate: FAIL (1 fail; 1 rule)")


def test_inconclusive_exits_3_unless_mapped(shared_session, files, capsys):
    # swapped: one query -1/2, one +1/2, 38 0: mean 0, not above 0 nor below
    code, out = gate(files, "swapped", "RR change > 0", capsys=capsys)
    assert code == 3 and out.out.startswith("gate: INCONCLUSIVE")
    code, out = gate(files, "swapped", "RR change > 0", extra=["--on-inconclusive", "fail"],
                     capsys=capsys)
    assert code == 1 and "inconclusive counted as fail" in out.out
    code, _ = gate(files, "swapped", "RR change > 0", extra=["--on-inconclusive", "pass"],
                   capsys=capsys)
    assert code == 0


def test_usage_and_input_errors_exit_2(files, capsys):
    # all before Spark starts
    code, out = gate(files, "better", "RR change => 0", capsys=capsys)
    assert code == 2 and "rule 'RR change => 0'" in out.err and "expected" in out.err
    assert main(["gate", "--qrels", files["qrels"], "--run", files["base"],
                 "--rule", "RR > 0"]) == 2
    assert "two --run" in capsys.readouterr().err
    assert main(["gate", "--qrels", files["qrels"] + ".missing", "--run", files["base"],
                 "--run", files["better"], "--rule", "RR > 0"]) == 2
    assert "input not found" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:
        main(["gate", "--on-inconclusive", "maybe"])
    assert usage.value.code == 2


def test_exit_codes_of_each_decision():
    assert [exit_code(d, None) for d in ("pass", "fail", "inconclusive")] == [0, 1, 3]
    assert exit_code("inconclusive", "pass") == 0 and exit_code("fail", "pass") == 1


def test_queries_and_slices(shared_session, files, tmp_path, capsys):
    # a queries file: q00, q01 are "head" (weight 100); better gains only on odd queries,
    # so q01 (head) gains 1/2 and q00 nothing: head mean 1/4 over 2 queries
    path = tmp_path / "queries.csv"
    path.write_text("query_id,segment,traffic\n" + "".join(
        f"{q},{'head' if i < 2 else 'tail'},{100 if i < 2 else 1}\n"
        for i, q in enumerate(QUERIES)))
    code, out = gate(files, "better", "RR change >= -0.01 per segment",
                     "weighted RR change >= -0.01",
                     extra=["--queries", str(path), "--weight", "traffic"], capsys=capsys)
    lines = out.out.splitlines()
    # head: differences 0 and 1/2 (2 queries): too few to decide; tail: 38 queries, 19
    # gain 1/2: passes; the weighted rule counts about 3 queries (Kish): inconclusive
    assert any("head" in line and "inconclusive" in line for line in lines)
    assert any("tail" in line and " pass " in line for line in lines)
    assert code == 3


@pytest.mark.parametrize(("section", "flag", "expected"), [
    ('mode = "point"', [], "point"),                  # the config's [gate] mode
    ("", [], "confidence"),                           # its default
    ('mode = "point"', ["--mode", "confidence"], "confidence"),  # the flag wins
])
def test_gate_config_mode_is_honoured(tmp_path, monkeypatch, section, flag, expected):
    import releval.cli.gate as cli_gate
    import releval.io.atomic as atomic

    config = tmp_path / "gate.toml"
    config.write_text(f"""
[run]
path = "{tmp_path / 'run'}"
partition_columns = ["system"]
[qrels]
path = "{tmp_path / 'qrels'}"
[output]
per_query_path = "{tmp_path / 'per_query'}"
aggregate_path = "{tmp_path / 'aggregate'}"
[gate]
rules = ["RR change >= -0.01"]
baseline = "system=a"
{section}
""")
    seen = {}

    class Session:
        def stop(self):
            seen["stopped"] = True

    def fake_gate(per_query, **kwargs):
        seen.update(kwargs)
        return "gated"

    monkeypatch.setattr(cli_gate, "session", lambda config, remote: Session())
    monkeypatch.setattr(atomic, "read_table", lambda spark, path, table: "per_query")
    monkeypatch.setattr(cli_gate, "_gate", fake_gate)
    monkeypatch.setattr(cli_gate, "_report", lambda gate, on_inconclusive: 0)
    code = main(["gate", "--config", str(config), "--baseline", "system=a",
                 "--candidate", "system=b", *flag])
    assert code == 0 and seen["stopped"]
    assert (seen["mode"], seen["rules"], seen["alpha"]) == (expected, ["RR change >= -0.01"], 0.05)
