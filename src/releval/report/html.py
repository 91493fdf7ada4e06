"""One self-contained HTML page: tables of numbers, the figures as inline PNG, the lineage.

Nothing in the page is fetched: the style is inline and every figure is a base64
``data:`` image. Values are printed to 4 decimals, with the full value in the cell's
``title``. The page fits its width: a table wider than the text scrolls in its own box,
and a long table is folded under a summary.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import pandas as pd
from matplotlib.figure import Figure

from releval.core import columns as S
from releval.core.overall import MACRO, overall
from releval.report.data import ReportData, TableRead, run_label

#: A table with more rows than this is folded (``<details>``) under a one-line summary.
FOLD_ROWS = 12
#: How many of the most unjudged (run partition, k) pairs a folded list shows.
WORST = 5

STYLE = """
body { font-family: sans-serif; margin: 1.5em auto; padding: 0 1em; max-width: 1200px;
       color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
section.headline { background: #f6f8fa; border: 1px solid #dde3ea; padding: 0 1em 0.5em; }
section.headline h2 { margin-top: 0.8em; }
.headline li { margin: 0.35em 0; line-height: 1.4; }
.headline span[data-measure] { white-space: nowrap; }
div.wide { max-width: 100%; overflow-x: auto; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.85em; }
th, td { border: 1px solid #ddd; padding: 3px 7px; text-align: right; }
th { background: #f3f3f3; vertical-align: bottom; } td.name, th.name { text-align: left; }
td { white-space: nowrap; } td.name { white-space: normal; }
td.long { overflow-wrap: anywhere; min-width: 6em; }
details { margin: 0.5em 0; } summary { cursor: pointer; color: #245; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 0.85em; color: #555; max-width: 900px; }
p.note { color: #555; font-size: 0.9em; max-width: 900px; }
.warn { color: #a00; }
"""


@dataclass(frozen=True)
class Section:
    """One titled part of the page: explanatory text, a figure or tables."""

    anchor: str
    title: str
    body: str


def esc(value: object) -> str:
    return html.escape("" if value is None else str(value))


def png(fig: Figure, *, alt: str, caption: str, name: str) -> str:
    """A figure as an inline PNG ``<figure>`` element."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return (
        f'<figure data-figure="{esc(name)}"><img alt="{esc(alt)}" '
        f'src="data:image/png;base64,{data}"><figcaption>{caption}</figcaption></figure>'
    )


def number(value: object, *, digits: int = 4) -> str:
    """A table cell for a number: rounded text, full value in the title."""
    if value is None or (isinstance(value, float) and value != value):
        return "<td></td>"
    if isinstance(value, (int,)) and not isinstance(value, bool):
        return f"<td>{value}</td>"
    v = float(value)  # type: ignore[arg-type]
    return f'<td title="{v!r}">{v:.{digits}f}</td>'


def table(header: Sequence[str], rows: Sequence[Sequence[str]], *, cls: str = "") -> str:
    """An HTML table in a box that scrolls sideways when the table is wider than the page;
    ``rows`` are lists of ready ``<td>`` cells; a column name breaks after an underscore."""
    names = [esc(h).replace("_", "_<wbr>") for h in header]
    head = "".join(f'<th class="name">{h}</th>' if i == 0 else f"<th>{h}</th>"
                   for i, h in enumerate(names))
    body = "".join(f"<tr>{''.join(r)}</tr>" for r in rows)
    return (f'<div class="wide"><table class="{cls}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def folded(summary: str, body: str, *, rows: int) -> str:
    """``body`` as it is up to :data:`FOLD_ROWS` rows, else folded under ``summary``."""
    if rows <= FOLD_ROWS:
        return body
    return f"<details><summary>{summary}</summary>{body}</details>"


#: A text cell longer than this (a path, an id) may break anywhere; shorter ones break
#: between words only.
LONG_TEXT = 20


def name_cell(value: object) -> str:
    text = esc(value)
    cls = "name long" if len(text) > LONG_TEXT else "name"
    return f'<td class="{cls}">{text}</td>'


def means_table(data: ReportData, measure_keys: Sequence[str]) -> str:
    """Macro means at the report's date: one row per run, one column per measure; the
    interval under each value."""
    df = overall(data.aggregate, MACRO)
    if data.date_column is not None:
        df = df[df[data.date_column] == data.date]
    keys = [k for k in measure_keys if k in set(df[S.MEASURE_KEY])]
    rows = []
    for run, one in df.groupby(df.apply(lambda r: run_label(r, data.run_columns), axis=1)):
        by_key = one.set_index(S.MEASURE_KEY)
        cells = [name_cell(run), f"<td>{int(one[S.NUM_QUERIES].max())}</td>"]
        for key in keys:
            if key not in by_key.index:
                cells.append("<td></td>")
                continue
            r = by_key.loc[key]
            interval = ""
            if pd.notna(r[S.CI_LOW]):
                interval = f"<br><small>[{r[S.CI_LOW]:.4f}, {r[S.CI_HIGH]:.4f}]</small>"
            cells.append(
                f'<td data-run="{esc(run)}" data-measure="{esc(key)}" '
                f'title="{float(r[S.VALUE])!r}">'
                f"{r[S.VALUE]:.4f}{interval}</td>"
            )
        rows.append(cells)
    header = ["/".join(data.run_columns) or "run", "queries", *keys]
    return table(header, rows, cls="means")


def warnings_table(data: ReportData, *, warning_share: float, few_queries: int) -> str:
    """The details the job summary leaves out: every (run partition, k) whose top k is
    more unjudged than the warning share, and every mean that rests on few queries."""
    agg = data.aggregate
    parts = [*data.run_columns, *([data.date_column] if data.date_column else [])]
    macro = overall(agg, MACRO)
    judged = macro[(macro[S.MEASURE] == "Judged") & macro[S.CUTOFF].notna()
                   & ~macro[S.JUDGED_ONLY]]
    high = judged[(1.0 - judged[S.VALUE]) > warning_share].sort_values([*parts, S.CUTOFF])
    rows = [[*(name_cell(r[c]) for c in parts), f"<td>{int(r[S.CUTOFF])}</td>",
             f"<td>{1.0 - r[S.VALUE]:.1%}</td>"] for _, r in high.iterrows()]
    out = [f"<p>Top k more than {warning_share:.0%} unjudged (1 - mean Judged@k, aggregate "
           f"table, macro): {len(rows)} of {len(judged)} (run partition, k) pairs.</p>"]
    header = [*parts, "k", "unjudged share"]
    if len(rows) > FOLD_ROWS:
        worst = high.assign(_share=1.0 - high[S.VALUE]).sort_values(
            ["_share", *parts, S.CUTOFF], ascending=[False, *[True] * (len(parts) + 1)],
            kind="stable").head(WORST)
        out.append(f"<p>The {WORST} most unjudged:</p>")
        out.append(table(header, [[*(name_cell(r[c]) for c in parts),
                                   f"<td>{int(r[S.CUTOFF])}</td>", f"<td>{r['_share']:.1%}</td>"]
                                  for _, r in worst.iterrows()], cls="unjudged-worst"))
    if rows:
        out.append(folded(f"All {len(rows)} pairs above {warning_share:.0%}",
                          table(header, rows, cls="unjudged"), rows=len(rows)))
    few = (macro.groupby(parts)[S.NUM_QUERIES].max().reset_index() if parts
           else macro[[S.NUM_QUERIES]].max().to_frame().T)
    few = few[few[S.NUM_QUERIES] < few_queries]
    out.append(f"<p>Run partitions whose means rest on fewer than {few_queries} queries: "
               f"{len(few)}.</p>")
    if len(few):
        out.append(folded(
            f"All {len(few)} run partitions",
            table([*parts, "queries"],
                  [[*(name_cell(r[c]) for c in parts), f"<td>{int(r[S.NUM_QUERIES])}</td>"]
                   for _, r in few.iterrows()], cls="few"),
            rows=len(few)))
    return "".join(out)


def comparison_table(comparison: pd.DataFrame) -> str:
    """Each candidate and measure: the difference, its p-value, what the t-test could detect
    and the difference with every unjudged document relevant (blank where a row has no
    value, or its table no such column: an older schema version)."""
    cols = [S.CANDIDATE, S.MEASURE_KEY, S.NUM_PAIRS, S.BASELINE_MEAN, S.CANDIDATE_MEAN,
            S.MEAN_DIFF, S.DIFF_CI_LOW, S.DIFF_CI_HIGH, S.WINS, S.TIES, S.LOSSES,
            S.RANDOMIZATION_P_ADJUSTED, S.SIGNIFICANT, S.MIN_DETECTABLE_DIFF, S.QUERIES_NEEDED,
            S.MEAN_DIFF_BEST, S.SIGN_HOLDS]
    rows = []
    for _, r in comparison.sort_values([S.CANDIDATE, S.MEASURE_KEY]).iterrows():
        cells = [name_cell(r[S.CANDIDATE]), name_cell(r[S.MEASURE_KEY])]
        for c in cols[2:]:
            v = r.get(c)
            if c == S.SIGNIFICANT:
                cells.append(f"<td>{'yes' if v else 'no'}</td>")
            elif v is None or pd.isna(v):
                cells.append("<td></td>")
            elif c == S.SIGN_HOLDS:  # false: judging the unjudged documents could flip it
                cells.append(f"<td>{'yes' if v else '<b>no</b>'}</td>")
            elif c in (S.NUM_PAIRS, S.WINS, S.TIES, S.LOSSES, S.QUERIES_NEEDED):
                cells.append(f"<td>{int(v)}</td>")
            else:
                cells.append(number(v))
        rows.append(cells)
    return folded(f"All {len(rows)} rows: each candidate and measure, with its p-value, "
                  "wins, ties and losses, the smallest difference the t-test detects and, "
                  "for [best] measures, the difference with every unjudged document relevant",
                  table(cols, rows, cls="comparison"), rows=len(rows))


def lineage_tables(data: ReportData) -> str:
    """The job runs that wrote the aggregate rows (from the run log) and the table
    versions the report read."""
    out = []
    if data.run_log is not None and len(data.run_log):
        cols = ["job_run_id", "status", "started_at", "finished_at", "releval_version",
                "config_hash", "run_source", "run_version", "qrels_source", "qrels_version",
                "qrels_filter", "selection", "per_query_version", "aggregate_version"]
        rows = []
        for _, r in data.run_log.iterrows():
            cells = []
            for c in cols:
                v = r[c]
                if c == "config_hash":
                    v = str(v)[:12]
                if pd.isna(v) if not isinstance(v, (list, tuple)) else False:
                    v = ""
                elif c in ("run_version", "qrels_version", "per_query_version",
                           "aggregate_version"):
                    v = int(v)
                cells.append(name_cell(v))
            rows.append(cells)
        out.append(folded(f"All {len(rows)} job runs", table(cols, rows, cls="lineage"),
                          rows=len(rows)))
    else:
        out.append('<p class="note">No run log: these tables were not written by the batch '
                   "job (releval evaluate writes no run log).</p>")
    out.append(table(["table", "path", "version read"],
                     [[name_cell(t.name), name_cell(t.path), f"<td>{t.version}</td>"]
                      for t in data.tables], cls="tables"))
    return "".join(out)


def page(title: str, sections: Sequence[Section], *, subtitle: str, headline: str = "") -> str:
    """The whole HTML document; ``headline`` (HTML) comes first, above the contents."""
    toc = "".join(f'<li><a href="#{s.anchor}">{esc(s.title)}</a></li>' for s in sections)
    body = "".join(f'<section id="{s.anchor}"><h2>{esc(s.title)}</h2>{s.body}</section>'
                   for s in sections)
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>"
        f"<h1>{esc(title)}</h1><p class=\"note\">{subtitle} Generated {generated}.</p>"
        f"{headline}<ul>{toc}</ul>{body}</body></html>\n"
    )


def table_reads(reads: Sequence[TableRead]) -> str:
    return ", ".join(f"{t.name} v{t.version}" for t in reads)
