"""The report's slices: the slice figure from the comparison table's slice and weighted rows,
the queries that lost most from the per-query rows (against a pandas ranking), and the
comparison table and figure kept to the rows over all queries."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.collections import PathCollection

from releval.core import columns as S
from releval.report import figures
from releval.report.slices import (
    overall_comparison,
    slice_differences,
    slices_html,
    worst_queries,
)

BASE, CAND = "system=bm25/date=d1", "system=dense/date=d1"


def comparison() -> pd.DataFrame:
    rows = []
    for key in ("RR", "P@5"):
        for sl, value, averaging, diff in [
            (None, None, "macro", 0.02), (None, None, "weighted", -0.03),
            ("segment", "head", "macro", -0.05), ("segment", "tail", "macro", 0.06),
            ("segment", "head", "weighted", -0.05), ("segment", "tail", "weighted", 0.07),
        ]:
            rows.append({S.COMPARISON_ID: "c1", S.BASELINE: BASE, S.CANDIDATE: CAND,
                         S.MEASURE_KEY: key, S.SLICE: sl, S.SLICE_VALUE: value,
                         S.AVERAGING: averaging, S.MEAN_DIFF: diff, S.DIFF_CI_LOW: diff - 0.04,
                         S.DIFF_CI_HIGH: diff + 0.04, S.PAIRING: "zero",
                         S.SIGNIFICANT: None if averaging == "weighted" else abs(diff) > 0.04})
    return pd.DataFrame(rows)


def per_query() -> pd.DataFrame:
    rng = np.random.default_rng(2)
    rows = []
    for system in ("bm25", "dense"):
        for key in ("RR", "P@5"):
            for i in range(30):
                rows.append({"system": system, "date": "d1", S.MEASURE_KEY: key,
                             S.QUERY_ID: f"q{i:02d}", S.VALUE: float(rng.integers(0, 5) / 4)})
    return pd.DataFrame(rows)


def test_overall_rows_keep_the_comparison_table_and_figure():
    cmp = comparison()
    plain = overall_comparison(cmp)
    assert len(plain) == 2 and set(plain[S.AVERAGING]) == {"macro"}
    assert plain[S.SLICE].isna().all()
    # an older table without the slice columns is all overall rows
    old = cmp.drop(columns=[S.SLICE, S.SLICE_VALUE, S.AVERAGING])
    assert overall_comparison(old) is old


def test_slice_figure_draws_each_slice_value_and_weighted_row():
    fig = slice_differences(comparison(), ["RR", "P@5"])
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["P@5 all", "P@5 segment=head", "P@5 segment=tail", "RR all",
                      "RR segment=head", "RR segment=tail"]
    # 10 slice / weighted rows: the overall macro rows are the other figure's
    drawn = sum(len(c.get_offsets()) for c in ax.collections if isinstance(c, PathCollection))
    assert drawn == 10
    assert figures.layout_problems(fig) == []
    assert slice_differences(overall_comparison(comparison()), ["RR"]) is None


def test_the_queries_that_lost_most_equal_a_pandas_ranking():
    pq = per_query()
    found = worst_queries(pq, overall_comparison(comparison()), ["RR", "P@5"], count=3)
    wide = pq.pivot_table(index=[S.MEASURE_KEY, S.QUERY_ID], columns="system",
                          values=S.VALUE).reset_index()
    wide["diff"] = wide["dense"] - wide["bm25"]
    for key in ("RR", "P@5"):
        lost = wide[(wide[S.MEASURE_KEY] == key) & (wide["diff"] < 0)]
        want = lost.sort_values(["diff", S.QUERY_ID]).head(3)[S.QUERY_ID].tolist()
        got = found[found[S.MEASURE_KEY] == key][S.QUERY_ID].tolist()
        assert got == want, key
    html = slices_html(pq, comparison(), ["RR", "P@5"])
    assert 'data-figure="slice_differences"' in html
    assert "The queries that lost most" in html and f">{want[0]}<" in html
