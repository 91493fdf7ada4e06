"""The input accounting is a real check: rows lost inside the evaluation fail it.

The evaluation counts every run and qrels row it receives first, before anything can drop
one (nothing filters between the scan and the engine); then the rejected rows, the
repeated documents and ``used`` (for the run, the sum of ``num_ret`` per run partition plus
the rows past the depth; for the qrels, the clean rows the engine keeps less the
conflicting labels) are counted apart.
A fault that loses rows between receiving and using them must fail the job before
anything is written.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark import cloudpickle
from pyspark.sql import SparkSession

from releval.config import Config, EvaluationSettings, OutputSettings, QrelsSource, RunSource
from releval.core import kernel
from releval.errors import AccountingError
from releval.job import pipeline

pytestmark = pytest.mark.slow  # whole batch jobs in this process: every input row accounted

# two runs (partitions by tag): r1 has 4 rows, one of them a repeated document; r2 has 2
RUN = """\
q1 Q0 a 1 3.0 r1
q1 Q0 b 2 2.0 r1
q1 Q0 a 3 1.0 r1
q2 Q0 c 1 1.0 r1
q1 Q0 a 1 2.0 r2
q2 Q0 b 1 1.0 r2
"""
QRELS = """\
q1 0 a 1
q2 0 c 1
"""


def _config(tmp_path: Path, depth: int | None = None) -> Config:
    (tmp_path / "run.txt").write_text(RUN, encoding="utf-8")
    (tmp_path / "qrels.txt").write_text(QRELS, encoding="utf-8")
    out = tmp_path / "out"
    return Config(
        run=RunSource(path=str(tmp_path / "run.txt"), format="trec", partition_columns=("run_id",)),
        qrels=QrelsSource(path=str(tmp_path / "qrels.txt"), format="trec"),
        evaluation=EvaluationSettings(measures=("P@2",), depth=depth),
        output=OutputSettings(per_query_path=str(out / "per_query"),
                              aggregate_path=str(out / "aggregate")),
    )


def test_the_used_rows_are_what_the_evaluation_ranked(spark: SparkSession, tmp_path: Path) -> None:
    summary = pipeline.run(spark, _config(tmp_path))
    # the qrels: 2 rows received, both used (counted by the engine's ledger too)
    qrels = summary.quality.qrels
    assert (qrels.input, qrels.used, qrels.quarantined, qrels.used_max) == (2, 2, {}, 1)
    run = {p.partition: (p.input, p.used, p.quarantined) for p in summary.quality.run.partitions}
    # r1: 4 rows received; ranked: a, b (q1) and c (q2) = 3; the second "a" of q1 is a
    # repeated document: 4 = 3 + 1. r2: 2 = 2 + 0.
    assert run == {
        "run_id=r1": (4, 3, {"duplicate_doc": 1}),
        "run_id=r2": (2, 2, {}),
    }


def test_rows_past_the_depth_are_used_rows(spark: SparkSession, tmp_path: Path) -> None:
    summary = pipeline.run(spark, _config(tmp_path, depth=1))
    run = {p.partition: (p.input, p.used, p.quarantined) for p in summary.quality.run.partitions}
    # depth 1: r1 evaluates a (q1) and c (q2); b is past the depth, still a used row:
    # 4 = 3 + 1 as without the depth. r2: one document per query, nothing cut.
    assert run == {
        "run_id=r1": (4, 3, {"duplicate_doc": 1}),
        "run_id=r2": (2, 2, {}),
    }
    assert summary.rows_beyond_depth == 1


def _fails_with_nothing_written(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, fault: object,
    depth: int | None = None,
) -> str:
    """Run the job with the kernel's function ``name`` replaced by ``fault``: it must fail
    with an AccountingError before anything is written; returns the error's message."""
    monkeypatch.setattr(kernel, name, fault)
    # the Python workers get the kernel's functions (and the fault) by value
    cloudpickle.register_pickle_by_value(kernel)
    try:
        with pytest.raises(AccountingError) as error:
            pipeline.run(spark, _config(tmp_path, depth))
    finally:
        cloudpickle.unregister_pickle_by_value(kernel)
    assert not (tmp_path / "out" / "per_query").exists()
    assert not (tmp_path / "out" / "aggregate").exists()
    return str(error.value)


def test_rows_lost_inside_the_engine_fail_the_job_and_nothing_is_written(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rank = kernel._query_stats

    def lossy(table: pa.Table, **kwargs: object) -> pa.Table:
        # the fault: the engine loses document b of run r2 after receiving it
        lost = pc.and_(pc.equal(table.column("run_id"), "r2"), pc.equal(table.column("doc_id"), "b"))
        return rank(table.filter(pc.invert(pc.fill_null(lost, False))), **kwargs)

    message = _fails_with_nothing_written(spark, tmp_path, monkeypatch, "_query_stats", lossy)
    # r2: 2 rows received, 1 ranked, 0 quarantined
    assert "partition run_id=r2: input rows 2 (received by the evaluation) != used 1" in message


def test_qrels_rows_lost_inside_the_engine_fail_the_job_and_nothing_is_written(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keep = kernel.qrels_kept

    def lossy(qrels: pa.Table) -> pa.Table:
        # the fault: the engine loses the judgment (q2, c) after receiving it
        return keep(qrels.filter(pc.invert(pc.equal(qrels.column("doc_id"), "c"))))

    message = _fails_with_nothing_written(spark, tmp_path, monkeypatch, "qrels_kept", lossy)
    # 2 qrels rows received, 1 used, none rejected
    assert "qrels.txt: input rows 2 (received by the evaluation) != used 1 + quarantined 0" in message


def test_rows_past_the_depth_left_uncounted_fail_the_job(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rank = kernel._query_stats

    def uncounted(table: pa.Table, **kwargs: object) -> pa.Table:
        # the fault: the engine cuts at the depth but forgets the rows it cut
        stats = rank(table, **kwargs)
        at = stats.schema.get_field_index("_beyond_depth")
        return stats.set_column(at, "_beyond_depth", pa.array([0] * stats.num_rows, pa.int64()))

    message = _fails_with_nothing_written(spark, tmp_path, monkeypatch, "_query_stats", uncounted,
                                          depth=1)
    # r1: 4 rows received, 2 evaluated (a, c), b past the depth not counted, 1 quarantined
    assert "partition run_id=r1: input rows 4 (received by the evaluation) != used 2" in message
