"""The batch job with a ``[clicks]`` section: the interactions checked and accounted, the
``click_labels`` and ``position_bias`` tables written per ``partition_by`` value, then the
evaluation job (:func:`releval.job.batch.run_job`), whose qrels are those labels with
``[qrels] source = "clicks"``. Every commit carries the one ``job_run_id``.

The click step reads every interaction ``[clicks]`` selects (its filter), whatever run
partitions the evaluation selects: the labels of a (query, document) pool all its
impressions, and a re-run replaces the same partitions with the same rows.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from releval.checks.accounts import InputAccount
from releval.checks.interactions import CheckedInteractions, check_interactions
from releval.clicks.labels import click_labels
from releval.config import Config
from releval.config.clicks import ClicksSettings
from releval.core import columns as S
from releval.errors import QualityError
from releval.evaluation.partitions import PartitionSelection, partitions_predicate
from releval.io.atomic import WriteResult, read_table, replace_partitions, table_exists
from releval.io.click_inputs import (
    interactions_label,
    interactions_name,
    pinned,
    read_interactions,
)
from releval.io.click_tables import write_click_table
from releval.io.comments import QUARANTINE_COMMENTS, QUARANTINE_PARTITION_COMMENT
from releval.io.readers import run_partition_fields
from releval.io.tables import quarantine_rows, quarantine_table_schema
from releval.io.writers import with_comments
from releval.job.batch import JobResult, run_job
from releval.runtime.delta import require_delta


@dataclass(frozen=True)
class ClicksRun:
    """What the click step read and wrote."""

    source: str
    version: int | None
    model: str
    account: InputAccount
    partitions: tuple[dict[str, str | None], ...]
    labels: WriteResult
    bias: WriteResult

    def render(self) -> list[str]:
        """The summary's lines: the interactions' account and the two tables' commits."""
        parts = ", ".join(",".join(f"{k}={v}" for k, v in p.items()) or "all"
                          for p in self.partitions) or "none"
        return [
            f"  clicks: {self.source} @v{self.version}, model {self.model}; "
            f"partitions {parts}",
            f"    interactions: {self.account.input} rows = {self.account.used} used + "
            f"{self.account.quarantined_total} quarantined {self.account.quarantined or ''}"
            .rstrip(),
            f"    rows written: click_labels {self.labels.rows} (v{self.labels.version}), "
            f"position_bias {self.bias.rows} (v{self.bias.version})",
        ]


def checked(spark: SparkSession, clicks: ClicksSettings) -> CheckedInteractions:
    """The interactions ``clicks`` names, read and checked (partitioned by its
    ``partition_by``)."""
    return check_interactions(read_interactions(spark, clicks), clicks.columns(),
                              name=interactions_name(clicks), partition_by=clicks.partition_by)


def partition_values(rows: DataFrame, partition_by: tuple[str, ...]) -> list[dict[str, object]]:
    """The distinct ``partition_by`` values of ``rows``, sorted (``[{}]`` without columns)."""
    if not partition_by:
        return [{}]
    found = [r.asDict() for r in rows.select(*partition_by).distinct().collect()]
    return sorted(found, key=lambda v: [str(v[c]) for c in partition_by])


def labelled(rows: DataFrame, clicks: ClicksSettings, values: list[dict[str, object]]
             ) -> tuple[DataFrame, DataFrame]:
    """(labels, position bias) of checked rows, each ``partition_by`` value of ``values`` on
    its own (:func:`releval.click_labels` per value), the partition columns first."""
    parts = list(clicks.partition_by)
    labels, bias = [], []
    for value in values:
        where = F.lit(True)
        for c in parts:
            where = where & F.col(c).eqNullSafe(F.lit(value[c]))
        found = click_labels(rows.where(where) if parts else rows, model=clicks.model,
                             min_impressions=clicks.min_impressions, grades=clicks.grades)
        fixed = [F.lit(value[c]).cast(rows.schema[c].dataType).alias(c) for c in parts]
        labels.append(found.labels.select(*fixed, "*"))
        bias.append(found.position_bias.select(*fixed, "*"))
    return reduce(DataFrame.unionByName, labels), reduce(DataFrame.unionByName, bias)


