"""releval report: the page's numbers against the tables, the headline, the folded tables,
the figures' data and layout, the CLI's errors, and (slow) the page in headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html import unescape
from pathlib import Path

import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PathCollection
from matplotlib.figure import Figure
from pyspark.sql import functions as F
from support.batch_support import D27, D28, D29, SHAPE, read, write_inputs

from releval import report
from releval.cli import main as releval_main
from releval.config import load_config
from releval.core import columns as S
from releval.errors import InputError
from releval.job import compare as compare_job
from releval.job.batch import run_job
from releval.job.pipeline import job_measures
from releval.job.sample import generate, generate_answers
from releval.report import figures, headline
from releval.report.data import ReportData, latest_comparison, read_report_data
from releval.report.html import FOLD_ROWS, warnings_table

pytestmark = pytest.mark.slow  # reports over the tables of whole batch jobs; the page in a browser

JOB = "report-job-1"
#: the queries of docs/which-measure.md name these measures (and Judged@k)
MEASURES = ("P@5", "P@10", "R@10", "R@50", "Hit@10", "RR", "nDCG@10", "num_ret")


def _config_text(run: str, qrels: str, out: Path) -> str:
    measures = ", ".join(f'"{m}"' for m in MEASURES)
    return f"""
[spark]
master = "local[1]"
shuffle_partitions = 2

[run]
path = "{run}"
doc_id = "item_id"
rank = "position"
partition_columns = ["system", "date"]

[qrels]
path = "{qrels}"
filter = "qrels_version = 'v1'"

[evaluation]
measures = [{measures}]

[comparison]
permutations = 200

