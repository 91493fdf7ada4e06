"""The calibration grid of the gate's decisions and of the descriptive statistics, pure NumPy.

Every design of :mod:`releval.stats.calibration` (rule kind x shape x queries x where the true
mean sits) under the bounded test; the t-test gate on the table of designs that measured it;
the power bar (1,000 queries, differences of mean 0 and sd 0.1, ``change >= -0.01``); the
queries each method needs for a margin; the coverage of the aggregate's intervals and the size
of compare's paired tests on the same shapes.

    .venv/bin/python -m bench.calibration            # -> bench/results/calibration.md
    .venv/bin/python -m bench.calibration --reps 100 # a quicker, noisier grid
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from releval.stats import calibration as C
from releval.stats import gate as G
from releval.stats.mean_bounds import MeanBounds, needed
from releval.stats.power import pairs_needed

RESULTS = Path(__file__).parent / "results"


def _reps(kind: str, shape: str, n: int, reps: int) -> int:
    """Fewer repetitions where one gate is slow: hundreds of distinct values (weighted: Gamma
    draws of that many concentrations), or hundreds of slice values."""
    if kind == "slice" and n >= 200:
        return max(reps // 2, 50)
    if shape != "symmetric" or n < 100:
        return reps
    if kind == "weighted":
        return max(reps // (8 if n >= 1000 else 4), 50)
    return max(reps // 2, 50) if n >= 1000 else reps


def grid(reps: int) -> list[C.Rate]:
    rates = []
    for kind in C.KINDS:
        for shape in C.SHAPES:
            for n in C.NS:
                if kind == "slice" and not 2 * C.SLICE_SIZE <= n <= 200:
                    continue  # 2 to 40 slice values
                rates += C.gate_rates(kind, shape, n, reps=_reps(kind, shape, n, reps))
                print(f"{kind} {shape} {n}: " + ", ".join(
                    f"{r.event} ({r.where}) {r.rate:.1%}" for r in rates[-len(C.CASES):]),
                    file=sys.stderr, flush=True)
    return rates


def power_bar(reps: int) -> tuple[float, bool]:
    """The pass rate of ``change >= -0.01`` on 1,000 differences ~ N(0, 0.1) cut to
    [-1, 1], and whether every difference 0 passes."""
    rule = G.parse_rule("nDCG@10 change >= -0.01")
    rng = np.random.default_rng(2026)
    passed = sum(C.outcomes(rule, C.Sample(np.clip(rng.normal(0, 0.1, 1000), -1, 1)),
                            "bounded")[0] == G.PASS for _ in range(reps))
    unchanged = C.outcomes(rule, C.Sample(np.zeros(1000)), "bounded")[0] == G.PASS
    return passed / reps, unchanged


def queries_needed_table() -> list[str]:
    """The queries each method needs to pass ``change >= -margin`` with probability 0.8 when
    the true mean difference is 0 and its sd is sd."""
    lines = ["| sd of the differences | margin | t-test | bounded test | ratio |",
             "|--:|--:|--:|--:|--:|"]
    for sd in (0.05, 0.1, 0.2, 0.3):
        for margin in (0.01, 0.02, 0.05):
            t = pairs_needed(margin / sd, alpha=C.ALPHA, power=G.POWER, sides=1)
            b = needed(MeanBounds(estimate=0.0, n_eff=1.0, spread=sd, lo=-1.0, hi=1.0),
                       -margin, alpha=C.ALPHA, power=G.POWER)
            lines.append(f"| {sd:g} | {margin:g} | {t} | {b} | {b / t:.2f} |")
    return lines


def descriptive(reps: int) -> list[str]:
    lines = ["| shape | " + " | ".join(f"n={n}" for n in C.NS) + " |",
             "|---|" + "--:|" * len(C.NS)]
    cover = [f"| {s} | " + " | ".join(f"{C.interval_coverage(s, n, reps=reps):.1%}"
                                      for n in C.NS) + " |" for s in C.SHAPES]
    size_t = [f"| {s} | " + " | ".join(f"{C.paired_size(s, n, reps=reps):.1%}" for n in C.NS)
              + " |" for s in C.SHAPES]
    size_r = [f"| {s} | " + " | ".join(
        f"{C.paired_size(s, n, reps=max(reps // 4, 100), test='randomization'):.1%}"
        for n in C.NS) + " |" for s in C.SHAPES]
    return (["### Coverage of the aggregate's 95% interval (t; Wilson on 0/1 values)", "",
             *lines, *cover, "", "### Size of compare's paired t-test at alpha 0.05 "
             "(two-sided, true mean difference 0)", "", *lines, *size_t, "",
             "### Size of compare's randomization (sign-flip) test at alpha 0.05", "", *lines,
             *size_r])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--out", type=Path, default=RESULTS / "calibration.md")
    args = parser.parse_args()
    started = time.perf_counter()
    issue = ["| design | queries | t-test gate | bounded test |", "|---|--:|--:|--:|"]
    for name, kind, ns, event in C.ISSUE_DESIGNS:
        for n in ns:
            reps = 2000 if kind != "weighted" else 1000
            t = C.issue_rate(name, kind, n, event, method="t", reps=reps)
            b = C.issue_rate(name, kind, n, event, method="bounded", reps=reps)
            issue.append(f"| {name} ({event}) | {n} | {t:.1%} | {b:.1%} |")
    power, unchanged = power_bar(1000)
    rates = grid(args.reps)
    errors = [r for r in rates if r.event != "power"]
    worst = {e: max((r for r in errors if r.event == e), key=lambda r: r.rate - r.limit)
             for e in ("false pass", "false fail")}
    text = "\n".join([
        "# Calibration of the gate (alpha 0.05)", "",
        f"Repetitions per design: {args.reps} (fewer at 1,000 continuous values); an error "
        "rate is within Monte Carlo error when at most alpha + 3 sqrt(alpha (1 - alpha) / reps)"
        " (**!** marks one that is not).", "",
        "## The t-test gate against the bounded test, on the designs that measured it", "",
        *issue, "",
        f"## Power bar: {power:.1%} of 1,000 gates pass `nDCG@10 change >= -0.01` on 1,000 "
        f"differences ~ N(0, 0.1); every difference 0: {'pass' if unchanged else 'NOT pass'}",
        "", "## Queries needed for the same margin (power 0.8, true mean difference 0)", "",
        *queries_needed_table(), "",
        "## Every design, bounded test", "",
        "Worst error rates: " + "; ".join(
            f"{e} {r.rate:.1%} ({r.kind}, {r.shape}, n={r.n}, {r.where}, limit {r.limit:.1%})"
            for e, r in worst.items()), "",
        C.summary(rates), "", C.markdown(rates), "",
        "## The descriptive statistics on the same shapes", "",
        *descriptive(max(args.reps * 5, 1000)), "",
        f"Run time: {time.perf_counter() - started:.0f} s.", ""])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
