"""The result of :func:`releval.evaluate`: its tables, accounts and writes, computed when used."""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

from pyspark.sql import DataFrame

from releval import __version__, display
from releval.checks.accounts import QualityReport
from releval.config import DATAFRAME
from releval.core.frames import local_frame
from releval.core.measures.registry import parse_measures
from releval.errors import ConfigError
from releval.evaluation import answers as job_answers
from releval.evaluation.counts import Counts, query_counts
from releval.evaluation.evaluate import Evaluation
from releval.evaluation.inputs import JobInputs, account, rejected_rows
from releval.evaluation.persisted import materialize
from releval.frames.aggregate import bootstrap, rows
from releval.io import tables
from releval.runtime.delta import require_delta
from releval.shown import summary
from releval.stats.attribution import Thresholds


@dataclass(frozen=True)
class Result:
    """An evaluation on DataFrames: lazy until one of its tables or its accounts is used;
    each table is built once and the same DataFrame is given at every read.

    Attributes:
        per_query: one row per (run partition, query, measure): the per-query table's
            schema (``job_run_id`` null), with each query's ``weight`` and ``slices``.
        quarantine: one row per rejected input row, with the reason: the quarantine
            table's schema.
        attribution: with ``answers=``, one row per (run partition, cell of retrieval x
            answer): the attribution table's schema.
    """

    evaluation: Evaluation
    inputs: JobInputs
    missing_queries: str
    run_name: str
    qrels_name: str
    persisted: list[DataFrame] = field(default_factory=list)
    #: the answers' thresholds and the retrieval measure's index (with ``answers=``)
    thresholds: Thresholds | None = None
    retrieval_index: int = 0
    #: the evaluation's settings as given (measures, relevance level, ...): logged by
    #: :meth:`log_mlflow`
    settings: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def per_query(self) -> DataFrame:
        """One row per (run partition, query, measure): planned once, at the first read."""
        return tables.per_query_rows(self._long, partition_columns=self.inputs.partition_columns,
                                     job_run_id=None)

    @cached_property
    def _long(self) -> DataFrame:
        """The per-query rows without ``job_run_id``, with the answer scores when answered."""
        if self._answers is None:
            return self.evaluation.per_query
        return self.evaluation.long(self._answers.per_query(self.evaluation.queries))

    @cached_property
    def quarantine(self) -> DataFrame:
        """One row per rejected input row, with the reason: planned once, at the first read."""
        fields = [self.inputs.run.schema[c] for c in self.inputs.partition_columns]
        return tables.quarantine_rows(self._rejected, partition_fields=fields,
                                      qrels=self.qrels_name, job_run_id=None)

    @cached_property
    def _rejected(self) -> DataFrame:
        """Every rejected input row: the run's and the qrels' (a scan of their own), the
        answers' when given."""
        rejected = rejected_rows(self.inputs)
        if self._answers is not None:
            rejected = rejected.unionByName(self._answers.rejected)
        if self.evaluation.attributes is not None:
            rejected = rejected.unionByName(self.evaluation.attributes.rejected)
        return rejected

    @cached_property
    def _answers(self) -> job_answers.Answers | None:
        if self.inputs.answers is None or self.thresholds is None:
            return None
        return job_answers.evaluate_answers(
            self.inputs.answers, name=DATAFRAME, queries=self.evaluation.queries,
            qrels=self.inputs.qrels, run_partitions=self._counts.run_ledger.keys(),
            partition_columns=self.inputs.partition_columns, index=self.retrieval_index,
            settings=self.thresholds, kept=self.persisted,
        )

    @cached_property
    def _counts(self) -> Counts:
        materialize(self.persisted, partition_columns=self.inputs.partition_columns,
                    missing_queries=self.missing_queries)
        ev = self.evaluation
        return query_counts(
            ev.attributed, list(self.inputs.partition_columns),
            missing_queries=self.missing_queries, measures=ev.measures,
            intervals=ev.intervals, slices=ev.slices, weighted=ev.weighted,
        )

    @cached_property
    def accounts(self) -> QualityReport:
        """The row accounting of the inputs: ``input = used + quarantined`` (checked)."""
        report = account(self.inputs, self._counts, run_name=self.run_name,
                         qrels_name=self.qrels_name)
        if self.evaluation.attributes is not None:
            report = dataclasses.replace(report, queries=self.evaluation.attributes.account(),
                                         unlisted=self._counts.queries["unlisted"])
        if self._answers is None:
            return report
        self._answers.check()
        return dataclasses.replace(report, answers=self._answers.account)

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

    @cached_property
    def attribution(self) -> DataFrame:
        """One row per (run partition, cell of retrieval x answer): the attribution table's
        schema (``job_run_id`` null). Computed when first read, with :attr:`accounts`;
        a ConfigError without ``answers=``."""
        if self._answers is None:
            raise ConfigError("no attribution: releval.evaluate was given no answers= DataFrame")
        self.accounts  # noqa: B018 - the answers' checks come first
        fields = [self.inputs.run.schema[c] for c in self.inputs.partition_columns]
        schema = tables.attribution_schema(fields)
        return local_frame(
            self.evaluation.queries.sparkSession,
            [tuple(r.get(f.name) for f in schema.fields) for r in self._answers.rows], schema,
        )

    #: the measures (rows) :meth:`__repr__` and :meth:`_repr_html_` show at most, and the
    #: run partitions (columns) of the HTML table (the text is cut to 130 characters)
    SHOWN_MEASURES: ClassVar[int] = 20
    SHOWN_PARTITIONS: ClassVar[int] = 8

    def _summary(self) -> tuple[list[str], list[str], list[list[Any]], str]:
        """What :meth:`__repr__` and :meth:`_repr_html_` show (:func:`releval.shown.summary`).
        Computes the aggregate when it was not yet (once: :attr:`aggregate` reuses it)."""
        return summary(self)

    def __repr__(self) -> str:
        """A short summary: the inputs, the measures, the run partitions and the macro means
        with their intervals (at most :data:`SHOWN_MEASURES` rows), and the tables to read
        for the rest. It computes the aggregate once, as :attr:`aggregate` does (and shares
        it); the per-query and quarantine rows are not computed to show it.

        Example:
            >>> run = spark.createDataFrame([("q1", "a", 1.0)], "query_id string, doc_id string, score double")
            >>> qrels = spark.createDataFrame([("q1", "a", 1)], "query_id string, doc_id string, relevance int")
            >>> shown = repr(evaluate(run, qrels, measures=["P@1"])).splitlines()
            >>> print(next(line for line in shown if line.startswith("P@1")))  # 1 query: no interval
            P@1          1.0000 [-, -]
        """
        head, columns, rows, footer = self._summary()
        table = (display.text_table(rows, columns, max_rows=self.SHOWN_MEASURES, max_width=130,
                                    noun="measure")
                 if columns else "")
        return "\n".join([*head, *([table] if table else []), footer])

    def _repr_html_(self) -> str:
        """:meth:`__repr__` as HTML, for notebooks (the same rows, computed once)."""
        head, columns, rows, footer = self._summary()
        most = 1 + self.SHOWN_PARTITIONS
        if len(columns) > most:
            footer = f"{len(columns) - most} more run partitions in result.aggregate; {footer}"
        lines = "".join(f"<div>{html.escape(line.strip())}</div>" for line in head)
        table = (display.html_table([r[:most] for r in rows], columns[:most],
                                    max_rows=self.SHOWN_MEASURES, noun="measure") if columns else "")
        return f"<div>{lines}{table}<div>{html.escape(footer)}</div></div>"

    def log_mlflow(self, prefix: str | None = None, run_id: str | None = None, *,
                   report: str | None = None) -> str:
        """Log to MLflow's active run (or ``run_id``; neither: a run started and ended here):
        every macro mean as a metric (``ndcg_at_10``; with run partitions
        ``bm25/ndcg_at_10``), the settings as params, the per-query rows as
        ``releval/per_query.parquet`` and ``report`` (an HTML file) when given.

        Args:
            prefix: put before every metric and param name, e.g. ``"retrieval/"``.
            run_id: the MLflow run to log to.
            report: a file to log as an artifact (``releval report``'s HTML).

        Returns:
            The MLflow run id.

        Example:
            >>> import mlflow
            >>> mlflow.set_tracking_uri((tmp / "mlruns").as_uri())
            >>> run = spark.createDataFrame([("q1", ["a", "b"], ["b"])],
            ...     "q string, hits array<string>, gold array<string>")
            >>> result = evaluate(run, None, measures=["nDCG@10"],
            ...     columns={"query_id": "q", "ranked": "hits"}, qrels_columns={"relevant": "gold"})
            >>> run_id = result.log_mlflow()
            >>> round(mlflow.get_run(run_id).data.metrics["ndcg_at_10"], 4)  # 1/log2(3) / 1
            0.6309
        """
        from releval.io.mlflow_log import log_evaluation

        params = {**self.settings, "partition_columns": ",".join(self.inputs.partition_columns),
                  "run": self.run_name, "qrels": self.qrels_name, "releval_version": __version__}
        return log_evaluation(
            aggregate=self._aggregate_rows, partition_columns=self.inputs.partition_columns,
            params=params, per_query=self.per_query, report=report, prefix=prefix,
            run_id=run_id)

    def _asked_measures(self) -> list[str]:
        """The measure keys ``evaluate`` was asked for (not the Judged@k it adds)."""
        asked = [m for m in str(self.settings.get("measures") or "").split(",") if m]
        if not asked:
            return [m.key for m in self.evaluation.measures]
        return [m.key for m in parse_measures(
            asked, relevance_level=int(self.settings.get("relevance_level", 1)),
            judged_only=bool(self.settings.get("judged_only", False)))]

    def compare(self, *, baseline: Any, candidates: Any, measures: Sequence[str] | None = None,
                slices: Sequence[str] | None = None, **options: Any) -> DataFrame:
        """:func:`releval.compare` of :attr:`per_query`, which carries the weight and slices
        asked for; ``measures`` None: those ``evaluate`` was asked for (not the Judged@k it
        adds). The other arguments are :func:`releval.compare`'s.

        Example:
            >>> run = spark.createDataFrame([(s, "q1", d, x) for s, d, x in [
            ...     ("bm25", "a", 2.0), ("bm25", "b", 1.0), ("dense", "b", 2.0)]],
            ...     "system string, query_id string, doc_id string, score double")
            >>> qrels = spark.createDataFrame([("q1", "b", 1)], "query_id string, doc_id string, relevance int")
            >>> result = evaluate(run, qrels, measures=["RR"], partition_by=["system"])
            >>> [(r.measure_key, r.mean_diff) for r in result.compare(
            ...     baseline="system=bm25", candidates="system=dense").collect()]
            [('RR', 0.5)]
        """
        from releval import api

        return api.compare(self.per_query, baseline=baseline, candidates=candidates,
                           measures=self._asked_measures() if measures is None else measures,
                           slices=slices, **options)

    def changes(self, *, baseline: Any, candidates: Any, measures: Sequence[str] | None = None,
                slices: Sequence[str] | None = None, **options: Any) -> DataFrame:
        """:func:`releval.changes` of :attr:`per_query` (``measures`` as :meth:`compare`).

        Example:
            >>> run = spark.createDataFrame([(s, "q1", d, x) for s, d, x in [
            ...     ("bm25", "a", 2.0), ("bm25", "b", 1.0), ("dense", "b", 2.0)]],
            ...     "system string, query_id string, doc_id string, score double")
            >>> qrels = spark.createDataFrame([("q1", "b", 1)], "query_id string, doc_id string, relevance int")
            >>> result = evaluate(run, qrels, measures=["RR"], partition_by=["system"])
            >>> [(r.query_id, r.diff) for r in result.changes(
            ...     baseline="system=bm25", candidates="system=dense").collect()]
            [('q1', 0.5)]
        """
        from releval import api

        return api.changes(self.per_query, baseline=baseline, candidates=candidates,
                           measures=self._asked_measures() if measures is None else measures,
                           slices=slices, **options)

    def gate(self, *, baseline: Any, candidates: Any = None, rules: Sequence[str],
             measures: Sequence[str] | None = None, slices: Sequence[str] | None = None,
             **options: Any) -> Any:
        """:func:`releval.gate` of :attr:`per_query`: a Gate, or a dict of them by candidate
        for a list of candidates.

        Example:
            >>> run = spark.createDataFrame([(s, f"q{i}", d, x) for i in range(8)
            ...     for s, d, x in [("bm25", "a", 2.0), ("bm25", "b", 1.0), ("dense", "b", 2.0)]],
            ...     "system string, query_id string, doc_id string, score double")
            >>> qrels = spark.createDataFrame([(f"q{i}", "b", 1) for i in range(8)],
            ...     "query_id string, doc_id string, relevance int")
            >>> result = evaluate(run, qrels, measures=["RR"], partition_by=["system"])
            >>> # RR 1/2 -> 1 on each of 8 queries: p_pass = (1 - 0.5 / 1.5) ** 8 = 0.039
            >>> result.gate(baseline="system=bm25", candidates="system=dense",
            ...             rules=["RR change >= 0"]).decision
            'pass'
        """
        from releval.gating import gate

        return gate(self.per_query, baseline=baseline, candidates=candidates, rules=rules,
                    measures=measures, slices=slices, **options)

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
        attribution: str | None = None,
        catalog: bool = False,
    ) -> None:
        """Write the tables asked for as Delta tables, replacing their contents.

        Args:
            per_query, aggregate, quarantine, attribution: where each goes: a path, or with
                ``catalog`` a table name; None: not written.
            catalog: the names are catalog tables, not paths.

        Raises:
            DeltaUnavailableError: the session has no Delta Lake (the message says what to set).

        Example:
            >>> run = spark.createDataFrame([("q1", "a", 1.0)], "query_id string, doc_id string, score double")
            >>> qrels = spark.createDataFrame([("q1", "a", 1)], "query_id string, doc_id string, relevance int")
            >>> evaluate(run, qrels, measures=["P@1"]).write(per_query=str(tmp / "per_query"))
            >>> spark.read.format("delta").load(str(tmp / "per_query")).count()
            2
        """
        if per_query or aggregate or quarantine or attribution:
            require_delta(self.evaluation.queries.sparkSession, "result.write")
        fields = [self.inputs.run.schema[c] for c in self.inputs.partition_columns]

        def where(name: str | None) -> dict[str, str | None]:
            return {"path": None, "table": name} if catalog else {"path": name, "table": None}

        if per_query:
            counts = self._counts.queries
            tables.write_per_query(
                self._long,
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
                self._rejected, spark=self.evaluation.queries.sparkSession,
                **where(quarantine), partition_fields=fields, output_partition_columns=(),
                run_predicate=None, qrels=self.qrels_name, answers=self._answers is not None,
                queries=self.evaluation.attributes is not None,
            )
        if attribution:
            self.attribution  # noqa: B018 - the checks, before anything is written
            tables.write_attribution(
                self.evaluation.queries.sparkSession, self._answers.rows if self._answers else (),
                **where(attribution), partition_fields=fields, output_partition_columns=(),
                predicate=None, job_run_id=None,
            )