[output]
per_query_path = "{out / 'per_query'}"
aggregate_path = "{out / 'aggregate'}"
partition_columns = ["date"]
"""


@pytest.fixture(scope="module")
def job(spark, tmp_path_factory):
    """The small sample (20 queries, 3 systems x 3 dates) with its answers evaluated by the
    batch job, and hybrid compared with bm25 on the last date; the report written from it."""
    folder = tmp_path_factory.mktemp("report")
    run, qrels = write_inputs(spark, folder)
    generate_answers(*generate(SHAPE), SHAPE).to_csv(folder / "answers.csv", index=False)
    path = folder / "job.toml"
    path.write_text(_config_text(run, qrels, folder / "out")
                    + f'[answers]\nformat = "csv"\npath = "{folder / "answers.csv"}"\n',
                    encoding="utf-8")
    config = load_config(path)
    run_job(spark, config, job_run_id=JOB)
    side = {"date": D29}
    compare_job.run(spark, config, baseline={"system": "bm25", **side},
                   candidates=[{"system": "hybrid", **side}], comparison_id="cmp-1")
    page = report.write(config, folder / "report.html", config_name="job.toml")
    return config, page, folder


def _cells(html: str, cls: str) -> list[list[str]]:
    """The text of each body cell of the table of class ``cls`` (tags stripped)."""
    body = re.search(rf'<table class="{cls}">.*?<tbody>(.*?)</tbody>', html, re.S).group(1)
    return [[re.sub(r"<[^>]+>", " ", c).split()[0] if re.sub(r"<[^>]+>", "", c).strip() else ""
             for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]


def test_the_page_shows_the_tables_numbers(spark, job):
    config, page, _ = job
    html = page.read_text(encoding="utf-8")
    # the tables read by Spark, independently of the report's deltalake reader
    aggregate = read(spark, config.output.aggregate_path)
    macro = aggregate.where((F.col(S.AVERAGING) == "macro") & (F.col("date") == D29))
    expected = {(r["system"], r[S.MEASURE_KEY]): r for r in macro.collect()}
    shown = re.findall(r'<td data-run="([^"]+)" data-measure="([^"]+)" title="([^"]+)">'
                       r"([0-9.]+)<br><small>\[([0-9.]+), ([0-9.]+)\]</small></td>", html)
    # 3 systems x 7 measures with a mean (num_ret has none, Judged@k is not a headline)
    assert len(shown) == 3 * 7
    for system, key, full, text, low, high in shown:
        row = expected[(system, key)]
        assert float(full) == row[S.VALUE]
        assert text == f"{row[S.VALUE]:.4f}"
        assert (low, high) == (f"{row[S.CI_LOW]:.4f}", f"{row[S.CI_HIGH]:.4f}")
    assert f"Mean of each measure on date = {D29}" in html
    # the comparison: one candidate, one row per compared measure (+ Judged@5, Judged@10)
    compared = {r[S.MEASURE_KEY]: r for r in read(
        spark, str(Path(config.output.per_query_path).parent / "comparison")).collect()}
    rows = _cells(html, "comparison")
    assert sorted(r[1] for r in rows) == sorted(compared)
    for r in rows:
        c = compared[r[1]]
        assert r[0] == f"system=hybrid/date={D29}" and int(r[2]) == c[S.NUM_PAIRS]
        assert r[5] == f"{c[S.MEAN_DIFF]:.4f}" and r[12] == ("yes" if c[S.SIGNIFICANT] else "no")
        # what the t-test could detect: blank where undefined (no spread of the differences)
        mdd, needed = c[S.MIN_DETECTABLE_DIFF], c[S.QUERIES_NEEDED]
        assert r[13:15] == ["" if mdd is None else f"{mdd:.4f}",
                            "" if needed is None else str(needed)]
        # no [best] measure in this config: no difference at the other extreme
        assert (c[S.MEAN_DIFF_BEST], c[S.SIGN_HOLDS], r[15:]) == (None, None, ["", ""])
    assert sum(c[S.QUERIES_NEEDED] is not None for c in compared.values()) >= 5
    assert "too few queries to tell, not that the systems are equal" in html
    _check_headline(html, expected, compared)
    # the unjudged details: every (system, date, k) above 20% unjudged, from Spark's rows
    judged = aggregate.where((F.col(S.MEASURE) == "Judged") & (F.col(S.AVERAGING) == "macro"))
    above = sorted((r["system"], r["date"], str(r[S.CUTOFF]), f"{1 - r[S.VALUE]:.1%}")
                   for r in judged.collect() if 1 - r[S.VALUE] > 0.2)
    assert above and sorted(tuple(r) for r in _cells(html, "unjudged")) == above
    # 20 queries per mean: all 9 run partitions below 50
    assert len(_cells(html, "few")) == 9
    # lineage: the job's run-log row and the versions read
    lineage = _cells(html, "lineage")
    assert [r[0] for r in lineage] == [JOB] and lineage[0][1] == "succeeded"
    tables = {r[0]: r[2] for r in _cells(html, "tables")}
    assert tables["aggregate"] == str(_delta_version(spark, config.output.aggregate_path))
    # every figure is embedded, none fetched
    names = re.findall(r'<figure data-figure="([a-z_]+)"><img alt="[^"]+" src="data:image/png;'
                       r'base64,', html)
    assert names == ["measure_against_k", "distribution", "differences", "cells", "unjudged",
                     "trend"]
    # the moves of hybrid's answers: every query answered by both sides, from Spark's rows
    answered = read(spark, config.output.per_query_path).where(
        (F.col(S.MEASURE_KEY) == "Hit@10") & (F.col("date") == D29)
        & F.col(S.ANSWER_SCORE).isNotNull())
    both = answered.groupBy(S.QUERY_ID).agg(F.collect_set("system").alias("s")).where(
        F.array_contains("s", "bm25") & F.array_contains("s", "hybrid")).count()
    moved = [[int(n) for n in row[1:]] for row in _cells(html, "moves")]
    assert len(moved) == 4 and sum(map(sum, moved)) == both > 0
    assert f'<p data-moves="system=hybrid/date={D29}">system=hybrid/date={D29}: answers gained' in html
    assert not re.search(r'(src|href)="(https?:)?//', html)


#: The measures with a mean, in the config's order: the headline's measures.
HEADLINE = [m for m in MEASURES if m != "num_ret"]
#: A mean (or a signed difference) and its interval, as the headline prints them.
VALUE = r"([+-]?[0-9]\.[0-9]{3}) \[([+-]?[0-9]\.[0-9]{3}), ([+-]?[0-9]\.[0-9]{3})\]"


def _check_headline(html: str, expected: dict, compared: dict) -> None:
    """The headline above the contents: each system's means on D29 and the comparison's
    verdict, against Spark's rows of the aggregate (``expected``) and comparison tables."""
    head = re.search(r'<section id="headline".*?</section>', html, re.S)
    assert head and head.start() < html.index('<ul><li><a href="#means">')
    runs = re.findall(r'<li data-run="([^"]+)">(.*?)</li>', head.group(0), re.S)
    assert [r for r, _ in runs] == ["bm25", "dense", "hybrid"]
    for system, line in runs:
        assert f"<b>{system}</b> (20 queries): " in line
        said = re.findall(rf'<span data-measure="([^"]+)">\1 {VALUE}</span>', line)
        assert [k for k, *_ in said] == HEADLINE
        for key, value, low, high in said:
            row = expected[(system, key)]
            assert (value, low, high) == (f"{row[S.VALUE]:.3f}", f"{row[S.CI_LOW]:.3f}",
                                          f"{row[S.CI_HIGH]:.3f}")
    # one candidate: hybrid against bm25 on D29, Judged@k left to the table
    (verdict,) = re.findall(r'<li data-candidate="([^"]+)"><b>([^<]+)</b>: (.*?)</li>',
                            head.group(0), re.S)
    assert verdict[:2] == (f"system=hybrid/date={D29}", "hybrid vs bm25")
    significant = [k for k in HEADLINE if compared[k][S.SIGNIFICANT]]
    rest = [k for k in HEADLINE if not compared[k][S.SIGNIFICANT]]
    said = re.findall(rf'<span data-measure="([^"]+)" data-significant="true">\1 {VALUE}</span>',
                      verdict[2])
    assert [k for k, *_ in said] == significant
    for key, diff, low, high in said:
        c = compared[key]
        assert (diff, low, high) == (f"{c[S.MEAN_DIFF]:+.3f}", f"{c[S.DIFF_CI_LOW]:+.3f}",
                                     f"{c[S.DIFF_CI_HIGH]:+.3f}")
    lead = "not significant on " if significant else "no significant difference: "
    assert verdict[2].endswith(lead + ", ".join(rest) + ".")
    assert (f"date={D29}), candidate minus baseline" in head.group(0)
            and "significant by randomization, holm, alpha 0.05." in head.group(0))
    none = "<strong>No difference is significant.</strong>"
    assert (none in head.group(0)) == (not significant)


