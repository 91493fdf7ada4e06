"""Release gates: rules, their one-sided tests and the three outcomes (pure NumPy and pandas).

A rule passes when its one-sided test that it holds rejects the opposite at ``alpha`` (no
correction: every rule must pass, an intersection-union test); it fails when the test that it
is broken rejects after Holm's correction over every fail test of the gate; otherwise it is
inconclusive, with the queries needed to decide at the observed spread. On a measure with a
known range the tests are the bounded-mean bounds of :mod:`releval.stats.mean_bounds` (valid at
every number of queries); on a measure without one (a count), Student's t. See
docs/statistics.md ("Release gates")."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from releval.config.gate import check_mode
from releval.core import columns as S
from releval.core.measures.online import online_measure
from releval.core.measures.registry import parse_measure
from releval.errors import ConfigError, MeasureError
from releval.stats import kernel
from releval.stats.rule_tests import (  # noqa: F401  (BOUNDED, POWER, STUDENT: the gate's names too)
    BOUNDED,
    POWER,
    STUDENT,
    Test,
    bounded_test,
    nan_test,
    queries_needed,
    t_test,
    weighted_test,
)

PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"
#: The outcome of a change rule's row for a run partition that has no baseline.
NO_BASELINE = "no_baseline"
#: The process exit code of each decision (no baseline: nothing to gate).
EXIT = {PASS: 0, NO_BASELINE: 0, FAIL: 1, INCONCLUSIVE: 3}
#: The gate table's columns, in order (``relative_change``: a change rule's change as a
#: fraction of the baseline's mean, as in the comparison table).
RULE, OUTCOME, THRESHOLD, ESTIMATE = "rule", "outcome", "threshold", "estimate"
BOUND_LOW, BOUND_HIGH = "bound_low", "bound_high"
P_PASS, P_FAIL, P_FAIL_ADJUSTED = "p_pass", "p_fail", "p_fail_adjusted"
COLUMNS = (RULE, S.MEASURE_KEY, S.SLICE, S.SLICE_VALUE, ESTIMATE, BOUND_LOW, BOUND_HIGH,
           THRESHOLD, OUTCOME, P_PASS, P_FAIL, P_FAIL_ADJUSTED, S.NUM_QUERIES,
           S.QUERIES_NEEDED, S.RELATIVE_CHANGE)
#: Columns of the pandas table only (not of the stored gate table): the test each row used
#: (:data:`BOUNDED` or :data:`STUDENT`) and the queries of the rule's measure that only one
#: side scored (a change rule's; they are in no pair).
METHOD, NUM_UNPAIRED = "method", "num_unpaired"
EXTRA = (METHOD, NUM_UNPAIRED)
KEYWORDS = ("weighted", "change", "per")
#: The columns of the pairs :func:`gate_rows` reads (and the slice columns the rules name).
BASE, CAND = "baseline_value", "candidate_value"

FORM = ("[weighted] MEASURE [change] OP NUMBER[%] [per SLICE], OP one of >= > <= <, e.g. "
        "'nDCG@10 change >= -0.01', 'RR change >= -2%', 'Hit@10 >= 0.9', "
        "'weighted nDCG@10 change > 0 per segment'")
_RULE = re.compile(
    r"^\s*(?P<w1>weighted\s+)?(?P<measure>\S+)\s+(?P<change>change\s+)?(?P<op>>=|<=|>|<)\s*"
    r"(?P<number>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)(?P<pct>%)?"
    r"(?P<w2>\s+weighted)?(?:\s+per\s+(?P<slice>\S+))?(?P<w3>\s+weighted)?\s*$")


@dataclass(frozen=True)
class Rule:
    """One parsed rule: ``measure_key op threshold`` on the candidate's mean (a level), on
    candidate - baseline (``change``), or on candidate - (1 + threshold) x baseline against
    0 (``relative``, threshold a fraction); traffic-weighted, per slice value."""

    text: str
    measure_key: str
    op: str
    threshold: float
    change: bool = False
    relative: bool = False
    weighted: bool = False
    slice: str | None = None
    #: the measure's range per query (None: unknown, e.g. a count)
    bounds: tuple[float, float] | None = field(default=None, repr=False)

    @property
    def support(self) -> tuple[float, float] | None:
        """The range of one query's tested value: [lo, hi] for a level, [lo - hi, hi - lo]
        for a change, and c - (1 + t) b's range for a relative rule; None when unknown."""
        if self.bounds is None:
            return None
        lo, hi = self.bounds
        if self.relative:
            k = 1.0 + self.threshold
            ends = [c - k * b for c in (lo, hi) for b in (lo, hi)]
            return min(ends), max(ends)
        return (lo - hi, hi - lo) if self.change else (lo, hi)

    @property
    def greater(self) -> bool:
        """Whether the rule asks for a value above its threshold."""
        return self.op in (">=", ">")

    @property
    def tested_threshold(self) -> float:
        """The threshold of the tested quantity: 0 for a relative rule."""
        return 0.0 if self.relative else self.threshold

    def quantity(self, baseline: np.ndarray, candidate: np.ndarray) -> np.ndarray:
        """The per-query values the rule tests."""
        if self.relative:
            return candidate - (1.0 + self.threshold) * baseline
        return kernel.differences(baseline, candidate) if self.change else candidate

    def holds(self, estimate: float) -> bool:
        """The point-estimate reading of the rule."""
        t = self.tested_threshold
        return {">=": estimate >= t, ">": estimate > t, "<=": estimate <= t,
                "<": estimate < t}[self.op]


