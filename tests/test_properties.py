"""Property tests: random dirty runs and qrels.

A plain-Python model of the rules (``releval.checks.rules``'s docstring) cleans the same rows;
the job must either stop with a clear error or give the metrics of the model's clean rows,
and every input row must be used or quarantined.
"""

from __future__ import annotations

import math
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from releval.checks.split import split_qrels, split_run
from releval.config import Config, EvaluationSettings, OutputSettings, QrelsSource, RunSource
from releval.core import columns as S
from releval.core.measures import parse_measures
from releval.core.measures.judged import with_judged_measures
from releval.errors import InputError
from releval.evaluation.evaluate import evaluate
from releval.io.readers import QRELS_SCHEMA
from releval.job import pipeline

RAW_RUN = "run_id string, query_id string, doc_id string, score string, rank string"
RAW_QRELS = "query_id string, doc_id string, relevance string"
INT_MAX = 2**31 - 1
MEASURES = "P@2,AP,nDCG@3"

ids = st.sampled_from(["q1", "q2", "", None])
docs = st.sampled_from(["d1", "d2", "d3", " ", None])
scores = st.sampled_from(["0.5", "0.9", "0.1", "2", "x", "NaN", "Infinity", None])
ranks = st.sampled_from(["1", "2", "3", "0", "-1", "1.5", "x", None])
labels = st.sampled_from(["0", "1", "2", "1.5", "x", None])
run_rows = st.lists(st.tuples(st.sampled_from(["r", "s"]), ids, docs, scores, ranks), max_size=12)
qrels_rows = st.lists(st.tuples(ids, docs, labels), max_size=10)
SETTINGS = settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def number(text: str | None) -> float | None:
    try:
        return float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def present(value: str | None) -> bool:
    return value is not None and value.strip() != ""


def integer(text: str | None, minimum: int) -> int | None:
    v = number(text)
    if v is None or not math.isfinite(v) or v < minimum or v > INT_MAX or v != math.floor(v):
        return None
    return int(v)


def model_run(rows: list[tuple], rank_by: str) -> list[tuple]:
    """The rows the rules keep: valid, best occurrence of a doc, first doc of a rank."""
    best: dict[tuple, tuple[tuple, float]] = {}
    for row in rows:
        run_id, q, d, score, rank = row
        if not (present(q) and present(d)):
            continue
        if rank_by == "score":
            v = number(score)
            if v is None or not math.isfinite(v):
                continue
            key = -v
        else:
            r = integer(rank, 1)
            if r is None:
                continue
            key = float(r)
        if (run_id, q, d) not in best or key < best[(run_id, q, d)][1]:
            best[(run_id, q, d)] = (row, key)
    kept = [row for row, _ in best.values()]
    if rank_by == "rank":
        first: dict[tuple, tuple] = {}
        for row in kept:
            slot = (row[0], row[1], integer(row[4], 1))
            if slot not in first or row[2] > first[slot][2]:
                first[slot] = row
        kept = list(first.values())
    return kept


def model_qrels(rows: list[tuple]) -> list[tuple]:
    """Valid judgments with the highest label of their (query, doc); exact duplicates kept."""
    valid = [(q, d, integer(lab, -INT_MAX)) for q, d, lab in rows if present(q) and present(d)]
    valid = [r for r in valid if r[2] is not None]
    top: dict[tuple, int] = {}
    for q, d, label in valid:
        top[(q, d)] = max(label, top.get((q, d), label))
    return [r for r in valid if r[2] == top[(r[0], r[1])]]


@SETTINGS
@pytest.mark.slow
@given(rows=run_rows, qrels=qrels_rows, rank_by=st.sampled_from(["score", "rank"]))
def test_split_keeps_the_model_rows_and_loses_none(spark, rows, qrels, rank_by):
    clean, quarantined = split_run(
        spark.createDataFrame(rows, RAW_RUN), rank_by=rank_by, partition_columns=["run_id"]
    )
    got = Counter(tuple(r) for r in clean.select("run_id", S.QUERY_ID, S.DOC_ID).collect())
    assert got == Counter((r[0], r[1], r[2]) for r in model_run(rows, rank_by))
    assert sum(got.values()) + quarantined.count() == len(rows)

    clean_q, quarantined_q = split_qrels(spark.createDataFrame(qrels, RAW_QRELS))
    got_q = Counter(tuple(r) for r in clean_q.collect())
    assert got_q == Counter(model_qrels(qrels))
    assert sum(got_q.values()) + quarantined_q.count() == len(qrels)


def per_query(rows) -> dict[tuple, float]:
    return {(r["run_id"], r[S.QUERY_ID], r[S.MEASURE_KEY]): r[S.VALUE] for r in rows}


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@pytest.mark.slow
@given(rows=run_rows, qrels=qrels_rows)
def test_job_metrics_equal_the_metrics_of_the_model_clean_rows(spark, rows, qrels):
    with tempfile.TemporaryDirectory(prefix="releval-prop-") as tmp:
        run_path, qrels_path = str(Path(tmp) / "run"), str(Path(tmp) / "qrels")
        spark.createDataFrame(rows, RAW_RUN).write.parquet(run_path)
        spark.createDataFrame(qrels, RAW_QRELS).write.parquet(qrels_path)
        config = Config(
            run=RunSource(path=run_path, format="parquet", partition_columns=("run_id",)),
            qrels=QrelsSource(path=qrels_path, format="parquet"),
            evaluation=EvaluationSettings(measures=(MEASURES,)),
            output=OutputSettings(per_query_path=f"{tmp}/pq", aggregate_path=f"{tmp}/agg"),
        )
        if not rows or not qrels:
            with pytest.raises(InputError, match="has no rows"):
                pipeline.run(spark, config)
            return
        summary = pipeline.run(spark, config)
        got = per_query(pipeline.read_per_query(spark, config).collect())
        assert summary.quality is not None
        report = summary.quality
        assert (report.run.input, report.qrels.input) == (len(rows), len(qrels))
        assert report.run.used + report.run.quarantined_total == len(rows)
        assert report.qrels.used + report.qrels.quarantined_total == len(qrels)
        # nothing rejected: no quarantine table is created
        assert Path(f"{tmp}/quarantine").exists() == bool(report.quarantined)
        # the run's used rows are the model's, per run; the repeated documents the evaluation
        # dropped are the duplicate_doc rows the quarantine holds
        kept = Counter(r[0] for r in model_run(rows, "score"))
        assert {p.values["run_id"]: p.used for p in report.run.partitions} == {
            run_id: kept[run_id] for run_id in {r[0] for r in rows}
        }
        if report.quarantined:
            quarantine = spark.read.format("delta").load(f"{tmp}/quarantine")
            assert quarantine.count() == report.quarantined
            in_quarantine = Counter(
                r[S.REASON_CODE] for r in quarantine.where(F.col(S.INPUT) == "run").collect()
            )
            assert in_quarantine == Counter(report.run.quarantined)

    typed_run = spark.createDataFrame(
        [(r, q, d, float(s), None) for r, q, d, s, _ in model_run(rows, "score")],
        "run_id string, query_id string, doc_id string, score double, rank int",
    )
    typed_qrels = spark.createDataFrame(model_qrels(qrels), QRELS_SCHEMA)
    measures = with_judged_measures(parse_measures([MEASURES]), relevance_level=1)  # as the job
    expected = evaluate(typed_run, typed_qrels, measures=measures, partition_columns=["run_id"])
    want = per_query(expected.per_query.collect())
    assert got.keys() == want.keys()
    for key, value in want.items():
        assert got[key] == pytest.approx(value, abs=1e-12), key
