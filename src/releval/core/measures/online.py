"""The online measures, from a search log's impressions and clicks: each declared once, with
its formula and range. A search's value is computed from its rows; a query's value is the
mean over its searches (``releval.evaluate_clicks``, ``releval.interleaving``). They are not
in :data:`releval.core.measures.registry.REGISTRY`: the run x qrels engine does not compute
them, and :func:`parse_online` parses their names."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from releval.core.measures.registry import UNIT, Measure, MetricSpec
from releval.errors import MeasureError

CTR, ABANDONMENT, CLICK_RR, CLICKS, SUCCESS, PREFERENCE = (
    "CTR", "Abandonment", "ClickRR", "Clicks", "Success", "Preference")


def _engine_free(*_: object) -> None:
    raise MeasureError("an online measure is computed from interactions, not by the engine")


def _spec(name: str, cutoff: str, bounds: tuple[float, float] | None, text: str) -> MetricSpec:
    return MetricSpec(name=name, aliases=(), cutoff=cutoff,  # type: ignore[arg-type]
                      value=_engine_free, num_rel_ret=_engine_free,  # type: ignore[arg-type]
                      description=text, judged_variant=False, bounds=bounds)


#: Each online measure: name -> spec (its ``cutoff`` rule says whether ``@k`` / ``@T`` is
#: required; ``bounds`` is a query's range, what the gate's bounded test reads).
ONLINE: dict[str, MetricSpec] = {s.name: s for s in (
    _spec(CTR, "required", UNIT,
          "CTR@k: 1 when the search has a click at a position <= k, else 0"),
    _spec(ABANDONMENT, "none", UNIT, "Abandonment: 1 when the search has no click, else 0"),
    _spec(CLICK_RR, "none", UNIT,
          "ClickRR: 1 / the position of the search's first-placed click; 0 without a click"),
    _spec(CLICKS, "none", None, "Clicks: the search's clicks (a count, no upper bound)"),
    _spec(SUCCESS, "required", UNIT,
          "Success@T: 1 when the search has a click with a dwell of at least T seconds, "
          "else 0 (a click without a dwell is not a success)"),
    _spec(PREFERENCE, "none", (-1.0, 1.0),
          "Preference (interleaving): +1 when the candidate team's results get more clicks "
          "than the baseline team's in the search, -1 when fewer, 0 on a tie"),
)}
_BY_LOWER = {name.lower(): name for name in ONLINE}
_NAME = re.compile(r"^\s*(?P<name>[A-Za-z]+)\s*(?:@\s*(?P<k>\d+))?\s*$")


@dataclass(frozen=True)
class OnlineMeasure(Measure):
    """An online measure: a :class:`Measure` whose spec is in :data:`ONLINE` (its ``cutoff``
    is k for CTR@k and T, in seconds, for Success@T)."""

    @property
    def spec(self) -> MetricSpec:
        return ONLINE[self.name]


def parse_online(text: str) -> OnlineMeasure:
    """``CTR@5``, ``Abandonment``, ``ClickRR``, ``Clicks``, ``Success@30``, ``Preference``.

    Raises:
        MeasureError: an unknown name (with the closest), a missing or unwanted ``@``.

    Example:
        >>> parse_online("ctr@5").key, parse_online("Success@30").spec.bounds
        ('CTR@5', (0.0, 1.0))
    """
    match = _NAME.match(text or "")
    name = _BY_LOWER.get(match["name"].lower()) if match else None
    if match is None or name is None:
        close = difflib.get_close_matches(str(text).split("@")[0], list(ONLINE), n=2, cutoff=0.4)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise MeasureError(f"unknown online measure {text!r}{hint} Online measures: CTR@k, "
                           "Abandonment, ClickRR, Clicks, Success@T (T in seconds), Preference")
    spec, k = ONLINE[name], match["k"]
    if spec.cutoff == "required" and (k is None or int(k) < 1):
        raise MeasureError(f"online measure {text!r}: {name} needs @N, a positive integer "
                           f"(e.g. {name}@{5 if name == CTR else 30})")
    if spec.cutoff == "none" and k is not None:
        raise MeasureError(f"online measure {text!r}: {name} takes no @N")
    return OnlineMeasure(name=name, cutoff=None if k is None else int(k), rel_level=1)


def online_measure(text: str) -> OnlineMeasure | None:
    """:func:`parse_online`, or None when ``text`` names no online measure."""
    try:
        return parse_online(text)
    except MeasureError:
        return None
