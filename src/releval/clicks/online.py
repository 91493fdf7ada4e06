"""``releval.evaluate_clicks``: online measures of a search log, per query and run partition,
as a :class:`releval.Result`. Computed in Spark: one aggregation of the impressions per
search, each measure an aggregate there (or an array expression over the used impressions
of a search the search rules change), then one aggregation of the searches per query,
persisted and built when ``evaluate_clicks`` is called (``Result.unpersist`` drops it);
nothing is collected but the aggregate's sums."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from releval.arguments import checked_queries
from releval.checks.interactions import QUERY_KEY, CheckedInteractions, check_interactions
from releval.checks.queries import CheckedQueries, with_attributes
from releval.checks.query_means import SEARCHES, query_means, with_query_ids
from releval.clicks.result import ClickResult, OnlineEvaluation, OnlineInputs
from releval.config import IntervalSettings
from releval.core import columns as S
from releval.core.columns import IN_QRELS, IN_RUN, MEASURES
from releval.core.measures import online as O
from releval.errors import ConfigError, MeasureError
from releval.evaluation.persisted import persist_merged


def search_value(m: O.OnlineMeasure, impressions: Column) -> Column:
    """One search's value of ``m``, from the array of its used impressions."""
    def clicked(r: Column) -> Column:
        return r[S.CLICKED] > 0

    if m.name == O.CTR:
        return F.exists(impressions, lambda r: clicked(r) & (r[S.POSITION] <= m.cutoff)
                        ).cast("double")
    if m.name == O.ABANDONMENT:
        return (~F.exists(impressions, clicked)).cast("double")
    if m.name == O.CLICK_RR:
        first = F.array_min(F.transform(F.filter(impressions, clicked), lambda r: r[S.POSITION]))
        return F.coalesce(1.0 / first, F.lit(0.0))
    if m.name == O.CLICKS:
        return F.aggregate(impressions, F.lit(0).cast("long"),
                           lambda total, r: total + r[S.CLICKED]).cast("double")
    if m.name == O.SUCCESS:
        return F.exists(impressions, lambda r: clicked(r) & F.coalesce(
            r[S.DWELL] >= m.cutoff, F.lit(False))).cast("double")
    raise MeasureError(f"{m.key}: not a measure of evaluate_clicks (Preference: "
                       "releval.interleaving)")


def search_aggregate(m: O.OnlineMeasure) -> Column:
    """One search's value of ``m`` as an aggregate over its impressions (a search the search
    rules leave as it is: :func:`releval.checks.query_means.query_means`). ``CTR@k``,
    ``Abandonment`` and ``ClickRR`` are read off one aggregate, the position of the first
    click, which Spark computes once per search however many of them are asked for."""
    clicked = F.col(S.CLICKED) > 0
    first = F.min(F.when(clicked, F.col(S.POSITION)))
    if m.name == O.CTR:
        return F.coalesce(first <= m.cutoff, F.lit(False)).cast("double")
    if m.name == O.ABANDONMENT:
        return first.isNull().cast("double")
    if m.name == O.CLICK_RR:
        return F.coalesce(1.0 / first, F.lit(0.0))
    if m.name == O.CLICKS:
        return F.sum(F.col(S.CLICKED)).cast("double")
    if m.name == O.SUCCESS:
        return F.max(clicked & F.coalesce(F.col(S.DWELL) >= m.cutoff, F.lit(False))
                     ).cast("double")
    raise MeasureError(f"{m.key}: not a measure of evaluate_clicks (Preference: "
                       "releval.interleaving)")


def online_measures(measures: Sequence[str] | str, *, dwell: bool) -> tuple[O.OnlineMeasure, ...]:
    """The parsed measures, once each; ``Success@T`` needs a dwell column."""
    names = [measures] if isinstance(measures, str) else list(measures)
    if not names:
        raise ConfigError("evaluate_clicks: give at least one measure, e.g. ['CTR@5', "
                          "'Abandonment']")
    parsed = tuple(dict.fromkeys(O.parse_online(n) for n in names))
    if any(m.name == O.PREFERENCE for m in parsed):
        raise ConfigError("evaluate_clicks: Preference is interleaving's measure: use "
                          "releval.interleaving")
    if not dwell and any(m.name == O.SUCCESS for m in parsed):
        raise ConfigError("evaluate_clicks: Success@T reads the dwell; the interactions have "
                          "no 'dwell' column (map yours with columns={'dwell': ...})")
    return parsed


def wide_table(means: DataFrame, measures: Sequence[O.OnlineMeasure], *,
               partition_columns: Sequence[str], values: Sequence[str],
               checked: CheckedInteractions) -> DataFrame:
    """The wide table's shape of per-query means (:func:`releval.checks.query_means.
    query_means`: a column per measure, ``values`` in the order of ``measures``): one row per
    (run partition, query), ``num_ret`` its number of searches."""
    parts = list(partition_columns)
    entry = [F.struct(F.col(v).alias(S.VALUE), F.lit(0).cast("long").alias(S.NUM_REL),
                      F.lit(0).cast("long").alias(S.NUM_REL_RET)) for v in values]
    return with_query_ids(checked, means.select(
        *parts, *QUERY_KEY, F.col(SEARCHES).alias(S.NUM_RET), F.array(*entry).alias(MEASURES),
    )).select(
        *parts, S.QUERY_ID, F.lit(True).alias(IN_RUN), F.lit(True).alias(IN_QRELS),
        S.NUM_RET, F.lit(None).cast("string").alias(S.NEGATIVE_LABELS),
        F.lit(None).cast("int").alias(S.DEPTH), MEASURES)


