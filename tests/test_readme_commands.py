"""The README's commands as written, on the sample: every ``make`` target it names, its
Python example and its command-line examples, each checked for its exit code and for a
number in its output.

They run as processes because the README tells a newcomer to type them: ``make``,
``spark-submit`` and ``.venv/bin/releval`` each start a JVM of their own. One module fixture
parses them out of README.md and runs each once, in the README's order, in a temporary copy
of the project (links to its code, ``.venv`` and ``.jars``, and a ``warehouse/`` of its own),
so the repository's warehouse is never written; ``make`` must find ``install`` done. The
commands on the sample run one after another; those on ``examples/`` run beside them.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from deltalake import DeltaTable

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
#: What the temporary copy links to: what the README's commands read.
LINKED = ("Makefile", "pyproject.toml", "src", "jobs", "conf", "examples", ".venv", ".jars")
#: The code blocks whose lines are commands.
SHELL = ("sh", "bash", "shell")
#: The README's shell commands that are not run, and why.
SKIPPED = {"make test": "runs this test suite"}
#: Every command run, by how it starts; each is checked by the test named.
CHECKED = {
    "make run": "test_make_run",
    "python": "test_python_example",
    ".venv/bin/releval evaluate": "test_cli_evaluate",
    ".venv/bin/releval compare": "test_cli_compare",
    ".venv/bin/releval gate": "test_cli_gate",
    ".venv/bin/releval measures": "test_cli_measures",
    "make compare": "test_make_compare",
    "make gate": "test_make_gate",
    "make agree": "test_make_agree",
    "make report": "test_make_report",
    "PYSPARK_PYTHON=.venv/bin/python .venv/bin/spark-submit": "test_spark_submit",
}
#: The job's exit code of each gate verdict (docs/batch_jobs.md).
EXIT = {"PASS": 0, "FAIL": 1, "INCONCLUSIVE": 3}
DATE = "2026-11-28"  # the date make compare and the README's spark-submit evaluate


def readme_commands() -> list[str]:
    """The README's commands in order: each line of a shell block (continuations joined,
    comments dropped, repeats once) and the Python block as ``"python"``; a block in any
    other language holds no command."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found: list[str] = []
    for lang, body in re.findall(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):
        if lang == "python":
            found.append("python")
            continue
        if lang not in SHELL:
            continue
        for line in re.sub(r"\\\n\s*", " ", body).splitlines():
            words = shlex.split(line, comments=True)
            command = shlex.join(words)
            if words and command not in found and command not in SKIPPED:
                found.append(command)
    return found


def python_example() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)
    assert len(blocks) == 1, "the README has one Python example"
    return blocks[0]


@dataclass(frozen=True)
class Ran:
    command: str
    code: int
    out: str
    seconds: float


@dataclass(frozen=True)
class Readme:
    copy: Path
    runs: dict[str, Ran]

    def __getitem__(self, start: str) -> Ran:
        """The one command that starts with ``start``."""
        matches = [r for c, r in self.runs.items() if c.startswith(start)]
        assert len(matches) == 1, (start, list(self.runs))
        return matches[0]


def on_sample(command: str) -> bool:
    """Whether a command reads or writes the sample's warehouse (the others read examples/)."""
    return command.startswith("make ") or "jobs/" in command


def execute(command: str, copy: Path, env: dict[str, str]) -> Ran:
    line = ".venv/bin/python readme_example.py" if command == "python" else command
    start = time.monotonic()
    proc = subprocess.run(["bash", "-c", line], cwd=copy, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=900)
    seconds = time.monotonic() - start
    print(f"\n{seconds:6.1f} s  exit {proc.returncode}  {command}")
    return Ran(command, proc.returncode, proc.stdout, seconds)


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> Readme:
    """Every README command run once in a temporary copy of the project: those on the
    sample one after another in the README's order, the others beside them."""
    copy = tmp_path_factory.mktemp("readme")
    for name in LINKED:
        (copy / name).symlink_to(ROOT / name)
    (copy / "readme_example.py").write_text(python_example(), encoding="utf-8")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYSPARK_", "SPARK_REMOTE", "RELEVAL_", "MAKE", "MFLAGS"))}
    # install up to date, or each make target would run its steps first
    if subprocess.run(["make", "-q", "install"], cwd=copy, env=env).returncode != 0:
        steps = subprocess.run(["make", "-n", "install"], cwd=copy, env=env,
                               capture_output=True, text=True).stdout
        pytest.fail(f"make install first; it would run:\n{steps}")
    commands = readme_commands()
    chains = [[c for c in commands if on_sample(c)], [c for c in commands if not on_sample(c)]]
    with ThreadPoolExecutor(len(chains)) as pool:
        done_chains = list(pool.map(lambda chain: [execute(c, copy, env) for c in chain], chains))
    found = {r.command: r for chain in done_chains for r in chain}
    return Readme(copy, {c: found[c] for c in commands})


