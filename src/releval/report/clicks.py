"""The report's clicks section: the position bias the job estimated from the interactions
(the ``position_bias`` table), as a curve per method with its interval, and how many labels
the ``click_labels`` table holds (docs/clicks.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pandas as pd
from matplotlib.figure import Figure

from releval.config import Config
from releval.report.data import open_output
from releval.report.figures import _figure, _legend
from releval.report.html import Section, esc, png

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: The method names as the figure's legend shows them.
METHODS = {"pbm_em": "PBM (EM, every impression)",
           "intervention_harvesting": "intervention harvesting (pairs at several positions)"}


def position_bias_figure(bias: pd.DataFrame, partition_by: Sequence[str]) -> Figure | None:
    """Examination against position, one line per method (and ``partition_by`` value), its
    interval shaded; None without rows."""
    if bias.empty:
        return None
    fig, (ax,) = _figure(1, extra_height=1.2)
    fig.set_size_inches(6.0, 3.8)
    keys = [*partition_by, "method"]
    for key, one in bias.groupby(keys, sort=True, dropna=False):
        values = key if isinstance(key, tuple) else (key,)
        method = str(values[-1])
        label = METHODS.get(method, method)
        if partition_by:
            label = ", ".join(f"{c}={v}" for c, v in zip(partition_by, values, strict=False)) \
                + f": {method}"
        one = one.sort_values("position")
        x = one["position"].to_numpy(dtype=float)
        line = ax.plot(x, one["examination"].to_numpy(dtype=float), marker="o", markersize=3,
                       label=label)[0]
        ax.fill_between(x, one["examination_low"].to_numpy(dtype=float),
                        one["examination_high"].to_numpy(dtype=float), color=line.get_color(),
                        alpha=0.15, linewidth=0)
    ax.set_xlabel("position")
    ax.set_ylabel("examination (position 1 = 1)")
    ax.set_ylim(0.0, 1.1)
    ax.grid(alpha=0.3)
    _legend(fig, [ax])
    return fig


def clicks_section(config: Config, spark: SparkSession | None = None) -> Section | None:
    """The position-bias curve and the labels' count; None when the job wrote no
    ``position_bias`` table."""
    bias_table = open_output(config, "position_bias", spark)
    if bias_table is None:
        return None
    parts = list(config.clicks.partition_by) if config.clicks else []
    bias = bias_table.read(None, [])
    fig = position_bias_figure(bias, parts)
    if fig is None:
        return Section("clicks", "Position bias", '<p class="note">The position_bias table '
                       "is empty.</p>")
    labels_table = open_output(config, "click_labels", spark)
    labels = labels_table.read(["relevance"], []) if labels_table is not None else None
    source = esc(bias["interactions_source"].iloc[0]) if len(bias) else "-"
    counted = ("" if labels is None else
               f" The click_labels table holds {len(labels)} labels "
               f"({', '.join(f'{n} of grade {g}' for g, n in labels['relevance'].value_counts().sort_index().items())}).")
    caption = ("P(a result is examined) by position, relative to position 1, estimated from "
               f"the interactions {source} (model {esc(bias['model'].iloc[0])}); shaded: "
               "its interval. Where the two methods disagree, the PBM's assumption (one "
               "examination curve for every query) is in doubt (docs/clicks.md).")
    body = png(fig, alt="examination probability against position, one line per method",
               caption=caption, name="position_bias")
    return Section("clicks", "Position bias", body + f'<p class="note">{esc(counted)}</p>'
                   if counted else body)