def _text(html: str) -> str:
    """The text of some HTML, one line per list item or paragraph."""
    return re.sub(r"<[^>]+>", "", re.sub(r"</(li|p)>", "\n", html)).replace("&nbsp;", " ")


def _comparison_rows(comparison_id: str, at: str, rows) -> list[dict]:
    """Comparison rows of dense against bm25 on D29: (key, measure, k, diff, low, high,
    significant) each; randomization test, holm, alpha 0.05."""
    return [{S.COMPARISON_ID: comparison_id, S.COMPARED_AT: pd.Timestamp(at),
             S.CANDIDATE: f"system=dense/date={D29}", S.BASELINE: f"system=bm25/date={D29}",
             S.MEASURE_KEY: key, S.MEASURE: measure, S.CUTOFF: k, S.MEAN_DIFF: diff,
             S.DIFF_CI_LOW: low, S.DIFF_CI_HIGH: high, S.SIGNIFICANT: significant,
             S.TEST: "randomization", S.CORRECTION: "holm", S.ALPHA: 0.05}
            for key, measure, k, diff, low, high, significant in rows]


def _data(aggregate: pd.DataFrame, comparison: pd.DataFrame | None) -> ReportData:
    return ReportData(aggregate=aggregate, per_query=pd.DataFrame(), comparison=comparison,
                      run_log=None, run_columns=("system",), date_column="date",
                      date=aggregate["date"].max(), tables=())