def kept_sums(persisted: list[DataFrame]) -> Callable[[DataFrame], DataFrame]:
    """The ``keep`` of :func:`releval.checks.query_means.query_means`: its per-query sums
    (a row per query and run partition, and one per search the rules change) persisted and
    built by one job of their own, appended to ``persisted`` (the result's, which
    ``unpersist`` drops). Over a cached log Spark does not share the aggregation per search
    between the two uses of the sums, and would run it twice."""
    def keep(sums: DataFrame) -> DataFrame:
        persisted.append(persist_merged(sums, StorageLevel.MEMORY_AND_DISK))
        persisted[-1].count()
        return persisted[-1]

    return keep


def online_result(wide: DataFrame, measures: Sequence[O.OnlineMeasure], *,
                  checked: CheckedInteractions, queries: CheckedQueries | None,
                  ci_level: float, name: str,
                  partition_columns: Sequence[str] | None = None,
                  persisted: list[DataFrame] | None = None) -> ClickResult:
    """The :class:`ClickResult` of a wide table: each query's weight is the queries input's
    when it has one, else its number of searches; its slices are the queries input's
    (``partition_columns``: the wide table's, when not the interactions')."""
    slices: tuple[str, ...] = ()
    if queries is not None:
        wide = with_attributes(wide, queries)
        slices = queries.slices
        if not queries.weighted:
            wide = wide.withColumn(S.WEIGHT, F.col(S.NUM_RET).cast("double"))
    else:
        wide = wide.withColumn(S.WEIGHT, F.col(S.NUM_RET).cast("double"))
    parts = tuple(checked.partition_columns if partition_columns is None else partition_columns)
    evaluation = OnlineEvaluation(wide, tuple(measures), parts, IntervalSettings(level=ci_level),
                                  slices=slices)
    keys = [m.key for m in measures]
    return ClickResult(evaluation, OnlineInputs(parts, wide), "drop", "interactions DataFrame",
                       name, settings={"measures": ",".join(keys)}, checked=checked,
                       queries_checked=queries, persisted=list(persisted or []))


def evaluate_clicks(
    interactions: DataFrame,
    *,
    measures: Sequence[str] | str,
    partition_by: Sequence[str] | str = (),
    columns: Mapping[str, str] | None = None,
    queries: DataFrame | None = None,
    queries_columns: Mapping[str, str] | None = None,
    slices: Sequence[str] = (),
    ci_level: float = 0.95,
) -> ClickResult:
    """Online measures of a search log: per (run partition, query), the mean over the
    query's searches, as a :class:`releval.Result`.

    A search's value: ``CTR@k`` 1 when it has a click at a position <= k; ``Abandonment``
    1 when it has no click; ``ClickRR`` 1 / the position of its first-placed click (0
    without one); ``Clicks`` its clicks; ``Success@T`` 1 when a click has a dwell >= T
    seconds. Each query's weight is its number of searches (or the queries input's weight).
    The per-query sums are built by a Spark job when called, and kept until
    ``result.unpersist()``.

    Args:
        interactions: one row per shown result (:func:`releval.checks.interactions.
            check_interactions`: ``search_id``, ``query_id``, ``doc_id``, ``position``,
            ``clicked``, optionally ``dwell``); bad rows are quarantined and counted.
        measures: e.g. ``["CTR@5", "Abandonment", "ClickRR", "Clicks", "Success@30"]``.
        partition_by: the run partition columns (an A/B bucket, a date, a system).
        columns: releval's interaction column -> yours.
        queries, queries_columns, slices: a queries input (one row per query key) with its
            weight and the attribute columns to slice by, as :func:`releval.evaluate`'s.
        ci_level: the level of the aggregate's intervals.

    Example:
        >>> log = spark.createDataFrame([("A", "s1", "q", "a", 1, 0), ("A", "s1", "q", "b", 2, 1),
        ...     ("A", "s2", "q", "a", 1, 0)], "bucket string, search_id string, "
        ...     "query_id string, doc_id string, position int, clicked int")
        >>> result = evaluate_clicks(log, measures=["ClickRR", "Abandonment"],
        ...                          partition_by="bucket")
        >>> sorted((r.measure_key, r.value, r.weight) for r in result.per_query.collect())
        [('Abandonment', 0.5, 2.0), ('ClickRR', 0.25, 2.0)]
    """
    checked = check_interactions(interactions, columns, name="interactions DataFrame",
                                 partition_by=partition_by)
    parsed = online_measures(measures, dwell=S.DWELL in checked.optional)
    attributes = checked_queries(queries, queries_columns, slices)
    parts = list(checked.partition_columns)
    values = [f"_v{i}" for i in range(len(parsed))]
    persisted: list[DataFrame] = []
    means = query_means(
        checked, {v: search_aggregate(m) for m, v in zip(parsed, values, strict=True)},
        lambda rows: {v: search_value(m, rows) for m, v in zip(parsed, values, strict=True)},
        keep=kept_sums(persisted))
    wide = wide_table(means, parsed, partition_columns=parts, values=values,
                      checked=checked)
    return online_result(wide, parsed, checked=checked, queries=attributes, ci_level=ci_level,
                         name="clicks", persisted=persisted)
