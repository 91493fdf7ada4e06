"""Wide views, the SQL of docs/warehouse.md, and the tables read without Spark.

Every ``sql`` and ``python`` block of docs/warehouse.md is taken from the page itself, so
the page and the tests cannot drift apart: the views' statements must be what
``releval views`` prints, every query runs on Spark SQL and DuckDB and must match figures
worked out with pandas from the long tables (read with deltalake), and the Python
snippets must run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import math
import os
import pathlib
import re
from collections.abc import Callable, Iterator
from datetime import date, timedelta
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession
from support.batch_support import MEASURES, write_config, write_inputs

from releval.config import config_from_dict, load_config
from releval.core import columns as S
from releval.core.measures import REGISTRY
from releval.errors import ConfigError, InputError, MeasureError
from releval.evaluation.partitions import parse_selection
from releval.io import views as W
from releval.job.batch import run_job
from releval.job.pipeline import job_measures
from releval.job.sample import SampleShape, write_sample
from releval.runtime.profile import Phases

pytestmark = pytest.mark.slow  # the documented queries over the tables of whole batch jobs, on Spark and DuckDB

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "warehouse.md"
PARTS = ("system", "date")


# --- column names (pure) -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "column"),
    [
        ("nDCG@10", "ndcg_at_10"),
        ("P@5", "p_at_5"),
        ("nDCG@10[judged]", "ndcg_at_10_judged"),
        ("P(rel=2)@5", "p_rel_2_at_5"),
        ("AP(rel=-1)", "ap_rel_minus_1"),
        ("nDCG_exp@10", "ndcg_exp_at_10"),
        ("num_rel_ret", "num_rel_ret"),
        ("RR", "rr"),
        ("Judged@50", "judged_at_50"),
    ],
)
def test_column_name(key: str, column: str) -> None:
    assert W.column_name(key) == column


def _doc_blocks(kind: str) -> list[tuple[str, str]]:
    """(the ### heading above it, text) of every fenced ``kind`` block of the page."""
    text = DOC.read_text(encoding="utf-8")
    blocks = []
    for match in re.finditer(rf"^```{kind}\n(.*?)^```", text, re.M | re.S):
        headings = re.findall(r"^#+ (.+)$", text[: match.start()], re.M)
        blocks.append((headings[-1] if headings else "", match.group(1).strip()))
    return blocks


def test_the_documented_column_table_is_the_rule() -> None:
    text = DOC.read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([^`]+)` \| `([^`]+)` \|$", text, re.M)
    assert len(rows) >= 15
    for key, column in rows:
        assert W.column_name(key) == column, key


def test_distinct_keys_get_distinct_columns_over_the_registry() -> None:
    # the rule is injective because no name ends like a suffix and none differ only in case
    names = sorted(REGISTRY)
    assert len({n.lower() for n in names}) == len(names)
    for name in names:
        assert not re.search(r"_(rel_(minus_)?\d+|at_\d+|judged)$", name.lower()), name
    keys = [
        f"{name}{rel}{cut}{judged}"
        for name in names
        for rel in ("", "(rel=0)", "(rel=2)", "(rel=-2)")
        for cut in ("", "@5", "@10", "@50")
        for judged in ("", "[judged]")
    ]
    columns = [W.column_name(k) for k in keys]
    assert len(set(columns)) == len(keys)
    assert all(re.fullmatch(r"[a-z][a-z0-9_]*", c) for c in columns)


def test_bad_keys_and_colliding_columns_are_refused() -> None:
    with pytest.raises(MeasureError, match=r"measure_key 'P@'"):
        W.column_name("P@")
    spec = W.ViewSpec(source="t", measure_keys=("AP", "P@5"), partition_columns=("AP",))
    with pytest.raises(ConfigError, match=r"measure 'AP' and column 'AP' both make the column 'ap'"):
        W.per_query_view_sql(spec)
    with pytest.raises(ConfigError, match=r"aggregate view: .* 'num_queries'"):
        W.aggregate_view_sql(dataclasses.replace(spec, partition_columns=("num_queries",)))


def test_keys_are_sorted_for_reading() -> None:
    keys = ["P@10", "AP", "P@5", "nDCG@10[judged]", "nDCG@10", "P(rel=2)@5", "P@5"]
    assert W.sort_keys(keys) == ["AP", "nDCG@10", "nDCG@10[judged]", "P@5", "P@10", "P(rel=2)@5"]


# --- a job on a small sample of the same shape as make run's ---------------------------------

#: make run's sample, smaller: 3 systems x 8 dates x 30 queries x 20 documents
SHAPE = SampleShape(queries=30, docs_per_query=20, judged_per_query=8, corpus=1000)


@dataclasses.dataclass(frozen=True)
class Written:
    folder: Path  # holds warehouse/releval/{per_query,aggregate} as conf/local.toml names them
    config: object
    phases: Phases


@pytest.fixture(scope="module")
def sample_job(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Written:
    folder = tmp_path_factory.mktemp("warehouse_sample")
    local = load_config(ROOT / "conf" / "local.toml")
    config = dataclasses.replace(
        local,
        run=dataclasses.replace(local.run, path=str(folder / local.run.path)),
        qrels=dataclasses.replace(local.qrels, path=str(folder / local.qrels.path)),
        answers=dataclasses.replace(local.answers, path=str(folder / local.answers.path)),
        queries=dataclasses.replace(local.queries, path=str(folder / local.queries.path)),
        output=dataclasses.replace(
            local.output,
            **{k: str(folder / getattr(local.output, k)) for k in
               ("per_query_path", "aggregate_path", "quarantine_path", "comparison_path",
                "attribution_path")},
        ),
    )
    write_sample(spark, run_path=config.run.path, qrels_path=config.qrels.path,
                 answers_path=config.answers.path, queries_path=config.queries.path,
                 shape=SHAPE)
    phases = Phases(spark, announce=False)
    run_job(spark, config, job_run_id="sample", phases=phases)
    return Written(folder, config, phases)


def test_path_tables_add_no_spark_job(sample_job: Written) -> None:
    # the views of path tables are documented, not made: the job ran no phase for them
    assert [p.name for p in sample_job.phases.done if p.name == "views"] == []


@contextlib.contextmanager
def working_folder(folder: Path) -> Iterator[None]:
    old = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(old)


def duckdb_connection() -> duckdb.DuckDBPyConnection:
    """DuckDB with the Delta extension loaded from the duckdb-ext-delta wheel's file."""
    import duckdb_ext

    folder = pathlib.Path(list(duckdb_ext.__path__)[0])
    extension = next(folder.rglob("delta.duckdb_extension"))
    con = duckdb.connect(config={"allow_unsigned_extensions": "true",
                                 "autoinstall_known_extensions": "false"})
    con.execute(f"LOAD '{extension}'")
    return con


def long_table(folder: Path, name: str) -> pd.DataFrame:
    """A long table; the aggregate's rows over all queries (the sample slices by segment and
    locale: the slice rows are tests/test_slices_job.py's)."""
    table = DeltaTable(str(folder / "warehouse" / "releval" / name)).to_pandas()
    return table[table[S.SLICE].isna()] if S.SLICE in table.columns else table


# independent answers to the page's questions, from the long tables with pandas


def _macro(folder: Path, key: str) -> pd.DataFrame:
    agg = long_table(folder, "aggregate")
    return agg[(agg[S.MEASURE_KEY] == key) & (agg[S.AVERAGING] == "macro")]


def expect_mean_by_day(folder: Path) -> list[tuple]:
    rows = _macro(folder, "nDCG@10").sort_values(["system", "date"])
    return [(r.system, r.date, r.value, r.ci_low, r.ci_high, r.num_queries)
            for r in rows.itertuples()]


def _per_query(folder: Path, system: str, day: str) -> pd.DataFrame:
    pq = long_table(folder, "per_query")
    run = pq[(pq["system"] == system) & (pq["date"] == day)]
    return run.pivot(index=S.QUERY_ID, columns=S.MEASURE_KEY, values=S.VALUE)


def expect_worst_queries(folder: Path) -> list[tuple]:
    wide = _per_query(folder, "bm25", "2026-11-29").reset_index()
    worst = wide.sort_values(["nDCG@10", S.QUERY_ID]).head(20)
    return [(r[S.QUERY_ID], r["nDCG@10"], r["P@5"], r["R@50"], r["Judged@10"])
            for _, r in worst.iterrows()]


def expect_by_segment(folder: Path) -> list[tuple]:
    pq = long_table(folder, "per_query")
    run = pq[(pq["system"] == "bm25") & (pq["date"] == "2026-11-29")
             & (pq[S.MEASURE_KEY] == "nDCG@10")].copy()
    run["segment"] = [dict(m)["segment"] for m in run[S.SLICES]]
    out = []
    for segment, rows in sorted(run.groupby("segment")):
        weighted = (rows[S.WEIGHT] * rows[S.VALUE]).sum() / rows[S.WEIGHT].sum()
        out.append((segment, len(rows), rows[S.VALUE].mean(), weighted))
    return out


def expect_week_over_week(folder: Path) -> list[tuple]:
    value = {(r.system, r.date): r.value for r in _macro(folder, "nDCG@10").itertuples()}
    out = []
    for (system, day), v in sorted(value.items()):
        before = (date.fromisoformat(day) - timedelta(days=7)).isoformat()
        if (system, before) in value:
            out.append((system, day, before, v, value[(system, before)], v - value[(system, before)]))
    return out


def expect_disagreement(folder: Path) -> list[tuple]:
    a = _per_query(folder, "bm25", "2026-11-29")["nDCG@10"]
    b = _per_query(folder, "hybrid", "2026-11-29")["nDCG@10"]
    both = sorted(set(a.index) & set(b.index), key=lambda q: (-abs(b[q] - a[q]), q))[:20]
    return [(q, a[q], b[q], b[q] - a[q]) for q in both]


EXPECTED: dict[str, tuple[Callable[[Path], list[tuple]], int]] = {
    # heading of the query on the page: (the independent answer, rows on the small sample)
    "Mean nDCG@10 by system and day": (expect_mean_by_day, 3 * 8),
    "The 20 worst queries of a run": (expect_worst_queries, 20),
    "Mean nDCG@10 by segment, from the per-query rows": (expect_by_segment, 3),
    "Week-over-week change of a measure": (expect_week_over_week, 3),
    "Queries where two systems disagree most": (expect_disagreement, 20),
}


def _same(actual: list[tuple], expected: list[tuple]) -> None:
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected, strict=True):
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            if isinstance(w, float):
                assert g is not None and math.isclose(g, w, rel_tol=1e-12, abs_tol=1e-12), (got, want)
            else:
                assert g == w, (got, want)


def test_documented_views_are_what_releval_views_prints(
    spark: SparkSession, sample_job: Written
) -> None:
    statements = [text for _, text in _doc_blocks("sql") if text.startswith("CREATE")]
    assert len(statements) == 1
    local = load_config(ROOT / "conf" / "local.toml")  # the page shows make run's views
    keys = W.table_measure_keys(spark, sample_job.config)
    assert keys == W.sort_keys(m.key for m in job_measures(local))
    assert statements[0] == ";\n\n".join(W.view_statements(local, measure_keys=keys,
                                                          dialect="duckdb")) + ";"
    # Spark's: back-quotes and delta.`<absolute path>` instead of delta_scan('<path>')
    spark_sql = W.view_statements(local, measure_keys=keys, dialect="spark")
    as_duckdb = [
        re.sub(r"delta\.`[^`]*/(warehouse/releval/\w+)`", r"delta_scan('\1')", s)
        .replace("`", '"').replace("TEMP VIEW", "VIEW")
        for s in spark_sql
    ]
    assert statements[0] == ";\n\n".join(as_duckdb) + ";"


def test_documented_queries_on_spark_and_duckdb(spark: SparkSession, sample_job: Written) -> None:
    folder = sample_job.folder
    blocks = _doc_blocks("sql")
    queries = {heading: text for heading, text in blocks if text.startswith("SELECT")}
    assert set(queries) == set(EXPECTED)
    creates = next(text for _, text in blocks if text.startswith("CREATE"))
    con = duckdb_connection()
    with working_folder(folder):  # the page's relative paths, as written
        for statement in creates.split(";"):
            if statement.strip():
                con.execute(statement)
    keys = W.table_measure_keys(spark, sample_job.config)
    for statement in W.view_statements(sample_job.config, measure_keys=keys, dialect="spark"):
        spark.sql(statement)
    try:
        for heading, query in queries.items():
            expect, rows = EXPECTED[heading]
            expected = expect(folder)
            assert len(expected) == rows, heading  # every documented query returns rows
            _same([tuple(r) for r in spark.sql(query).collect()], expected)
            with working_folder(folder):  # DuckDB resolves the views' paths when queried
                _same(con.sql(query).fetchall(), expected)
    finally:
        spark.catalog.dropTempView("per_query_wide")
        spark.catalog.dropTempView("aggregate_wide")


def test_aggregate_view_holds_every_macro_value_and_interval(
    spark: SparkSession, sample_job: Written
) -> None:
    keys = W.table_measure_keys(spark, sample_job.config)
    statement = W.view_statements(sample_job.config, measure_keys=keys, dialect="spark")[1]
    wide = spark.sql(statement.split(" AS\n", 1)[1]).where("slice IS NULL").toPandas().set_index(
        list(PARTS))
    agg = long_table(sample_job.folder, "aggregate")
    checked = 0
    for r in agg[~agg[S.AVERAGING].isin(["micro", "weighted"])].itertuples():
        column = W.column_name(r.measure_key)
        assert wide.loc[(r.system, r.date), column] == r.value
        if r.averaging == "macro":
            assert wide.loc[(r.system, r.date), column + "_ci_low"] == r.ci_low
            assert wide.loc[(r.system, r.date), column + "_ci_high"] == r.ci_high
        checked += 1
    assert checked == 24 * len(keys)  # 24 run partitions, one macro or sum row per key
    # one ci_method per partition when its measures agree, else "mixed" (Hit@10 is 0/1: wilson)
    for r in agg[agg[S.AVERAGING] == "weighted"].itertuples():
        assert wide.loc[(r.system, r.date), W.column_name(r.measure_key) + "_weighted"] == r.value
    methods = agg[agg[S.AVERAGING] == "macro"].groupby(list(PARTS))[S.CI_METHOD].unique()
    for part, found in methods.items():
        assert wide.loc[part, S.CI_METHOD] == (found[0] if len(found) == 1 else W.MIXED)
    assert (wide[S.CI_METHOD] == W.MIXED).any()
    assert "num_ret_ci_low" not in wide.columns  # counts are sums: no interval


def test_documented_python_runs(sample_job: Written) -> None:
    snippets = _doc_blocks("python")
    assert len(snippets) == 2
    for _, code in snippets:
        out = io.StringIO()
        with working_folder(sample_job.folder), contextlib.redirect_stdout(out):
            exec(compile(code, str(DOC), "exec"), {})  # noqa: S102 - the page's own code
        text = out.getvalue()
        assert "2026-11-29" in text and "hybrid" in text, text[:500]


# --- the tables without Spark: the same values as Spark ----------------------------------


def _key(row: tuple) -> tuple:
    return tuple((v is None, "" if v is None else v) for v in row)


def _plain(row: tuple) -> tuple:
    """``row`` with a map (a dict from Spark and DuckDB, a list of pairs from pandas) as its
    sorted (key, value) pairs."""
    def plain(v):
        if isinstance(v, dict):
            return tuple(sorted(v.items()))
        if isinstance(v, list) and all(isinstance(x, tuple) for x in v):
            return tuple(sorted(v))
        return v
    return tuple(plain(v) for v in row)


def _spark_rows(spark: SparkSession, path: str) -> tuple[list[str], list[tuple]]:
    table = spark.read.format("delta").load(path)
    return table.columns, sorted((_plain(tuple(r)) for r in table.collect()), key=_key)


def _pandas_rows(frame: pd.DataFrame, columns: list[str]) -> list[tuple]:
    frame = frame[columns].astype(object).where(frame[columns].notna(), None)
    return sorted((_plain(tuple(r)) for r in frame.itertuples(index=False)), key=_key)


def assert_three_readers_agree(spark: SparkSession, path: str) -> int:
    columns, expected = _spark_rows(spark, path)
    table = DeltaTable(path)
    assert table.protocol().min_reader_version == 1 and table.protocol().min_writer_version == 2
    assert not table.protocol().reader_features and not table.protocol().writer_features
    assert [f.name for f in table.schema().fields] == columns
    assert _pandas_rows(table.to_pandas(), columns) == expected
    con = duckdb_connection()
    select = ", ".join(f'"{c}"' for c in columns)
    got = sorted((_plain(r) for r in con.sql(f"SELECT {select} FROM delta_scan('{path}')")
                  .fetchall()), key=_key)
    assert got == expected
    return len(expected)


def test_deltalake_and_duckdb_read_what_spark_reads(spark: SparkSession, sample_job: Written) -> None:
    out = sample_job.config.output
    # 24 partitions x 30 queries x 16 measures (12, the answers' Hit(rel=3)@5, Judged@5, @10,
    # @50)
    assert assert_three_readers_agree(spark, out.per_query_path) == 24 * 30 * 16
    # 24 partitions x 5 cells
    assert assert_three_readers_agree(spark, out.attribution_path) == 24 * 5
    assert assert_three_readers_agree(spark, out.aggregate_path) > 24 * 15


def test_a_null_partition_value_reads_back_as_null(spark: SparkSession, tmp_path: Path) -> None:
    run = [("q1", "A", 0.9, 1, "bm25", "2026-11-29"), ("q1", "B", 0.5, 2, "bm25", "2026-11-29"),
           ("q1", "B", 0.9, 1, "bm25", None), ("q2", "C", 0.4, 1, "bm25", None)]
    qrels = [("q1", "A", 1), ("q2", "C", 2)]
    run_path, qrels_path = str(tmp_path / "run"), str(tmp_path / "qrels")
    run_schema = "query_id string, doc_id string, score double, rank int, system string, date string"
    (spark.createDataFrame(run, run_schema).write.format("delta").partitionBy("system", "date")
     .save(run_path))
    spark.createDataFrame(qrels, "query_id string, doc_id string, relevance int").write.format(
        "delta").save(qrels_path)
    config = config_from_dict({
        "run": {"path": run_path, "partition_columns": list(PARTS)},
        "qrels": {"path": qrels_path},
        "evaluation": {"measures": ["P@1", "RR"]},
        "output": {"per_query_path": str(tmp_path / "pq"), "aggregate_path": str(tmp_path / "agg"),
                   "partition_columns": ["date"]},
    })
    run_job(spark, config, job_run_id="nulls", phases=Phases(spark, announce=False))
    assert os.path.isdir(tmp_path / "pq" / "date=__HIVE_DEFAULT_PARTITION__")
    # 2 partitions x 2 queries x (P@1, RR, Judged@1)
    assert assert_three_readers_agree(spark, str(tmp_path / "pq")) == 12
    con = duckdb_connection()
    dates = {r[0] for r in con.sql(
        f"SELECT DISTINCT date FROM delta_scan('{tmp_path / 'agg'}')").fetchall()}
    assert dates == {"2026-11-29", None}
    # q1 on the null date: B at rank 1 is unjudged, so RR = 0; q2: C relevant at 1, RR = 1
    rr = long_table_at(tmp_path / "agg")
    assert rr == {("2026-11-29", "RR"): 0.5, (None, "RR"): 0.5}


def long_table_at(path: Path) -> dict:
    agg = DeltaTable(str(path)).to_pandas()
    agg = agg[(agg[S.MEASURE_KEY] == "RR") & (agg[S.AVERAGING] == "macro")]
    return {(None if pd.isna(r.date) else r.date, r.measure_key): r.value for r in agg.itertuples()}


# --- catalog tables: the job keeps the views -------------------------------------------------


def _catalog_config(tmp_path: Path, run: str, qrels: str, database: str, measures=MEASURES):
    path = write_config(tmp_path, run, qrels)
    config = load_config(path)
    return dataclasses.replace(
        config,
        evaluation=dataclasses.replace(config.evaluation, measures=tuple(measures)),
        output=dataclasses.replace(
            config.output, per_query_path=None, aggregate_path=None,
            per_query_table=f"{database}.per_query", aggregate_table=f"{database}.aggregate",
            quarantine_path=str(tmp_path / "quarantine"), run_log_path=str(tmp_path / "run_log"),
        ),
    )


def _views_jobs(phases: Phases) -> list[int]:
    return [p.spark_jobs for p in phases.done if p.name == "views"]


def test_catalog_views_follow_every_job(spark: SparkSession, tmp_path: Path) -> None:
    database = "releval_views_test"
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {database} LOCATION '{tmp_path / 'db'}'")
    try:
        run, qrels = write_inputs(spark, tmp_path / "inputs")
        config = _catalog_config(tmp_path, run, qrels, database)
        # 1. the whole tables: the job's own keys, no scan
        phases = Phases(spark, announce=False)
        run_job(spark, config, phases=phases)
        assert _views_jobs(phases) == [0]
        agg = spark.table(f"{database}.aggregate_wide")
        measure_columns = ["ap", "judged_at_5", "judged_at_10", "ndcg_at_10", "p_at_5"]
        assert agg.columns[:5 + len(measure_columns)] == [*PARTS, S.SLICE, S.SLICE_VALUE,
                                                          "num_queries", *measure_columns]
        long = spark.table(f"{database}.aggregate").where("averaging = 'macro'").toPandas()
        wide = agg.toPandas().set_index(list(PARTS))
        for r in long.itertuples():
            assert wide.loc[(r.system, r.date), W.column_name(r.measure_key)] == r.value
        assert spark.table(f"{database}.per_query_wide").count() == 3 * 3 * 20

        # 2. one date, one more measure: the union, kept in the view's property (no scan)
        more = dataclasses.replace(config, evaluation=dataclasses.replace(
            config.evaluation, measures=(*MEASURES, "RR")))
        phases = Phases(spark, announce=False)
        run_job(spark, more, parse_selection(["date=2026-11-29"], run_partition_columns=PARTS),
                phases=phases)
        assert _views_jobs(phases) == [0]
        rr = {(r["date"], r["rr"] is None) for r in spark.table(f"{database}.aggregate_wide")
              .select("date", "rr").collect()}
        assert rr == {("2026-11-27", True), ("2026-11-28", True), ("2026-11-29", False)}
        assert "ndcg_at_10" in spark.table(f"{database}.per_query_wide").columns

        # 3. no view yet and a partial job: one small scan of the table's keys
        spark.sql(f"DROP VIEW {database}.aggregate_wide")
        spark.sql(f"DROP VIEW {database}.per_query_wide")
        phases = Phases(spark, announce=False)
        run_job(spark, config, parse_selection(["date=2026-11-28"], run_partition_columns=PARTS),
                phases=phases)
        # the collect, and Delta's jobs reading the table's log (measured: 5 in all)
        assert _views_jobs(phases)[0] > 0
        assert "rr" in spark.table(f"{database}.aggregate_wide").columns  # 2026-11-29 has RR
        assert W.stored_keys(spark, f"{database}.aggregate_wide") == W.sort_keys(
            ["AP", "Judged@5", "Judged@10", "nDCG@10", "P@5", "RR"])
    finally:
        spark.sql(f"DROP DATABASE IF EXISTS {database} CASCADE")


# --- releval views ------------------------------------------------------------------------


def test_views_command(spark: SparkSession, sample_job: Written, tmp_path: Path) -> None:
    config = sample_job.config
    keys = W.table_measure_keys(spark, config)
    printed = W.views_command(spark, config, dialect="duckdb")
    assert printed == ";\n\n".join(W.view_statements(config, measure_keys=keys,
                                                      dialect="duckdb")) + ";"
    assert "delta.`/" in W.views_command(spark, config)  # Spark: absolute paths
    missing = dataclasses.replace(config, output=dataclasses.replace(
        config.output, aggregate_path=str(tmp_path / "nothing")))
    with pytest.raises(InputError, match=r"nothing does not exist: run the evaluation job first"):
        W.views_command(spark, missing)
    catalog = dataclasses.replace(config, output=dataclasses.replace(
        config.output, per_query_path=None, aggregate_path=None,
        per_query_table="db.pq", aggregate_table="db.agg"))
    with pytest.raises(ConfigError, match=r"DuckDB reads Delta tables by path"):
        W.views_command(spark, catalog, dialect="duckdb")



def test_cli_views_errors_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from releval import cli

    assert cli.main(["views", "--config", str(tmp_path / "missing.toml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("releval: error: ") and "missing.toml" in err[0]