def one(ran: Readme, start: str) -> Ran:
    """The command that starts with ``start``, checked to have exited 0."""
    got = ran[start]
    assert got.code == 0, f"{got.command} exited {got.code}:\n{got.out[-4000:]}"
    if got.command.startswith("make "):
        assert "pip install" not in got.out  # make found install done
    return got


def text_table(out: str) -> list[dict[str, str]]:
    """The first ``| a | b |`` table printed at the start of lines: its rows by header."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith(("|", "+"))),
               len(lines))
    cells = [[c.strip() for c in line.strip().strip("|").split("|")]
             for line in lines[start:end] if line.startswith("|")]
    header = cells[0]
    return [dict(zip(header, row, strict=True)) for row in cells[1:] if row != header]


def row(rows: list[dict[str, str]], **where: str) -> dict[str, str]:
    found = [r for r in rows if all(r[k] == v for k, v in where.items())]
    assert len(found) == 1, where
    return found[0]


def oracle(run: str, measure: str) -> float:
    """pytrec_eval's mean of ``measure`` over the queries of ``examples/<run>.txt``."""
    with open(ROOT / "examples" / "qrels.txt") as f:
        qrels = pytrec_eval.parse_qrel(f)
    with open(ROOT / "examples" / f"{run}.txt") as f:
        ranked = pytrec_eval.parse_run(f)
    name, _, k = measure.partition(".")
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {measure}).evaluate(ranked)
    return float(np.mean([v[f"{name}_{k}" if k else name] for v in per_query.values()]))


def test_every_readme_command_is_run_and_checked(ran):
    commands = list(ran.runs)
    assert commands[0] == "make run"
    for command in commands:
        assert sum(command.startswith(s) for s in CHECKED) == 1, command
    assert len(commands) == len(CHECKED)


def test_make_run(ran):
    got = one(ran, "make run")
    rows = text_table(got.out)
    # three systems over eight days, 100 queries each (the README's sample)
    assert len(rows) == 24 and {r["num_queries"] for r in rows} == {"100"}
    assert len({r["system"] for r in rows}) == 3 and len({r["date"] for r in rows}) == 8
    # the printed macro nDCG@10 is the mean of the per-query table's values
    copy = ran.copy
    per_query = DeltaTable(str(copy / "warehouse/releval/per_query")).to_pandas()
    values = per_query[(per_query["system"] == "bm25") & (per_query["date"].astype(str) == DATE)
                       & (per_query["measure_key"] == "nDCG@10")]["value"]
    assert len(values) == 100
    assert float(row(rows, system="bm25", date=DATE)["nDCG@10"]) == pytest.approx(
        values.mean(), abs=5e-5)
    for table in ("per_query", "aggregate", "attribution"):
        assert (copy / "warehouse/releval" / table / "_delta_log").is_dir(), table


def test_python_example(ran):
    got = one(ran, "python")
    # aggregate: bm25 ranks q1's d1 (unjudged) above d2 (grade 2): RR 1/2; q2's d7 first: 1;
    # mean (1/2 + 1) / 2 = 0.75; dense ranks both first: 1.0
    cells = [[c.strip() for c in line.strip("|").split("|")]
             for line in got.out.splitlines() if line.startswith("|")]
    assert ["bm25", "RR", "0.75"] == next(c[:3] for c in cells if c[:2] == ["bm25", "RR"])
    assert ["dense", "RR", "1.0"] == next(c[:3] for c in cells if c[:2] == ["dense", "RR"])
    # the per-query RR of bm25 on q1, and the comparison's mean difference 1.0 - 0.75
    assert any(c[:2] == ["bm25", "q1"] and "0.5" in c for c in cells)
    assert next(c for c in cells if c[:2] == ["system=dense", "RR"])[2] == "0.25"
    assert "input = used + quarantined" in got.out


def test_cli_evaluate(ran):
    got = one(ran, ".venv/bin/releval evaluate")
    printed = row(text_table(got.out), run_id="bm25")
    assert printed["num_queries"] == "40"
    assert float(printed["P@5"]) == pytest.approx(oracle("bm25", "P.5"), abs=5e-5)
    assert float(printed["nDCG@10"]) == pytest.approx(oracle("bm25", "ndcg_cut.10"), abs=5e-5)
    # the trec_eval file: trec_eval's names, the mean in its `all` rows
    lines = (ran.copy / "bm25.trec_eval").read_text().splitlines()
    means = {f[0]: f[2] for f in (line.split() for line in lines) if f[1] == "all"}
    assert means["num_q"] == "40"
    assert float(means["P_5"]) == pytest.approx(oracle("bm25", "P.5"), abs=1e-12)


