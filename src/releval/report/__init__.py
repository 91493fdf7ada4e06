"""``releval report``: one self-contained HTML page over the output tables.

:func:`build` reads the tables a config's batch job wrote (:mod:`releval.report.data`), draws
the figures (:mod:`releval.report.figures`) and returns the page (:mod:`releval.report.html`),
its headline first (:mod:`releval.report.headline`); :func:`write` saves it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from matplotlib.figure import Figure

from releval.config import Config
from releval.core import columns as S
from releval.core.measures import parse_measures
from releval.core.measures.judged import JUDGED
from releval.frames.intervals import FEW_QUERIES
from releval.report import figures
from releval.report.agreement import agreement_section, latest_agreements
from releval.report.answers import answers_section, read_answers
from releval.report.clicks import clicks_section
from releval.report.data import (
    COUNT_MEASURES,
    ReportData,
    latest_comparison,
    read_report_data,
)
from releval.report.gate import gate_verdict
from releval.report.headline import headline_section
from releval.report.html import (
    Section,
    comparison_table,
    esc,
    lineage_tables,
    means_table,
    page,
    png,
    table_reads,
    warnings_table,
)
from releval.report.slices import overall_comparison, slices_html
from releval.report.window import window_section

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


#: Under the comparison table: how to read a difference that is not significant.
POWER_NOTE = (
    '<p class="note"><code>min_detectable_diff</code>: the smallest true difference the '
    "paired t-test detects with the comparison's power (<code>comparison.power</code>, at "
    "alpha, before the correction) over these queries; <code>queries_needed</code>: the "
    "queries it needs for a difference of <code>comparison.effect_of_interest</code>. "
    "Not significant next to a <code>min_detectable_diff</code> larger than the difference "
    "that matters means too few queries to tell, not that the systems are equal "
    "(docs/statistics.md).</p>"
)


#: Under the comparison table: the difference at the other extreme of the missing labels.
BOUNDS_NOTE = (
    '<p class="note"><code>mean_diff_best</code>: for P@k, Hit@k and RR evaluated with their '
    "<code>[best]</code> form, the difference with every unjudged document relevant on both "
    "sides (<code>mean_diff</code> counts every one non-relevant); <code>sign_holds</code> "
    "no: judging those documents could reverse the comparison "
    "(docs/incomplete-judgments.md).</p>"
)


def headline_measures(config: Config) -> list[str]:
    """The configured measures that have a mean, by key, in the config's order."""
    measures = parse_measures(
        config.evaluation.measures,
        relevance_level=config.evaluation.relevance_level,
        judged_only=config.evaluation.judged_only,
    )
    return [m.key for m in measures if m.name not in (*COUNT_MEASURES, JUDGED)]


def _figure_html(fig: Figure | None, *, name: str, alt: str, caption: str, absent: str) -> str:
    if fig is None:
        return f'<p class="note">{absent}</p>'
    return png(fig, alt=alt, caption=caption, name=name)


def figures_of(data: ReportData, config: Config) -> dict[str, Figure | None]:
    """Every figure of the report, by name (None: nothing to draw)."""
    keys = headline_measures(config)
    where = dict(run_columns=data.run_columns, date_column=data.date_column, date=data.date)
    return {
        "measure_against_k": figures.measure_against_k(data.aggregate, **where),
        "distribution": figures.per_query_distribution(
            data.per_query, run_columns=data.run_columns, measure_keys=keys),
        "differences": figures.baseline_differences(
            overall_comparison(latest_comparison(data.comparison))),
        "unjudged": figures.unjudged_share(
            data.aggregate, **where, warning_share=config.evaluation.unjudged_warning_share),
        "trend": figures.trend(data.aggregate, run_columns=data.run_columns,
                               date_column=data.date_column, measure_keys=keys),
    }