def test_the_headline_gives_the_means_and_says_plainly_when_nothing_is_significant():
    keys = {"P@5": ("P", 5), "AP": ("AP", None), "Judged@5": ("Judged", 5)}
    agg = _aggregate(["bm25", "dense"], [D28, D29], keys)
    # the latest comparison (cmp-2) finds nothing; the older one (cmp-1) did
    cmp = pd.DataFrame(
        _comparison_rows("cmp-1", "2026-11-30 08:00", [("P@5", "P", 5, 0.3, 0.2, 0.4, True)])
        + _comparison_rows("cmp-2", "2026-12-01 08:00", [
            ("AP", "AP", None, -0.05, -0.1, 0.0, False),
            ("P@5", "P", 5, 0.02, -0.01, 0.05, False),
            ("Judged@5", "Judged", 5, 0.1, 0.05, 0.15, True)]))
    text = _text(headline.headline_section(_data(agg, cmp), latest_comparison(cmp), ["P@5", "AP"]))
    # on D29 (index 1): bm25 0.1 + 0.01 = 0.11 +- 0.05, dense 0.31 +- 0.05; P@5 before AP
    assert text.splitlines() == [
        "HeadlineMacro mean of each measure on date = 2026-11-29, with its interval:",
        "bm25 (100 queries): P@5 0.110 [0.060, 0.160], AP 0.110 [0.060, 0.160]",
        "dense (100 queries): P@5 0.310 [0.260, 0.360], AP 0.310 [0.260, 0.360]",
        "Latest comparison (cmp-2, date=2026-11-29), candidate minus baseline: the mean over "
        "paired queries with its interval at 1 - alpha, significant by randomization, holm, "
        "alpha 0.05. No difference is significant.",
        # Judged@5 is significant but not a headline measure
        "dense vs bm25: no significant difference: P@5, AP.",
    ]


def test_the_headline_names_each_significant_difference_with_its_interval():
    cmp = pd.DataFrame(_comparison_rows("cmp-1", "2026-12-01 08:00", [
        ("AP", "AP", None, -0.05, -0.1, 0.0, False),
        ("P@5", "P", 5, 0.2, 0.1, 0.3, True)])).assign(**{S.TEST: "tukey", S.ALPHA: 0.01})
    lines = _text(headline.comparison_verdict(cmp, ["P@5", "AP"], ("system",))).splitlines()
    assert lines[0].endswith("significant by tukey, alpha 0.01.")
    assert lines[1] == "dense vs bm25: significant on P@5 +0.200 [+0.100, +0.300]; " \
        "not significant on AP."
    assert headline.comparison_verdict(cmp.iloc[:0], ["P@5"], ("system",)) == ""
    assert headline.comparison_verdict(None, ["P@5"], ("system",)) == ""
    # labels that are not key=value pairs, or would read the same shortened, stay whole
    assert headline.short_labels(["a", "b"], ("system",)) == ({"a": "a", "b": "b"}, "")
    assert headline.short_labels(["system=x/date=1", "system=y/date=1"], ("system",)) == (
        {"system=x/date=1": "x", "system=y/date=1": "y"}, "date=1")
    assert headline.short_labels(["system=x/date=1", "system=x/date=2"], ("system",)) == (
        {"system=x/date=1": "date=1", "system=x/date=2": "date=2"}, "system=x")


def test_a_long_unjudged_list_is_summarised_by_its_worst_pairs_and_folded():
    dates = [f"2026-11-{d:02d}" for d in range(20, 28)]
    agg = _aggregate(["bm25", "dense"], dates, {"Judged@5": ("Judged", 5),
                                                "Judged@100": ("Judged", 100)})
    # unjudged share 1 - (0.1 + 0.01 * date index) for bm25, 0.2 less for dense: all 32
    # (system, date, k) pairs above 20%; the worst: bm25's first dates, k in order
    html = warnings_table(_data(agg, None), warning_share=0.2, few_queries=50)
    assert "32 of 32 (run partition, k) pairs" in html
    assert _cells(html, "unjudged-worst") == [
        ["bm25", "2026-11-20", "5", "90.0%"], ["bm25", "2026-11-20", "100", "90.0%"],
        ["bm25", "2026-11-21", "5", "89.0%"], ["bm25", "2026-11-21", "100", "89.0%"],
        ["bm25", "2026-11-22", "5", "88.0%"]]
    folded = re.search(r"<details><summary>All 32 pairs above 20%</summary>(.*?)</details>",
                       html, re.S)
    assert folded and len(_cells(folded.group(1), "unjudged")) == 32
    # a short list is shown whole: no summary, nothing folded
    short = warnings_table(_data(agg[agg["date"] == dates[0]], None), warning_share=0.2,
                           few_queries=50)
    assert len(_cells(short, "unjudged")) == 4 <= FOLD_ROWS
    assert "<details>" not in short and "unjudged-worst" not in short


