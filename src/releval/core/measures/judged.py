"""Judged@k: added for every cutoff of the measure list, so each top k says how much of it
was judged (every other measure counts an unjudged document as non-relevant); with a window,
R@window and set_recall too, so the report shows what the window lost."""

from __future__ import annotations

from collections.abc import Sequence

from releval.core.measures.registry import WINDOW, Measure

JUDGED = "Judged"
UNJUDGED_SHARE = "unjudged_share"
QUERIES = "queries"


def with_judged_measures(
    measures: Sequence[Measure], *, relevance_level: int, window: bool = False
) -> list[Measure]:
    """The measures plus ``Judged@k`` for each cutoff k that has none yet, in order of k,
    then ``Judged@window`` when a measure is cut at the window.

    ``relevance_level`` sets the added rows' ``num_rel`` / ``num_rel_ret`` (not their value);
    ``window``: the run has a window: ``R@window`` and ``set_recall`` (the recall of the
    whole ranking) are added first when missing.
    """
    if window:
        added_recall = [Measure(name="R", cutoff=None, rel_level=relevance_level, window=True),
                        Measure(name="set_recall", cutoff=None, rel_level=relevance_level)]
        measures = [*measures, *(m for m in added_recall if m not in measures)]
    have = {m.cut for m in measures if m.name == JUDGED}
    cutoffs = sorted({m.cutoff for m in measures if m.cutoff is not None} - have)
    added = [Measure(name=JUDGED, cutoff=k, rel_level=relevance_level) for k in cutoffs]
    if any(m.window for m in measures) and WINDOW not in have:
        added.append(Measure(name=JUDGED, cutoff=None, rel_level=relevance_level, window=True))
    return [*measures, *added]


