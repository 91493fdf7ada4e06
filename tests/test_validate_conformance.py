"""On trec_eval's clean test data, the job's path (raw read + split) feeds evaluate() exactly
the rows the casting readers give, and quarantines nothing, so the conformance results hold."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality

from releval.checks.split import split_qrels, split_run
from releval.config import QrelsSource, RunSource
from releval.io.readers import read_qrels, read_qrels_raw, read_run, read_run_raw


@pytest.mark.parametrize(
    "run_file, qrels_file",
    [("results.test", "qrels.test"), ("results.trunc", "qrels.test"),
     ("results.comment.test", "qrels.comment.test")],
)
def test_clean_rows_are_the_read_rows(spark, conformance_dir, run_file, qrels_file):
    run_src = RunSource(path=str(conformance_dir / run_file), format="trec", partition_columns=("run_id",))
    qrels_src = QrelsSource(path=str(conformance_dir / qrels_file), format="trec")
    clean, quarantined = split_run(read_run_raw(spark, run_src).rows, rank_by="score", partition_columns=["run_id"])
    assert quarantined.count() == 0
    assert_df_equality(clean, read_run(spark, run_src), ignore_row_order=True, ignore_nullable=True)
    clean_q, quarantined_q = split_qrels(read_qrels_raw(spark, qrels_src).rows)
    assert quarantined_q.count() == 0
    assert_df_equality(clean_q, read_qrels(spark, qrels_src), ignore_row_order=True, ignore_nullable=True)
