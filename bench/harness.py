"""``make bench``: generate data, run every runner in its own process, compare, report.

    python -m bench.harness --size quick [--install] [--runners numpy,releval]

Each runner (see :mod:`bench.runners`) is a child process; the harness measures
its wall time from start to exit and its peak memory by polling the resident set
size of the whole process tree (the Python process plus, for Spark, the JVM it
starts) every ``POLL_S`` seconds. A runner whose tree goes above the memory cap
(``--memory-cap-gib``) or runs longer than the size's timeout is killed, tree and
all, and reported as stopped: that is where the in-memory peers stop at 30m and
100m. Results go to ``bench/results/<size>.md`` and ``bench/results/<size>.json``;
a run of the ``notebook`` runner alone to ``<size>-notebook.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.generate import ALIASES, SIZES, generate
from bench.runners import MEASURES, NOT_WORK, RUNNERS, SPARK_RUNNERS

POLL_S = 0.05
TOLERANCE = 1e-6
RUNNER_TIMEOUT_S = 3600
#: Default memory cap of one runner's process tree (GiB); above it the tree is killed.
MEMORY_CAP_GIB = 20.0
#: Per size: runner timeout (s) and the Spark driver heap: 4 GB at 30m and 100m (the
#: heap releval must finish them in), 8 GB for the smaller sizes.
SIZE_SETTINGS: dict[str, dict[str, Any]] = {
    "tiny": {"timeout_s": 600, "driver_memory": "8g"},
    "quick": {"timeout_s": 1800, "driver_memory": "8g"},
    "full": {"timeout_s": 3600, "driver_memory": "8g"},
    "30m": {"timeout_s": 2 * 3600, "driver_memory": "4g"},
    "100m": {"timeout_s": 6 * 3600, "driver_memory": "4g"},
    "q400": {"timeout_s": 600, "driver_memory": "8g"},
}
#: Sizes of the harness beside the generator's ``SIZES`` (queries): a short run, for
#: the notebook runner's comparison at a few hundred queries.
EXTRA_SIZES: dict[str, int] = {"q400": 400}
#: The size the growth ratio compares to, and the sizes of the across-sizes table.
BASE_SIZE = "full"
SCALE_SIZES = ("full", "30m", "100m")
#: Benchmark-only packages, tried one by one; a failure is recorded, not fatal.
#: ``pytrec_eval`` (the original) builds from source and downloads trec_eval while
#: building; ``pytrec_eval-terrier`` ships wheels of the same ``pytrec_eval`` module.
BENCH_PACKAGES = ("psutil", "pytrec_eval", "pytrec_eval-terrier", "ir_measures", "ranx")
#: The order runners are run and reported in.
ORDER = (
    "pyarrow-read", "numpy", "pytrec_eval", "ir_measures", "ranx",
    "spark-RankingEvaluator", "spark-sql", "spark-sql-tables", "releval", "releval-5",
    "releval-cli-trec", "releval-cli-parquet", "notebook",
)
#: Runners that run only when named in ``--runners``: ``notebook`` times eight
#: evaluations in one session, a comparison of its own rather than a peer's row.
OPT_IN = frozenset({"notebook"})
#: A run of only these runners writes ``<size>-notebook.md``, beside the size's report.
OWN_FILE = frozenset({"notebook"})
#: Module each optional runner needs.
NEEDS = {"pytrec_eval": "pytrec_eval", "ir_measures": "ir_measures", "ranx": "ranx"}
#: Measures a peer computes with another definition than trec_eval's (not checked).
DIFFERENT_DEFINITION = {
    ("spark-RankingEvaluator", "nDCG@10"): "binary gain (RankingEvaluator takes no graded labels)",
}


def results_name(size: str, runners: Sequence[str]) -> str:
    """The results files' name: ``<size>``, or ``<size>-notebook`` for the notebook runner alone."""
    return f"{size}-notebook" if runners and set(runners) <= OWN_FILE else size


