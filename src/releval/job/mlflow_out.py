"""A job's evaluation logged to MLflow (``[output] mlflow = true``, ``releval evaluate
--mlflow``): what :meth:`releval.result.Result.log_mlflow` logs, from the job's summary and
the per-query rows it wrote."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from releval.config import Config
from releval.core import columns as S
from releval.evaluation.inputs import source_label
from releval.evaluation.summary import Summary
from releval.io.atomic import read_table
from releval.io.mlflow_log import log_evaluation
from releval.job import lineage


def job_params(config: Config, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The evaluation's settings and inputs as MLflow params (``extra``: the job run id, the
    input versions)."""
    ev = config.evaluation
    return {
        "measures": ",".join(ev.measures), "relevance_level": ev.relevance_level,
        "judged_only": ev.judged_only, "missing_queries": ev.missing_queries,
        "negative_labels": ev.negative_labels, "depth": ev.depth, "rank_by": config.run.rank_by,
        "partition_columns": ",".join(config.run.partition_columns),
        "run": source_label(config.run), "qrels": source_label(config.qrels),
        "run_filter": config.run.filter, "releval_version": lineage.releval_version(),
        **(extra or {}),
    }


def log_summary(spark: SparkSession, config: Config, summary: Summary, *,
                job_run_id: str | None = None, extra: Mapping[str, Any] | None = None) -> str:
    """Log a finished job to MLflow's active run (else one it starts): the summary's macro
    means, :func:`job_params`, and the per-query rows this job wrote (those of
    ``job_run_id``; None: the whole table) as ``releval/per_query.parquet``.

    Returns:
        The MLflow run id.
    """
    per_query = read_table(spark, path=config.output.per_query_path,
                           table=config.output.per_query_table)
    if job_run_id is not None:
        per_query = per_query.where(F.col(S.JOB_RUN_ID) == job_run_id)
    aggregate = [r.asDict() if hasattr(r, "asDict") else dict(r) for r in summary.aggregate]
    return log_evaluation(
        aggregate=aggregate, partition_columns=config.run.partition_columns,
        params=job_params(config, {"job_run_id": job_run_id, **(extra or {})}),
        per_query=per_query)