def parse_rule(text: str) -> Rule:
    """A rule from its one line.

    Example:
        >>> parse_rule("RR change >= -2% per segment")
        Rule(text='RR change >= -2% per segment', measure_key='RR', op='>=', threshold=-0.02, change=True, relative=True, weighted=False, slice='segment')

    Raises:
        ConfigError: naming the rule and the form expected.
    """
    m = _RULE.match(text or "")
    if not m or sum(bool(m.group(w)) for w in ("w1", "w2", "w3")) > 1:
        raise ConfigError(f"rule {text!r}: {_hint(text or '')}expected {FORM}")
    if m.group("pct") and not m.group("change"):
        raise ConfigError(f"rule {text!r}: a percent threshold is relative to the baseline, "
                          f"for a change rule ('MEASURE change OP NUMBER%'); expected {FORM}")
    number = float(m.group("number"))
    if m.group("pct"):
        number /= 100.0
    if not math.isfinite(number):
        raise ConfigError(f"rule {text!r}: the threshold must be finite; expected {FORM}")
    try:
        measure = parse_measure(m.group("measure"))
    except MeasureError as err:
        measure = online_measure(m.group("measure"))  # CTR@5, Abandonment, Preference, ...
        if measure is None:
            raise ConfigError(f"rule {text!r}: {err}; expected {FORM}") from None
    rule = Rule(text=text.strip(), measure_key=measure.key, op=m.group("op"), threshold=number,
                change=bool(m.group("change")), relative=bool(m.group("pct")),
                weighted=any(m.group(w) for w in ("w1", "w2", "w3")), slice=m.group("slice"),
                bounds=measure.spec.bounds)
    _check_threshold(rule)
    return rule


def _hint(text: str) -> str:
    """``did you mean 'change'? `` for a word close to a keyword of the rule form."""
    for word in text.split():
        close = difflib.get_close_matches(word.lower(), KEYWORDS, n=1, cutoff=0.7)
        if close and word.lower() not in KEYWORDS:
            return f"{word!r}: did you mean {close[0]!r}? "
    return ""


def _check_threshold(rule: Rule) -> None:
    """A threshold the rule's quantity can reach: a level in the measure's range, a change
    in [lo - hi, hi - lo], a relative change of at least -100%.

    Raises:
        ConfigError: naming the rule and the range.
    """
    if rule.relative and rule.threshold < -1.0:
        raise ConfigError(f"rule {rule.text!r}: a relative change is at least -100% (the "
                          f"candidate's mean is not negative); expected {FORM}")
    if rule.bounds is None or rule.relative:
        return
    lo, hi = rule.support
    if not lo <= rule.threshold <= hi:
        what = "a change" if rule.change else "a value"
        raise ConfigError(
            f"rule {rule.text!r}: {what} of {rule.measure_key} lies in [{lo:g}, {hi:g}]; "
            f"the threshold {rule.threshold:g} is outside it")


