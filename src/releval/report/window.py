"""The report's window section: per run, the spread of k_q and what the window lost (the
recall of the whole ranking, set_recall, against R@window)."""

from __future__ import annotations

import pandas as pd

from releval.core import columns as S
from releval.core.overall import MACRO, overall
from releval.report.data import ReportData
from releval.report.html import name_cell, number, table

#: The aggregate keys the job adds with a window: the recall of the whole ranking and of k_q
RECALL_ALL, RECALL_WINDOW = "set_recall", "R@window"


def window_section(data: ReportData) -> str | None:
    """A table with one row per run partition of the report's date: k_q's min / median / max
    over its queries, mean recall of the whole ranking, R@window and their difference; None
    when no query has a window."""
    pq = data.per_query
    if S.WINDOW_SIZE not in pq.columns or pq[S.WINDOW_SIZE].isna().all():
        return None
    parts = [*data.run_columns, *([data.date_column] if data.date_column else [])]
    keys = parts or ["_all"]
    rows = pq.assign(_all="")[[*keys, S.QUERY_ID, S.WINDOW_SIZE]].dropna(subset=[S.WINDOW_SIZE])
    per_query = rows.drop_duplicates([*keys, S.QUERY_ID])
    spread = per_query.groupby(keys)[S.WINDOW_SIZE].agg(["min", "median", "max"]).reset_index()
    agg = data.aggregate.assign(_all="")
    macro = overall(agg, MACRO)
    macro = macro[macro[S.MEASURE_KEY].isin([RECALL_ALL, RECALL_WINDOW])]
    recall = macro.pivot_table(index=keys, columns=S.MEASURE_KEY, values=S.VALUE).reset_index()
    merged = spread.merge(recall, on=keys, how="left") if not recall.empty else spread
    body = []
    for _, r in merged.iterrows():
        whole, cut = r.get(RECALL_ALL), r.get(RECALL_WINDOW)
        lost = whole - cut if pd.notna(whole) and pd.notna(cut) else None
        body.append([*(name_cell(r[c]) for c in parts),
                     f"<td>{int(r['min'])} / {r['median']:g} / {int(r['max'])}</td>",
                     *(number(v) for v in (whole, cut, lost))])
    header = [*parts, "k_q min / median / max", "recall, whole ranking", RECALL_WINDOW, "lost"]
    return (table(header, body, cls="window")
            + '<p class="note">k_q: the top documents each query\'s consumer used (the run\'s '
            "window column); the @window measures cut each ranking there. Recall of the whole "
            "ranking (set_recall) against R@window: the relevant documents retrieved that the "
            "consumer never saw (docs/which-measure.md).</p>")
