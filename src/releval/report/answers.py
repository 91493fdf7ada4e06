"""The report's section on retrieval and the answer: the attribution cells' shares per run
partition (a stacked bar, from the attribution table) and how the latest comparison's
candidates moved between the cells (from the per-query table's answer scores).
See docs/answers.md."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from releval.config import Config
from releval.core import columns as S
from releval.evaluation.partitions import partition_label
from releval.report.data import ReportData, as_strings, open_output, run_label
from releval.report.html import Section, esc, name_cell, png, table
from releval.stats.attribution import CELLS, NO_QRELS, SHARED_CELLS, Thresholds, cell_codes
from releval.stats.moves import Moves, moves

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: A colour per cell: the answer right (greens, blues) or wrong (orange, red).
COLORS = {"success": "#2e7d32", "generation_miss": "#ef6c00", "retrieval_miss": "#c62828",
          "answered_without_evidence": "#1565c0"}


@dataclass(frozen=True)
class AnswersData:
    """The attribution rows of the report's date and the latest comparison's moves."""

    attribution: pd.DataFrame
    where: str
    version: int | None
    baseline: str | None = None
    thresholds: Thresholds | None = None
    moves: tuple[Moves, ...] = ()


def _thresholds(rows: pd.DataFrame) -> set[tuple[str, float, float]]:
    return {(r[S.RETRIEVED_BY_MEASURE], float(r[S.RETRIEVED_AT]), float(r[S.CORRECT_AT]))
            for _, r in rows.iterrows()}


def _labels(rows: pd.DataFrame, parts: Sequence[str]) -> pd.Series:
    """Each row's run partition as the comparison table names it (``system=bm25/...``)."""
    return pd.Series([partition_label(r, parts) for r in rows[list(parts)].to_dict("records")],
                     index=rows.index, dtype=object)


def _moves(config: Config, spark: SparkSession | None, attribution: pd.DataFrame,
           comparison: pd.DataFrame, parts: Sequence[str]
           ) -> tuple[str, Thresholds, tuple[Moves, ...]] | None:
    """(baseline, thresholds, moves) of the comparison's candidates whose attribution used
    the baseline's thresholds; None when the baseline has no attribution rows."""
    label = _labels(attribution, parts)
    baseline = str(comparison[S.BASELINE].iloc[0])
    found = _thresholds(attribution[label == baseline])
    pq = open_output(config, "per_query", spark)
    if len(found) != 1 or pq is None:
        return None
    ((by, at, correct),) = found
    t = Thresholds(retrieved_by=by, retrieved_at=at, correct_at=correct)
    candidates = [c for c in dict.fromkeys(comparison[S.CANDIDATE].astype(str))
                  if _thresholds(attribution[label == c]) == found]
    rows = as_strings(pq.read([*parts, S.QUERY_ID, S.VALUE, S.ANSWER_SCORE],
                               [(S.MEASURE_KEY, "=", by)]), parts)
    rows = rows[rows[S.ANSWER_SCORE].notna()]
    side = _labels(rows, parts)
    cells = {}
    for name in (baseline, *candidates):
        mine = rows[side == name]
        codes = cell_codes(mine[S.VALUE].to_numpy(float), mine[S.ANSWER_SCORE].to_numpy(float), t)
        cells[name] = {q: CELLS[c] for q, c in zip(mine[S.QUERY_ID], codes, strict=True)
                       if CELLS[c] != NO_QRELS}
    return baseline, t, tuple(moves(cells[baseline], cells[c], label=c) for c in candidates)


def read_answers(config: Config, data: ReportData, comparison: pd.DataFrame | None,
                 spark: SparkSession | None = None) -> AnswersData | None:
    """The attribution rows at the report's date and the moves of ``comparison`` (the
    latest); None when there is no attribution table or it has no rows."""
    parts = list(config.run.partition_columns)
    opened = open_output(config, "attribution", spark)
    if opened is None:
        return None
    every = as_strings(opened.read(None, ()), parts)
    if every.empty:
        return None
    at_date = (every if data.date_column is None
               else every[every[data.date_column] == data.date])
    found = (_moves(config, spark, every, comparison, parts)
             if comparison is not None and not comparison.empty else None)
    return AnswersData(at_date, opened.where, opened.version, *(found or ()))


