"""The result of :func:`releval.evaluate`: its tables, accounts and writes, computed when used."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from pyspark.sql import DataFrame

from releval.checks.accounts import QualityReport
from releval.core.frames import local_frame
from releval.io import tables
from releval.job.counts import Counts, query_counts
from releval.job.inputs import JobInputs, account, rejected_rows
from releval.job.pipeline import Evaluation
from releval.stats.aggregate import bootstrap, rows


@dataclass(frozen=True)
class Result:
    """An evaluation on DataFrames: lazy until one of its tables or its accounts is used.

    Attributes:
        per_query: one row per (run partition, query, measure): the per-query table's
            schema (``job_run_id`` null).
        quarantine: one row per rejected input row, with the reason: the quarantine
            table's schema.
    """

    evaluation: Evaluation
    inputs: JobInputs
    missing_queries: str
    run_name: str
    qrels_name: str
    persisted: tuple[DataFrame, ...] = ()

    @property
    def per_query(self) -> DataFrame:
        return tables.per_query_rows(self.evaluation.per_query,
                                     partition_columns=self.inputs.partition_columns,
                                     job_run_id=None)

    @property
    def quarantine(self) -> DataFrame:
        fields = [self.inputs.run.schema[c] for c in self.inputs.partition_columns]
        return tables.quarantine_rows(rejected_rows(self.inputs), partition_fields=fields,
                                      qrels=self.qrels_name, job_run_id=None)

    @cached_property
    def _counts(self) -> Counts:
        return query_counts(
            self.evaluation.queries, list(self.inputs.partition_columns),
            missing_queries=self.missing_queries, measures=self.evaluation.measures,
            intervals=self.evaluation.intervals,
        )

    @cached_property
    def accounts(self) -> QualityReport:
        """The row accounting of both inputs: ``input = used + quarantined`` (checked)."""
        return account(self.inputs, self._counts, run_name=self.run_name,
                       qrels_name=self.qrels_name)

    @cached_property
    def _aggregate_rows(self) -> list[dict[str, Any]]:
        self.accounts  # noqa: B018 - the same aggregation; its check comes first
        ev, parts = self.evaluation, list(self.inputs.partition_columns)
        boot = (bootstrap(ev.queries, measures=ev.measures, partition_columns=parts,
                          intervals=ev.intervals)
                if ev.intervals.method == "bootstrap" else None)
        return rows(self._counts.sums, measures=ev.measures, partition_columns=parts,
                    intervals=ev.intervals, bootstrap=boot)

    @cached_property
    def aggregate(self) -> DataFrame:
        """One row per (run partition, measure, averaging): the aggregate table's schema
        (``job_run_id`` null). Computed when first read, with :attr:`accounts`."""
        fields = [self.inputs.run.schema[c] for c in self.inputs.partition_columns]
        schema = tables.aggregate_schema(fields)
        return local_frame(
            self.evaluation.queries.sparkSession,
            [tuple(r.get(f.name) for f in schema.fields) for r in self._aggregate_rows], schema,
        )

    def unpersist(self, blocking: bool = False) -> None:
        """Drop what the evaluation keeps in Spark's cache (its per-query rows, a few per
        query) once the result is no longer needed."""
        for df in reversed(self.persisted):
            df.unpersist(blocking)

    def write(
        self,
        *,
        per_query: str | None = None,
        aggregate: str | None = None,
        quarantine: str | None = None,
        catalog: bool = False,
    ) -> None:
        """Write the tables asked for as Delta tables, replacing their contents.

        Args:
            per_query, aggregate, quarantine: where each goes: a path, or with ``catalog``
                a table name; None: not written.
            catalog: the names are catalog tables, not paths.

        Example:
            >>> run = spark.createDataFrame([("q1", "a", 1.0)], "query_id string, doc_id string, score double")
            >>> qrels = spark.createDataFrame([("q1", "a", 1)], "query_id string, doc_id string, relevance int")
            >>> evaluate(run, qrels, measures=["P@1"]).write(per_query=str(tmp / "per_query"))
            >>> spark.read.format("delta").load(str(tmp / "per_query")).count()
            2
        """
        fields = [self.inputs.run.schema[c] for c in self.inputs.partition_columns]

        def where(name: str | None) -> dict[str, str | None]:
            return {"path": None, "table": name} if catalog else {"path": name, "table": None}

        if per_query:
            counts = self._counts.queries
            tables.write_per_query(
                self.evaluation.per_query,
                rows=(counts["scored"] + counts["missing"]) * len(self.evaluation.measures),
                **where(per_query), partition_fields=fields,
                output_partition_columns=(), predicate=None, job_run_id=None,
            )
        if aggregate:
            tables.write_aggregate(
                self.evaluation.queries.sparkSession, self._aggregate_rows,
                **where(aggregate), partition_fields=fields, output_partition_columns=(),
                predicate=None, job_run_id=None,
            )
        if quarantine:
            tables.write_quarantine(
                rejected_rows(self.inputs), spark=self.evaluation.queries.sparkSession,
                **where(quarantine), partition_fields=fields, output_partition_columns=(),
                run_predicate=None, qrels=self.qrels_name,
            )
