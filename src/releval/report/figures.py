"""The report's figures (matplotlib, Agg backend, no pyplot state) and a layout check.

Every figure is a :class:`~matplotlib.figure.Figure` with its own Agg canvas, so the
report draws the same way in a notebook, a job or a test, and never changes the
process's pyplot backend.

Each function takes pandas frames read by :mod:`releval.report.data` and returns a
:class:`matplotlib.figure.Figure` laid out by the constrained layout engine, legends
outside the axes. :func:`layout_problems` finds text that overlaps other text or leaves
the figure, from the text bounding boxes matplotlib computes when it draws.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.ticker import PercentFormatter

from releval.core import columns as S
from releval.core.measures.judged import JUDGED
from releval.core.overall import MACRO, overall
from releval.report.data import COUNT_MEASURES, run_label

#: Panel size (inches) of a subplot grid, and the widest grid.
PANEL = (3.6, 2.6)
MAX_COLUMNS = 3


def _figure(panels: int, *, extra_height: float = 0.9) -> tuple[Figure, list]:
    """A figure with a grid of ``panels`` axes (unused cells removed)."""
    cols = min(MAX_COLUMNS, max(panels, 1))
    rows = math.ceil(max(panels, 1) / cols)
    fig = Figure(figsize=(PANEL[0] * cols, PANEL[1] * rows + extra_height), layout="constrained")
    FigureCanvasAgg(fig)
    axes = list(np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel())
    for ax in axes[panels:]:
        ax.remove()
    return fig, axes[:panels]


def _legend(fig: Figure, axes: Sequence, *, title: str | None = None) -> None:
    """One legend for the figure, below the axes (labels from the first axes that has them)."""
    handles, labels = [], []
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in labels:
                handles.append(h)
                labels.append(label)
    if not handles:
        return
    # as many columns as fit the figure's width (long run names: fewer, down to one)
    for ncols in range(min(len(labels), 4), 0, -1):
        legend = fig.legend(handles, labels, loc="outside lower center", ncols=ncols,
                            title=title, frameon=False)
        renderer = fig.canvas.get_renderer()
        if ncols == 1 or legend.get_window_extent(renderer).width <= 0.98 * fig.bbox.width:
            return
        legend.remove()


def _runs(df: pd.DataFrame, run_columns: Sequence[str]) -> pd.Series:
    return df.apply(lambda r: run_label(r, run_columns), axis=1) if len(df) else pd.Series([])


def _macro(aggregate: pd.DataFrame) -> pd.DataFrame:
    return overall(aggregate, MACRO)


def _at_date(df: pd.DataFrame, date_column: str | None, date: str | None) -> pd.DataFrame:
    return df if date_column is None else df[df[date_column] == date]


def measure_against_k(
    aggregate: pd.DataFrame, *, run_columns: Sequence[str], date_column: str | None,
    date: str | None,
) -> Figure | None:
    """Each measure computed at two or more cutoffs against k, one line per run (macro
    means at ``date``).

    Returns None when no measure has two cutoffs.
    """
    df = _macro(_at_date(aggregate, date_column, date))
    df = df[df[S.CUTOFF].notna() & ~df[S.MEASURE].isin([*COUNT_MEASURES, JUDGED])].copy()
    if df.empty:
        return None
    df["family"] = df[S.MEASURE_KEY].str.replace(r"@\d+", "@k", regex=True)
    df["run"] = _runs(df, run_columns)
    cutoffs = df.groupby("family")[S.CUTOFF].nunique()
    df = df[df["family"].isin(cutoffs[cutoffs >= 2].index)]  # a curve needs two ks
    if df.empty:
        return None
    families = list(dict.fromkeys(df.sort_values([S.MEASURE, S.MEASURE_KEY])["family"]))
    fig, axes = _figure(len(families))
    for ax, family in zip(axes, families, strict=True):
        rows = df[df["family"] == family]
        for run, one in rows.groupby("run", sort=True):
            one = one.sort_values(S.CUTOFF)
            ax.plot(one[S.CUTOFF], one[S.VALUE], marker="o", label=run)
        ks = sorted(int(k) for k in rows[S.CUTOFF].unique())
        ax.set_xticks(ks)
        ax.set_xlim(min(ks) - 0.5 - 0.05 * max(ks), max(ks) + 0.5 + 0.05 * max(ks))
        ax.set_ylim(0, 1.02)
        ax.set_title(family)
        ax.set_xlabel("k")
        ax.set_ylabel("mean over queries")
        ax.grid(alpha=0.3)
    _legend(fig, axes)
    return fig


def per_query_distribution(
    per_query: pd.DataFrame, *, run_columns: Sequence[str], measure_keys: Sequence[str]
) -> Figure | None:
    """Box plots of the per-query values of each measure, one box per run (mean as a
    triangle); horizontal, so run names of any length read on the shared y axis."""
    df = per_query[per_query[S.MEASURE_KEY].isin(measure_keys)].copy()
    if df.empty:
        return None
    df["run"] = _runs(df, run_columns)
    keys = [k for k in measure_keys if k in set(df[S.MEASURE_KEY])]
    runs = sorted(df["run"].unique())
    cols = min(MAX_COLUMNS, len(keys))
    rows = math.ceil(len(keys) / cols)
    fig = Figure(figsize=(PANEL[0] * cols + 1.5, rows * (0.9 + 0.32 * len(runs)) + 0.3),
                 layout="constrained")
    FigureCanvasAgg(fig)
    axes = list(fig.subplots(rows, cols, squeeze=False, sharey=True).ravel())
    for ax in axes[len(keys):]:
        ax.set_visible(False)
    for ax, key in zip(axes, keys, strict=False):
        one = df[df[S.MEASURE_KEY] == key]
        data = [one.loc[one["run"] == r, S.VALUE].to_numpy() for r in runs]
        ax.boxplot(data, orientation="horizontal", showmeans=True, widths=0.6)
        ax.set_yticks(range(1, len(runs) + 1), labels=runs)
        ax.set_title(key)
        ax.set_xlim(-0.03, 1.03)
        ax.grid(axis="x", alpha=0.3)
    axes[0].invert_yaxis()  # shared: the first run on top in every panel
    axes[(rows - 1) * cols].set_xlabel("per-query value")
    return fig


def baseline_differences(comparison: pd.DataFrame) -> Figure | None:
    """Mean difference (candidate - baseline) per measure with its interval, per candidate.

    A filled marker: significant after the comparison's correction; hollow: not.
    """
    if comparison is None or comparison.empty:
        return None
    df = comparison.sort_values([S.CANDIDATE, S.MEASURE, S.CUTOFF, S.MEASURE_KEY],
                                na_position="first")  # k as a number; AP before AP@10
    keys = list(dict.fromkeys(df[S.MEASURE_KEY]))
    candidates = list(dict.fromkeys(df[S.CANDIDATE]))
    fig = Figure(figsize=(7.5, 0.45 * len(keys) * max(1, len(candidates) / 2) + 1.6),
                 layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    step = 0.7 / max(len(candidates), 1)
    for i, cand in enumerate(candidates):
        rows = df[df[S.CANDIDATE] == cand].set_index(S.MEASURE_KEY).reindex(keys)
        y = np.arange(len(keys)) + (i - (len(candidates) - 1) / 2) * step
        x = rows[S.MEAN_DIFF].to_numpy(dtype=float)
        err = np.vstack([x - rows[S.DIFF_CI_LOW].to_numpy(dtype=float),
                         rows[S.DIFF_CI_HIGH].to_numpy(dtype=float) - x])
        color = f"C{i % 10}"
        ax.errorbar(x, y, xerr=err, fmt="none", capsize=3, color=color)
        sig = rows[S.SIGNIFICANT].fillna(False).to_numpy(dtype=bool)
        ax.scatter(x[sig], y[sig], color=color, zorder=3, label=f"{cand}")
        ax.scatter(x[~sig], y[~sig], facecolors="white", edgecolors=color, zorder=3)
    ax.axvline(0, color="grey", linewidth=1)
    ax.set_yticks(np.arange(len(keys)), labels=keys)
    ax.invert_yaxis()
    ax.set_xlabel("candidate - baseline (mean over paired queries)")
    baseline = ", ".join(dict.fromkeys(df[S.BASELINE]))
    ax.set_title(f"against {baseline}")
    ax.grid(axis="x", alpha=0.3)
    _legend(fig, [ax], title="candidate (filled: significant)")
    return fig


def unjudged_share(
    aggregate: pd.DataFrame, *, run_columns: Sequence[str], date_column: str | None,
    date: str | None, warning_share: float,
) -> Figure | None:
    """1 - mean Judged@k (the aggregate's macro rows) against k, one line per run."""
    df = _macro(_at_date(aggregate, date_column, date))
    df = df[(df[S.MEASURE] == JUDGED) & df[S.CUTOFF].notna() & ~df[S.JUDGED_ONLY]].copy()
    if df.empty:
        return None
    df["run"] = _runs(df, run_columns)
    fig = Figure(figsize=(6.5, 3.6), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    for run, one in df.groupby("run", sort=True):
        one = one.sort_values(S.CUTOFF)
        ax.plot(one[S.CUTOFF], 1.0 - one[S.VALUE], marker="o", label=run)
    ax.axhline(warning_share, color="red", linestyle="--", linewidth=1,
               label=f"warning share ({warning_share:.0%})")
    ks = sorted(int(k) for k in df[S.CUTOFF].unique())
    ax.set_xticks(ks)
    ax.set_ylim(0, 1)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_xlabel("k")
    ax.set_ylabel("unjudged share of the top k")
    ax.grid(alpha=0.3)
    _legend(fig, [ax])
    return fig


def trend(
    aggregate: pd.DataFrame, *, run_columns: Sequence[str], date_column: str | None,
    measure_keys: Sequence[str],
) -> Figure | None:
    """Each measure's macro mean over the dates, one line per run, its interval shaded."""
    if date_column is None:
        return None
    df = _macro(aggregate)
    df = df[df[S.MEASURE_KEY].isin(measure_keys)].copy()
    if df.empty:
        return None
    df["run"] = _runs(df, run_columns)
    dates = sorted(df[date_column].unique())
    position = {d: i for i, d in enumerate(dates)}
    keys = [k for k in measure_keys if k in set(df[S.MEASURE_KEY])]
    fig, axes = _figure(len(keys), extra_height=1.4)
    for ax, key in zip(axes, keys, strict=True):
        rows = df[df[S.MEASURE_KEY] == key]
        for run, one in rows.groupby("run", sort=True):
            one = one.sort_values(date_column)
            x = one[date_column].map(position).to_numpy()
            line = ax.plot(x, one[S.VALUE], marker="o", markersize=3, label=run)[0]
            low, high = one[S.CI_LOW].to_numpy(dtype=float), one[S.CI_HIGH].to_numpy(dtype=float)
            ax.fill_between(x, low, high, color=line.get_color(), alpha=0.15, linewidth=0)
        every = max(1, math.ceil(len(dates) / 6))  # at most 6 date labels per panel
        shown = list(range(0, len(dates), every))
        ax.set_xticks(shown, labels=[dates[i][5:] if len(dates[i]) == 10 else dates[i]
                                     for i in shown])
        ax.set_xlim(-0.5, len(dates) - 0.5)
        ax.set_title(key)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("mean (shaded: interval)")
    year = {d[:4] for d in dates if len(d) == 10}
    _legend(fig, axes, title=f"{date_column} ({'/'.join(sorted(year))}, month-day)"
            if year else date_column)
    return fig


def _visible_texts(fig: Figure) -> list[Text]:
    """The texts a draw of ``fig`` shows: titles, labels, legends, the ticks in view."""
    texts: list[Text] = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            locs = axis.get_majorticklocs()
            span = (high - low) or 1.0
            for tick, loc in zip(axis.get_major_ticks(len(locs)), locs, strict=True):
                if low - 1e-9 * span <= loc <= high + 1e-9 * span:
                    texts += [t for t in (tick.label1, tick.label2) if t.get_visible()]
            texts += [axis.label, axis.get_offset_text()]
        texts += [ax.title, ax._left_title, ax._right_title, *ax.texts]
        if ax.get_legend() is not None:
            texts += [*ax.get_legend().get_texts(), ax.get_legend().get_title()]
    for legend in fig.legends:
        texts += [*legend.get_texts(), legend.get_title()]
    texts += list(fig.texts)
    return [t for t in texts if t.get_visible() and t.get_text().strip()]


def layout_problems(fig: Figure) -> list[str]:
    """Texts of ``fig`` that overlap each other or leave the figure (empty: none).

    The figure is drawn first, so the bounding boxes are the ones a saved image has.
    Two texts overlap when their boxes share more than one pixel in each direction.
    """
    renderer = fig.canvas.get_renderer()
    fig.draw(renderer)
    texts = _visible_texts(fig)
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts]
    frame = fig.bbox
    problems = []
    for text, box in boxes:
        if (box.x0 < frame.x0 - 1 or box.y0 < frame.y0 - 1 or box.x1 > frame.x1 + 1
                or box.y1 > frame.y1 + 1):
            problems.append(f"{text!r} leaves the figure")
    for (a, box_a), (b, box_b) in combinations(boxes, 2):
        dx = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
        dy = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
        if dx > 1 and dy > 1:
            problems.append(f"{a!r} overlaps {b!r}")
    return problems
