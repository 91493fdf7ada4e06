"""The queries input: one row per query with its attributes (the slices) and, optionally,
its traffic weight. Every row is used or quarantined with the first reason that applies
(:data:`releval.checks.rules.REASONS`): ``missing_query_id``, ``duplicate_query_id`` (every
row of a query id listed more than once: which attributes are right is unknown), then
``invalid_weight`` (null, non-numeric, negative, NaN or infinite; a zero weight is valid).

A scored query that the queries input does not list gets :data:`UNLISTED_SLICE` for every
slice and a null weight: it counts in the unweighted rows (overall and in its ``(unlisted)``
slice rows), is left out of the weighted means, and is counted. See docs/statistics.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Row, Window
from pyspark.sql import functions as F

from releval.checks.accounts import InputAccount, account_ledger
from releval.checks.rules import (
    DUPLICATE_QUERY_ID,
    INVALID_WEIGHT,
    QUERIES,
    blank,
    first_reason,
    meta_columns,
)
from releval.checks.split import quarantined
from releval.core import columns as S
from releval.core.columns import NULL_SLICE, REASON, RECEIVED, UNLISTED_SLICE, USED
from releval.errors import ConfigError

_RAW = "_raw_"
#: The hidden column :func:`with_attributes` adds: the queries input lists the query.
LISTED = "_listed"


@dataclass(frozen=True)
class CheckedQueries:
    """A checked queries input.

    Attributes:
        used: ``query_id`` (string), ``weight`` (double; null without a weight column) and one
            string column per slice, named as the slice (a null attribute: ``(null)``); one row
            per query id.
        rejected: the rejected rows in the quarantine's shape
            (:data:`releval.io.tables.QUARANTINE_SCHEMA`): ``input`` = ``queries``, an empty
            ``partition``, ``raw`` holding the row's query id, weight and slice values as read.
        labelled: every row, typed, with ``_reason`` (null: used); what :meth:`counts` reads.
        slices: the slice columns, in order.
        weighted: whether a weight column was given.
        name: the input's name in messages (a DataFrame or a file).
    """

    used: DataFrame
    rejected: DataFrame
    labelled: DataFrame
    slices: tuple[str, ...]
    weighted: bool
    name: str

    def counts(self) -> dict[str, int]:
        """``received``, ``used`` and the rejected rows per reason code (one small job)."""
        rows = self.labelled.groupBy(REASON).count().collect()
        out = {RECEIVED: sum(int(r["count"]) for r in rows)}
        for r in rows:
            out[r[REASON] or USED] = int(r["count"])
        out.setdefault(USED, 0)
        return out

    def account(self, counts: dict[str, int] | None = None) -> InputAccount:
        """The queries' account (``input = used + quarantined``) from :meth:`counts`."""
        return account_ledger(QUERIES, self.name, {(): counts or self.counts()},
                              partition_columns=(), used_as=" (listed)")


def _missing(frame: DataFrame, wanted: Sequence[str], name: str, what: str) -> None:
    absent = [c for c in wanted if c not in frame.columns]
    if absent:
        raise ConfigError(
            f"{name}: no column {absent[0]!r} ({what}); it has columns {frame.columns}"
        )


