"""The metric registry: every measure is declared once, as a :class:`MetricSpec`.

A measure string (``nDCG@10``, ``P(rel=2)@5``, ``AP[judged]``, ``AP[ties]``) parses to a :class:`Measure`;
family modules call :func:`register` at import time.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Literal

from pyspark.sql import Column

from releval.core.measures.trec_sets import MEASURE_SETS
from releval.errors import MeasureError

if TYPE_CHECKING:
    from releval.core.measures.stats import Stats

CutoffRule = Literal["required", "optional", "none"]
Averaging = Literal["macro", "micro", "sum", "geometric"]
#: What a micro average divides the pooled relevant-retrieved count by.
MicroDenominator = Literal["cutoff_x_queries", "num_rel"]
#: The range of a measure whose every per-query value is a share: 0 to 1.
UNIT = (0.0, 1.0)


@dataclass(frozen=True)
class Measure:
    """One measure to compute: a registered spec with its parameters."""

    name: str
    cutoff: int | None
    rel_level: int
    rel_explicit: bool = False
    #: Unjudged documents removed before cutting at k (trec_eval ``-J``); key suffix ``[judged]``.
    judged_only: bool = False
    #: Every unjudged retrieved document counted relevant (an upper bound); suffix ``[best]``.
    best: bool = False
    #: The spec's parameters (``rbp``'s ``p``), every declared one, in the spec's order.
    params: tuple[tuple[str, float], ...] = ()
    #: The expected value over every ordering of tied scores; key suffix ``[ties]``.
    tie_aware: bool = False
    #: Cut at each query's window k_q (``@window``, the run's window column); cutoff None.
    window: bool = False

    @property
    def cut(self) -> int | str | None:
        """The cutoff a statistic is asked for: k, :data:`WINDOW` or None (all ranks)."""
        return WINDOW if self.window else self.cutoff

    def param(self, name: str) -> float:
        """The value of one of the spec's parameters."""
        return dict(self.params)[name]

    @property
    def spec(self) -> MetricSpec:
        return REGISTRY[self.name]

    @property
    def key(self) -> str:
        """Canonical form, as written in the output (``P@10``, ``AP(rel=2)``, ``P@5[judged]``)."""
        args = [f"rel={self.rel_level}"] if self.rel_explicit else []
        args += [f"{k}={_number(v)}" for k, v in self.params]
        rel = f"({', '.join(args)})" if args else ""
        cut = f"@{self.cut}" if self.cut is not None else ""
        judged = JUDGED_SUFFIX if self.judged_only else ""
        best = BEST_SUFFIX if self.best else ""
        ties = TIES_SUFFIX if self.tie_aware else ""
        return f"{self.name}{rel}{cut}{judged}{best}{ties}"

    @property
    def trec_name(self) -> str | None:
        """trec_eval's name for this measure, or None (judged-only: ``-J`` is for a whole run;
        best, tie-aware and window: not trec_eval measures)."""
        if (self.judged_only or self.best or self.tie_aware or self.window
                or not self.spec.trec_name):
            return None
        return self.spec.trec_name(self)

    @property
    def averaging(self) -> tuple[Averaging, ...]:
        """The spec's averagings; a tie-aware measure's mean only (its counts are not expected)."""
        return ("macro",) if self.tie_aware else self.spec.averaging


@dataclass(frozen=True)
class TieVariant:
    """A measure's ``[ties]`` form: its expected value over every ordering of tied scores,
    and whether a query's value depends on that order (a 1.0/0.0 column)."""

    value: Callable[[Measure, Stats], Column]
    depends: Callable[[Measure, Stats], Column]


