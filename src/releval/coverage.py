"""How much of each top k was judged: Judged@k for the summary, and its warnings.

Every other measure counts an unjudged document as non-relevant, so a run whose
top k is largely unjudged is under-scored by P@k, nDCG@k and the like. releval
therefore always computes ``Judged@k`` for every cutoff k of the requested
measures (adding it to the measure list when it is not there: the rows are
written to both tables like any measure), and the job summary reports the
unjudged share ``1 - mean Judged@k`` per run partition and k, with a warning above
``evaluation.unjudged_warning_share``.

The summary's share is the mean over the queries the run retrieved something for
(``num_ret > 0``); the aggregate table's ``Judged@k`` macro row also counts qrels
queries missing from the run as 0 when ``missing_queries = "zero"``, like every
measure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from releval.metrics.registry import Measure

JUDGED = "Judged"
UNJUDGED_SHARE = "unjudged_share"
QUERIES = "queries"
#: Measures that gain nothing from graded labels when every label is 0/1 (or negative).
GRADED_MEASURES = ("nDCG", "nDCG_exp")


def with_judged_measures(measures: Sequence[Measure], *, relevance_level: int) -> list[Measure]:
    """The measures plus ``Judged@k`` for each cutoff k that has none yet, in order of k.

    Args:
        measures: the parsed measure list.
        relevance_level: the job's default level (Judged@k ignores it; it sets the
            ``num_rel`` / ``num_rel_ret`` columns of the added rows).
    """
    have = {m.cutoff for m in measures if m.name == JUDGED}
    cutoffs = sorted({m.cutoff for m in measures if m.cutoff is not None} - have)
    added = [Measure(name=JUDGED, cutoff=k, rel_level=relevance_level) for k in cutoffs]
    return [*measures, *added]


@dataclass(frozen=True)
class UnjudgedRate:
    """The unjudged share of the top k of one run partition."""

    partition: tuple[tuple[str, str], ...]
    cutoff: int
    share: float
    queries: int

    def label(self) -> str:
        where = ", ".join(f"{c}={v}" for c, v in self.partition)
        return f"{where + ' ' if where else ''}top {self.cutoff}"


def render_lines(
    rates: Sequence[UnjudgedRate],
    *,
    warning_share: float,
    binary_labels: bool,
    measures: Sequence[Measure],
) -> list[str]:
    """The summary lines about judgment coverage (empty when there is nothing to say).

    One line with the range of the unjudged share over the run partitions at each k, one
    WARNING line per k where some run partition is above ``warning_share``, and one line
    that says where the per-partition figures are (the aggregate table's Judged@k rows,
    ``releval report``): a screen, however many partitions the job evaluated.
    """
    lines: list[str] = []
    by_k: dict[int, list[UnjudgedRate]] = {}
    for rate in sorted(rates, key=lambda r: (r.cutoff, r.partition)):
        by_k.setdefault(rate.cutoff, []).append(rate)
    if by_k:
        ranges = []
        for k, group in by_k.items():
            low, high = min(r.share for r in group), max(r.share for r in group)
            ranges.append(f"top {k} {low:.1%}" if low == high else f"top {k} {low:.1%}-{high:.1%}")
        lines.append(
            "  unjudged share of the top k (1 - mean Judged@k, queries with results; range over "
            f"{len({r.partition for r in rates})} run partition(s)): {', '.join(ranges)}"
        )
    warned = 0
    for k, group in by_k.items():
        high = [r for r in group if r.share > warning_share]
        if not high:
            continue
        warned += 1
        worst = max(high, key=lambda r: r.share)
        where = ", ".join(f"{c}={v}" for c, v in worst.partition) or "the run"
        lines.append(
            f"  WARNING: top {k} more than {warning_share:.0%} unjudged in {len(high)} of "
            f"{len(group)} run partition(s) (worst: {where}, {worst.share:.1%})"
        )
    if warned:
        lines.append(
            "    unjudged documents count as non-relevant, so P@k, nDCG@k and the like "
            "undercount: compare with the judged-only variants (e.g. nDCG@10[judged]) or bpref; "
            "per run partition: Judged@k in the aggregate table, or releval report"
        )
    if binary_labels and any(m.name in GRADED_MEASURES for m in measures):
        lines.append(
            "  note: all qrels labels are binary (at most 1): nDCG adds little over Recall and AP "
            "here, and nDCG_exp equals nDCG."
        )
    return lines
