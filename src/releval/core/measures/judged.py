"""Judged@k: added for every cutoff of the measure list, so each top k says how much of it
was judged (every other measure counts an unjudged document as non-relevant)."""

from __future__ import annotations

from collections.abc import Sequence

from releval.core.measures.registry import Measure

JUDGED = "Judged"
UNJUDGED_SHARE = "unjudged_share"
QUERIES = "queries"


def with_judged_measures(measures: Sequence[Measure], *, relevance_level: int) -> list[Measure]:
    """The measures plus ``Judged@k`` for each cutoff k that has none yet, in order of k.

    ``relevance_level`` sets the added rows' ``num_rel`` / ``num_rel_ret`` (not their value).
    """
    have = {m.cutoff for m in measures if m.name == JUDGED}
    cutoffs = sorted({m.cutoff for m in measures if m.cutoff is not None} - have)
    added = [Measure(name=JUDGED, cutoff=k, rel_level=relevance_level) for k in cutoffs]
    return [*measures, *added]