@dataclass(frozen=True)
class MetricSpec:
    """How one measure family is named and computed.

    Attributes:
        aliases: other accepted names (all names match case-insensitively).
        value: builds the per-query value from the statistics of a :class:`Stats`.
        num_rel_ret: the count that explains the value (relevant retrieved within the cutoff).
        micro: the pooled num_rel_ret's denominator: k * queries (P@k) or summed num_rel (R@k).
        description: the formula, shown by ``releval measures``.
        judged_variant: whether a ``[judged]`` variant makes sense (not for Judged@k).
        best_variant: whether ``[best]`` (every unjudged document relevant) bounds the value
            from above: only where judging a document relevant cannot lower it.
        params: the parameters ``NAME(p=0.9)`` takes, with their defaults (None: required),
            in key order.
        trec_all_only: trec_eval prints only the ``all`` line (a geometric mean).
        bounds: the (lowest, highest) value a query can get, e.g. :data:`UNIT`; None for
            counts and unbounded measures. A macro interval stays inside it
            (:mod:`releval.frames.aggregate`).
        ties: the ``[ties]`` form (:mod:`releval.core.measures.tie_aware`); None: none.
    """

    name: str
    aliases: tuple[str, ...]
    cutoff: CutoffRule
    value: Callable[[Measure, Stats], Column]
    num_rel_ret: Callable[[Measure, Stats], Column]
    averaging: tuple[Averaging, ...] = ("macro",)
    micro: MicroDenominator | None = None
    trec_name: Callable[[Measure], str | None] | None = None
    description: str = ""
    judged_variant: bool = True
    best_variant: bool = False
    params: tuple[tuple[str, float | None], ...] = ()
    trec_all_only: bool = False
    bounds: tuple[float, float] | None = None
    ties: TieVariant | None = None


REGISTRY: dict[str, MetricSpec] = {}
_BY_LOWER_NAME: dict[str, str] = {}


def register(spec: MetricSpec) -> MetricSpec:
    """Add a spec to the registry under its name and aliases."""
    for alias in (spec.name, *spec.aliases):
        if alias.lower() in _BY_LOWER_NAME:
            raise ValueError(f"measure name {alias!r} is registered twice")
        _BY_LOWER_NAME[alias.lower()] = spec.name
    REGISTRY[spec.name] = spec
    return spec


_MEASURE_RE = re.compile(
    r"^(?P<name>[A-Za-z_][A-Za-z_0-9]*?)"
    r"(?:\((?P<args>[^)]*)\))?"
    r"(?:@(?P<cutoff>[^\[]*))?"
    r"(?P<flags>(?:\[[^\]]*\])*)$"
)

#: The measure-string suffix of a judged-only (condensed-list) measure.
JUDGED_SUFFIX = "[judged]"
#: The measure-string suffix of the value with every unjudged retrieved document relevant.
BEST_SUFFIX = "[best]"
#: The measure-string suffix of a tie-aware measure (after ``[judged]`` when both).
TIES_SUFFIX = "[ties]"
#: The cutoff of ``M@window``: each query's k_q, from the run's window column.
WINDOW = "window"


_TREC_RE = re.compile(r"^(?P<name>[A-Za-z_]+?)_(?P<cutoff>\d+)$")
_TREC_PARAM_RE = re.compile(r"^(?P<name>[A-Za-z_]+?)_(?P<value>\d+\.\d+)$")
#: trec_eval names that are not NAME, NAME_k or NAME_x.xx of a registered name or alias.
TREC_ONLY_NAMES = {"11pt_avg": "iprec_avg"}


def _number(value: float) -> str:
    """A parameter as written in a key: ``0.9``, ``1``, ``0.00001`` (plain digits, no
    trailing zeros, no exponent)."""
    return format(Decimal(repr(float(value))).normalize(), "f")


def _parse_args(text: str, raw: str, spec: MetricSpec) -> tuple[int | None, dict[str, float]]:
    """``rel=2, p=0.8`` -> (2, {"p": 0.8}); each name once, ``rel`` an integer."""
    rel: int | None = None
    values: dict[str, float] = {}
    declared = dict(spec.params)
    for part in (p.strip() for p in raw.split(",")):
        name, eq, value = (x.strip() for x in part.partition("="))
        if not eq or not name:
            raise MeasureError(f"measure {text!r}: expected NAME=VALUE in (...), got {part!r}")
        if name == "rel":
            if not re.fullmatch(r"-?\d+", value):
                raise MeasureError(f"measure {text!r}: rel must be an integer, got {value!r}")
            rel = int(value)
        elif name in declared:
            try:
                values[name] = float(value)
            except ValueError:
                raise MeasureError(
                    f"measure {text!r}: {name} must be a number, got {value!r}"
                ) from None
        else:
            valid = ", ".join(["rel", *declared])
            raise MeasureError(
                f"measure {text!r}: {spec.name} has no parameter {name!r} (it takes: {valid})"
            )
    return rel, values