def build(config: Config, *, date: str | None = None, config_name: str = "",
          spark: SparkSession | None = None) -> str:
    """The report page of the tables ``config`` names (``date``: the date of the per-run
    figures, default the latest; ``spark`` reads catalog tables, path tables need none)."""
    data = read_report_data(config, date=date, spark=spark)
    keys = headline_measures(config)
    figs = figures_of(data, config)
    at = f" on {data.date_column} = {data.date}" if data.date_column else ""
    runs = "/".join(data.run_columns) or "run"
    every = latest_comparison(data.comparison)
    comparison = overall_comparison(every)
    if comparison is None:
        cmp_body = ('<p class="note">No comparison table yet: <code>releval compare</code> (or '
                    "<code>make compare</code>) writes one.</p>")
    elif comparison.empty:
        cmp_body = '<p class="note">The comparison table is empty.</p>'
    else:
        latest = comparison[S.COMPARISON_ID].iloc[0]
        cmp_body = _figure_html(
            figs["differences"], name="differences",
            alt="mean difference against the baseline per measure, with intervals",
            caption=(f"Comparison {esc(latest)}: mean per-query difference, candidate minus "
                     "baseline, with its interval at 1 - alpha; filled markers are significant "
                     "after the correction for multiple comparisons (docs/statistics.md)."),
            absent="The comparison table is empty.",
        ) + comparison_table(comparison) + POWER_NOTE + BOUNDS_NOTE + slices_html(
            data.per_query, every, keys)
    sections = [
        Section("means", f"Mean of each measure{at}", means_table(data, keys)
                + '<p class="note">Macro means over queries (the aggregate table, '
                "<code>averaging = 'macro'</code>) with their confidence interval below.</p>"),
        Section("against-k", "Each measure against k", _figure_html(
            figs["measure_against_k"], name="measure_against_k",
            alt="measures against the cutoff k, one line per run",
            caption=(f"Macro mean at each cutoff k, one line per {esc(runs)}{esc(at)}: recall "
                     "rises with k towards its ceiling while precision falls."),
            absent="No measure with a cutoff.")),
        Section("distribution", "Per-query values", _figure_html(
            figs["distribution"], name="distribution",
            alt="box plots of per-query values per measure and run",
            caption=(f"Distribution of the per-query values{esc(at)}: box = quartiles, "
                     "whiskers = 1.5 IQR, triangle = mean. A run with the higher mean can "
                     "still lose on many queries."),
            absent="No per-query rows for this date.")),
        Section("comparison", "Against the baseline", cmp_body),
        answers_section(read_answers(config, data, comparison, spark),
                        run_columns=data.run_columns, at=at),
        Section("unjudged", "Unjudged share of the top k", _figure_html(
            figs["unjudged"], name="unjudged",
            alt="unjudged share of the top k against k, one line per run",
            caption=("1 - mean Judged@k (aggregate table, macro: qrels queries missing from "
                     "a run count as fully unjudged when they are scored 0). Unjudged "
                     "documents count as non-relevant, so measures at a k with a high "
                     "share undercount (docs/incomplete-judgments.md)."),
            absent="No Judged@k rows.")
            + warnings_table(data, warning_share=config.evaluation.unjudged_warning_share,
                             few_queries=FEW_QUERIES)),
        Section("trend", "Trend over dates", _figure_html(
            figs["trend"], name="trend", alt="each measure over the dates, one line per run",
            caption="Macro mean per date, one line per run, its confidence interval shaded.",
            absent="The run has no date partition column.")),
        Section("lineage", "Lineage of the numbers", lineage_tables(data)),
    ]
    agreed = latest_agreements(config)
    if agreed:  # the latest agreement of each second version: [agree]'s, the click labels
        sections.insert(-1, Section("agreement", "Two qrels versions",
                                    "".join(agreement_section(rows) for rows in agreed)))
    clicked = clicks_section(config, spark)
    if clicked is not None:  # before the lineage
        sections.insert(-1, clicked)
    window = window_section(data)
    if window is not None:  # after the means: the window the means were cut at
        sections.insert(1, Section("window", f"The window{at}", window))
    subtitle = (f"Tables read: {esc(table_reads(data.tables))}"
                + (f"; config {esc(config_name)}." if config_name else "."))
    return page("releval report", [s for s in sections if s is not None], subtitle=subtitle,
                headline=gate_verdict(config, spark) + headline_section(data, comparison, keys))


def write(config: Config, output: str | Path, *, date: str | None = None,
          config_name: str = "", spark: SparkSession | None = None) -> Path:
    """Build the report and write it to ``output`` (folders created); returns the path."""
    out = Path(output)
    text = build(config, date=date, config_name=config_name, spark=spark)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return out


__all__: Sequence[str] = ("build", "write", "headline_measures", "figures_of")
