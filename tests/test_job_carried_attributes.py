"""The jobs read each query's weight and slice values from the per-query rows, as the public
functions do: the batch job's ``[gate]`` (from the rows it holds, a run-column slice
included) and ``releval compare --config`` (from the table, with no ``[queries]``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from support.batch_support import read
from test_per_query_attributes import QRELS, QUERIES, RUN

import releval
from releval.config import load_config
from releval.core import columns as S
from releval.io.atomic import read_table
from releval.job import compare as compare_job
from releval.job.batch import run_job

pytestmark = pytest.mark.slow  # whole batch jobs and a comparison job: reads and commits

RULES = ("RR change >= -1 per device", "weighted RR change >= -1")


def write_job(spark, folder: Path, *, queries: bool) -> Path:
    """The run (its ``device`` a run slice), qrels and queries as Delta tables, and a job
    config gating dense against bm25; without ``queries``, no ``[queries]`` section."""
    run, qrels, attrs = (str(folder / n) for n in ("run", "qrels", "queries"))
    spark.createDataFrame(RUN, "system string, query_id string, doc_id string, score double, "
                          "device string").write.format("delta").save(run)
    spark.createDataFrame(QRELS, "query_id string, doc_id string, relevance int").write.format(
        "delta").save(qrels)
    spark.createDataFrame(QUERIES, "id string, hits double, segment string").write.format(
        "delta").save(attrs)
    section = (f'[queries]\npath = "{attrs}"\nquery_id = "id"\nweight = "hits"\n'
               'slices = ["segment"]\n') if queries else ""
    rules = ", ".join(f'"{r}"' for r in RULES)
    text = f"""
[spark]
master = "local[1]"
shuffle_partitions = 2
conf = {{ "spark.ui.enabled" = "false" }}

[run]
path = "{run}"
partition_columns = ["system"]
slices = ["device"]

[qrels]
path = "{qrels}"

[evaluation]
measures = ["RR"]

{section}
[gate]
rules = [{rules}]
baseline = "system=bm25"

[output]
per_query_path = "{folder / 'out' / 'per_query'}"
aggregate_path = "{folder / 'out' / 'aggregate'}"
"""
    path = folder / "job.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def job(spark, tmp_path_factory):
    folder = tmp_path_factory.mktemp("carried")
    config = load_config(write_job(spark, folder, queries=True))
    return config, run_job(spark, config, job_run_id="carried")


def test_the_jobs_gate_slices_by_a_run_column_and_weighs_from_the_rows(spark, job):
    config, done = job
    gated = {(r["system"], r["rule"], r["slice_value"]): r
             for r in read(spark, str(Path(config.output.per_query_path).parent / "gate"))
             .collect()}
    # RR per query: bm25 1/2 on q1..q3 (phone), 1 on q4..q6 (desktop); dense 1 on q1..q5,
    # 0 on q6 (not retrieved); a query's device is the baseline's
    phone = gated[("dense", RULES[0], "phone")]
    assert (phone["num_queries"], phone["estimate"]) == (3, pytest.approx(0.5))
    desktop = gated[("dense", RULES[0], "desktop")]  # q4 0, q5 0, q6 -1
    assert (desktop["num_queries"], desktop["estimate"]) == (3, pytest.approx(-1 / 3))
    # weights q1..q5: 1, 2, 1, 3, 1 (q6 unlisted): (0.5 + 2 x 0.5 + 0.5) / 8
    weighted = gated[("dense", RULES[1], None)]
    assert (weighted["num_queries"], weighted["estimate"]) == (5, pytest.approx(0.25))
    assert done.gate is not None and {g.decision for g in done.gate.gates} <= {
        "pass", "inconclusive", "no_baseline"}
    # the tables, created while the gate's table was: each commit found by its own metadata
    assert (done.summary.per_query_version, done.summary.per_query_rows) == (
        0, read(spark, config.output.per_query_path).count())
    assert done.summary.aggregate_version == 0 and done.gate.version == 0
    # the same rows as releval.gate over the per-query table the job wrote
    api = releval.gate(read(spark, config.output.per_query_path), baseline="system=bm25",
                       candidates="system=dense", rules=list(RULES)).table.collect()
    assert sorted((r["rule"], r["slice_value"], r["num_queries"], round(r["estimate"], 12))
                  for r in api) == sorted(
        (r["rule"], r["slice_value"], r["num_queries"], round(r["estimate"], 12))
        for (system, _, _), r in gated.items() if system == "dense")


def test_compare_with_no_queries_input_slices_and_weighs_by_the_rows(spark, job, tmp_path):
    config, _ = job
    plain = load_config(write_job(spark, tmp_path, queries=False))
    # a config with no [queries], over the tables the job wrote
    plain = dataclasses.replace(plain, output=config.output)
    compare_job.run(spark, plain, baseline={"system": "bm25"}, candidates=[{"system": "dense"}],
                    comparison_id="c1")
    path, table = compare_job.comparison_location(plain)
    rows = {(r[S.SLICE], r[S.SLICE_VALUE], r[S.AVERAGING]): r
            for r in read_table(spark, path=path, table=table).collect()}
    assert {s for s, _, _ in rows} == {None, "device", "segment"}
    # zero for a missing query: the pairs of the gate, q6 included (dense 0, bm25 1)
    assert rows[("device", "phone", "macro")][S.MEAN_DIFF] == pytest.approx(0.5)
    assert rows[("device", "desktop", "macro")][S.MEAN_DIFF] == pytest.approx(-1 / 3)
    assert rows[(None, None, "weighted")][S.MEAN_DIFF] == pytest.approx(0.25)
    assert rows[("segment", "head", "macro")][S.NUM_PAIRS] == 2  # q1, q2

