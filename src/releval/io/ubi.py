"""OpenSearch User Behavior Insights (UBI) tables -> the interactions input.

``ubi_queries`` has one row per search: ``query_id`` (the search), ``user_query`` (the query
text) and ``query_response_hit_ids`` (the ids of the results shown, in order). ``ubi_events``
has the users' actions: ``action_name`` (``click``, ...), ``query_id`` and
``event_attributes.object.object_id`` / ``event_attributes.position.ordinal``. Each shown
result becomes an impression row (``position`` = its place in the hit ids, from 1); each
click event becomes a click row without a position, which
:func:`releval.checks.interactions.check_interactions` folds into the impression of its
document, or quarantines as ``click_not_shown``.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from releval.core import columns as S
from releval.errors import ConfigError

_HITS = "query_response_hit_ids"


def _nested(df: DataFrame, path: str) -> Column:
    """``df``'s nested field ``a.b.c``, or a null when the schema has no such field."""
    dtype = df.schema
    for part in path.split("."):
        if not isinstance(dtype, StructType) or part not in dtype.fieldNames():
            return F.lit(None)
        dtype = dtype[part].dataType
    return F.col(path)


def _require(df: DataFrame, wanted: Sequence[str], name: str) -> None:
    absent = [c for c in wanted if c not in df.columns]
    if absent:
        raise ConfigError(f"{name}: no column {absent[0]!r}; it has columns {df.columns} "
                          "(the UBI schema's names are expected)")


def read_ubi(
    queries: DataFrame,
    events: DataFrame,
    *,
    click_actions: Sequence[str] = ("click",),
    query_key: str = "user_query",
    partition_by: Sequence[str] = (),
    ordinal_base: int = 1,
) -> DataFrame:
    """The interactions input of UBI's query and event tables (releval's column names).

    Args:
        queries: ``ubi_queries``: ``query_id``, ``query_response_hit_ids`` (array of ids) and
            ``query_key``.
        events: ``ubi_events``: ``action_name``, ``query_id`` and ``event_attributes``.
        click_actions: the ``action_name`` values that are clicks.
        query_key: the ``ubi_queries`` column the measures aggregate over (the query text,
            or a normalized form of it you added).
        partition_by: ``ubi_queries`` columns carried to each row (``application``, an A/B
            bucket): the run partitions.
        ordinal_base: the ordinal of the first result in ``event_attributes.position.ordinal``
            (read only for a click event without ``event_attributes.object.object_id``).

    Returns:
        ``search_id`` (UBI's ``query_id``), ``query_id`` (``query_key``), ``doc_id``,
        ``position`` (int; null on the click rows), ``clicked`` (0 on an impression, 1 on a
        click row) and the ``partition_by`` columns. A search that showed no result has no
        rows; a click event of a search ``ubi_queries`` lacks has a null query id and no
        partition values (``click_not_shown`` when checked).

    Example:
        >>> queries = spark.createDataFrame([("u1", "shoes", ["p1", "p2"])],
        ...     "query_id string, user_query string, query_response_hit_ids array<string>")
        >>> events = spark.createDataFrame([("click", "u1", (("p2",), (2,)))],
        ...     "action_name string, query_id string, event_attributes struct<"
        ...     "object: struct<object_id: string>, position: struct<ordinal: int>>")
        >>> [tuple(r) for r in read_ubi(queries, events).collect()]
        [('u1', 'shoes', 'p1', 1, 0), ('u1', 'shoes', 'p2', 2, 0), ('u1', 'shoes', 'p2', None, 1)]
    """
    _require(queries, ["query_id", _HITS, query_key, *partition_by], "ubi_queries")
    _require(events, ["action_name", "query_id"], "ubi_events")
    parts = [F.col(p) for p in partition_by]
    shown = queries.select(
        F.col("query_id").cast("string").alias(S.SEARCH_ID),
        F.col(query_key).cast("string").alias(S.QUERY_ID),
        *parts,
        F.posexplode(F.col(_HITS)).alias("_index", S.DOC_ID),
    ).select(
        *partition_by, S.SEARCH_ID, S.QUERY_ID, F.col(S.DOC_ID).cast("string").alias(S.DOC_ID),
        (F.col("_index") + 1).cast("int").alias(S.POSITION),
        F.lit(0).cast("long").alias(S.CLICKED),
    )
    clicks = events.where(F.col("action_name").isin(list(click_actions))).select(
        F.col("query_id").cast("string").alias("_search"),
        _nested(events, "event_attributes.object.object_id").cast("string").alias("_object"),
        _nested(events, "event_attributes.position.ordinal").try_cast("int").alias("_ordinal"),
    )
    searches = queries.select(
        F.col("query_id").cast("string").alias("_search"),
        F.col(query_key).cast("string").alias(S.QUERY_ID), *parts, F.col(_HITS).alias("_hits"))
    # element_at is 1-based; an ordinal outside the hits gives null (try_element_at)
    at_ordinal = F.try_element_at(F.col("_hits"), F.col("_ordinal") - F.lit(ordinal_base - 1))
    clicked = clicks.join(searches, "_search", "left").select(
        *partition_by,
        F.col("_search").alias(S.SEARCH_ID),
        S.QUERY_ID,
        F.coalesce(F.col("_object"), at_ordinal.cast("string")).alias(S.DOC_ID),
        F.lit(None).cast("int").alias(S.POSITION),
        F.lit(1).cast("long").alias(S.CLICKED),
    )
    return shown.unionByName(clicked)
