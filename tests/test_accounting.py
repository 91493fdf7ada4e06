"""The input accounting's independent check: a fault that loses rows is caught (issue 11).

The accounting counts the labelled rows per partition and reason; ``input = used +
quarantined`` holds by construction of those counts. The check that can fail compares
them with the rows the scan gave, observed (``DataFrame.observe``) before any rule.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from releval import pipeline, quality
from releval.config import Config, EvaluationSettings, OutputSettings, QrelsSource, RunSource
from releval.errors import AccountingError


def config_for(spark: SparkSession, tmp_path: Path, rank_by: str) -> Config:
    run, qrels = str(tmp_path / "run"), str(tmp_path / "qrels")
    spark.createDataFrame(
        [("r", "q1", "a", 3.0, 1), ("r", "q1", "b", 2.0, 2), ("r", "q2", "a", 1.0, 1)],
        "run_id string, query_id string, doc_id string, score double, rank int",
    ).write.parquet(run)
    spark.createDataFrame([("q1", "a", 1), ("q2", "b", 1)],
                          "query_id string, doc_id string, relevance int").write.parquet(qrels)
    return Config(
        run=RunSource(path=run, format="parquet", partition_columns=("run_id",), rank_by=rank_by),
        qrels=QrelsSource(path=qrels, format="parquet"),
        evaluation=EvaluationSettings(measures=("P@1",)),
        output=OutputSettings(per_query_path=str(tmp_path / "out" / "pq"),
                              aggregate_path=str(tmp_path / "out" / "agg")),
    )


def test_scanned_rows_equal_the_accounted_rows_on_a_sound_run(spark: SparkSession, tmp_path: Path) -> None:
    config = config_for(spark, tmp_path, "score")
    inputs = quality.job_inputs(spark, config)
    run, qrels = quality.account_inputs(config, inputs)
    # 3 run rows and 2 qrels rows, both at the scan and in the accounting
    assert (run.input, inputs.run_scan.get["rows"]) == (3, 3)
    assert (qrels.input, inputs.qrels_scan.get["rows"]) == (2, 2)


@pytest.mark.parametrize("rank_by", ["score", "rank"])
def test_a_rule_that_loses_rows_fails_the_job_before_anything_is_written(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rank_by: str
) -> None:
    # the fault: the labelling silently drops the rows of query q2 (1 of the 3 run rows)
    label = quality.row_labelled_run if rank_by == "score" else quality.label_run
    name = "row_labelled_run" if rank_by == "score" else "label_run"

    def losing(df: DataFrame, **kwargs) -> DataFrame:  # noqa: ANN003
        return label(df.where(F.col("query_id") != "q2"), **kwargs)

    monkeypatch.setattr(quality, name, losing)
    config = config_for(spark, tmp_path, rank_by)
    with pytest.raises(AccountingError, match=r"run parquet .*: the scan read 3 rows but the "
                                              r"accounting counted 2"):
        pipeline.run(spark, config)
    assert not (tmp_path / "out").exists()
