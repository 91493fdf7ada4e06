"""What the printed comparison says about slices: the slice and weighted rows, the one-line
warning when the overall difference and the traffic disagree in sign, and the queries that
lost most (:func:`releval.frames.changes.changes`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from releval.checks.queries import CheckedQueries
from releval.core import columns as S
from releval.core.overall import MACRO, overall
from releval.errors import InputError
from releval.frames import changes as C
from releval.stats.kernel import TIE_TOLERANCE

#: slice -> slice value -> its weight (the queries' total weight, or their number)
SliceWeights = Mapping[str, Mapping[str, float]]


def slice_weights(checked: CheckedQueries) -> dict[str, dict[str, float]]:
    """Each slice value's total weight in the queries input (without a weight: its number
    of queries); one small aggregation per slice."""
    out: dict[str, dict[str, float]] = {}
    amount = F.sum(S.WEIGHT) if checked.weighted else F.count(F.lit(1))
    for s in checked.slices:
        found = checked.used.groupBy(s).agg(amount.alias("_w")).collect()
        out[s] = {r[s]: float(r["_w"] or 0.0) for r in found}
    return out


def refuse_rejected(checked: CheckedQueries, *, query_id: str, weight: str | None) -> None:
    """A comparison writes no quarantine: a rejected queries row is an error.

    Raises:
        InputError: the input, the column, the reason and the row (one small job).
    """
    bad = checked.rejected.limit(1).collect()
    if bad:
        row = bad[0]
        raw = dict(row[S.RAW])
        column = weight if row[S.REASON_CODE] == "invalid_weight" else query_id
        raise InputError(f"{checked.name}: column {column!r}: {row[S.REASON_CODE]} "
                         f"({row[S.MESSAGE]}), e.g. the row {raw}")


def _sign(x: float | None) -> int:
    if x is None or x != x or abs(x) <= TIE_TOLERANCE:
        return 0
    return 1 if x > 0 else -1


def sign_warnings(rows: Sequence[Mapping[str, Any]], weights: SliceWeights | None = None
                  ) -> list[str]:
    """:func:`sign_disagreements` as the printed comparison's lines."""
    return [f"  WARNING: {m}" for m in sign_disagreements(rows, weights)]


def sign_disagreements(rows: Sequence[Mapping[str, Any]], weights: SliceWeights | None = None
                       ) -> list[str]:
    """One message per (candidate, measure) whose overall difference has one sign while the
    weighted difference, or the slice values that hold most of the weight, have the other.

    The slice values that hold most of the weight: per slice column, the heaviest values
    until they hold more than half of it (``weights``; else the values' pairs); their
    difference is their (weighted, when there are weighted rows) mean differences averaged
    by that weight."""
    by: dict[tuple, dict] = {}
    for r in rows:
        by[(r[S.CANDIDATE], r[S.MEASURE_KEY], r.get(S.SLICE), r.get(S.SLICE_VALUE),
            r.get(S.AVERAGING, "macro"))] = r
    out = []
    for r in overall(list(rows), MACRO):
        cand, key, diff = r[S.CANDIDATE], r[S.MEASURE_KEY], r[S.MEAN_DIFF]
        sign = _sign(diff)
        if sign == 0:
            continue
        found = []
        weighted = by.get((cand, key, None, None, "weighted"))
        if weighted is not None and _sign(weighted[S.MEAN_DIFF]) == -sign:
            found.append(f"weighted {weighted[S.MEAN_DIFF]:+.4f}")
        for s in sorted({x[S.SLICE] for x in rows if x.get(S.SLICE) is not None}):
            heavy = _heaviest(by, cand, key, s, weights)
            if heavy is not None and _sign(heavy[1]) == -sign:
                values, mean, share = heavy
                found.append(f"{s}={','.join(values)} ({share:.0%} of the weight) {mean:+.4f}")
        if found:
            out.append(f"{key}: {cand} differs by {diff:+.4f} over all queries "
                       f"but {'; '.join(found)}")
    return out


def _heaviest(by: Mapping[tuple, Mapping[str, Any]], cand: str, key: str, s: str,
              weights: SliceWeights | None) -> tuple[list[str], float, float] | None:
    """(the heaviest values of slice ``s`` holding most of the weight, their difference,
    their share of the weight); None when no slice row has a weight."""
    values = {k[3]: r for k, r in by.items()
              if k[:3] == (cand, key, s) and k[4] == "macro"}
    mass = {v: (weights or {}).get(s, {}).get(v, float(r.get(S.NUM_PAIRS) or 0.0)
                                              if weights is None else 0.0)
            for v, r in values.items()}
    total = sum(mass.values())
    if not total > 0:
        return None
    held, chosen = 0.0, []
    for v in sorted(mass, key=lambda v: (-mass[v], v)):
        chosen.append(v)
        held += mass[v]
        if held > total / 2:
            break
    diffs = []
    for v in chosen:
        row = by.get((cand, key, s, v, "weighted")) or values[v]
        diffs.append((mass[v], row[S.MEAN_DIFF]))
    if not held > 0:
        return None
    return chosen, sum(m * d for m, d in diffs) / held, held / total


