"""The report's slices: each slice value's difference against the baseline with its interval
(the comparison table's slice and weighted rows), and the queries that lost most (the
per-query table, the latest comparison's sides)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from releval.core import columns as S
from releval.core.overall import MACRO, overall
from releval.evaluation.compare_slices import sign_disagreements
from releval.report.html import esc, folded, name_cell, number, png, table

#: the queries listed per candidate and measure
WORST = 5


def overall_comparison(comparison: pd.DataFrame | None) -> pd.DataFrame | None:
    """The rows over all queries with plain means (a table of an older schema has only
    those)."""
    if comparison is None or comparison.empty:
        return comparison
    return overall(comparison, MACRO)


def sliced_comparison(comparison: pd.DataFrame | None) -> pd.DataFrame:
    """The slice rows and the weighted rows (empty: none)."""
    if comparison is None or comparison.empty or S.SLICE not in comparison.columns:
        return pd.DataFrame()
    return comparison[comparison[S.SLICE].notna() | (comparison[S.AVERAGING] == "weighted")]


def slice_differences(comparison: pd.DataFrame, measure_keys: Sequence[str]) -> Figure | None:
    """Per candidate and measure (``measure_keys``), each slice value's mean difference with
    its interval; squares: weighted by traffic; filled: significant in the slices' family."""
    rows = sliced_comparison(comparison)
    if rows.empty:
        return None
    rows = rows[rows[S.MEASURE_KEY].isin(measure_keys)] if measure_keys else rows
    if rows.empty:
        return None
    rows = rows.assign(_where=[
        ("all" if pd.isna(s) else f"{s}={v}") for s, v in zip(rows[S.SLICE], rows[S.SLICE_VALUE],
                                                               strict=True)])
    labels = sorted(set(zip(rows[S.MEASURE_KEY], rows["_where"], strict=True)),
                    key=lambda k: (k[0], k[1] != "all", k[1]))
    candidates = sorted(set(rows[S.CANDIDATE]))
    fig = Figure(figsize=(7.5, 0.32 * len(labels) * max(1, len(candidates) / 2) + 1.8),
                 layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    index = {k: i for i, k in enumerate(labels)}
    step = 0.7 / (2 * max(len(candidates), 1))
    for i, cand in enumerate(candidates):
        color = f"C{i % 10}"
        for j, averaging in enumerate(("macro", "weighted")):
            part = rows[(rows[S.CANDIDATE] == cand) & (rows[S.AVERAGING] == averaging)]
            if part.empty:
                continue
            y = np.array([index[(k, w)] for k, w in zip(part[S.MEASURE_KEY], part["_where"],
                                                         strict=True)], dtype=float)
            y += (2 * i + j - (2 * len(candidates) - 1) / 2) * step
            x = part[S.MEAN_DIFF].to_numpy(dtype=float)
            low = part[S.DIFF_CI_LOW].to_numpy(dtype=float)
            high = part[S.DIFF_CI_HIGH].to_numpy(dtype=float)
            ax.errorbar(x, y, xerr=np.vstack([x - low, high - x]), fmt="none", capsize=2,
                        color=color)
            sig = part[S.SIGNIFICANT].fillna(False).to_numpy(dtype=bool)
            marker = "s" if averaging == "weighted" else "o"
            ax.scatter(x[sig], y[sig], color=color, marker=marker, zorder=3)
            ax.scatter(x[~sig], y[~sig], facecolors="white", edgecolors=color, marker=marker,
                       zorder=3, label=f"{cand}" + (" (weighted)" if j else ""))
    ax.axvline(0, color="grey", linewidth=1)
    ax.set_yticks(np.arange(len(labels)), labels=[f"{k} {w}" for k, w in labels])
    ax.invert_yaxis()
    ax.set_xlabel("candidate - baseline, per slice value")
    ax.grid(axis="x", alpha=0.3)
    fig.legend(loc="outside lower center", ncols=2, fontsize="small",
               title="candidate (square: weighted; filled: significant)")
    return fig


def _side(label: str) -> dict[str, str]:
    """A comparison's side label (``system=bm25/date=2026-11-28``) as column -> value."""
    return dict(p.split("=", 1) for p in str(label).split("/") if "=" in p)


def worst_queries(per_query: pd.DataFrame, comparison: pd.DataFrame,
                  measure_keys: Sequence[str], *, count: int = WORST) -> pd.DataFrame:
    """The ``count`` queries that lost most, per candidate and measure of the latest
    comparison, from the per-query rows (pairs as the comparison made them; equal losses
    by query id)."""
    out = []
    pairing = comparison[S.PAIRING].iloc[0] if S.PAIRING in comparison.columns else "zero"
    for (base, cand), _ in comparison.groupby([S.BASELINE, S.CANDIDATE]):
        sides = []
        for label in (base, cand):
            values = _side(label)
            if not values or any(c not in per_query.columns for c in values):
                break
            mask = np.ones(len(per_query), dtype=bool)
            for c, v in values.items():
                mask &= per_query[c].astype(str).to_numpy() == v
            sides.append(per_query[mask & per_query[S.MEASURE_KEY].isin(measure_keys)])
        if len(sides) < 2:
            continue
        on = [S.MEASURE_KEY, S.QUERY_ID]
        pairs = sides[0][[*on, S.VALUE]].merge(
            sides[1][[*on, S.VALUE]], on=on, suffixes=("_b", "_c"),
            how="inner" if pairing == "skip" else "outer").fillna({"value_b": 0.0,
                                                                   "value_c": 0.0})
        pairs["diff"] = pairs["value_c"] - pairs["value_b"]
        lost = pairs[pairs["diff"] < 0].sort_values([S.MEASURE_KEY, "diff", S.QUERY_ID])
        out.append(lost.groupby(S.MEASURE_KEY).head(count).assign(**{S.CANDIDATE: cand}))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


def worst_table(per_query: pd.DataFrame, comparison: pd.DataFrame,
                measure_keys: Sequence[str]) -> str:
    """The queries that lost most as a folded table (empty text: none lost)."""
    found = worst_queries(per_query, comparison, measure_keys)
    if found.empty:
        return ""
    cols = [S.CANDIDATE, S.MEASURE_KEY, S.QUERY_ID, "baseline", "candidate", "diff"]
    rows = [[name_cell(r[S.CANDIDATE]), name_cell(r[S.MEASURE_KEY]), name_cell(r[S.QUERY_ID]),
             number(r["value_b"]), number(r["value_c"]), number(r["diff"])]
            for _, r in found.iterrows()]
    summary = (f"The queries that lost most: up to {WORST} per candidate and measure "
               "(releval.changes or releval compare --worst N give their slices)")
    return (f'<p class="note">{esc(summary)}</p>'
            + folded(summary, table(cols, rows, cls="worst"), rows=len(rows)))


def slices_html(per_query: pd.DataFrame, comparison: pd.DataFrame | None,
                measure_keys: Sequence[str]) -> str:
    """The slice figure and the queries that lost most, below the comparison table."""
    if comparison is None or comparison.empty:
        return ""
    fig = slice_differences(comparison, measure_keys)
    drawn = "" if fig is None else png(
        fig, name="slice_differences", alt="mean difference per slice value, with intervals",
        caption=esc("Per slice value of the queries input: mean difference, candidate minus "
                    "baseline, with its interval; squares are weighted by traffic (linearized "
                    "interval, no test), filled markers significant within the slices' family "
                    "(docs/statistics.md)."))
    return (sign_html(comparison) + drawn
            + worst_table(per_query, overall_comparison(comparison), measure_keys))


def sign_html(comparison: pd.DataFrame) -> str:
    """The comparison's sign disagreements
    (:func:`releval.evaluation.compare_slices.sign_disagreements`, each slice value weighted by its
    pairs), a warning each; empty without any."""
    if S.SLICE not in comparison.columns:
        return ""
    rows = comparison.astype(object).where(comparison.notna(), None).to_dict("records")
    found = sign_disagreements(rows)
    return "".join(f'<p class="warning"><strong>Warning:</strong> {esc(m)}</p>' for m in found)
