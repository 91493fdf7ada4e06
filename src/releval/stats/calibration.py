"""Monte Carlo calibration of the gate's decisions and of the descriptive statistics (pure NumPy).

A design is a rule kind (change, relative, level, weighted, per slice), a shape of the
per-query values (symmetric, skewed with rare severe losses, heavily tied, 0/1), a number of
queries and where the true mean sits: on the rule's threshold (``margin``), just past it on
the failing side or the passing side (``past``), or clearly on the passing side (``power``).
:func:`gate_rates` measures how often the gate passes and fails; :func:`interval_coverage`
and :func:`paired_size` measure the aggregate's intervals and compare's tests on the same
shapes. ``python -m bench.calibration`` runs the full grid. See docs/statistics.md."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np
from scipy import special

from releval.stats import gate as G
from releval.stats import kernel

ALPHA = 0.05
NS = (2, 3, 5, 10, 20, 50, 100, 200, 1000)
SHAPES = ("symmetric", "skewed", "tied", "binary")
KINDS = ("change", "relative", "level", "weighted", "slice")
#: how far past the threshold a ``past`` design's true mean is, and a ``power`` design's
PAST, EFFECT = 0.02, 0.05
#: the queries of one slice value in a ``slice`` design
SLICE_SIZE = 5
#: the gate's two methods: the bounded test, and the one-sided t-test it replaces
METHODS = ("bounded", "t")


def rule_for(kind: str, shape: str) -> G.Rule:
    """The rule a design gates (a level rule on 0/1 values reads Hit@10)."""
    text = {"change": "nDCG@10 change >= -0.01", "relative": "nDCG@10 change >= -2%",
            "level": "Hit@10 >= 0.9" if shape == "binary" else "nDCG@10 >= 0.5",
            "weighted": "weighted nDCG@10 change >= -0.01",
            "slice": "nDCG@10 change >= -0.01 per segment"}[kind]
    return G.parse_rule(text)


def _shaped(shape: str, mean: float, n: int, rng: np.random.Generator, *, binary: str
            ) -> np.ndarray:
    """n values of expected value ``mean``: symmetric (mean + 0.1 x a normal cut at 3 sd),
    skewed (92% at a, 8% at a - 0.53), tied (70% at a, 30% at a - 0.5) or 0/1 (``binary``:
    ``"share"`` a Bernoulli(mean), ``"sign"`` -1/0/+1 with 30% nonzero)."""
    if shape == "symmetric":
        return mean + 0.1 * np.clip(rng.standard_normal(n), -3.0, 3.0)
    if shape == "skewed":
        return np.where(rng.random(n) < 0.08, mean + 0.0424 - 0.53, mean + 0.0424)
    if shape == "tied":
        return np.where(rng.random(n) < 0.3, mean + 0.15 - 0.5, mean + 0.15)
    u = rng.random(n)
    if binary == "share":
        return (u < mean).astype(np.float64)
    up = (0.3 + mean) / 2.0
    return np.where(u < up, 1.0, np.where(u < 0.3, -1.0, 0.0))


@dataclass(frozen=True)
class Sample:
    """One simulated gate input: the tested per-query values, weights and slice labels."""

    x: np.ndarray
    weights: np.ndarray | None = None
    groups: np.ndarray | None = None


def sample(kind: str, shape: str, n: int, mean: float, rng: np.random.Generator) -> Sample:
    """A design's per-query tested values whose true (traffic-weighted) mean is ``mean``."""
    if kind == "relative":  # c = b r, E[r] = 0.98 + mean / E[b]: E[c - 0.98 b] = mean
        if shape == "binary":
            b = (rng.random(n) < 0.5).astype(np.float64)
            c = b * (rng.random(n) < 0.98 + mean / 0.5)
        else:
            b = rng.uniform(0.1, 0.7, n)
            r = _shaped(shape, 0.98 + mean / 0.4, n, rng, binary="sign")
            c = b * r
        return Sample(c - 0.98 * b)
    x = _shaped(shape, mean, n, rng, binary="share" if kind == "level" else "sign")
    if kind == "weighted":
        heavy = min(5, n)
        w = np.full(n, 0.05 / max(n - heavy, 1))
        w[:heavy] = (0.95 if n > heavy else 1.0) / heavy
        w[heavy:][rng.random(n - heavy) < 0.2] = 0.0  # zero weights: in no sample
        return Sample(x, weights=w)
    if kind == "slice":
        return Sample(x, groups=np.arange(n) // SLICE_SIZE)
    return Sample(x)


def _wilson_test(x: np.ndarray, threshold: float, *, greater: bool, alpha: float) -> G.Test:
    """The score test of a share against ``threshold`` (the t-test gate's 0/1 level rule)."""
    n, share = len(x), float(x.mean())
    low, high = kernel.wilson_interval(share, n, 1.0 - 2.0 * alpha)
    z = (share - threshold) / math.sqrt(threshold * (1.0 - threshold) / n)
    p_above, p_below = float(special.ndtr(-z)), float(special.ndtr(z))
    p_pass, p_fail = (p_above, p_below) if greater else (p_below, p_above)
    return G.Test(n, share, low, high, p_pass, p_fail, float("nan"))


def one_test(rule: G.Rule, s: Sample, method: str, *, alpha: float = ALPHA) -> G.Test:
    """The rule's test of one group, by the gate's bounded method or by the t-test gate
    (Student's t, Wilson's score test on 0/1 level values, the linearized weighted t; no
    spread read as certainty, the mean's side deciding)."""
    x, w = s.x, s.weights
    if w is not None:
        x, w = x[w > 0], w[w > 0]
    if method == "bounded":
        return G.bounded_test(x, rule.tested_threshold, support=rule.support,
                              greater=rule.greater, alpha=alpha, weights=w)
    if not rule.change and w is None and np.isin(x, (0.0, 1.0)).all():
        return _wilson_test(x, rule.threshold, greater=rule.greater, alpha=alpha)
    if w is not None:
        test = G.weighted_test(x, w, rule.tested_threshold, greater=rule.greater, alpha=alpha)
    else:
        test = G.t_test(x, rule.tested_threshold, greater=rule.greater, alpha=alpha)
    if len(x) >= 2 and not test.spread > kernel.TIE_TOLERANCE:
        above = test.estimate > rule.tested_threshold
        below = test.estimate < rule.tested_threshold
        p_pass, p_fail = (float(not above), float(not below)) if rule.greater else (
            float(not below), float(not above))
        test = replace(test, p_pass=p_pass, p_fail=p_fail)
    return test


def outcomes(rule: G.Rule, s: Sample, method: str, *, alpha: float = ALPHA) -> list[str]:
    """Each row's outcome, as :func:`releval.stats.gate.gate_rows` decides it (Holm over
    the rows of a rule per slice)."""
    if s.groups is None:
        tests = [one_test(rule, s, method, alpha=alpha)]
    else:
        tests = [one_test(rule, Sample(s.x[s.groups == g]), method, alpha=alpha)
                 for g in np.unique(s.groups)]
    adjusted = kernel.holm(np.array([t.p_fail for t in tests]))
    return [G.PASS if t.p_pass < alpha else G.FAIL if p <= alpha else G.INCONCLUSIVE
            for t, p in zip(tests, adjusted, strict=True)]


@dataclass(frozen=True)
class Rate:
    """One measured rate: how often ``event`` happened over ``reps`` simulated gates."""

    kind: str
    shape: str
    n: int
    where: str
    event: str
    method: str
    rate: float
    reps: int

    @property
    def limit(self) -> float:
        """The most an error rate may measure: alpha + 3 Monte Carlo standard errors."""
        return ALPHA + 3.0 * math.sqrt(ALPHA * (1.0 - ALPHA) / self.reps)

    @property
    def ok(self) -> bool:
        """An error rate within its limit (power rates are reported, not bounded)."""
        return self.event == "power" or self.rate <= self.limit


#: (where, the true mean's offset from the threshold on the rule's side, the event counted)
CASES = (("margin", 0.0, "false pass"), ("past", -PAST, "false pass"),
         ("margin", 0.0, "false fail"), ("past", PAST, "false fail"), ("power", EFFECT, "power"))


def gate_rates(kind: str, shape: str, n: int, *, reps: int, method: str = "bounded",
               seed: int = 0, cases: Iterable[tuple[str, float, str]] = CASES) -> list[Rate]:
    """The false-pass, false-fail and pass rates of one design.

    A false pass is a passing row whose true mean breaks the rule (a slice design counts
    rows); a false fail is a gate with a failing row whose true mean keeps it.

    Example:
        >>> [round(r.rate, 2) for r in gate_rates("change", "tied", 5, reps=200)][:2]
        [0.0, 0.0]
    """
    rule = rule_for(kind, shape)
    out = []
    for where, offset, event in cases:
        rng = np.random.default_rng([seed, n, KINDS.index(kind), SHAPES.index(shape),
                                     int(1000 * offset) + 1000])
        mean = rule.tested_threshold + (offset if rule.greater else -offset)
        hits = rows = 0
        for _ in range(reps):
            found = outcomes(rule, sample(kind, shape, n, mean, rng), method)
            if event == "false pass":
                hits, rows = hits + found.count(G.PASS), rows + len(found)
            elif event == "false fail":
                hits, rows = hits + (G.FAIL in found), rows + 1
            else:
                hits, rows = hits + (G.decide(found) == G.PASS), rows + 1
        out.append(Rate(kind, shape, n, where, event, method, hits / rows, reps))
    return out


def interval_coverage(shape: str, n: int, *, reps: int, level: float = 0.95, seed: int = 0
                      ) -> float:
    """How often the aggregate's interval of a macro mean (Student's t, Wilson's on 0/1
    values) holds the true mean, over per-query values in [0, 1] of the given shape."""
    rng = np.random.default_rng([seed, n, SHAPES.index(shape)])
    mean = 0.9 if shape == "binary" else 0.5
    held = 0
    for _ in range(reps):
        x = _shaped(shape, mean, n, rng, binary="share")
        if shape == "binary" and np.isin(x, (0.0, 1.0)).all():
            low, high = kernel.wilson_interval(float(x.mean()), n, level)
        else:
            half = float(kernel.t_half_width(x.std(ddof=1), n, level))
            low, high = x.mean() - half, x.mean() + half
        held += bool(low <= mean <= high)  # an undefined interval (no spread) holds nothing
    return held / reps


def paired_size(shape: str, n: int, *, reps: int, test: str = "t", alpha: float = ALPHA,
                seed: int = 0, permutations: int = 199) -> float:
    """How often compare's two-sided paired test (``"t"``, or ``"randomization"``) rejects
    a mean difference of 0 at ``alpha``, over differences of the given shape."""
    rng = np.random.default_rng([seed, n, SHAPES.index(shape), 7])
    rejected = 0
    keys = np.arange(n, dtype=np.int64)
    for _ in range(reps):
        d = _shaped(shape, 0.0, n, rng, binary="sign")
        if test == "t":
            p = kernel.from_moments(n, baseline_mean=0.5, candidate_mean=0.5 + d.mean(),
                                    mean_diff=float(d.mean()), sd=float(d.std(ddof=1)),
                                    wins=0, ties=0, losses=0, level=1 - alpha).t_p_value
        else:
            p = kernel.randomization_p(d, keys + int(rng.integers(1 << 40)),
                                       permutations=permutations)
        rejected += bool(p <= alpha)
    return rejected / reps


def markdown(rates: list[Rate]) -> str:
    """A table of rates, one row per design, one column per (event, where)."""
    heads = [(e, w) for w, _, e in CASES]
    lines = ["| kind | shape | n | method | " + " | ".join(f"{e} ({w})" for e, w in heads)
             + " |", "|---|---|--:|---|" + "--:|" * len(heads)]
    keyed: dict[tuple, dict] = {}
    for r in rates:
        keyed.setdefault((r.kind, r.shape, r.n, r.method), {})[(r.event, r.where)] = r
    for (kind, shape, n, method), found in keyed.items():
        cells = []
        for h in heads:
            r = found.get(h)
            cells.append("" if r is None else f"{r.rate:.1%}" + ("" if r.ok else " **!**"))
        lines.append(f"| {kind} | {shape} | {n} | {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


#: The designs of the table that measured the t-test gate: (name, rule kind, the tested
#: values' sampler, the numbers of queries, the event counted). Their true means break the
#: rule (a pass is false), or keep it exactly (a fail is false).
ISSUE_DESIGNS = (
    ("most queries gain 0.03, 8% lose 0.5", "change", (5, 10, 20, 40, 100), "false pass"),
    ("70% unchanged, 30% lose 0.5", "change", (3, 5), "false pass"),
    ("traffic-weighted, 5 queries carry 95% of the traffic, 10% lose 0.5", "weighted",
     (50, 200), "false pass"),
    ("level rule Hit@10 >= 0.9 at a true rate of 0.9 (unadjusted)", "level", (2, 5),
     "false fail"),
)


def issue_sample(name: str, n: int, rng: np.random.Generator) -> Sample:
    """One draw of an :data:`ISSUE_DESIGNS` design."""
    if name.startswith("most"):
        return Sample(np.where(rng.random(n) < 0.08, -0.5, 0.03))
    if name.startswith("70%"):
        return Sample(np.where(rng.random(n) < 0.3, -0.5, 0.0))
    if name.startswith("traffic"):
        x = np.where(rng.random(n) < 0.1, -0.5, 0.03)
        w = np.full(n, 0.05 / (n - 5))
        w[:5] = 0.19
        return Sample(x, weights=w)
    return Sample((rng.random(n) < 0.9).astype(np.float64))


def issue_rate(name: str, kind: str, n: int, event: str, *, method: str, reps: int,
               seed: int = 0) -> float:
    """How often the gate passes (``false pass``) or fails (``false fail``, unadjusted) one
    :data:`ISSUE_DESIGNS` design."""
    rule = {"change": G.parse_rule("nDCG@10 change >= -0.01"),
            "weighted": G.parse_rule("weighted nDCG@10 change >= -0.01"),
            "level": G.parse_rule("Hit@10 >= 0.9")}[kind]
    rng = np.random.default_rng([seed, n, len(name)])
    hits = 0
    for _ in range(reps):
        found = outcomes(rule, issue_sample(name, n, rng), method)[0]
        hits += found == (G.PASS if event == "false pass" else G.FAIL)
    return hits / reps


def summary(rates: list[Rate]) -> str:
    """One row per rule kind and shape: the largest false-pass and false-fail rates over
    every n and position of the true mean (with where), and the power at 100 and 1,000
    queries (a slice design: 50 and 200)."""
    lines = ["| kind | shape | largest false pass | largest false fail | power, n = 100 / 1000 "
             "(slice: 50 / 200) |", "|---|---|--:|--:|--:|"]
    keys = dict.fromkeys((r.kind, r.shape) for r in rates)
    for kind, shape in keys:
        mine = [r for r in rates if (r.kind, r.shape) == (kind, shape)]
        cells = []
        for event in ("false pass", "false fail"):
            worst = max((r for r in mine if r.event == event), key=lambda r: r.rate)
            cells.append(f"{worst.rate:.1%} (n={worst.n}, {worst.where})"
                         + ("" if worst.ok else " **!**"))
        ns = (50, 200) if kind == "slice" else (100, 1000)
        power = {r.n: r.rate for r in mine if r.event == "power"}
        cells.append(" / ".join(f"{power[n]:.0%}" if n in power else "-" for n in ns))
        lines.append(f"| {kind} | {shape} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parse_markdown(text: str, reps: int) -> list[Rate]:
    """The rates of a :func:`markdown` table (bench/results/calibration.md), for
    :func:`summary`, each counted over ``reps`` repetitions (the table does not say)."""
    heads = [(e, w) for w, _, e in CASES]
    out = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 + len(heads) or cells[0] not in KINDS:
            continue
        kind, shape, n, method = cells[0], cells[1], int(cells[2]), cells[3]
        for (event, where), cell in zip(heads, cells[4:], strict=True):
            if cell:
                rate = float(cell.split("%")[0]) / 100.0
                out.append(Rate(kind, shape, n, where, event, method, rate, reps))
    return out