def _delta_version(spark, path: str) -> int:
    from delta.tables import DeltaTable

    return int(DeltaTable.forPath(spark, path).history(1).first()["version"])


def test_no_text_overlaps_in_the_figures_of_the_job(job):
    config, _, _ = job
    data = read_report_data(config)
    drawn = report.figures_of(data, config)
    assert all(f is not None for f in drawn.values()), drawn
    for name, fig in drawn.items():
        assert figures.layout_problems(fig) == [], name


def _aggregate(systems, dates, keys) -> pd.DataFrame:
    """Hand-made aggregate rows: value = 0.1 + 0.01 * date index (+ 0.2 for the second
    system), macro, 100 queries, interval +- 0.05."""
    rows = []
    for si, system in enumerate(systems):
        for di, date in enumerate(dates):
            for key, (measure, k) in keys.items():
                v = 0.1 + 0.01 * di + 0.2 * (si == 1)
                rows.append({"system": system, "date": date, S.MEASURE: measure, S.CUTOFF: k,
                             S.JUDGED_ONLY: False, S.MEASURE_KEY: key, S.AVERAGING: "macro",
                             S.VALUE: v, S.NUM_QUERIES: 100, S.CI_LOW: v - 0.05,
                             S.CI_HIGH: v + 0.05})
    return pd.DataFrame(rows)


KEYS = {"P@5": ("P", 5), "P@10": ("P", 10), "R@10": ("R", 10), "R@100": ("R", 100),
        "AP": ("AP", None), "Judged@5": ("Judged", 5), "Judged@100": ("Judged", 100)}


def test_figures_plot_the_tables_values():
    agg = _aggregate(["bm25", "dense"], [D27, D28, D29], KEYS)
    fig = figures.measure_against_k(agg, run_columns=("system",), date_column="date", date=D29)
    # P@k and R@k have two cutoffs each; AP has none: two panels. On D29 (index 2)
    # bm25 = 0.1 + 0.02 = 0.12 at both k, dense 0.32
    assert [ax.get_title() for ax in fig.axes] == ["P@k", "R@k"]
    lines = {ln.get_label(): (list(ln.get_xdata()), list(ln.get_ydata()))
             for ln in fig.axes[1].get_lines()}
    assert lines["bm25"] == ([10, 100], [pytest.approx(0.12)] * 2)
    assert lines["dense"][1] == [pytest.approx(0.32)] * 2
    unjudged = figures.unjudged_share(agg, run_columns=("system",), date_column="date",
                                      date=D27, warning_share=0.2)
    # 1 - Judged@k on D27: bm25 1 - 0.1 = 0.9, dense 1 - 0.3 = 0.7
    ys = {ln.get_label(): list(ln.get_ydata()) for ln in unjudged.axes[0].get_lines()}
    assert ys["bm25"] == [pytest.approx(0.9)] * 2 and ys["dense"] == [pytest.approx(0.7)] * 2
    trend = figures.trend(agg, run_columns=("system",), date_column="date",
                          measure_keys=["AP"])
    (bm25, dense) = trend.axes[0].get_lines()
    assert list(bm25.get_ydata()) == pytest.approx([0.10, 0.11, 0.12])
    assert [t.get_text() for t in trend.axes[0].get_xticklabels()] == ["11-27", "11-28", "11-29"]


