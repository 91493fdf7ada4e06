"""The metric registry: every measure is declared once, as a :class:`MetricSpec`.

A measure string (``nDCG@10``, ``P(rel=2)@5``, ``AP[judged]``) parses to a :class:`Measure`;
family modules call :func:`register` at import time.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pyspark.sql import Column

from releval.errors import MeasureError

if TYPE_CHECKING:
    from releval.core.measures.stats import Stats

CutoffRule = Literal["required", "optional", "none"]
Averaging = Literal["macro", "micro", "sum"]
#: What a micro average divides the pooled relevant-retrieved count by.
MicroDenominator = Literal["cutoff_x_queries", "num_rel"]


@dataclass(frozen=True)
class Measure:
    """One measure to compute: a registered spec with its parameters."""

    name: str
    cutoff: int | None
    rel_level: int
    rel_explicit: bool = False
    #: Unjudged documents removed before cutting at k (trec_eval ``-J``); key suffix ``[judged]``.
    judged_only: bool = False

    @property
    def spec(self) -> MetricSpec:
        return REGISTRY[self.name]

    @property
    def key(self) -> str:
        """Canonical form, as written in the output (``P@10``, ``AP(rel=2)``, ``P@5[judged]``)."""
        rel = f"(rel={self.rel_level})" if self.rel_explicit else ""
        cut = f"@{self.cutoff}" if self.cutoff is not None else ""
        judged = JUDGED_SUFFIX if self.judged_only else ""
        return f"{self.name}{rel}{cut}{judged}"

    @property
    def trec_name(self) -> str | None:
        """trec_eval's name for this measure, or None (judged-only: ``-J`` is for a whole run)."""
        if self.judged_only or not self.spec.trec_name:
            return None
        return self.spec.trec_name(self)


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
    r"(?:\(\s*rel\s*=\s*(?P<rel>[^)]*)\))?"
    r"(?:@(?P<cutoff>[^\[]*))?"
    r"(?:\[(?P<flag>[^\]]*)\])?$"
)

#: The measure-string suffix of a judged-only (condensed-list) measure.
JUDGED_SUFFIX = "[judged]"


_TREC_RE = re.compile(r"^(?P<name>[A-Za-z_]+?)_(?P<cutoff>\d+)$")


def _all_names() -> list[str]:
    return sorted({*REGISTRY, *(a for s in REGISTRY.values() for a in s.aliases)})


def parse_measure(text: str, *, relevance_level: int = 1, judged_only: bool = False) -> Measure:
    """Parse ``NAME[(rel=N)][@k][[judged]]`` into a :class:`Measure`.

    trec_eval's names (``P_5``, ``ndcg_cut_10``, ``map``, ``recip_rank``...) are accepted too.

    Args:
        relevance_level: the default threshold of binary relevance.
        judged_only: the default judged-only flag, ignored by measures without a judged
            variant; ``[judged]`` in the text sets it for one measure.

    Raises:
        MeasureError: unknown name (with the closest valid names), bad cutoff or level.
    """
    trec_style = _TREC_RE.match(text.strip())
    if trec_style and trec_style["name"].lower() in _BY_LOWER_NAME:
        text = f"{trec_style['name']}@{trec_style['cutoff']}"
    match = _MEASURE_RE.match(text.strip())
    if not match:
        raise MeasureError(
            f"cannot parse measure {text!r}; expected NAME, NAME@k, NAME(rel=N)@k "
            f"or NAME(rel=N)@k{JUDGED_SUFFIX}"
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
    if match["cutoff"] is not None:
        raw_cut = match["cutoff"].strip()
        if not raw_cut.isdigit() or int(raw_cut) <= 0:
            raise MeasureError(f"measure {text!r}: the cutoff must be a positive integer, got {raw_cut!r}")
        cutoff = int(raw_cut)
    if spec.cutoff == "required" and cutoff is None:
        raise MeasureError(f"measure {text!r}: {name} needs a cutoff, for example {name}@10")
    if spec.cutoff == "none" and cutoff is not None:
        raise MeasureError(f"measure {text!r}: {name} takes no cutoff")
    rel_level = relevance_level
    rel_explicit = False
    if match["rel"] is not None:
        raw_rel = match["rel"].strip()
        if not re.fullmatch(r"-?\d+", raw_rel):
            raise MeasureError(f"measure {text!r}: rel must be an integer, got {raw_rel!r}")
        rel_level = int(raw_rel)
        rel_explicit = True
    judged = judged_only and spec.judged_variant
    if match["flag"] is not None:
        if f"[{match['flag'].strip().lower()}]" != JUDGED_SUFFIX:
            raise MeasureError(
                f"measure {text!r}: unknown suffix [{match['flag']}]; the only suffix is "
                f"{JUDGED_SUFFIX} (judged-only, condensed-list evaluation)"
            )
        if not spec.judged_variant:
            raise MeasureError(
                f"measure {text!r}: {name} has no judged-only variant "
                "(it would count judged documents among judged documents)"
            )
        judged = True
    return Measure(
        name=name,
        cutoff=cutoff,
        rel_level=rel_level,
        rel_explicit=rel_explicit,
        judged_only=judged,
    )


def parse_measures(
    texts: Sequence[str], *, relevance_level: int = 1, judged_only: bool = False
) -> list[Measure]:
    """Parse measure strings (comma-separated allowed), dropping repeats; ``judged_only``: -J."""
    measures: list[Measure] = []
    for text in texts:
        for part in text.split(","):
            if part.strip():
                measure = parse_measure(
                    part, relevance_level=relevance_level, judged_only=judged_only
                )
                if measure not in measures:
                    measures.append(measure)
    if not measures:
        raise MeasureError("no measures given")
    return measures
