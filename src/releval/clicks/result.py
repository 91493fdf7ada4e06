"""The :class:`releval.Result` of online measures: the per-query rows come from a search log
(one mean over a query's searches per run partition), not from the run x qrels engine, and
every table, the aggregate's intervals, slices, weights, ``compare``, ``changes``, ``gate``,
``write`` and the repr read them as they read ``evaluate``'s.

Only what differs is here: the wide per-query table (:class:`OnlineEvaluation`), the
accounts of the interactions input, the quarantine and the writes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from pyspark.sql import DataFrame

from releval.checks.accounts import InputAccount
from releval.checks.interaction_reasons import INTERACTIONS
from releval.checks.interactions import CheckedInteractions
from releval.checks.queries import CheckedQueries
from releval.config import IntervalSettings
from releval.core import columns as S
from releval.core.engine import long_format
from releval.core.measures.registry import Measure
from releval.frames.aggregate import aggregate
from releval.io import tables
from releval.io.atomic import replace_partitions
from releval.io.comments import QUARANTINE_COMMENTS, QUARANTINE_PARTITION_COMMENT
from releval.io.writers import with_comments
from releval.result import Result
from releval.runtime.delta import require_delta


@dataclass(frozen=True)
class OnlineEvaluation:
    """The wide per-query table of online measures, read as ``Result`` reads an evaluation.

    Attributes:
        queries: one row per (run partition, query): ``_in_qrels`` (true), ``num_ret`` (the
            searches), ``_measures`` (value, num_rel, num_rel_ret per measure), ``weight``
            and the slice columns.
        measures: the measures of ``_measures``, in order.
        slices: the slice columns of ``queries``.
    """

    queries: DataFrame
    measures: tuple[Measure, ...]
    partition_columns: tuple[str, ...]
    intervals: IntervalSettings
    slices: tuple[str, ...] = ()
    attributes: None = None

    @property
    def per_query(self) -> DataFrame:
        """The per-query table's rows, without ``job_run_id``."""
        return long_format(self.queries, partition_columns=self.partition_columns,
                           measures=self.measures, slices=self.slices)


@dataclass(frozen=True)
class OnlineInputs:
    """What ``Result`` reads of its inputs: the run partition columns and a frame holding
    their types (the wide table); no answers."""

    partition_columns: tuple[str, ...]
    run: DataFrame
    answers: None = None


@dataclass(frozen=True)
class ClickAccounts:
    """The interactions input's account (and the queries input's, when given)."""

    interactions: InputAccount
    queries: InputAccount | None = None

    @property
    def inputs(self) -> tuple[InputAccount, ...]:
        return (self.interactions, *([self.queries] if self.queries else []))

    @property
    def quarantined(self) -> int:
        return sum(a.quarantined_total for a in self.inputs)

    def render(self) -> str:
        return "\n".join(line for a in self.inputs for line in a.render())


@dataclass(frozen=True, repr=False)
class ClickResult(Result):
    """A :class:`releval.Result` whose per-query rows come from a search log."""

    checked: CheckedInteractions | None = None
    queries_checked: CheckedQueries | None = None

    @cached_property
    def _rejected(self) -> DataFrame:
        assert self.checked is not None
        rejected = self.checked.quarantine
        if self.queries_checked is not None:
            rejected = rejected.unionByName(self.queries_checked.rejected)
        return rejected

    @cached_property
    def accounts(self) -> ClickAccounts:  # type: ignore[override]
        """The interactions' account (``input = used + quarantined``, checked), and the
        queries input's."""
        assert self.checked is not None
        queries = self.queries_checked.account() if self.queries_checked is not None else None
        return ClickAccounts(self.checked.accounts, queries)

    @cached_property
    def _aggregate_rows(self) -> list[dict[str, Any]]:
        self.accounts  # noqa: B018 - the accounts' check comes first
        ev = self.evaluation
        return aggregate(ev.queries, measures=ev.measures, partition_columns=ev.partition_columns,
                         intervals=ev.intervals, slices=ev.slices, weighted=True)

    def _asked_measures(self) -> list[str]:
        return [m.key for m in self.evaluation.measures]

    def compare(self, *, baseline: Any, candidates: Any, measures: Sequence[str] | None = None,
                slices: Sequence[str] | None = None, **options: Any) -> DataFrame:
        """:meth:`releval.Result.compare`, pairing the queries both sides have by default
        (``missing_queries="skip"``): a query one bucket never saw has no value there, not 0."""
        options.setdefault("missing_queries", "skip")
        return super().compare(baseline=baseline, candidates=candidates, measures=measures,
                               slices=slices, **options)

    def changes(self, *, baseline: Any, candidates: Any, measures: Sequence[str] | None = None,
                slices: Sequence[str] | None = None, **options: Any) -> DataFrame:
        """:meth:`releval.Result.changes`, with ``missing_queries="skip"`` by default."""
        options.setdefault("missing_queries", "skip")
        return super().changes(baseline=baseline, candidates=candidates, measures=measures,
                               slices=slices, **options)

    def write(self, *, per_query: str | None = None, aggregate: str | None = None,
              quarantine: str | None = None, attribution: str | None = None,
              catalog: bool = False) -> None:
        """Write the tables asked for as Delta tables, as :meth:`releval.Result.write` does;
        the quarantine's rows of the interactions (and queries) input are replaced."""
        if attribution:
            self.attribution  # noqa: B018 - raises: online measures have no answers
        if not (per_query or aggregate or quarantine):
            return
        spark = self.evaluation.queries.sparkSession
        require_delta(spark, "result.write")
        fields = [self.inputs.run.schema[c] for c in self.inputs.partition_columns]

        def where(name: str) -> dict[str, str | None]:
            return {"path": None, "table": name} if catalog else {"path": name, "table": None}

        if per_query:
            tables.write_per_query(self._long, rows=10_000, **where(per_query),
                                   partition_fields=fields, output_partition_columns=(),
                                   predicate=None, job_run_id=None)
        if aggregate:
            tables.write_aggregate(spark, self._aggregate_rows, **where(aggregate),
                                   partition_fields=fields, output_partition_columns=(),
                                   predicate=None, job_run_id=None)
        if quarantine:
            _write_quarantine(self._rejected, fields, **where(quarantine))


def _write_quarantine(rejected: DataFrame, fields: Sequence[Any], *, path: str | None,
                      table: str | None) -> None:
    """Replace the interactions' and queries' rows of the quarantine table."""
    rows = tables.quarantine_rows(rejected, partition_fields=fields, qrels="", job_run_id=None)
    comments = {**QUARANTINE_COMMENTS, **{f.name: QUARANTINE_PARTITION_COMMENT for f in fields}}
    replace_partitions(
        rows, path=path, table=table,
        schema=with_comments(tables.quarantine_table_schema(list(fields)), comments),
        partition_columns=[S.INPUT],
        description="releval quarantine: one row per rejected input row, with the reason.",
        predicate=f"{S.INPUT} IN ('{INTERACTIONS}', 'queries')",
        user_metadata="releval quarantine of online measures",
    )
