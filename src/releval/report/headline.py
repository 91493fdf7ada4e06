"""The report's headline: each run's headline means at the report's date, and which
differences of the latest comparison are significant, in a few sentences.

Every number comes from the aggregate and comparison tables; a value is printed to 3
decimals, its interval in brackets.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from releval.core import columns as S
from releval.core.measures.judged import JUDGED
from releval.core.overall import MACRO, overall
from releval.report.data import COUNT_MEASURES, ReportData, run_label
from releval.report.html import esc


def _measured(key: str, value: float, low: float | None, high: float | None, *,
              signed: bool) -> str:
    """``nDCG@10 0.512 [0.470, 0.550]`` (``signed``: ``+0.081 [+0.050, +0.110]``); no
    brackets when the interval is missing."""
    fmt = "+.3f" if signed else ".3f"
    interval = ""
    if low is not None and high is not None and pd.notna(low) and pd.notna(high):
        interval = f" [{float(low):{fmt}}, {float(high):{fmt}}]"
    return f"{esc(key)} {value:{fmt}}{interval}"


def _interval_name(rows: pd.DataFrame) -> str:
    """``95% t interval`` from the rows' ``ci_level`` and ``ci_method``, when they agree."""
    levels = rows[S.CI_LEVEL].dropna().unique() if S.CI_LEVEL in rows else []
    methods = rows[S.CI_METHOD].dropna().unique() if S.CI_METHOD in rows else []
    if len(levels) == 1 and len(methods) == 1:
        return f"{float(levels[0]):.0%} {methods[0]} interval"
    return "interval"


def run_means(data: ReportData, measure_keys: Sequence[str]) -> str:
    """One line per run partition at the report's date: its macro mean of each of
    ``measure_keys`` with its interval; empty when there is none."""
    df = overall(data.aggregate, MACRO)
    df = df[df[S.MEASURE_KEY].isin(measure_keys)]
    if data.date_column is not None:
        df = df[df[data.date_column] == data.date]
    if df.empty:
        return ""
    order = {k: i for i, k in enumerate(measure_keys)}
    lines = []
    for run, rows in df.groupby(df.apply(lambda r: run_label(r, data.run_columns), axis=1)):
        rows = rows.sort_values(S.MEASURE_KEY, key=lambda s: s.map(order))
        values = ", ".join(
            f'<span data-measure="{esc(r[S.MEASURE_KEY])}">'
            + _measured(r[S.MEASURE_KEY], float(r[S.VALUE]), r[S.CI_LOW], r[S.CI_HIGH],
                        signed=False) + "</span>"
            for _, r in rows.iterrows())
        queries = int(rows[S.NUM_QUERIES].max())
        lines.append(f'<li data-run="{esc(run)}"><b>{esc(run)}</b> ({queries} queries): '
                     f"{values}</li>")
    at = f" on {esc(data.date_column)} = {esc(data.date)}" if data.date_column else ""
    return (f"<p>Macro mean of each measure{at}, with its {_interval_name(df)}:</p>"
            f'<ul class="headline-runs">{"".join(lines)}</ul>')


def short_labels(labels: Sequence[str], run_columns: Sequence[str]) -> tuple[dict[str, str], str]:
    """Comparison labels without the ``key=value`` parts they all share, and those parts.

    ``system=hybrid/date=2026-11-28`` and ``system=bm25/date=2026-11-28`` become ``hybrid``
    and ``bm25`` (a run column shows its value only), shared ``date=2026-11-28``. Labels
    of another form, or that would read the same once shortened, stay whole.
    """
    whole = {label: label for label in labels}
    parsed = [label.split("/") for label in labels]
    if not labels or not all("=" in p for parts in parsed for p in parts):
        return whole, ""
    pairs = [dict(p.split("=", 1) for p in parts) for parts in parsed]
    shared = {k: v for k, v in pairs[0].items() if all(p.get(k) == v for p in pairs)}
    short = {
        label: "/".join(v if k in run_columns else f"{k}={v}"
                        for k, v in p.items() if k not in shared) or label
        for label, p in zip(labels, pairs, strict=True)
    }
    if len(set(short.values())) < len(short):
        return whole, ""
    return short, "/".join(f"{k}={v}" for k, v in shared.items())