def write_interactions_quarantine(spark: SparkSession, config: Config,
                                  found: CheckedInteractions, job_run_id: str) -> None:
    """Replace the quarantine table's ``input = 'interactions'`` rows with ``found``'s rejected
    rows (one commit; none when there is no table and nothing was rejected)."""
    path, table = config.located("quarantine")
    if not (path or table) or (not found.accounts.quarantined_total and not table_exists(
            spark, path=path, table=table)):
        return
    fields = run_partition_fields(spark, config.run)
    comments = {**QUARANTINE_COMMENTS, **{f.name: QUARANTINE_PARTITION_COMMENT for f in fields}}
    rows = quarantine_rows(found.quarantine, partition_fields=fields, qrels="",
                           job_run_id=job_run_id)
    replace_partitions(
        rows, path=path, table=table,
        schema=with_comments(quarantine_table_schema(fields), comments),
        partition_columns=[S.INPUT, *config.output_partition_columns],
        description="releval quarantine: one row per rejected input row, with the reason.",
        predicate=f"{S.INPUT} = 'interactions'",
        user_metadata=f"releval quarantine job_run_id={job_run_id}",
    )


def written_values(spark: SparkSession, config: Config) -> list[dict[str, object]]:
    """The ``partition_by`` values the click-labels table holds (``[{}]``: it exists, without
    partition columns; ``[]``: no table)."""
    path, table = config.located("click_labels")
    if config.clicks is None or not table_exists(spark, path=path, table=table):
        return []
    return partition_values(read_table(spark, path=path, table=table), config.clicks.partition_by)


def run_clicks(spark: SparkSession, config: Config, *, job_run_id: str,
               strict: bool | None = None, pending: bool = False) -> ClicksRun | None:
    """The click step of the job: check the interactions, write their quarantine rows, then
    both click tables, replacing the partitions found (the whole tables without
    ``partition_by``); with ``pending``, only the partitions the click-labels table does not
    hold yet (None: none pending).

    Raises:
        QualityError: strict mode and interactions were quarantined (after the quarantine
            is written, before the click tables).
        AccountingError: an interactions row was lost or counted twice.
    """
    require_delta(spark, "the click tables")
    if config.clicks is None:
        raise ValueError("run_clicks needs a config with a [clicks] section")
    done = written_values(spark, config) if pending else []
    if done == [{}]:
        return None
    clicks = pinned(spark, config.clicks)
    found = checked(spark, clicks)
    account = found.accounts
    write_interactions_quarantine(spark, config, found, job_run_id)
    strict = config.evaluation.strict if strict is None else strict
    if strict and account.quarantined_total:
        raise QualityError(f"strict mode: {account.quarantined_total} interactions row(s) "
                           f"quarantined ({account.quarantined})")
    parts = list(clicks.partition_by)
    values = [v for v in partition_values(found.rows, clicks.partition_by)
              if {c: str(v[c]) for c in parts} not in
              [{c: str(d[c]) for c in parts} for d in done]]
    if not values:
        return None
    labels, bias = labelled(found.rows, clicks, values)
    predicate = partitions_predicate(values, output_partition_columns=parts) if parts else None
    fields = [found.rows.schema[c] for c in parts]
    common = dict(partition_fields=fields, predicate=predicate,
                  source=interactions_label(clicks), version=clicks.version,
                  model=clicks.model, job_run_id=job_run_id)
    written = {}
    for kind, rows in (("click_labels", labels), ("position_bias", bias)):
        path, table = config.located(kind)
        written[kind] = write_click_table(rows, kind=kind, path=path, table=table, **common)
    return ClicksRun(source=interactions_label(clicks), version=clicks.version,
                     model=clicks.model, account=account,
                     partitions=tuple({c: None if v[c] is None else str(v[c]) for c in parts}
                                      for v in values),
                     labels=written["click_labels"], bias=written["position_bias"])


def run_job_with_clicks(
    spark: SparkSession, config: Config, selection: PartitionSelection = PartitionSelection(),
    **kwargs: object,
) -> tuple[JobResult, ClicksRun | None]:
    """The batch job: the click step when ``config`` has ``[clicks]``, then
    :func:`releval.job.batch.run_job` (keyword arguments as it takes them) with the same
    ``job_run_id``; with ``[qrels] source = "clicks"`` its qrels are the labels just written,
    at their new version (the run log's ``qrels_source`` and ``qrels_version``). With
    ``--pending`` the click step computes only the partitions its tables do not hold (the
    second element is None when there were none)."""
    job_run_id = str(kwargs.pop("job_run_id", None) or uuid.uuid4())
    clicks = None
    if config.clicks is not None:
        clicks = run_clicks(spark, config, job_run_id=job_run_id, pending=selection.pending,
                            strict=kwargs.get("strict"))  # type: ignore[arg-type]
    result = run_job(spark, config, selection, job_run_id=job_run_id, **kwargs)  # type: ignore[arg-type]
    return result, clicks