def test_the_differences_figure_plots_the_comparison_rows():
    def row(key, measure, k, diff, low, high, significant):
        return {S.CANDIDATE: "system=dense", S.BASELINE: "system=bm25", S.MEASURE: measure,
                S.CUTOFF: k, S.MEASURE_KEY: key, S.MEAN_DIFF: diff, S.DIFF_CI_LOW: low,
                S.DIFF_CI_HIGH: high, S.SIGNIFICANT: significant}

    cmp = pd.DataFrame([row("P@10", "P", 10, 0.2, 0.1, 0.3, True),
                        row("P@5", "P", 5, -0.1, -0.2, 0.0, False),
                        row("AP", "AP", None, 0.1, 0.05, 0.15, True)])
    fig = figures.baseline_differences(cmp)
    ax = fig.axes[0]
    # measures in order of name, then k as a number (P@5 before P@10)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["AP", "P@5", "P@10"]
    # the scatter markers (the error bars are line collections)
    filled, hollow = (c.get_offsets() for c in ax.collections
                      if isinstance(c, PathCollection) and len(c.get_offsets()))
    assert [tuple(p) for p in filled] == [(0.1, 0.0), (0.2, 2.0)]
    assert [tuple(p) for p in hollow] == [(-0.1, 1.0)]
    assert figures.layout_problems(fig) == []


def test_no_overlaps_with_many_dates_and_long_run_names():
    dates = [f"2026-{m:02d}-{d:02d}" for m in (10, 11) for d in range(1, 29, 3)]  # 20 dates
    systems = [f"system-with-a-long-name-{i}" for i in range(7)]
    agg = _aggregate(systems, dates, KEYS)
    per_query = pd.DataFrame(
        [{"system": s, "date": dates[-1], S.QUERY_ID: f"q{q}", S.MEASURE_KEY: k, S.VALUE: q / 10}
         for s in systems for q in range(10) for k in ("P@5", "AP")])
    drawn = [
        figures.measure_against_k(agg, run_columns=("system",), date_column="date",
                                  date=dates[-1]),
        figures.per_query_distribution(per_query, run_columns=("system",),
                                       measure_keys=["P@5", "AP"]),
        figures.unjudged_share(agg, run_columns=("system",), date_column="date",
                               date=dates[-1], warning_share=0.2),
        figures.trend(agg, run_columns=("system",), date_column="date",
                      measure_keys=list(KEYS)[:5]),
    ]
    for fig in drawn:
        assert figures.layout_problems(fig) == []


def test_the_layout_check_finds_overlapping_and_cut_text():
    fig = Figure(figsize=(3, 2))
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    # 30 long tick labels on a 3-inch axis: they run into each other
    ax.set_xticks(range(30), labels=[f"label number {i}" for i in range(30)])
    ax.set_title("a title")
    ax.text(0.5, 1.02, "a title too", transform=ax.transAxes)  # on top of the title
    fig.text(0.9, 0.5, "cut off at the right edge")
    problems = figures.layout_problems(fig)
    assert "'label number 0' overlaps 'label number 1'" in problems
    assert any("'a title' overlaps 'a title too'" == p for p in problems)
    assert "'cut off at the right edge' leaves the figure" in problems
    # the same axes with three short labels: nothing to report
    clean = Figure(figsize=(3, 2), layout="constrained")
    FigureCanvasAgg(clean)
    clean.subplots().set_xticks(range(3), labels=["a", "b", "c"])
    assert figures.layout_problems(clean) == []


