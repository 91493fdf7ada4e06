"""Sums over a checked search log as the search rules give them, with the rules' array path
only for the searches they change: per-query means of per-search values
(:func:`query_means`, mapped back to query ids by :func:`with_query_ids`) and impressions
and clicks per (query, doc, position) (:func:`impression_cells`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from releval.checks.interactions import (
    CLICK_ROW,
    ID_KEYS,
    IMPRESSIONS,
    QUERY_KEY,
    SEARCH_KEY,
    CheckedInteractions,
    search_rules,
    text_query_key,
)
from releval.core import columns as S
from releval.core.columns import REASON

_AGG, _KEY, _OTHER = "_agg", "_key", "_other"
#: :func:`query_means`' column of the number of searches
SEARCHES = "_searches"
#: the largest position the aggregate path takes (a bit of a 64-bit mask per position)
_MASK_POSITIONS = 62


def query_means(checked: CheckedInteractions, aggregates: Mapping[str, Column],
                arrays: Callable[[Column], Mapping[str, Column]], *,
                keep: Callable[[DataFrame], DataFrame] | None = None) -> DataFrame:
    """Per run partition and query: its searches with a used impression, and the mean over
    them of each named per-search value, as the search rules give it.

    A search whose rules change nothing (no click row, one query id, its positions distinct
    and at most 62; most searches of most logs) takes ``aggregates`` over its rows, in one
    aggregation with the flags that decide this (the query key's least and greatest, the
    rows, a bit per position); the sums per query keep each other search apart. Only those
    searches' rows (picked by a broadcast of their keys) are gathered into arrays as in the
    check's search rules (:func:`releval.checks.interactions.search_rules`); their aggregate
    values are taken back and ``arrays(impressions)`` put in. Both uses read the per-query
    sums; ``keep`` returns what they read instead (a persisted copy: over a cached input
    Spark does not share the aggregation between them, docs/performance.md).

    Returns:
        The partition columns, :data:`QUERY_KEY`, ``_searches`` and one column per name.
    """
    parts = list(checked.partition_columns)
    key = [*parts, SEARCH_KEY]
    names = list(aggregates)
    summary, kept, hashed = _summary(checked, [aggregates[n].cast("double").alias(n)
                                               for n in names])
    other = F.when(~kept, F.struct(*[F.col(c).alias(f"{_KEY}{i}") for i, c in enumerate(key)]))
    sums = summary.groupBy(
        *parts, F.col("_k1").alias(QUERY_KEY[0]),
        (F.col("_k2") if hashed else F.lit(0)).alias(QUERY_KEY[1]), other.alias(_OTHER),
    ).agg(F.count(F.lit(1)).alias(SEARCHES), *[F.sum(n).alias(n) for n in names])
    if keep is not None:
        sums = keep(sums)
    totals = [SEARCHES, *names]
    # the filter reads the count (at least 1) so that Spark keeps it above the aggregation: on
    # the grouping key alone it goes below it, and the two uses of the sums differ
    others = sums.where(F.col(_OTHER).isNotNull() | (F.col(SEARCHES) < 1)).select(
        f"{_OTHER}.*", F.struct(*QUERY_KEY, *totals).alias(_AGG))
    rows = _rows_of(checked, others)
    searches = search_rules(rows, (*parts, _AGG), every=True)
    values = arrays(F.col(IMPRESSIONS))
    first = F.col(IMPRESSIONS)[0]
    taken_back = F.struct(*[F.col(f"{_AGG}.{q}").alias(q) for q in QUERY_KEY],
                          *[(-F.col(f"{_AGG}.{t}")).alias(t) for t in totals])
    put_in = F.when(F.size(IMPRESSIONS) > 0, F.struct(
        *[first[q].alias(q) for q in QUERY_KEY], F.lit(1).cast("long").alias(SEARCHES),
        *[values[n].cast("double").alias(n) for n in names]))
    changes = searches.select(*parts, F.explode(F.array(taken_back, put_in)).alias("_c")).where(
        F.col("_c").isNotNull()).select(*parts, "_c.*")
    total = sums.select(*parts, *QUERY_KEY, *totals).unionByName(changes).groupBy(
        *parts, *QUERY_KEY).agg(*[F.sum(t).alias(t) for t in totals])
    return total.where(F.col(SEARCHES) > 0).select(
        *parts, *QUERY_KEY, SEARCHES, *[(F.col(n) / F.col(SEARCHES)).alias(n) for n in names])


def impression_cells(checked: CheckedInteractions) -> DataFrame:
    """Impressions and clicks (``clicked`` > 0) per run partition, query, doc and position,
    over the used impressions (what ``checked.rows`` holds, without building it).

    The clean impressions of every search are counted in one aggregation, with corrections
    for the searches the rules change (found as :func:`query_means` finds them): their clean
    impressions taken back, their used ones (clicks folded in) put in.

    Returns:
        The partition columns, ``query_id`` and ``doc_id`` (as the log has them when integers
        or strings, else strings), ``position``, ``impressions`` and ``clicks`` (longs).
    """
    parts = list(checked.partition_columns)
    key = [*parts, SEARCH_KEY]
    summary, kept, _ = _summary(checked, [])
    changed = summary.where(~kept).select(
        *[F.col(c).alias(f"{_KEY}{i}") for i, c in enumerate(key)])
    rows = _rows_of(checked, changed)
    cell = [*parts, *ID_KEYS, S.POSITION]
    one = F.lit(1).cast("long")
    impression = F.col(REASON).isNull() & ~F.col(CLICK_ROW)
    clicked = (F.col(S.CLICKED) > 0).cast("long")
    every = checked.typed.where(impression).select(
        *cell, one.alias(S.IMPRESSIONS), clicked.alias(S.CLICKS))
    taken_back = rows.where(impression).select(
        *cell, (-one).alias(S.IMPRESSIONS), (-clicked).alias(S.CLICKS))
    types = {f.name: f.dataType for f in checked.typed.schema.fields}
    searches = search_rules(rows, tuple(parts))
    put_in = searches.select(*parts, F.explode(IMPRESSIONS).alias("_i")).select(
        *parts,
        *[F.col(f"_i.{c}").cast(types[k]).alias(k)
          for c, k in zip((S.QUERY_ID, S.DOC_ID), ID_KEYS, strict=True)],
        F.col(f"_i.{S.POSITION}").alias(S.POSITION), one.alias(S.IMPRESSIONS),
        (F.col(f"_i.{S.CLICKED}") > 0).cast("long").alias(S.CLICKS))
    total = every.unionByName(taken_back).unionByName(put_in).groupBy(*cell).agg(
        F.sum(S.IMPRESSIONS).alias(S.IMPRESSIONS), F.sum(S.CLICKS).alias(S.CLICKS))
    return total.where(F.col(S.IMPRESSIONS) > 0).select(
        *parts, *[F.col(k).alias(c) for c, k in zip((S.QUERY_ID, S.DOC_ID), ID_KEYS,
                                                    strict=True)],
        S.POSITION, S.IMPRESSIONS, S.CLICKS)


def _summary(checked: CheckedInteractions,
             aggregates: Sequence[Column]) -> tuple[DataFrame, Column, bool]:
    """Per search (its clean rows): ``aggregates`` and the flags that say whether the search
    rules change it, the column that says they do not, and whether query keys are hashed.

    A click row (no position) or a position past the mask sets no bit: a search with one has
    fewer bits than rows, as one with a repeated position has."""
    key = [*checked.partition_columns, SEARCH_KEY]
    k1, k2 = F.col(QUERY_KEY[0]), F.col(QUERY_KEY[1])
    mask = F.when(F.col(S.POSITION) <= _MASK_POSITIONS,
                  F.expr(f"shiftleft(1L, {S.POSITION})"))
    hashed = [] if checked.integer_queries else [F.min(k2).alias("_k2"),
                                                 F.max(k2).alias("_k2_max")]
    summary = checked.typed.where(F.col(REASON).isNull()).groupBy(*key).agg(
        F.min(k1).alias("_k1"), F.max(k1).alias("_k1_max"), *hashed,
        F.count(F.lit(1)).alias("_n"), F.bit_or(mask).alias("_mask"), *aggregates)
    kept = F.coalesce((F.col("_k1") == F.col("_k1_max"))
                      & (F.bit_count(F.coalesce("_mask", F.lit(0).cast("long"))) == F.col("_n"))
                      & ((F.col("_k2") == F.col("_k2_max")) if hashed else F.lit(True)),
                      F.lit(False))
    return summary, kept, bool(hashed)


def _rows_of(checked: CheckedInteractions, searches: DataFrame) -> DataFrame:
    """Every row of the searches whose keys ``searches`` holds (``_key0``... : the partition
    columns and the search key), picked by a broadcast of ``searches``."""
    key = [*checked.partition_columns, SEARCH_KEY]
    same = [F.col(c).eqNullSafe(F.col(f"{_KEY}{i}")) for i, c in enumerate(key)]
    return checked.typed.join(F.broadcast(searches), _all(same)).drop(
        *[f"{_KEY}{i}" for i in range(len(key))])


def with_query_ids(checked: CheckedInteractions, df: DataFrame) -> DataFrame:
    """``df`` keyed by :data:`QUERY_KEY` with ``query_id`` in its place: the id itself for
    integer ids, else a join with the log's distinct query ids, each keyed after the
    aggregation (a pass over the query id column alone)."""
    if checked.integer_queries:
        return df.withColumn(S.QUERY_ID, F.col(QUERY_KEY[0]).cast("string")).drop(*QUERY_KEY)
    texts = checked.typed.select(S.QUERY_ID).where(F.col(S.QUERY_ID).isNotNull()).distinct()
    ids = texts.select(*[k.alias(q) for k, q in zip(text_query_key(F.col(S.QUERY_ID)),
                                                     QUERY_KEY, strict=True)], S.QUERY_ID)
    return df.join(ids, list(QUERY_KEY)).drop(*QUERY_KEY)


def _all(conditions: Sequence[Column]) -> Column:
    out = conditions[0]
    for c in conditions[1:]:
        out = out & c
    return out
