"""``make bench``: generate data, run every runner in its own process, compare, report.

    python -m bench.harness --size quick [--install] [--runners numpy,releval]

Each runner (see :mod:`bench.runners`) is a child process; the harness measures
its wall time from start to exit and its peak memory by polling the resident set
size of the whole process tree (the Python process plus, for Spark, the JVM it
starts) every ``POLL_S`` seconds. Results go to ``bench/results/<size>.md`` and
``bench/results/<size>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Sequence

from bench.generate import SIZES, generate
from bench.runners import MEASURES, NOT_WORK, RUNNERS, SPARK_RUNNERS

POLL_S = 0.05
TOLERANCE = 1e-6
RUNNER_TIMEOUT_S = 3600
#: Benchmark-only packages, tried one by one; a failure is recorded, not fatal.
#: ``pytrec_eval`` (the original) builds from source and downloads trec_eval while
#: building; ``pytrec_eval-terrier`` ships wheels of the same ``pytrec_eval`` module.
BENCH_PACKAGES = ("psutil", "pytrec_eval", "pytrec_eval-terrier", "ir_measures", "ranx")
#: The order runners are run and reported in.
ORDER = (
    "pyarrow-read", "numpy", "pytrec_eval", "ir_measures", "ranx",
    "spark-RankingEvaluator", "spark-sql", "releval", "releval-5",
)
#: Module each optional runner needs.
NEEDS = {"pytrec_eval": "pytrec_eval", "ir_measures": "ir_measures", "ranx": "ranx"}
#: Measures a peer computes with another definition than trec_eval's (not checked).
DIFFERENT_DEFINITION = {
    ("spark-RankingEvaluator", "nDCG@10"): "binary gain (RankingEvaluator takes no graded labels)",
}


def shuffle_partitions(run_rows: int) -> int:
    """About 250k run rows per shuffle partition, between 4 and 64."""
    return max(4, min(64, run_rows // 250_000))


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


def _tree_rss(proc: Any) -> int:
    """Resident bytes of a psutil process and all its descendants."""
    import psutil

    total = 0
    try:
        procs = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def measure(cmd: list[str], log: Path, timeout_s: float) -> dict[str, Any]:
    """Run ``cmd``; return its wall seconds, peak tree RSS (MiB) and exit code."""
    import psutil

    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as out:
        start = time.perf_counter()
        child = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        proc = psutil.Process(child.pid)
        peak = 0
        timed_out = False
        while child.poll() is None:
            peak = max(peak, _tree_rss(proc))
            if time.perf_counter() - start > timeout_s:
                timed_out = True
                for p in [*proc.children(recursive=True), proc]:
                    try:
                        p.kill()
                    except psutil.Error:
                        pass
                child.wait()
                break
            time.sleep(POLL_S)
        wall = time.perf_counter() - start
    return {
        "wall_s": round(wall, 3),
        "peak_rss_mib": round(peak / 2**20, 1),
        "exit_code": child.returncode,
        "timed_out": timed_out,
    }


def run_one(name: str, data: Path, work: Path, partitions: int, timeout_s: float) -> dict[str, Any]:
    """One runner in its own process; its own JSON merged with the outside measures."""
    result_file = work / f"{name}.json"
    result_file.unlink(missing_ok=True)
    cmd = [
        sys.executable, "-m", "bench.runners", name, "--data", str(data),
        "--result", str(result_file), "--work", str(work / name),
        "--shuffle-partitions", str(partitions),
    ]
    outside = measure(cmd, work / "logs" / f"{name}.log", timeout_s)
    inside: dict[str, Any] = {"runner": name, "ok": False, "error": "no result written"}
    if result_file.is_file():
        inside = json.loads(result_file.read_text())
    if outside["timed_out"]:
        inside.update(ok=False, error=f"timed out after {timeout_s:.0f} s")
    row = {**inside, **outside}
    row["log"] = str(work / "logs" / f"{name}.log")
    print(
        f"{name:24s} ok={row['ok']!s:5s} wall={row['wall_s']:8.2f}s "
        f"rss={row['peak_rss_mib']:8.1f}MiB {row.get('error') or ''}",
        flush=True,
    )
    return row


def agreement(rows: dict[str, dict[str, Any]], tolerance: float) -> dict[str, Any]:
    """Each peer's means against releval's macro values (from the aggregate Delta table)."""
    ref = rows.get("releval", {}).get("means") or {}
    out: dict[str, Any] = {"reference": "releval", "tolerance": tolerance, "peers": {}}
    if not ref:
        out["error"] = "releval produced no aggregate values"
        return out
    for name, row in rows.items():
        if name == "releval" or not row.get("means"):
            continue
        checks = {}
        for m in MEASURES:
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
    }


def _fmt(v: Any, spec: str = ".2f") -> str:
    return "–" if v is None else format(v, spec)


def render(report: dict[str, Any]) -> str:
    """The Markdown report."""
    rows: dict[str, dict[str, Any]] = report["runners"]
    data = report["data"]
    ref = rows.get("releval", {})
    lines = [
        f"# releval benchmark: `{report['size']}`",
        "",
        f"{data['queries']:,} queries, {data['run_rows']:,} run rows, {data['qrels_rows']:,} "
        f"qrels rows (seed {data['seed']}). Machine: {report['machine']['cpus']} CPUs, "
        f"{report['machine']['memory_gib']} GiB, Python {report['machine']['python']}; "
        f"Spark `{report['spark']['master']}`, {report['spark']['shuffle_partitions']} shuffle "
        f"partitions, driver memory {report['spark']['driver_memory']}. "
        f"Generated {report['generated_at']}.",
        "",
        "Wall: the runner's process from start to exit (interpreter, imports and, for Spark, "
        "JVM start and stop included). After start-up: the time measured inside the process "
        "once imports are done and, for Spark, once the SparkSession is up (reading, computing, "
        "writing). Peak RSS: the resident memory of the process tree (Python + JVM), "
        f"sampled every {POLL_S * 1000:.0f} ms.",
        "",
        "| runner | what it does | wall s | start-up s | after start-up s | peak RSS MiB "
        "| wall / releval | after start-up / releval | status |",
        "|---|---|--:|--:|--:|--:|--:|--:|---|",
    ]
    for name, row in rows.items():
        status = "ok" if row.get("ok") else f"failed: {row.get('error')}"
        lines.append(
            f"| {name} | {DESCRIPTIONS.get(name, '')} | {_fmt(row.get('wall_s'))} "
            f"| {_fmt(row.get('startup_s'))} | {_fmt(row.get('work_s'))} "
            f"| {_fmt(row.get('peak_rss_mib'), '.0f')} "
            f"| {_fmt(_ratio(row.get('wall_s'), ref.get('wall_s')))} "
            f"| {_fmt(_ratio(row.get('work_s'), ref.get('work_s')))} | {status} |"
        )
    lines += ["", "## Ratios", "", "| ratio | value |", "|---|--:|"]
    lines += [f"| {k} | {_fmt(v)} |" for k, v in report["ratios"].items()]
    agree = report["agreement"]
    lines += [
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
    if "releval" in rows and rows["releval"].get("means"):
        lines.append("| releval (value) | " + " | ".join(
            _fmt(rows["releval"]["means"].get(m), ".6f") for m in MEASURES) + " |")
    for peer, checks in agree.get("peers", {}).items():
        cells = []
        for m in MEASURES:
            c = checks[m]
            cells.append("n/a" if c["status"] == "n/a" else f"{c['status']} ({c['diff']:+.1e})")
        lines.append(f"| {peer} | " + " | ".join(cells) + " |")
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


DESCRIPTIONS = {
    "pyarrow-read": "read both Parquet files (I/O floor)",
    "numpy": "vectorized NumPy, 5 measures",
    "pytrec_eval": "parse TREC files, 5 measures",
    "ir_measures": "pandas from Parquet, 5 measures",
    "ranx": "pandas from Parquet, 5 measures",
    "spark-RankingEvaluator": "Spark ML, 4 aggregate metrics",
    "spark-sql": "Spark SQL join/row_number/groupBy, 5 means",
    "releval": "pipeline.run, 16 measures, 2 Delta tables",
    "releval-5": "pipeline.run, the 5 measures only",
}


def _memory_gib() -> float:
    import psutil

    return round(psutil.virtual_memory().total / 2**30, 1)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the releval benchmark.")
    parser.add_argument("--size", default=os.environ.get("BENCH_SIZE", "quick"), choices=sorted(SIZES))
    parser.add_argument("--runners", help=f"comma-separated subset of {','.join(ORDER)}")
    parser.add_argument("--data-root", type=Path, default=Path("bench/data"))
    parser.add_argument("--results", type=Path, default=Path("bench/results"))
    parser.add_argument("--install", action="store_true", help="pip install the peers first")
    parser.add_argument("--reinstall", action="store_true", help="retry packages that failed")
    parser.add_argument("--tolerance", type=float, default=TOLERANCE)
    parser.add_argument("--timeout", type=float, default=RUNNER_TIMEOUT_S, help="per runner, s")
    parser.add_argument("--render-only", action="store_true",
                        help="recompute ratios/agreement and rewrite the .md from the .json")
    args = parser.parse_args(argv)
    if args.render_only:
        path = args.results / f"{args.size}.json"
        report = json.loads(path.read_text())
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
    info = generate(args.size, data)
    print(f"data {args.size}: {info.run_rows:,} run rows in {data} ({time.perf_counter() - t0:.1f} s)")
    partitions = shuffle_partitions(info.run_rows)
    work = (args.data_root / f"{args.size}-work").resolve()
    work.mkdir(parents=True, exist_ok=True)

    wanted = args.runners.split(",") if args.runners else list(ORDER)
    unknown = sorted(set(wanted) - set(RUNNERS))
    if unknown:
        parser.error(f"unknown runners {unknown}")
    import importlib.util

    rows: dict[str, dict[str, Any]] = {}
    for name in [n for n in ORDER if n in wanted]:
        module = NEEDS.get(name)
        if module and importlib.util.find_spec(module) is None:
            rows[name] = {"runner": name, "ok": False, "error": f"{module} is not installed"}
            print(f"{name:24s} skipped: {module} is not installed", flush=True)
            continue
        rows[name] = run_one(name, data.resolve(), work, partitions, args.timeout)

    from bench.runners import SPARK_DRIVER_MEMORY, SPARK_MASTER

    report = {
        "size": args.size,
        "generated_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "data": asdict(info),
        "machine": {
            "cpus": os.cpu_count(), "memory_gib": _memory_gib(),
            "python": platform.python_version(), "platform": platform.platform(),
        },
        "spark": {"master": SPARK_MASTER, "shuffle_partitions": partitions,
                  "driver_memory": SPARK_DRIVER_MEMORY},
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
    report["ratios"] = ratios(rows)
    report["agreement"] = agreement(rows, tolerance)
    size = report["size"]
    results.mkdir(parents=True, exist_ok=True)
    (results / f"{size}.json").write_text(json.dumps(report, indent=2) + "\n")
    (results / f"{size}.md").write_text(render(report))
    print(f"wrote {results / (size + '.md')} and .json")
    failed = [n for n, c in report["agreement"].get("peers", {}).items()
              if any(v["status"] == "MISMATCH" for v in c.values())]
    if failed:
        print(f"agreement: MISMATCH for {failed}", file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