def cells_figure(attribution: pd.DataFrame, *, run_columns: Sequence[str]) -> Figure | None:
    """One horizontal bar per run partition: the shares of the four cells, stacked, each
    run labelled with its attributed queries (None: no attributed query)."""
    rows = attribution[attribution[S.CELL].isin(SHARED_CELLS) & attribution[S.SHARE].notna()]
    if rows.empty:
        return None
    rows = rows.assign(_run=rows.apply(lambda r: run_label(r, run_columns), axis=1))
    shares = rows.pivot_table(index="_run", columns=S.CELL, values=S.SHARE, aggfunc="first")
    shares = shares.reindex(columns=list(SHARED_CELLS)).fillna(0.0).sort_index(ascending=False)
    attributed = rows.groupby("_run")[S.ATTRIBUTED].first()
    fig = Figure(figsize=(8.0, 1.3 + 0.42 * len(shares)), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    y = np.arange(len(shares))
    left = np.zeros(len(shares))
    for cell in SHARED_CELLS:
        width = shares[cell].to_numpy()
        ax.barh(y, width, left=left, color=COLORS[cell], label=cell, height=0.7)
        for yi, (x0, w) in enumerate(zip(left, width, strict=True)):
            if w >= 0.08:
                ax.text(x0 + w / 2, yi, f"{w:.0%}", ha="center", va="center", color="white",
                        fontsize=8)
        left += width
    ax.set_yticks(y, [f"{run} (n={int(attributed[run])})" for run in shares.index], fontsize=8)
    ax.set_xlim(0, 1)
    ax.xaxis.set_major_formatter(lambda v, _: f"{v:.0%}")
    ax.set_xlabel("share of the attributed answered queries", fontsize=8)
    ax.tick_params(axis="x", labelsize=8)
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=2,
               frameon=False, fontsize=8)
    return fig


def moves_html(found: Moves) -> str:
    """The reading and the transition counts (rows: the baseline's cell)."""
    rows = [[name_cell(cell), *(f"<td>{n}</td>" for n in counts)]
            for cell, counts in zip(SHARED_CELLS, found.counts, strict=True)]
    apart = (f" Answered on one side only, not counted: baseline {found.baseline_only}, "
             f"candidate {found.candidate_only}." if found.baseline_only or found.candidate_only
             else "")
    return (f'<p data-moves="{esc(found.candidate)}">{esc(found.reading())}.{esc(apart)}</p>'
            + table(["baseline \u2192 candidate", *SHARED_CELLS], rows, cls="moves"))


def answers_section(found: AnswersData | None, *, run_columns: Sequence[str], at: str
                    ) -> Section | None:
    """The section, or None without attribution rows."""
    if found is None:
        return None
    fig = cells_figure(found.attribution, run_columns=run_columns)
    body = (png(fig, name="cells", alt="shares of the four attribution cells per run",
                caption=(f"Answered queries with qrels per run{esc(at)}, by cell: evidence "
                         "retrieved or not, answer right or wrong (attribution table "
                         f"{esc(found.where)}, version {found.version}; docs/answers.md)."))
            if fig is not None else '<p class="note">No attribution rows at this date.</p>')
    if found.thresholds is not None:
        t = found.thresholds
        body += (f"<p>The latest comparison, query by query against {esc(found.baseline)}: "
                 f"evidence retrieved when {esc(t.retrieved_by)} &ge; {t.retrieved_at:g}, "
                 f"correct when answer_score &ge; {t.correct_at:g}.</p>")
        body += "".join(moves_html(m) for m in found.moves)
    return Section("answers", "Retrieval and the answer", body)
