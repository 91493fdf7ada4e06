"""Evaluate a run against qrels: DataFrames in, a lazily evaluated :class:`Evaluation` out.

:func:`evaluate_inputs` is what the batch job (:mod:`releval.job.pipeline`) and
``releval.evaluate`` both run on checked inputs (:mod:`releval.evaluation.inputs`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from releval.checks.queries import CheckedQueries, with_attributes
from releval.config import IntervalSettings
from releval.core import columns as S
from releval.core.engine import RunStatsEngine, arrow_run_stats, long_format, query_measures
from releval.core.frames import local_frame
from releval.core.measures import Measure
from releval.evaluation.inputs import JobInputs
from releval.frames.aggregate import aggregate
from releval.io import tables


@dataclass(frozen=True)
class Evaluation:
    """The lazily evaluated results of :func:`evaluate`.

    Attributes:
        queries: one row per (run partition, query) with the ``_in_run`` / ``_in_qrels``
            flags and the measures in an array (the wide table the aggregate reads).
        measures, partition_columns, intervals: what :attr:`per_query` and
            :attr:`aggregate` need.
        attributes: the checked queries input (slices, weight); None without one.
        run_slices: run columns :attr:`queries` carries per (run partition, query), sliced
            by as the queries input's slices are (:mod:`releval.core.run_slices`).
    """

    queries: DataFrame
    measures: tuple[Measure, ...]
    partition_columns: tuple[str, ...]
    intervals: IntervalSettings
    attributes: CheckedQueries | None = None
    run_slices: tuple[str, ...] = ()

    @property
    def attributed(self) -> DataFrame:
        """:attr:`queries` with the queries' slices, weight and ``_listed``
        (:func:`releval.checks.queries.with_attributes`); :attr:`queries` without them."""
        if self.attributes is None:
            return self.queries
        return with_attributes(self.queries, self.attributes, listed=True)

    @property
    def slices(self) -> tuple[str, ...]:
        """The run slices, then the queries input's."""
        return (*self.run_slices,
                *(self.attributes.slices if self.attributes is not None else ()))

    @property
    def weighted(self) -> bool:
        return self.attributes is not None and self.attributes.weighted

    @property
    def per_query(self) -> DataFrame:
        """The per-query table's rows, without ``job_run_id`` (planned when read)."""
        return self.long(self.queries)

    def long(self, wide: DataFrame) -> DataFrame:
        """``wide`` (:attr:`queries`, or it with the answer scores) as the per-query table's
        rows, with each query's ``weight`` and ``slices`` (planned when read)."""
        if self.attributes is not None:
            wide = with_attributes(wide, self.attributes)
        return long_format(wide, partition_columns=self.partition_columns,
                           measures=self.measures, slices=self.slices)

    @property
    def aggregate(self) -> DataFrame:
        """The aggregate table's rows, without ``job_run_id`` (computed and collected when
        read: :func:`releval.frames.aggregate.aggregate`)."""
        found = aggregate(
            self.attributed, measures=self.measures, partition_columns=self.partition_columns,
            intervals=self.intervals, slices=self.slices, weighted=self.weighted,
        )
        fields = [self.queries.schema[c] for c in self.partition_columns]
        schema = T.StructType(
            [f for f in tables.aggregate_schema(fields).fields if f.name != S.JOB_RUN_ID]
        )
        return local_frame(
            self.queries.sparkSession, [tuple(r[f.name] for f in schema.fields) for r in found],
            schema,
        )


def evaluate(
    run: DataFrame,
    qrels: DataFrame,
    *,
    measures: Sequence[Measure],
    rank_by: str = "score",
    partition_columns: Sequence[str] = (),
    missing_queries: str = "zero",
    laid_out_by_query: bool = False,
    run_stats: RunStatsEngine = arrow_run_stats,
    negative_labels: str = "unjudged",
    depth: int | None = None,
    intervals: IntervalSettings = IntervalSettings(),
    ledger: bool = False,
    keep: Callable[[DataFrame], DataFrame] | None = None,
    window: bool = False,
    run_partitions: DataFrame | None = None,
    slices: Sequence[str] = (),
) -> Evaluation:
    """Evaluate a run against qrels.

    Args:
        run: canonical run rows (partition columns, query_id, doc_id, score, rank).
        qrels: canonical qrels rows (query_id, doc_id, relevance).
        measures: parsed measures.
        rank_by: "score" (trec_eval's order) or "rank" (the given positions).
        partition_columns: the columns that identify one run.
        missing_queries: "zero" or "skip" (see :func:`releval.core.engine.query_measures`).
        laid_out_by_query: both inputs are already partitioned by :func:`releval.core.layout.by_query`
            (the job's checked inputs).
        run_stats: the run statistics' engine; production has one (the default), the
            tests pass their SQL oracle (``releval.core.engine.RunStatsEngine``).
        negative_labels: what a negative label means, "unjudged" (trec_eval) or "judged"
            (:func:`releval.core.kernel.engine_rows`); recorded in both tables.
        depth: evaluate each ranking's first ``depth`` documents (trec_eval ``-M``); None:
            all; recorded in both tables.
        intervals: the confidence intervals of the aggregate's macro values.
        ledger: ``run`` holds every run row with the row rules' ``_reason``; the engine
            ranks the clean ones and counts all of them in the same pass (the job's input
            accounting; :func:`releval.core.engine.query_measures`).
        keep: applied to the engine's result before it is read more than once (the job
            persists it).
        window: ``run`` has each query's k_q (``window``), read by the ``@window`` measures.
        run_partitions: run partitions that may have ranked no row (see
            :func:`releval.core.engine.query_measures`).
        slices: run columns constant per (run partition, query) to slice the aggregate by.
    """
    parts = list(partition_columns)
    queries = query_measures(
        run, qrels, measures=measures, partition_columns=parts, missing_queries=missing_queries,
        rank_by=rank_by, run_stats=run_stats, laid_out_by_query=laid_out_by_query,
        negative_labels=negative_labels, depth=depth, ledger=ledger, keep=keep, window=window,
        run_partitions=run_partitions, slices=slices,
    )
    return Evaluation(
        queries=queries,
        measures=tuple(measures),
        partition_columns=tuple(parts),
        intervals=intervals,
        run_slices=tuple(slices),
    )


def evaluate_inputs(
    inputs: JobInputs,
    *,
    measures: Sequence[Measure],
    missing_queries: str = "zero",
    negative_labels: str = "unjudged",
    depth: int | None = None,
    intervals: IntervalSettings = IntervalSettings(),
    keep: Callable[[DataFrame], DataFrame] | None = None,
) -> Evaluation:
    """:func:`evaluate` of checked inputs: the engine ranks the clean rows and counts every
    row in the same pass (its ledger). What the job and ``releval.evaluate`` both run."""
    return evaluate(
        inputs.run,
        inputs.qrels,
        measures=measures,
        rank_by=inputs.rank_by,
        partition_columns=inputs.partition_columns,
        missing_queries=missing_queries,
        negative_labels=negative_labels,
        depth=depth,
        intervals=intervals,
        ledger=True,
        keep=keep,
        window=inputs.window,
        run_partitions=inputs.raw_run.partitions,
        slices=inputs.slices,
    )