def test_cli_compare(ran):
    got = one(ran, ".venv/bin/releval compare")
    assert "3 runs, 40 queries; baseline bm25" in got.out
    lines = [line.split() for line in got.out.splitlines()]
    header = next(w for w in lines if w[:2] == ["run", "P@5"])
    hybrid = next(w for w in lines if w and w[0] == "hybrid")
    value = hybrid[header.index("nDCG@10")].rstrip("*")
    assert float(value) == pytest.approx(oracle("hybrid", "ndcg_cut.10"), abs=5e-5)


def test_cli_gate(ran):
    got = ran[".venv/bin/releval gate"]
    verdict = re.search(r"^gate: (\w+) ", got.out, re.M)
    assert verdict and got.code == EXIT[verdict.group(1)], got.out[-3000:]
    # the change rule's estimate: hybrid's mean nDCG@10 minus bm25's (both scored every query)
    rule = next(line.split() for line in got.out.splitlines()
                if line.strip().startswith("nDCG@10 change >= -0.05"))
    diff = oracle("hybrid", "ndcg_cut.10") - oracle("bm25", "ndcg_cut.10")
    assert float(rule[4]) == pytest.approx(diff, abs=5e-5)


def test_cli_measures(ran):
    got = one(ran, ".venv/bin/releval measures")
    assert re.search(r"^RR .*RR = 1 / rank of the first relevant document", got.out, re.M)
    assert re.search(r"^P .*P@k = \(relevant documents at ranks 1..k\) / k", got.out, re.M)


def test_make_compare(ran):
    got = one(ran, "make compare")
    run = text_table(one(ran, "make run").out)
    # the first table, one row per candidate and measure: [*] candidate measure n base cand diff
    words = next(line.replace("*", " ").split() for line in got.out.splitlines()
                 if re.match(rf"\s*\*?\s*system=hybrid/date={DATE}\s+nDCG@10\s", line))
    n, base, cand, diff = words[2:6]
    assert n == "100"
    # the baseline's and the candidate's means are those make run printed
    assert base == row(run, system="bm25", date=DATE)["nDCG@10"]
    assert cand == row(run, system="hybrid", date=DATE)["nDCG@10"]
    assert float(diff) == pytest.approx(float(cand) - float(base), abs=1.5e-4)


def test_make_gate(ran):
    got = one(ran, "make gate")
    code = re.search(r"^gate exit code (\d) \(0 pass, 1 fail, 3 inconclusive\)$", got.out, re.M)
    verdict = re.search(r"^  gate: (\w+) \(([^;]+);", got.out, re.M)
    assert code and verdict
    assert int(code.group(1)) == EXIT[verdict.group(1)]
    # every run partition is gated: three systems over eight days
    counts = [int(part.split()[0]) for part in verdict.group(2).split(", ")]
    assert sum(counts) == 24


def test_make_agree(ran):
    got = one(ran, "make agree")
    # Cohen's kappa worked out from the printed confusion matrix
    lines = got.out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("confusion matrix"))
    matrix = np.array([[int(v) for v in lines[at + 2 + i].split()[1:]] for i in range(4)])
    share = matrix / matrix.sum()
    chance = float(share.sum(axis=1) @ share.sum(axis=0))
    kappa = (float(np.trace(share)) - chance) / (1 - chance)
    printed = re.search(r"^  kappa ([\d.]+)  \[([\d.]+), ([\d.]+)\]", got.out, re.M)
    assert printed and float(printed.group(1)) == pytest.approx(kappa, abs=5e-4)
    assert float(printed.group(2)) <= kappa <= float(printed.group(3))
    assert f"pairs judged by both: {matrix.sum()} over 100 queries" in got.out


def test_make_report(ran):
    got = one(ran, "make report")
    page = (ran.copy / "warehouse/releval/report.html").read_text(encoding="utf-8")
    # the report's means are the overall means make run printed, at the latest date
    run = text_table(one(ran, "make run").out)
    latest = max(r["date"] for r in run)
    cell = re.search(r'data-run="bm25" data-measure="nDCG@10" title="([^"]+)"', page)
    assert cell and got.code == 0
    assert float(cell.group(1)) == pytest.approx(
        float(row(run, system="bm25", date=latest)["nDCG@10"]), abs=5e-5)


def test_spark_submit(ran):
    got = one(ran, "PYSPARK_PYTHON=.venv/bin/python .venv/bin/spark-submit")
    rows = text_table(got.out)
    # one date re-evaluated: the same numbers make run printed for it
    assert {r["date"] for r in rows} == {DATE} and len(rows) == 3
    run = text_table(one(ran, "make run").out)
    for printed in rows:
        assert printed == row(run, system=printed["system"], date=DATE)