def _test_name(rows: pd.DataFrame) -> str:
    """``randomization, holm, alpha 0.05`` from the rows (the Tukey HSD takes no correction)."""
    names = []
    for test, correction, alpha in rows[[S.TEST, S.CORRECTION, S.ALPHA]].drop_duplicates(
            ).itertuples(index=False):
        parts = [test] if test == "tukey" else [test, correction]
        names.append(", ".join([*parts, f"alpha {float(alpha):g}"]))
    return "; ".join(names)


def comparison_verdict(comparison: pd.DataFrame | None, measure_keys: Sequence[str],
                       run_columns: Sequence[str]) -> str:
    """A sentence per candidate of ``comparison`` (the latest comparison's rows) naming
    the measures whose difference is significant, with the difference and its interval,
    and the measures whose difference is not; empty without rows.

    Judged@k and the count measures are left to the comparison table.
    """
    if comparison is None or comparison.empty:
        return ""
    df = comparison[~comparison[S.MEASURE].isin([*COUNT_MEASURES, JUDGED])]
    if df.empty:
        return ""
    order = {k: i for i, k in enumerate(measure_keys)}
    # the headline measures in their order, any other after them by name
    df = df.sort_values(S.MEASURE_KEY).sort_values(
        S.MEASURE_KEY, key=lambda s: s.map(order).fillna(len(order)), kind="stable")
    labels = list(dict.fromkeys([*df[S.BASELINE], *df[S.CANDIDATE]]))
    short, shared = short_labels(labels, run_columns)
    test = _test_name(df)
    items = []
    for candidate, rows in df.groupby(S.CANDIDATE, sort=True):
        pair = " and ".join(f"{esc(short[c])} vs {esc(short[b])}"
                            for c, b in rows[[S.CANDIDATE, S.BASELINE]].drop_duplicates(
                                ).itertuples(index=False))
        sig = rows[rows[S.SIGNIFICANT].fillna(False).astype(bool)]
        rest = rows.drop(sig.index)
        said = []
        if len(sig):
            said.append("significant on " + ", ".join(
                f'<span data-measure="{esc(r[S.MEASURE_KEY])}" data-significant="true">'
                + _measured(r[S.MEASURE_KEY], float(r[S.MEAN_DIFF]), r[S.DIFF_CI_LOW],
                            r[S.DIFF_CI_HIGH], signed=True) + "</span>"
                for _, r in sig.iterrows()))
        if len(rest):
            said.append(("not significant on " if len(sig) else "no significant difference: ")
                         + ", ".join(esc(k) for k in rest[S.MEASURE_KEY]))
        items.append(f'<li data-candidate="{esc(candidate)}"><b>{pair}</b>: '
                     f'{"; ".join(said)}.</li>')
    of = f", {esc(shared)}" if shared else ""
    cid = esc(", ".join(dict.fromkeys(df[S.COMPARISON_ID].astype(str))))
    lead = (f"<p>Latest comparison ({cid}{of}), candidate minus baseline: the mean over "
            "paired queries with its interval at 1&nbsp;-&nbsp;alpha, significant by "
            f"{esc(test)}.")
    if not df[S.SIGNIFICANT].fillna(False).astype(bool).any():
        lead += " <strong>No difference is significant.</strong>"
    return f'{lead}</p><ul class="headline-comparison">{"".join(items)}</ul>'


def headline_section(data: ReportData, comparison: pd.DataFrame | None,
                     measure_keys: Sequence[str]) -> str:
    """The headline's HTML: :func:`run_means` and :func:`comparison_verdict`."""
    body = (run_means(data, measure_keys)
            + comparison_verdict(comparison, measure_keys, data.run_columns))
    return f'<section id="headline" class="headline"><h2>Headline</h2>{body}</section>'