def render_slices(rows: Sequence[Mapping[str, Any]], *, alpha: float) -> list[str]:
    """The slice rows and the weighted rows, one line each ([w]: weighted, no test)."""
    shown = [r for r in rows if r.get(S.SLICE) is not None or r.get(S.AVERAGING) == "weighted"]
    if not shown:
        return []
    family = sum(1 for r in shown if r.get(S.AVERAGING) == "macro")

    def num(v: float | None, fmt: str) -> str:
        return "-" if v is None or v != v else format(v, fmt)

    lines = ["", f"  by slice: * = significant within the slices' own family ({family} tests, "
             f"corrected together); [w] weighted by traffic (linearized {1 - alpha:.0%} interval, "
             "no test)",
             f"  {'':1} {'candidate':<28} {'measure':<16} {'slice':<28} {'n':>6} {'diff':>8} "
             f"{'interval':>19} {'p(adj)':>9}"]
    order = sorted(shown, key=lambda r: (r[S.CANDIDATE], r[S.MEASURE_KEY],
                                         r.get(S.SLICE) or "", r.get(S.SLICE_VALUE) or "",
                                         r.get(S.AVERAGING) or ""))
    for r in order:
        where = "all" if r.get(S.SLICE) is None else f"{r[S.SLICE]}={r[S.SLICE_VALUE]}"
        if r.get(S.AVERAGING) == "weighted":
            where += " [w]"
        p = r.get(S.RANDOMIZATION_P_ADJUSTED)
        p = r.get(S.T_P_ADJUSTED) if p is None else p
        ci = (f"[{num(r[S.DIFF_CI_LOW], '+.4f')}, {num(r[S.DIFF_CI_HIGH], '+.4f')}]"
              if r[S.DIFF_CI_LOW] is not None else "-")
        lines.append(f"  {'*' if r.get(S.SIGNIFICANT) else ' '} {r[S.CANDIDATE]:<28} "
                     f"{r[S.MEASURE_KEY]:<16} {where:<28} {r[S.NUM_PAIRS]:>6} "
                     f"{num(r[S.MEAN_DIFF], '+.4f'):>8} {ci:>19} {num(p, '.2g'):>9}")
    return lines


def worst_queries(moved: DataFrame, count: int) -> list[dict[str, Any]]:
    """The ``count`` queries that lost most per candidate and measure (of
    :func:`releval.frames.changes.changes`): only those rows are collected."""
    return [r.asDict() for r in moved.where(F.col(C.LOSS_RANK) <= count).orderBy(
        S.CANDIDATE, S.MEASURE_KEY, C.LOSS_RANK).collect()]


def render_worst(rows: Sequence[Mapping[str, Any]], *, count: int,
                 slices: Sequence[str]) -> list[str]:
    """The queries that lost most, per candidate and measure, with their slice values."""
    lines = ["", f"  the {count} queries that lost most, per candidate and measure "
             "(baseline -> candidate, diff, share of the mean difference):"]
    if not rows:
        return [*lines, "    none: no query lost"]
    current = None
    for r in rows:
        if (r[S.CANDIDATE], r[S.MEASURE_KEY]) != current:
            current = (r[S.CANDIDATE], r[S.MEASURE_KEY])
            lines.append(f"  {r[S.CANDIDATE]} {r[S.MEASURE_KEY]}:")
        where = " ".join(f"{s}={r[s]}" for s in slices)
        weight = "" if r.get(S.WEIGHT) is None else f" weight {r[S.WEIGHT]:g}"
        share = "-" if r[C.SHARE_OF_DIFF] is None else f"{r[C.SHARE_OF_DIFF]:+.5f}"
        lines.append(f"    {r[C.LOSS_RANK]:>3}. {r[S.QUERY_ID]:<20} "
                     f"{r[C.BASELINE_VALUE]:.4f} -> {r[C.CANDIDATE_VALUE]:.4f} "
                     f"{r[C.DIFF]:+.4f} {share}")
        lines[-1] += (f"  {where}" if where else "") + weight
    return lines