def rule_test(rule: Rule, values: pd.DataFrame, *, alpha: float, binary: bool = False) -> Test:
    """The rule's test over one group of queries (:data:`BASE`, :data:`CAND`, ``weight``):
    the bounded test on the rule's :attr:`Rule.support`, Student's t when the measure's range
    is unknown (``binary``: take it as [0, 1]). A weighted rule reads the queries with a
    positive weight."""
    needs = [BASE, CAND] if rule.change else [CAND]
    rows = values.dropna(subset=needs)
    if rule.weighted:
        rows = rows[rows[S.WEIGHT] > 0]  # unlisted (NaN) and zero-weight queries: not sampled
    x = rule.quantity(rows[BASE].to_numpy(np.float64), rows[CAND].to_numpy(np.float64))
    w = rows[S.WEIGHT].to_numpy(np.float64) if rule.weighted else None
    if rule.bounds is None and binary:
        rule = replace(rule, bounds=(0.0, 1.0))
    if rule.support is not None:
        return bounded_test(x, rule.tested_threshold, support=rule.support,
                            greater=rule.greater, alpha=alpha, weights=w)
    if len(x) == 0:
        return nan_test(0)
    if rule.weighted:
        return weighted_test(x, w, rule.tested_threshold, greater=rule.greater, alpha=alpha)
    return t_test(x, rule.tested_threshold, greater=rule.greater, alpha=alpha)


def _relative_change(rule: Rule, rows: pd.DataFrame) -> float:
    """A change rule's relative change, a fraction: (mean c - mean b) / mean b over the pairs
    (traffic-weighted for a weighted rule)."""
    if not rule.change:
        return float("nan")
    rows = rows.dropna(subset=[BASE, CAND])
    if rule.weighted:
        rows = rows[rows[S.WEIGHT] > 0]
    w = rows[S.WEIGHT].to_numpy(np.float64) if rule.weighted else np.ones(len(rows))
    if not w.sum() > 0:
        return float("nan")
    b = float(w @ rows[BASE].to_numpy(np.float64)) / w.sum()
    c = float(w @ rows[CAND].to_numpy(np.float64)) / w.sum()
    return (c - b) / b if b != 0 else float("nan")


def gate_rows(pairs: pd.DataFrame, rules: Sequence[Rule], *, alpha: float = 0.05,
              mode: str = "confidence", binary: Collection[str] = (),
              baseline: bool = True) -> pd.DataFrame:
    """The gate table: one row per rule and slice value, in :data:`COLUMNS`, then
    :data:`EXTRA` (the test's method and the rule's unpaired queries).

    A change rule reads the queries both sides scored, a level rule those the candidate
    scored; only those give a slice its values. A rule per slice with no such query has
    one row, inconclusive, with 0 queries.

    Args:
        pairs: one row per (measure_key, query_id): :data:`BASE` (NaN: the baseline did not
            score it), :data:`CAND` (NaN: the candidate did not), ``weight`` (NaN: none)
            and one string column per slice a rule names.
        binary: measure keys taken as bounded in [0, 1] when the registry knows no range.
        baseline: False when there is no baseline: a change rule's rows are
            :data:`NO_BASELINE`.

    Example:
        >>> pairs = pd.DataFrame({"measure_key": "RR", "query_id": ["a", "b", "c"],
        ...     BASE: [0.5, 0.5, 1.0], CAND: [1.0, 0.5, 1.0], "weight": np.nan})
        >>> row = gate_rows(pairs, [parse_rule("RR change >= -0.1")]).iloc[0]
        >>> round(float(row.estimate), 6), int(row.num_queries), row.outcome  # 0.5 / 3
        (0.166667, 3, 'inconclusive')
    """
    check_mode(mode, "mode")
    out = []
    for rule in rules:
        rows = pairs[pairs[S.MEASURE_KEY] == rule.measure_key]
        paired = rule.change and baseline  # without a baseline: the candidate's slice values
        scored = rows[BASE].notna() & rows[CAND].notna() if paired else rows[CAND].notna()
        unpaired = int((rows[BASE].notna() ^ rows[CAND].notna()).sum()) if rule.change else 0
        rows = rows[scored]
        if rule.slice is None:
            groups = [(None, rows)]
        else:
            groups = sorted(rows.groupby(rule.slice, sort=True, dropna=False),
                            key=lambda g: str(g[0])) or [(None, rows)]
        for value, group in groups:
            slice_cols = {S.SLICE: rule.slice, S.SLICE_VALUE: None if value is None else str(value)}
            if rule.change and not baseline:
                test = nan_test(0)
            else:
                test = rule_test(rule, group, alpha=alpha, binary=rule.measure_key in binary)
            out.append({RULE: rule.text, S.MEASURE_KEY: rule.measure_key, **slice_cols,
                        ESTIMATE: test.estimate, BOUND_LOW: test.bound_low,
                        BOUND_HIGH: test.bound_high, THRESHOLD: rule.tested_threshold,
                        P_PASS: test.p_pass, P_FAIL: test.p_fail, S.NUM_QUERIES: test.n,
                        S.RELATIVE_CHANGE: _relative_change(rule, group),
                        METHOD: test.method, NUM_UNPAIRED: unpaired,
                        "_test": test, "_rule": rule,
                        "_no_baseline": rule.change and not baseline})
    adjusted = kernel.holm(np.array([r[P_FAIL] for r in out], dtype=np.float64))
    family = int((~np.isnan(adjusted)).sum())
    for r, p in zip(out, adjusted, strict=True):
        r[P_FAIL_ADJUSTED] = float(p)
        r[OUTCOME], r[S.QUERIES_NEEDED] = _outcome(r, alpha=alpha, mode=mode, family=family)
    table = pd.DataFrame(out, columns=[*COLUMNS, *EXTRA])
    return table.astype({S.NUM_QUERIES: "int64", S.QUERIES_NEEDED: "Int64",
                         NUM_UNPAIRED: "int64"})