def _all_names() -> list[str]:
    return sorted({*REGISTRY, *(a for s in REGISTRY.values() for a in s.aliases)})


def parse_measure(text: str, *, relevance_level: int = 1, judged_only: bool = False) -> Measure:
    """Parse ``NAME[(rel=N)][@k|@window][[judged] or [best]][[ties]]`` into a :class:`Measure`.

    trec_eval's names (``P_5``, ``ndcg_cut_10``, ``map``, ``recip_rank``...) are accepted too.

    Args:
        relevance_level: the default threshold of binary relevance.
        judged_only: the default judged-only flag, ignored by measures without a judged
            variant; ``[judged]`` in the text sets it for one measure.

    Raises:
        MeasureError: unknown name (with the closest valid names), bad cutoff or level.
    """
    text = TREC_ONLY_NAMES.get(text.strip(), text)
    trec_style = _TREC_RE.match(text.strip())
    if trec_style and trec_style["name"].lower() in _BY_LOWER_NAME:
        text = f"{trec_style['name']}@{trec_style['cutoff']}"
    trec_param = _TREC_PARAM_RE.match(text.strip())
    if trec_param and trec_param["name"].lower() in _BY_LOWER_NAME:
        spec = REGISTRY[_BY_LOWER_NAME[trec_param["name"].lower()]]
        if spec.params:
            text = f"{trec_param['name']}({spec.params[0][0]}={trec_param['value']})"
    match = _MEASURE_RE.match(text.strip())
    if not match:
        raise MeasureError(
            f"cannot parse measure {text!r}; expected NAME, NAME@k, NAME(rel=N)@k "
            f"or NAME(rel=N)@k{JUDGED_SUFFIX}{TIES_SUFFIX}"
        )
    raw_name = match["name"]
    name = _BY_LOWER_NAME.get(raw_name.lower())
    if name is None:
        close = difflib.get_close_matches(raw_name, _all_names(), n=3, cutoff=0.4)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise MeasureError(
            f"unknown measure {raw_name!r} in {text!r}{hint} Valid measures: {_all_names()}"
        )
    spec = REGISTRY[name]
    cutoff: int | None = None
    window = match["cutoff"] is not None and match["cutoff"].strip().lower() == WINDOW
    if window:
        if spec.cutoff == "none":
            raise MeasureError(f"measure {text!r}: {name} takes no cutoff, so no @{WINDOW}")
    elif match["cutoff"] is not None:
        raw_cut = match["cutoff"].strip()
        if not raw_cut.isdigit() or int(raw_cut) <= 0:
            raise MeasureError(f"measure {text!r}: the cutoff must be a positive integer or "
                               f"{WINDOW!r}, got {raw_cut!r}")
        cutoff = int(raw_cut)
    if spec.cutoff == "required" and cutoff is None and not window:
        raise MeasureError(f"measure {text!r}: {name} needs a cutoff, for example {name}@10")
    if spec.cutoff == "none" and cutoff is not None:
        raise MeasureError(f"measure {text!r}: {name} takes no cutoff")
    rel_level = relevance_level
    rel_explicit = False
    values: dict[str, float] = {}
    if match["args"] is not None:
        rel, values = _parse_args(text, match["args"], spec)
        if rel is not None:
            rel_level, rel_explicit = rel, True
    missing = [k for k, default in spec.params if default is None and k not in values]
    if missing:
        raise MeasureError(
            f"measure {text!r}: {name} needs {missing[0]}, for example {name}({missing[0]}=0.5)"
        )
    flags = [f"[{f.strip().lower()}]" for f in re.findall(r"\[([^\]]*)\]", match["flags"])]
    for flag in flags:
        if flag not in (JUDGED_SUFFIX, BEST_SUFFIX, TIES_SUFFIX) or flags.count(flag) > 1:
            what = "repeated" if flags.count(flag) > 1 else "unknown"
            raise MeasureError(
                f"measure {text!r}: {what} suffix {flag}; the suffixes are {JUDGED_SUFFIX} "
                f"(judged-only, condensed-list evaluation), {BEST_SUFFIX} (every unjudged "
                f"retrieved document counted relevant) and {TIES_SUFFIX} (expected value over "
                "every ordering of tied scores), each at most once"
            )
    best = BEST_SUFFIX in flags
    if best and not spec.best_variant:
        with_best = sorted(n for n, s in REGISTRY.items() if s.best_variant)
        raise MeasureError(
            f"measure {text!r}: {name} has no {BEST_SUFFIX} bound (judging a document "
            f"relevant can lower it, or it divides by the relevant documents); {BEST_SUFFIX} "
            f"is for {', '.join(with_best)}; see docs/incomplete-judgments.md"
        )
    if best and (JUDGED_SUFFIX in flags or judged_only):
        raise MeasureError(
            f"measure {text!r}: {BEST_SUFFIX} counts unjudged documents relevant and a "
            f"judged-only measure ({JUDGED_SUFFIX}, --judged-only) has none; ask for "
            f"{name}{BEST_SUFFIX} without it, or for the judged-only value alone"
        )
    tie_aware = TIES_SUFFIX in flags
    if tie_aware and spec.ties is None:
        with_ties = sorted(n for n, s in REGISTRY.items() if s.ties is not None)
        raise MeasureError(
            f"measure {text!r}: {name} has no tie-aware variant; {TIES_SUFFIX} is for "
            f"{', '.join(with_ties)}"
        )
    if tie_aware and window and (JUDGED_SUFFIX in flags or (judged_only and spec.judged_variant)):
        raise MeasureError(
            f"measure {text!r}: [judged][ties] at the window do not combine (the window cuts "
            "the ranking before the judged-only list is formed); ask for the judged-only or "
            "the tie-aware form on its own"
        )
    if best and tie_aware:
        raise MeasureError(
            f"measure {text!r}: {BEST_SUFFIX} and {TIES_SUFFIX} do not combine; ask for each "
            "on its own"
        )
    judged = (judged_only and spec.judged_variant) or JUDGED_SUFFIX in flags
    if JUDGED_SUFFIX in flags and not spec.judged_variant:
        raise MeasureError(
            f"measure {text!r}: {name} has no judged-only variant "
            "(it would count judged documents among judged documents)"
        )
    return Measure(
        name=name,
        cutoff=cutoff,
        rel_level=rel_level,
        rel_explicit=rel_explicit,
        judged_only=judged,
        best=best,
        params=tuple((k, float(values.get(k, default or 0.0))) for k, default in spec.params),
        tie_aware=tie_aware,
        window=window,
    )


def check_window(measures: Sequence[Measure], window: str | bool | None) -> None:
    """MeasureError when a measure is cut at the window and no window column is configured."""
    cut = [m.key for m in measures if m.window]
    if cut and not window:
        raise MeasureError(
            f"measure(s) {cut} need the run's window: name the run column holding each "
            "query's k_q (run.window in the config, --window on the command line, window= "
            "in releval.evaluate)"
        )


def parse_measures(
    texts: Sequence[str], *, relevance_level: int = 1, judged_only: bool = False
) -> list[Measure]:
    """Parse measure strings (comma-separated allowed), dropping repeats; ``judged_only``: -J.

    A set name stands for its measures: ``trec_eval`` (trec_eval's default set) or
    ``all_trec`` (:mod:`releval.core.measures.trec_sets`).
    """
    measures: list[Measure] = []
    for text in texts:
        parts = [p.strip() for p in re.split(r",(?![^()]*\))", text)]
        for part in (n for p in parts for n in MEASURE_SETS.get(p.lower(), (p,))):
            if part:
                measure = parse_measure(
                    part, relevance_level=relevance_level, judged_only=judged_only
                )
                if measure not in measures:
                    measures.append(measure)
    if not measures:
        raise MeasureError("no measures given")
    return measures