def check_queries(
    frame: DataFrame,
    *,
    query_id: str = "query_id",
    weight: str | None = None,
    slices: Sequence[str] = (),
    name: str = "queries DataFrame",
) -> CheckedQueries:
    """The queries input's rows checked: used (one per query id) or rejected with a reason.

    Args:
        frame: one row per query, any atomic column types.
        query_id: the query id column.
        weight: the traffic weight column (None: unweighted).
        slices: the attribute columns to slice by (each a column of ``frame``).
        name: names the input in errors and accounts.

    Raises:
        ConfigError: a column is missing (naming ``name``, the column and the columns
            ``frame`` has), or a slice is named ``query_id`` or ``weight``.

    Example:
        >>> q = check_queries(spark.createDataFrame([("q1", 3.0, "head")], "id string, "
        ...     "hits double, segment string"), query_id="id", weight="hits", slices=["segment"])
        >>> q.used.collect()
        [Row(query_id='q1', weight=3.0, segment='head')]
    """
    slices = tuple(slices)
    _missing(frame, [query_id], name, "the query id")
    if weight is not None:
        _missing(frame, [weight], name, "the weight")
    _missing(frame, slices, name, "a slice")
    clash = [s for s in slices if s in (S.QUERY_ID, S.WEIGHT) or s == query_id or s == weight]
    if clash:
        raise ConfigError(f"{name}: slice {clash[0]!r} names the query id or the weight; "
                          "slice by an attribute column")
    if len(set(slices)) != len(slices):
        raise ConfigError(f"{name}: slices {list(slices)} name a column twice")
    qid = F.col(query_id).cast("string")
    w: Column = (F.col(weight).try_cast("double") if weight is not None
                 else F.lit(None).cast("double"))
    bad_weight = (w.isNull() | F.isnan(w) | (w < 0) | (F.abs(w) == float("inf"))
                  if weight is not None else F.lit(False))
    repeated = F.count(F.lit(1)).over(Window.partitionBy(qid)) > 1
    reason = first_reason(
        (blank(qid), "missing_query_id"),
        (repeated, DUPLICATE_QUERY_ID),
        (bad_weight, INVALID_WEIGHT),
    )
    raw = [F.col(weight).cast("string").alias(_RAW + S.WEIGHT)] if weight is not None else []
    labelled = frame.select(
        *meta_columns(frame),
        qid.alias(S.QUERY_ID),
        w.alias(S.WEIGHT),
        *[F.coalesce(F.col(s).cast("string"), F.lit(NULL_SLICE)).alias(s) for s in slices],
        *[F.col(s).cast("string").alias(_RAW + s) for s in slices],
        *raw,
        reason.alias(REASON),
    )
    used = labelled.where(F.col(REASON).isNull()).select(S.QUERY_ID, S.WEIGHT, *slices)
    raw_columns = [S.QUERY_ID, *([S.WEIGHT] if weight is not None else []), *slices]
    rejected = quarantined(labelled, input_name=QUERIES, partition_columns=(),
                           raw_columns=raw_columns, number_lines=None)
    return CheckedQueries(used=used, rejected=rejected, labelled=labelled, slices=slices,
                          weighted=weight is not None, name=name)


def with_attributes(per_query_like: DataFrame, checked: CheckedQueries, *,
                    listed: bool = False) -> DataFrame:
    """``per_query_like`` (any frame with ``query_id``) with the queries' ``weight`` and slice
    columns, left-joined by query id (and with ``listed``, :data:`LISTED`: a boolean, true
    when the queries input lists the query).

    A query the queries input does not list gets ``(unlisted)`` for each slice and a null
    weight: the weighted means leave it out, the unweighted rows count it, and
    :func:`unlisted_queries` counts it.

    Raises:
        ConfigError: ``per_query_like`` already has a column named as a slice or ``weight``.

    Example:
        >>> with_attributes(per_query, checked).groupBy("segment").count()  # doctest: +SKIP
    """
    taken = [c for c in (S.WEIGHT, *checked.slices) if c in per_query_like.columns]
    if taken:
        raise ConfigError(f"the per-query rows already have a column {taken[0]!r}, which "
                          f"{checked.name} adds; rename it or leave it out of the slices")
    attributes = checked.used.withColumnRenamed(S.QUERY_ID, "_attr_query_id").withColumn(
        LISTED, F.lit(True))
    joined = per_query_like.join(
        attributes, per_query_like[S.QUERY_ID] == attributes["_attr_query_id"], "left")
    return joined.select(
        *[per_query_like[c] for c in per_query_like.columns],
        F.col(S.WEIGHT),
        *[F.coalesce(F.col(s), F.lit(UNLISTED_SLICE)).alias(s) for s in checked.slices],
        *([F.coalesce(F.col(LISTED), F.lit(False)).alias(LISTED)] if listed else []),
    )