def _outcome(row: dict, *, alpha: float, mode: str, family: int) -> tuple[str, int | None]:
    """A row's outcome and, when inconclusive, the queries needed to decide it: at alpha
    on the pass side, at alpha / family (Holm's smallest step) on the fail side."""
    test, rule = row["_test"], row["_rule"]
    if row["_no_baseline"]:
        return NO_BASELINE, None
    if mode == "point":
        if math.isnan(test.estimate):
            return INCONCLUSIVE, None
        return (PASS if rule.holds(test.estimate) else FAIL), None
    if test.p_pass < alpha:
        return PASS, None
    if row[P_FAIL_ADJUSTED] <= alpha:
        return FAIL, None
    threshold = rule.tested_threshold
    passing_side = (test.estimate > threshold) == rule.greater
    level = alpha if passing_side else alpha / max(family, 1)
    return INCONCLUSIVE, queries_needed(test, threshold, alpha=level)


def rule_outcomes(table: pd.DataFrame) -> dict[str, str]:
    """Each rule's outcome from its rows: fail when a row fails, pass when every row passes
    (or has no baseline, with at least one pass), no_baseline when every row has none,
    inconclusive otherwise."""
    out = {}
    for rule, rows in table.groupby(RULE, sort=False):
        out[rule] = decide(rows[OUTCOME])
    return out


def decide(outcomes: Sequence[str] | pd.Series) -> str:
    """The decision over outcomes: fail when one fails, pass when every one passes (rows
    without a baseline aside), inconclusive otherwise; no_baseline when all lack one."""
    found = set(outcomes)
    if FAIL in found:
        return FAIL
    decided = found - {NO_BASELINE}
    if not decided:
        return NO_BASELINE if found else INCONCLUSIVE
    return PASS if decided == {PASS} else INCONCLUSIVE


def exit_code(decision: str, on_inconclusive: str | None = None) -> int:
    """The process exit code of a decision (:data:`EXIT`), an inconclusive one counted as
    ``on_inconclusive`` (``pass`` or ``fail``) when given.

    Example:
        >>> exit_code(FAIL), exit_code(INCONCLUSIVE), exit_code(INCONCLUSIVE, PASS)
        (1, 3, 0)
    """
    if decision == INCONCLUSIVE and on_inconclusive is not None:
        return EXIT[on_inconclusive]
    return EXIT[decision]


def plain(value: object) -> object:
    """A cell as a Python value: NaN, NA and None become None, NumPy scalars Python ones."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    return value.item() if hasattr(value, "item") else value


def records(table: pd.DataFrame) -> list[tuple]:
    """The rows of :func:`gate_rows` as tuples in :data:`COLUMNS`' order (undefined: None)."""
    return [tuple(plain(v) for v in r) for r in table[list(COLUMNS)].itertuples(index=False)]