def test_report_errors_are_one_line(tmp_path, capsys):
    config = tmp_path / "c.toml"
    config.write_text(_config_text("r", "q", tmp_path / "none"), encoding="utf-8")
    assert releval_main(["report", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (f"releval: error: aggregate table not found: "
                           f"{tmp_path / 'none' / 'aggregate'} (run the evaluation job first)")
    catalog = tmp_path / "t.toml"
    catalog.write_text(config.read_text().replace(
        f'per_query_path = "{tmp_path / "none" / "per_query"}"', 'per_query_table = "db.pq"'))
    # releval sql is DataFusion over paths: a catalog table is refused in one line
    assert releval_main(["sql", "--config", str(catalog), "SELECT 1"]) == 2
    assert capsys.readouterr().err.strip() == (
        "releval: error: releval sql reads Delta tables by path (deltalake, no Spark); "
        "output.per_query_table = 'db.pq' is a catalog table: set output.per_query_path")


def test_catalog_tables_are_read_through_spark(spark, job):
    # the job's tables registered in the catalog (external tables over the same files):
    # the page reads them through Spark and shows the same numbers and lineage
    config, page, _ = job
    out = Path(config.output.per_query_path).parent
    for name in ("per_query", "aggregate", "run_log", "comparison"):
        spark.sql(f"DROP TABLE IF EXISTS report_{name}")  # external: the files stay
        spark.sql(f"CREATE TABLE report_{name} USING DELTA LOCATION '{out / name}'")
    from dataclasses import replace

    catalog = replace(config, output=replace(
        config.output, per_query_path=None, aggregate_path=None, per_query_table="report_per_query",
        aggregate_table="report_aggregate", run_log_table="report_run_log",
        comparison_table="report_comparison"))
    via_spark = report.build(catalog, spark=spark)
    by_path = page.read_text(encoding="utf-8")

    def cells(html: str) -> list[str]:
        return re.findall(r'<td data-run=.*?</td>', html)

    assert len(cells(via_spark)) == 21 and cells(via_spark) == cells(by_path)
    assert _cells(via_spark, "lineage") == _cells(by_path, "lineage")
    assert _cells(via_spark, "comparison") == _cells(by_path, "comparison")
    assert [r[0] for r in _cells(via_spark, "tables")] == [
        "aggregate", "per_query", "comparison", "run_log"]
    assert "report_aggregate" in via_spark
    with pytest.raises(InputError, match="needs a SparkSession"):
        report.build(catalog)


def _which_measure_queries() -> list[str]:
    """The SQL of every ``releval sql`` command in docs/which-measure.md."""
    page = Path(__file__).resolve().parents[1] / "docs" / "which-measure.md"
    blocks = re.findall(r"```sh\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    prefix = '.venv/bin/releval sql --config conf/local.toml "'
    assert blocks and all(b.startswith(prefix) and b.rstrip().endswith('"') for b in blocks)
    return [b[len(prefix):].rstrip()[:-1] for b in blocks]


def test_the_which_measure_queries_run_and_name_the_samples_measures(job, capsys):
    config, _, folder = job
    queries = _which_measure_queries()
    assert len(queries) == 6
    # the measures they name are ones the sample's job computes (conf/local.toml + Judged@k)
    sample = {m.key for m in job_measures(load_config(
        Path(__file__).resolve().parents[1] / "conf" / "local.toml"))}
    named = {k for q in queries for k in re.findall(r"'([A-Za-z]+@\d+|RR)'", q)}
    assert named and named <= sample, named - sample
    for sql in queries:
        assert releval_main(["sql", "--config", str(folder / "job.toml"), sql]) == 0
        out = capsys.readouterr().out
        # a header and one row per system at least
        assert out.strip() != "(no rows)" and len(out.strip().splitlines()) >= 4, (sql, out)
        assert {"bm25", "dense", "hybrid"} <= set(out.split()), out


def test_sql_gives_the_tables_values(spark, job, capsys):
    config, _, folder = job
    assert releval_main(["sql", "--config", str(folder / "job.toml"),
                         "SELECT system, value FROM aggregate WHERE measure_key = 'RR' AND "
                         f"averaging = 'macro' AND date = '{D28}' ORDER BY system"]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = read(spark, config.output.aggregate_path).where(
        (F.col(S.MEASURE_KEY) == "RR") & (F.col(S.AVERAGING) == "macro") & (F.col("date") == D28)
    ).orderBy("system").collect()
    assert [line.split() for line in out[1:]] == [[r["system"], f"{r[S.VALUE]:.4f}"] for r in rows]
    assert releval_main(["sql", "--config", str(folder / "job.toml"), "SELECT nope FROM aggregate"]) == 2
    assert capsys.readouterr().err.startswith("releval: error: sql: ")


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
#: The viewport the page must fit without scrolling sideways.
VIEWPORT = 1280
#: Appended to a copy of the page, before CHECK (whose output is wide): the page's scroll
#: width with its tables folded and unfolded, and the headline's text and place.
LAYOUT = """<script>
window.addEventListener("load", () => {
  const root = document.documentElement;
  const r = {viewport: window.innerWidth, folded: root.scrollWidth};
  for (const d of document.querySelectorAll("details")) d.open = true;
  r.unfolded = root.scrollWidth;
  const head = document.getElementById("headline");
  const first = document.querySelector("#means");
  r.headline = head ? head.innerText : null;
  r.above = !!head && head.getBoundingClientRect().bottom <= first.getBoundingClientRect().top;
  for (const d of document.querySelectorAll("details")) d.open = false;
  const pre = document.createElement("pre");
  pre.id = "layout-check"; pre.textContent = JSON.stringify(r);
  document.body.appendChild(pre);
});
</script>"""
#: Appended to a copy of the page: each figure's image, drawn to a canvas, is measured.
CHECK = """<script>
window.addEventListener("load", () => {
  const out = [];
  for (const fig of document.querySelectorAll("figure[data-figure]")) {
    const img = fig.querySelector("img");
    const r = {name: fig.dataset.figure, complete: img.complete, width: img.naturalWidth,
               shown: img.getBoundingClientRect().width, inked: 0, colors: 0};
    if (img.complete && img.naturalWidth > 0) {
      const c = document.createElement("canvas");
      c.width = img.naturalWidth; c.height = img.naturalHeight;
      const ctx = c.getContext("2d");
      ctx.drawImage(img, 0, 0);
      const d = ctx.getImageData(0, 0, c.width, c.height).data;
      const seen = new Set(); let inked = 0;
      for (let i = 0; i < d.length; i += 4) {
        if (d[i] < 250 || d[i + 1] < 250 || d[i + 2] < 250) inked++;
        if (seen.size < 1000) seen.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
      }
      r.inked = inked / (c.width * c.height); r.colors = seen.size;
    }
    out.push(r);
  }
  const pre = document.createElement("pre");
  pre.id = "figure-check"; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def _chromium(*args: str) -> subprocess.CompletedProcess[str]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} not found: make browser installs Debian's chromium")
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", *args],
                          capture_output=True, text=True, timeout=120, check=True)


def test_the_page_loads_in_headless_chromium_with_every_figure(job, tmp_path):
    _, page, _ = job
    html = page.read_text(encoding="utf-8")
    checked = tmp_path / "checked.html"
    checked.write_text(html.replace("</body>", LAYOUT + CHECK + "</body>"), encoding="utf-8")
    dom = _chromium(f"--window-size={VIEWPORT},3000", "--virtual-time-budget=10000",
                    "--dump-dom", checked.as_uri()).stdout
    layout = re.search(r'<pre id="layout-check">(.*?)</pre>', dom, re.S)
    assert layout, dom[-2000:]
    fit = json.loads(unescape(layout.group(1)))
    # no sideways scrolling at 1280 px, with every folded table folded or open
    assert fit["viewport"] == VIEWPORT, fit
    assert fit["folded"] <= VIEWPORT and fit["unfolded"] <= VIEWPORT, fit
    # the headline, above the first section, names a measure with its value and interval
    assert fit["above"], fit
    measure = "|".join(re.escape(m) for m in HEADLINE)
    assert re.search(rf"\bhybrid \(20 queries\): .*\b({measure}) [01]\.[0-9]{{3}} \[",
                     fit["headline"]), fit["headline"]
    found = re.search(r'<pre id="figure-check">(.*?)</pre>', dom, re.S)
    assert found, dom[-2000:]
    result = json.loads(found.group(1).replace("&quot;", '"'))
    assert [r["name"] for r in result] == [
        "measure_against_k", "distribution", "differences", "cells", "unjudged", "trend"]
    for r in result:
        # loaded, laid out on the page, and drawn: some ink and more than a few colours
        assert r["complete"] and r["width"] > 100 and r["shown"] > 100, r
        assert r["inked"] > 0.01 and r["colors"] > 10, r
    # the untouched page, as a screenshot: not blank
    from PIL import Image

    shot = tmp_path / "page.png"
    _chromium("--window-size=1280,3000", f"--screenshot={shot}", page.as_uri())
    pixels = Image.open(shot).convert("L")
    low, high = pixels.getextrema()
    assert high - low > 100 and sum(pixels.histogram()[:200]) > 0.01 * pixels.width * pixels.height