def unlisted_queries(per_query_like: DataFrame, checked: CheckedQueries) -> DataFrame:
    """The distinct query ids of ``per_query_like`` that the queries input does not list."""
    return (per_query_like.select(S.QUERY_ID).distinct()
            .join(checked.used.select(S.QUERY_ID), S.QUERY_ID, "left_anti"))


@dataclass(frozen=True)
class Carried:
    """Whether per-query rows carry a weight, and the slices they carry (sorted)."""

    weighted: bool
    slices: tuple[str, ...]

    @classmethod
    def of(cls, row: Row) -> Carried:
        """From a row of :func:`carried_columns` (aggregated over the rows)."""
        return cls(bool(row[CARRIED_WEIGHT]), tuple(sorted(row[CARRIED_SLICES] or [])))


#: :func:`carried_columns`' names
CARRIED_WEIGHT, CARRIED_SLICES = "_carried_weight", "_carried_slices"


def carried_columns(per_query: DataFrame) -> list[Column]:
    """Aggregates of per-query rows: whether one has a weight, and every slice name."""
    return [
        (F.max(F.col(S.WEIGHT).isNotNull()) if S.WEIGHT in per_query.columns
         else F.lit(False)).alias(CARRIED_WEIGHT),
        (F.array_distinct(F.flatten(F.collect_set(F.map_keys(S.SLICES))))
         if S.SLICES in per_query.columns else F.array().cast("array<string>"))
        .alias(CARRIED_SLICES)]


def carried(per_query: DataFrame, *, slices: Sequence[str] | None, baseline: Column,
            name: str = "the per-query rows", found: Carried | None = None
            ) -> CheckedQueries | None:
    """The queries' attributes the per-query rows carry (their ``weight`` and ``slices``
    columns), as a checked queries input; None when they carry neither.

    A query's value is the baseline's (``baseline``: true on its rows), else another side's:
    a run slice (a device) can differ from one run partition to the next. One small job finds
    the slices the rows carry and whether they have a weight.

    Args:
        per_query: the rows of the compared sides.
        slices: the slices wanted (each one the rows carry); None: every one they carry.
        found: whether the rows carry a weight and their slices, when a caller's job
            found them already (:func:`carried_columns`): then no job runs here.

    Raises:
        ConfigError: a slice the rows do not carry (naming those they do).

    Example:
        >>> rows = spark.createDataFrame([("q1", 2.0, {"segment": "head"})],
        ...     "query_id string, weight double, slices map<string,string>")
        >>> carried(rows, slices=None, baseline=F.lit(True)).used.collect()
        [Row(query_id='q1', weight=2.0, segment='head')]
    """
    has = [c for c in (S.WEIGHT, S.SLICES) if c in per_query.columns]
    if found is None:
        found = (Carried(False, ()) if not has else
                 Carried.of(per_query.select(*carried_columns(per_query)).first()))
    weighted, keys = found.weighted, list(found.slices)
    wanted = keys if slices is None else list(slices)
    absent = [s for s in wanted if s not in keys]
    if absent:
        raise ConfigError(f"slice {absent[0]!r}: {name} carry the slices {keys}; give a "
                          "queries= DataFrame that has it, or evaluate with that slice")
    if not weighted and not wanted:
        return None
    weight = F.col(S.WEIGHT) if S.WEIGHT in has else F.lit(None).cast("double")
    first = [F.coalesce(F.max(F.when(baseline, value)), F.max(value)) for value in
             (weight, *(F.col(S.SLICES)[s] for s in wanted))]
    used = per_query.groupBy(F.col(S.QUERY_ID).cast("string").alias(S.QUERY_ID)).agg(
        first[0].cast("double").alias(S.WEIGHT),
        *[v.cast("string").alias(s) for v, s in zip(first[1:], wanted, strict=True)])
    rejected = used.limit(0)
    return CheckedQueries(used=used, rejected=rejected, labelled=used.withColumn(
        REASON, F.lit(None).cast("string")), slices=tuple(wanted), weighted=weighted, name=name)