def shuffle_partitions(run_rows: int) -> int:
    """About 250k run rows per shuffle partition, between 4 and 400.

    quick 4, full 40, 30m 120, 100m 400: a partition of a shuffle of
    the run stays around 250k rows whatever the size, so it fits a 4 GB heap.
    """
    return max(4, min(400, run_rows // 250_000))


def install(packages: Sequence[str], status_file: Path, again: bool) -> dict[str, str]:
    """``pip install`` each package alone; return ``{package: "ok" | "failed: why"}``.

    The outcome is cached in ``status_file`` so later runs do not retry a failing build.
    """
    if status_file.is_file() and not again:
        return json.loads(status_file.read_text())
    status: dict[str, str] = {}
    for pkg in packages:
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", pkg],
            capture_output=True, text=True,
        )
        if proc.returncode == 0:
            status[pkg] = "ok"
        else:
            lines = [ln.strip() for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()]
            why = next((ln for ln in lines if "Error" in ln and "urlopen" in ln), None)
            why = why or next((ln for ln in reversed(lines) if "error" in ln.lower()), "pip failed")
            status[pkg] = f"failed: {why[:300]}"
        print(f"install {pkg}: {status[pkg]}", flush=True)
    status_file.parent.mkdir(parents=True, exist_ok=True)
    status_file.write_text(json.dumps(status, indent=2) + "\n")
    return status


def _tree(proc: Any) -> list[Any]:
    """A psutil process and all its descendants ([] when it is gone)."""
    import psutil

    try:
        return [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return []


def _tree_rss(procs: list[Any]) -> int:
    """Resident bytes of the processes ``procs``."""
    import psutil

    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def _ended(p: Any) -> bool:
    """Whether a psutil process has ended (a zombie waiting for its parent counts)."""
    import psutil

    try:
        return p.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


def _kill(procs: list[Any], child: subprocess.Popen[bytes]) -> list[int]:
    """SIGKILL ``procs`` (descendants first); reap ``child``; wait for the rest; return the pids."""
    import psutil

    for p in reversed(procs):
        try:
            p.kill()
        except psutil.Error:
            pass
    child.wait()  # reaped here, by Popen, so its return code is the signal
    deadline = time.monotonic() + 30
    while not all(_ended(p) for p in procs) and time.monotonic() < deadline:
        time.sleep(POLL_S)
    return [p.pid for p in procs]


def measure(
    cmd: list[str], log: Path, timeout_s: float, memory_cap_mib: float | None = None
) -> dict[str, Any]:
    """Run ``cmd``; return its wall seconds, peak tree RSS (MiB), exit code and why it stopped.

    The process tree's resident memory is sampled every ``POLL_S`` s. When it is
    above ``memory_cap_mib``, or the run is longer than ``timeout_s``, every process
    of the tree is killed (SIGKILL) and ``stopped`` says why; ``killed_pids`` lists them.
    """
    import psutil

    log.parent.mkdir(parents=True, exist_ok=True)
    cap = None if memory_cap_mib is None else memory_cap_mib * 2**20
    stopped: str | None = None
    killed: list[int] = []
    with open(log, "w") as out:
        start = time.perf_counter()
        child = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        proc = psutil.Process(child.pid)
        peak = 0
        while child.poll() is None:
            procs = _tree(proc)
            rss = _tree_rss(procs)
            peak = max(peak, rss)
            if cap is not None and rss > cap:
                stopped = f"stopped: peak RSS > {memory_cap_mib / 1024:g} GiB cap"
            elif time.perf_counter() - start > timeout_s:
                stopped = f"stopped: timed out after {timeout_s:.0f} s"
            if stopped:
                killed = _kill(_tree(proc) or procs, child)
                break
            time.sleep(POLL_S)
        wall = time.perf_counter() - start
    return {
        "wall_s": round(wall, 3),
        "peak_rss_mib": round(peak / 2**20, 1),
        "exit_code": child.returncode,
        "timed_out": bool(stopped and "timed out" in stopped),
        "stopped": stopped,
        "killed_pids": killed,
    }


def status(row: dict[str, Any]) -> str:
    """``ok``, ``stopped: ...`` (killed by the harness), ``killed by signal N`` or ``failed: ...``."""
    if row.get("stopped"):
        return row["stopped"]
    if row.get("ok"):
        return "ok"
    code = row.get("exit_code")
    if isinstance(code, int) and code < 0 and row.get("error") == "no result written":
        # Killed from outside the harness; SIGKILL without a result is most often the
        # kernel's out-of-memory killer.
        return f"killed by signal {-code}" + (" (out of memory?)" if code == -9 else "")
    return f"failed: {row.get('error')}"


def run_one(
    name: str, data: Path, work: Path, partitions: int, timeout_s: float,
    *, driver_memory: str = "8g", memory_cap_mib: float | None = None,
) -> dict[str, Any]:
    """One runner in its own process; its own JSON merged with the outside measures."""
    result_file = work / f"{name}.json"
    result_file.unlink(missing_ok=True)
    cmd = [
        sys.executable, "-m", "bench.runners", name, "--data", str(data),
        "--result", str(result_file), "--work", str(work / name),
        "--shuffle-partitions", str(partitions), "--driver-memory", driver_memory,
    ]
    outside = measure(cmd, work / "logs" / f"{name}.log", timeout_s, memory_cap_mib)
    inside: dict[str, Any] = {"runner": name, "ok": False, "error": "no result written"}
    if result_file.is_file():
        inside = json.loads(result_file.read_text())
    if outside["stopped"]:
        inside.update(ok=False, error=outside["stopped"])
    row = {**inside, **outside}
    row["status"] = status(row)
    row["finished"] = bool(row["ok"])
    row["log"] = str(work / "logs" / f"{name}.log")
    print(
        f"{name:24s} ok={row['ok']!s:5s} wall={row['wall_s']:8.2f}s "
        f"rss={row['peak_rss_mib']:8.1f}MiB {'' if row['ok'] else row['status']}",
        flush=True,
    )
    return row


def agreement(rows: dict[str, dict[str, Any]], tolerance: float) -> dict[str, Any]:
    """Each peer's means against releval's macro values (from the aggregate Delta table)."""
    ref = rows.get("releval", {}).get("means") or {}
    out: dict[str, Any] = {"reference": "releval", "tolerance": tolerance, "peers": {}}
    if not ref:
        if "releval" in rows:
            out["error"] = "releval produced no aggregate values"
        return out
    for name, row in rows.items():
        if name == "releval" or not row.get("means"):
            continue
        checks = {}
        # the five every peer computes, then any other measure both computed
        extra = sorted((set(row["means"]) & set(ref)) - set(MEASURES))
        for m in [*MEASURES, *extra]:
            if m not in row["means"] or m not in ref:
                checks[m] = {"status": "n/a"}
                continue
            diff = row["means"][m] - ref[m]
            why = DIFFERENT_DEFINITION.get((name, m))
            status = "ok" if abs(diff) <= tolerance else ("differs by definition" if why else "MISMATCH")
            checks[m] = {"value": row["means"][m], "diff": diff, "status": status, **({"why": why} if why else {})}
        out["peers"][name] = checks
    return out


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a is not None and b not in (None, 0) else None


#: The notebook runner's ratio of medians (its label in the report).
NOTEBOOK_RATIO = (
    "notebook: releval.evaluate / RankingEvaluator (nDCG@10, MAP), medians in one warm "
    "session (target: <= 1.5)"
)


def ratios(rows: dict[str, dict[str, Any]]) -> dict[str, float | None]:
    """The headline ratios (only from runners that succeeded)."""
    def get(name: str, key: str) -> float | None:
        row = rows.get(name)
        return row.get(key) if row and row.get("ok") else None

    return {
        "releval wall / pytrec_eval wall": _ratio(get("releval", "wall_s"), get("pytrec_eval", "wall_s")),
        "releval wall / numpy wall": _ratio(get("releval", "wall_s"), get("numpy", "wall_s")),
        "releval peak RSS / pytrec_eval peak RSS": _ratio(
            get("releval", "peak_rss_mib"), get("pytrec_eval", "peak_rss_mib")),
        "RankingEvaluator after start-up / releval after start-up": _ratio(
            get("spark-RankingEvaluator", "work_s"), get("releval", "work_s")),
        "Spark SQL after start-up / releval after start-up": _ratio(
            get("spark-sql", "work_s"), get("releval", "work_s")),
        "Spark SQL after start-up / releval (5 measures) after start-up": _ratio(
            get("spark-sql", "work_s"), get("releval-5", "work_s")),
        "releval (16 measures) / releval (5 measures), after start-up": _ratio(
            get("releval", "work_s"), get("releval-5", "work_s")),
        "releval after start-up / Spark SQL after start-up (target: <= 1.0)": _ratio(
            get("releval", "work_s"), get("spark-sql", "work_s")),
        "releval after start-up / the same work in Spark SQL (16 measures, both tables) after start-up": _ratio(
            get("releval", "work_s"), get("spark-sql-tables", "work_s")),
        "releval evaluate: TREC text / Parquet, wall (target: <= 1.3)": _ratio(
            get("releval-cli-trec", "wall_s"), get("releval-cli-parquet", "wall_s")),
        NOTEBOOK_RATIO: (get("notebook", "notebook") or {}).get("ratio"),
    }


def across_sizes(report: dict[str, Any], results: Path) -> dict[str, Any]:
    """Each runner's wall, peak RSS and status at the sizes of ``SCALE_SIZES`` (and this one).

    Read from ``results/<size>.json`` for the other sizes, so the report of 100m
    shows where the in-memory peers stop: their peak memory at 10M and 30M rows
    and whether they finish at 100M. Also the growth of releval's wall time
    against ``BASE_SIZE`` (10M rows), for the target "at most linear".
    """
    reports: dict[str, dict[str, Any]] = {}
    own_file = report.get("results_name", report["size"]) != report["size"]
    for size in SCALE_SIZES if report["size"] in SCALE_SIZES and not own_file else ():
        path = results / f"{size}.json"
        if size == report["size"]:
            reports[size] = report
        elif path.is_file():
            reports[size] = json.loads(path.read_text())
    if report["size"] not in reports:
        reports[report["size"]] = report
    table: dict[str, dict[str, Any]] = {}
    for size, rep in reports.items():
        for name, row in rep["runners"].items():
            table.setdefault(name, {})[size] = {
                "run_rows": rep["data"]["run_rows"],
                "wall_s": row.get("wall_s"),
                "peak_rss_mib": row.get("peak_rss_mib"),
                "status": row.get("status") or status(row),
            }
    out: dict[str, Any] = {"sizes": list(reports), "runners": table}
    base = reports.get(BASE_SIZE)
    if base is not None and report["size"] != BASE_SIZE:
        mine, theirs = report["runners"].get("releval", {}), base["runners"].get("releval", {})
        rows_ratio = report["data"]["run_rows"] / base["data"]["run_rows"]
        wall_ratio = (
            _ratio(mine.get("wall_s"), theirs.get("wall_s"))
            if mine.get("ok") and theirs.get("ok") else None
        )
        out["growth"] = {
            "label": f"releval wall at {report['size']} / releval wall at {BASE_SIZE}",
            "wall_ratio": wall_ratio,
            "rows_ratio": round(rows_ratio, 2),
            "linear": None if wall_ratio is None else wall_ratio <= rows_ratio,
            "base_generated_at": base.get("generated_at"),
            "base_driver_memory": base.get("spark", {}).get("driver_memory"),
        }
    return out


def _fmt(v: Any, spec: str = ".2f") -> str:
    return "–" if v is None else format(v, spec)


def render(report: dict[str, Any]) -> str:
    """The Markdown report."""
    rows: dict[str, dict[str, Any]] = report["runners"]
    data = report["data"]
    ref = rows.get("releval", {})
    lines = [
        f"# releval benchmark: `{report.get('results_name', report['size'])}`",
        "",
        f"{data['queries']:,} queries, {data['run_rows']:,} run rows, {data['qrels_rows']:,} "
        f"qrels rows (seed {data['seed']}). Machine: {report['machine']['cpus']} CPUs, "
        f"{report['machine']['memory_gib']} GiB, Python {report['machine']['python']}; "
        f"Spark `{report['spark']['master']}`, {report['spark']['shuffle_partitions']} shuffle "
        f"partitions, driver memory (spark.driver.memory) {report['spark']['driver_memory']}. "
        + _limits(report.get("limits"))
        + f"Generated {report['generated_at']}.",
        "",
        "Wall: the runner's process from start to exit (interpreter, imports and, for Spark, "
        "JVM start and stop included). After start-up: the time measured inside the process "
        "once imports are done and, for Spark, once the SparkSession is up (reading, computing, "
        "writing). Peak RSS: the resident memory of the process tree (Python + JVM), "
        f"sampled every {POLL_S * 1000:.0f} ms. A runner above the memory cap or the timeout "
        "is killed with its process tree and reported as `stopped` with the peak seen.",
        "",
        "| runner | what it does | wall s | start-up s | after start-up s | peak RSS MiB "
        "| wall / releval | after start-up / releval | status |",
        "|---|---|--:|--:|--:|--:|--:|--:|---|",
    ]
    for name, row in rows.items():
        row_status = row.get("status") or status(row)
        lines.append(
            f"| {name} | {DESCRIPTIONS.get(name, '')} | {_fmt(row.get('wall_s'))} "
            f"| {_fmt(row.get('startup_s'))} | {_fmt(row.get('work_s'))} "
            f"| {_fmt(row.get('peak_rss_mib'), '.0f')} "
            f"| {_fmt(_ratio(row.get('wall_s'), ref.get('wall_s')))} "
            f"| {_fmt(_ratio(row.get('work_s'), ref.get('work_s')))} | {row_status} |"
        )
    own_file = report.get("results_name", report["size"]) != report["size"]
    lines += ["", "## Ratios", "", "| ratio | value |", "|---|--:|"]
    lines += [f"| {k} | {_fmt(v)} |" for k, v in report["ratios"].items()
              if v is not None or not own_file]  # a notebook file: its own ratio
    lines += [
        f"| Spark jobs of `{name}` (its --profile; target at tiny: <= 15) | {row['spark_jobs']} |"
        for name, row in rows.items()
        if row.get("spark_jobs") is not None
    ]
    lines += _render_across_sizes(report.get("across_sizes"))
    if rows.get("notebook", {}).get("notebook"):
        lines += _render_notebook(rows["notebook"]["notebook"])
    agree = report["agreement"]
    lines += [] if "releval" not in rows else [
        "",
        "## Agreement with releval",
        "",
        f"Mean over queries of each measure, minus releval's `macro` value read back from its "
        f"aggregate Delta table; `ok` when |diff| <= {agree['tolerance']:g}. "
        "The generator makes scores strictly decreasing within a query, so no tool's "
        "tie-break rule matters.",
        "",
        "| peer | " + " | ".join(MEASURES) + " |",
        "|---|" + "---|" * len(MEASURES),
    ]
    if rows.get("releval", {}).get("means"):
        lines.append("| releval (value) | " + " | ".join(
            _fmt(rows["releval"]["means"].get(m), ".6f") for m in MEASURES) + " |")
    for peer, checks in agree.get("peers", {}).items():
        cells = []
        for m in MEASURES:
            c = checks[m]
            cells.append("n/a" if c["status"] == "n/a" else f"{c['status']} ({c['diff']:+.1e})")
        lines.append(f"| {peer} | " + " | ".join(cells) + " |")
    for peer, checks in agree.get("peers", {}).items():
        extra = {m: c for m, c in checks.items() if m not in MEASURES}
        if extra:
            bad = sorted(m for m, c in extra.items() if c["status"] != "ok")
            worst = max(abs(c["diff"]) for c in extra.values())
            lines.append(
                f"\n{peer}, its other {len(extra)} measures ({', '.join(extra)}): "
                + (f"**{', '.join(bad)} differ**" if bad else "all ok")
                + f", largest |diff| {worst:.1e}."
            )
    notes = [f"- {peer}/{m}: {c['why']}" for peer, checks in agree.get("peers", {}).items()
             for m, c in checks.items() if c.get("why")]
    notes += [f"- {row['runner']}: {n}" for row in rows.values() for n in row.get("notes", [])]
    if agree.get("error"):
        notes.append(f"- {agree['error']}")
    lines += ["", "Notes:", "", *notes] if notes else []
    lines += ["", "## Benchmark-only packages", "", "| package | pip install |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in report["install"].items()]
    if str(report["install"].get("pytrec_eval", "ok")).startswith("failed"):
        lines += ["", "The original `pytrec_eval` is a source distribution whose build downloads "
                  "trec_eval's C source from outside the package registry; where that is not "
                  "reachable it cannot be built. `pytrec_eval-terrier` ships wheels of the same "
                  "`pytrec_eval` module (same API, trec_eval 9.x inside) and is what the "
                  "`pytrec_eval` runner and ir_measures use here."]
    lines += ["", "## Phases (seconds, inside each process)", ""]
    for name, row in rows.items():
        phases = ", ".join(f"{k} {v:.2f}" for k, v in row.get("phases", {}).items())
        lines.append(f"- {name}: {phases or '–'}")
    return "\n".join(lines) + "\n"


def _render_notebook(nb: dict[str, Any]) -> list[str]:
    """The notebook runner's section: each timed run, the medians, their ratio, the means."""
    n = nb["repeats"]
    what = {
        "releval": "`releval.evaluate(run, qrels, measures=<16>).aggregate.collect()`",
        "floor": "floor: releval's engine input shuffled by query to Python, counted",
        "RankingEvaluator": "arrays built and cached, then RankingEvaluator's nDCG@10 and MAP",
    }
    lines = [
        "",
        "## One warm session: releval.evaluate against RankingEvaluator",
        "",
        f"One SparkSession; the run ({nb['rows']['run']:,} rows) and qrels "
        f"({nb['rows']['qrels']:,} rows) read from Parquet, cached and counted before the "
        f"clock starts. After one untimed warm-up of each, {n} timed runs of each, alternated "
        + ("(releval, floor, RankingEvaluator, releval, ...)." if "floor" in nb["times_s"]
           else "(releval, RankingEvaluator, releval, ...).")
        + (" The machine's 1-minute load average: {before:g} before the timed runs, {after:g} "
           "after.".format(**nb["load_average_1min"]) if nb.get("load_average_1min") else ""),
        "",
        "| timed | warm-up s | " + " | ".join(f"run {i + 1} s" for i in range(n))
        + " | median s | Spark jobs |",
        "|---|--:|" + "--:|" * n + "--:|--:|",
    ]
    for side, label in what.items():
        if side not in nb["times_s"]:
            continue
        lines.append(
            f"| {label} | {_fmt(nb['warm_up_s'][side])} | "
            + " | ".join(_fmt(t) for t in nb["times_s"][side])
            + f" | {_fmt(nb['median_s'][side])} | {nb.get('spark_jobs', {}).get(side, '–')} |"
        )
    lines += [
        "",
        f"**releval / RankingEvaluator, medians: {_fmt(nb['ratio'])}** (target: <= 1.5).",
        *([
            "",
            f"The floor / RankingEvaluator: {_fmt(nb['floor_ratio'])}. The floor is the part "
            "of releval's plan that no measure, check or count adds to: the run and qrels "
            "rows, with the five columns releval's engine sends to Python, shuffled by query "
            "into Python and counted there.",
        ] if nb.get("floor_ratio") is not None else []),
        "",
        "| mean over queries | releval | RankingEvaluator | diff | |",
        "|---|--:|--:|--:|---|",
    ]
    for m, a in nb["agreement"].items():
        lines.append(f"| {m} | {a['releval']:.6f} | {a['RankingEvaluator']:.6f} "
                     f"| {a['diff']:+.1e} | {a['status']} |")
    lines += [
        "",
        "RankingEvaluator takes no graded labels: its nDCG gives every relevant document "
        "gain 1, releval's (trec_eval's) gives it its label, so the two agree only when the "
        f"labels are 0/1 (here: {'yes' if nb['binary_labels'] else 'no, 0-3'}). Its MAP is "
        "trec_eval's AP over the queries with a relevant document. Largest change of a "
        f"mean between the runs: {nb['largest_change_between_runs']:.1e}.",
    ]
    return lines


def _limits(limits: dict[str, Any] | None) -> str:
    """The memory cap and timeout sentence of the header (empty for a report without limits)."""
    if not limits:
        return ""
    cap = limits.get("memory_cap_gib")
    return (f"Per runner: memory cap {'none' if cap is None else f'{cap:g} GiB'}, "
            f"timeout {limits['timeout_s']:.0f} s. ")


def _render_across_sizes(across: dict[str, Any] | None) -> list[str]:
    """The growth line and the per-runner table over sizes (empty when only one size)."""
    if not across:
        return []
    lines: list[str] = []
    growth = across.get("growth")
    if growth:
        verdict = {True: "at most linear", False: "MORE than linear", None: "–"}[growth["linear"]]
        lines += [
            "",
            f"**{growth['label']}: {_fmt(growth['wall_ratio'])}** for {growth['rows_ratio']:g}x the "
            f"run rows ({verdict}; {BASE_SIZE} measured {growth['base_generated_at']} with driver "
            f"memory {growth.get('base_driver_memory') or '–'}).",
        ]
    sizes = across["sizes"]
    if len(sizes) < 2:
        return lines
    lines += [
        "",
        "## Across sizes: where the in-memory peers stop",
        "",
        "Per runner and size (from `bench/results/<size>.json`): wall s / peak RSS MiB / status.",
        "",
        "| runner | " + " | ".join(sizes) + " |",
        "|---|" + "---|" * len(sizes),
    ]
    for name, per_size in across["runners"].items():
        cells = []
        for size in sizes:
            c = per_size.get(size)
            cells.append("–" if c is None else
                         f"{_fmt(c['wall_s'], '.0f')} s / {_fmt(c['peak_rss_mib'], '.0f')} MiB / {c['status']}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


DESCRIPTIONS = {
    "pyarrow-read": "read both Parquet files (I/O floor)",
    "numpy": "vectorized NumPy, 5 measures",
    "pytrec_eval": "parse TREC files, 5 measures",
    "ir_measures": "pandas from Parquet, 5 measures",
    "ranx": "pandas from Parquet, 5 measures",
    "spark-RankingEvaluator": "Spark ML, 4 aggregate metrics",
    "spark-sql": "Spark SQL join/row_number/groupBy, 5 means",
    "spark-sql-tables": "the same SQL for releval's 16 measures, both tables to Delta, no checks",
    "releval": "pipeline.run, 16 measures, 2 Delta tables (Arrow engine)",
    "releval-5": "pipeline.run, the 5 measures only (Arrow engine)",
    "releval-cli-trec": "`releval evaluate` on the TREC files, defaults, JVM start included",
    "releval-cli-parquet": "`releval evaluate --format parquet` on the Parquet copies, the same",
    "notebook": "one warm session: releval.evaluate and RankingEvaluator, alternated",
}


def _memory_gib() -> float:
    import psutil

    return round(psutil.virtual_memory().total / 2**30, 1)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the releval benchmark.")
    parser.add_argument("--size", default=os.environ.get("BENCH_SIZE", "quick"),
                        choices=sorted([*SIZES, *EXTRA_SIZES, *ALIASES]))
    parser.add_argument("--runners", help=f"comma-separated subset of {','.join(ORDER)} "
                        f"(default: all but {', '.join(sorted(OPT_IN))})")
    parser.add_argument("--data-root", type=Path, default=Path("bench/data"))
    parser.add_argument("--results", type=Path, default=Path("bench/results"))
    parser.add_argument("--install", action="store_true", help="pip install the peers first")
    parser.add_argument("--reinstall", action="store_true", help="retry packages that failed")
    parser.add_argument("--tolerance", type=float, default=TOLERANCE)
    parser.add_argument("--timeout", type=float,
                        help="per runner, s (default per size: "
                        + ", ".join(f"{k} {v['timeout_s']}" for k, v in SIZE_SETTINGS.items()) + ")")
    parser.add_argument("--memory-cap-gib", type=float, default=MEMORY_CAP_GIB,
                        help="kill a runner whose process tree's RSS goes above this "
                        f"(default {MEMORY_CAP_GIB:g}; 0 = no cap)")
    parser.add_argument("--driver-memory", help="spark.driver.memory of the Spark runners "
                        "(default per size: " + ", ".join(
                            f"{k} {v['driver_memory']}" for k, v in SIZE_SETTINGS.items()) + ")")
    parser.add_argument("--shuffle-partitions", type=int,
                        help="default: about one per 250k run rows (see shuffle_partitions)")
    parser.add_argument("--render-only", action="store_true",
                        help="recompute ratios/agreement and rewrite the .md from the .json "
                        "(with --runners notebook: the <size>-notebook files)")
    args = parser.parse_args(argv)
    args.size = ALIASES.get(args.size, args.size)
    wanted = args.runners.split(",") if args.runners else [n for n in ORDER if n not in OPT_IN]
    stem = results_name(args.size, wanted)
    if args.render_only:
        path = args.results / f"{stem}.json"
        report = json.loads(path.read_text())
        report.setdefault("results_name", stem)
        finish(report, args.results, args.tolerance)
        return 0

    status_file = args.data_root / "install-status.json"
    install_status: dict[str, str] = {}
    if args.install or args.reinstall:
        install_status = install(BENCH_PACKAGES, status_file, again=args.reinstall)
    elif status_file.is_file():
        install_status = json.loads(status_file.read_text())

    data = args.data_root / args.size
    t0 = time.perf_counter()
    info = generate(args.size, data, queries=EXTRA_SIZES.get(args.size))
    print(f"data {args.size}: {info.run_rows:,} run rows in {data} ({time.perf_counter() - t0:.1f} s)")
    partitions = args.shuffle_partitions or shuffle_partitions(info.run_rows)
    settings = SIZE_SETTINGS.get(args.size, {"timeout_s": RUNNER_TIMEOUT_S, "driver_memory": "8g"})
    timeout_s = args.timeout or settings["timeout_s"]
    driver_memory = args.driver_memory or settings["driver_memory"]
    memory_cap_mib = args.memory_cap_gib * 1024 if args.memory_cap_gib > 0 else None
    print(f"spark.driver.memory {driver_memory}, {partitions} shuffle partitions; per runner: "
          f"timeout {timeout_s:.0f} s, memory cap {args.memory_cap_gib:g} GiB", flush=True)
    work = (args.data_root / f"{args.size}-work").resolve()
    work.mkdir(parents=True, exist_ok=True)

    unknown = sorted(set(wanted) - set(RUNNERS))
    if unknown:
        parser.error(f"unknown runners {unknown}")
    import importlib.util

    rows: dict[str, dict[str, Any]] = {}
    for name in [n for n in ORDER if n in wanted]:
        module = NEEDS.get(name)
        if module and importlib.util.find_spec(module) is None:
            rows[name] = {"runner": name, "ok": False, "error": f"{module} is not installed",
                          "status": f"skipped: {module} is not installed", "finished": False}
            print(f"{name:24s} skipped: {module} is not installed", flush=True)
            continue
        rows[name] = run_one(name, data.resolve(), work, partitions, timeout_s,
                             driver_memory=driver_memory, memory_cap_mib=memory_cap_mib)

    from bench.runners import SPARK_MASTER

    report = {
        "size": args.size,
        "results_name": stem,
        "generated_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "data": asdict(info),
        "machine": {
            "cpus": os.cpu_count(), "memory_gib": _memory_gib(),
            "python": platform.python_version(), "platform": platform.platform(),
        },
        "spark": {"master": SPARK_MASTER, "shuffle_partitions": partitions,
                  "driver_memory": driver_memory},
        "limits": {"memory_cap_gib": args.memory_cap_gib or None, "timeout_s": timeout_s},
        "install": install_status,
        "runners": rows,
        "spark_runners": sorted(SPARK_RUNNERS),
    }
    finish(report, args.results, args.tolerance)
    return 0


def finish(report: dict[str, Any], results: Path, tolerance: float) -> None:
    """Derive work times, ratios and agreement; write the JSON and Markdown reports."""
    rows: dict[str, dict[str, Any]] = report["runners"]
    for row in rows.values():
        if "phases" in row:
            row["work_s"] = round(sum(v for k, v in row["phases"].items() if k not in NOT_WORK), 3)
    for row in rows.values():
        row.setdefault("status", status(row))
        row.setdefault("finished", bool(row.get("ok")))
    report["ratios"] = ratios(rows)
    report["agreement"] = agreement(rows, tolerance)
    report["across_sizes"] = across_sizes(report, results)
    growth = report["across_sizes"].get("growth")
    if growth:
        report["ratios"][growth["label"]] = growth["wall_ratio"]
    name = report.get("results_name", report["size"])
    results.mkdir(parents=True, exist_ok=True)
    (results / f"{name}.json").write_text(json.dumps(report, indent=2) + "\n")
    (results / f"{name}.md").write_text(render(report))
    print(f"wrote {results / (name + '.md')} and .json")
    failed = [n for n, c in report["agreement"].get("peers", {}).items()
              if any(v["status"] == "MISMATCH" for v in c.values())]
    if failed:
        print(f"agreement: MISMATCH for {failed}", file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
