"""The metric registry: every measure is declared once, as a :class:`MetricSpec`.

A measure string such as ``nDCG@10``, ``P(rel=2)@5``, ``AP`` or
``nDCG@10[judged]`` parses to a :class:`Measure`: the spec's name plus its
parameters (cutoff, relevance level, judged-only flag).
Families register their specs by calling :func:`register` at import time; the
modules are imported by ``releval.core.measures``.
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
    #: Computed on the condensed ranking: unjudged documents removed before cutting at k
    #: (trec_eval ``-J``, ir_measures ``judged_only``). Written as ``[judged]`` after the key.
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
        """trec_eval's name for this measure, or None when it has none.

        Judged-only variants have none: trec_eval's ``-J`` applies to a whole run.
        """
        if self.judged_only or not self.spec.trec_name:
            return None
        return self.spec.trec_name(self)


@dataclass(frozen=True)
class MetricSpec:
    """How one measure family is named and computed.

    Attributes:
        name: canonical name (``P``, ``nDCG``...).
        aliases: other accepted names (case-insensitive match on all names).
        cutoff: whether ``@k`` is required, optional or not allowed.
        value: builds the per-query value from the named statistics of a :class:`Stats`.
        num_rel_ret: the count that explains the value (relevant retrieved within the cutoff).
        averaging: how per-query values are aggregated (macro mean, pooled micro, sum).
        micro: the denominator of the pooled (micro) value, sum of num_rel_ret over queries
            divided by k * queries (P@k) or by the sum of num_rel (R@k).
        trec_name: trec_eval's measure name for a parsed measure.
        description: the formula, shown by ``releval measures``.
        judged_variant: whether a ``[judged]`` (condensed-list) variant makes sense
            (not for Judged@k itself, which measures the unjudged documents).
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

    trec_eval's names are accepted too: ``P_5``, ``recall_100``, ``success_10``,
    ``ndcg_cut_10``, ``map_cut_100``, ``map``, ``recip_rank``, ``Rprec``, ``bpref``.

    Args:
        text: the measure as a user wrote it.
        relevance_level: the default threshold of binary relevance.
        judged_only: the default of the judged-only flag (``evaluation.judged_only``);
            ``[judged]`` in the text sets it for one measure. Ignored for measures
            without a judged variant (Judged@k) unless written explicitly.

    Raises:
        MeasureError: unknown name (with the closest valid names), bad cutoff or level.
    """
    trec_style = _TREC_RE.match(text.strip())
    if trec_style and trec_style["name"].lower() in _BY_LOWER_NAME:
        text = f"{trec_style['name']}@{trec_style['cutoff']}"  # trec_eval's P_5 is P@5
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
    """Parse a list of measure strings, dropping exact repeats but keeping order.

    A single string may hold several measures separated by commas. ``judged_only``
    makes every measure (that has such a variant) judged-only, like trec_eval ``-J``.
    """
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
