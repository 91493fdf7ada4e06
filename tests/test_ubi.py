"""The UBI reader (releval.io.ubi) on UBI-shaped tables: ubi_queries' hit ids become
impressions, ubi_events' clicks land on the shown document, or are quarantined."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

from releval.checks.interactions import check_interactions
from releval.core import columns as S
from releval.errors import ConfigError
from releval.io.ubi import read_ubi

QUERIES_SCHEMA = ("application string, query_id string, client_id string, user_query string, "
                  "query_response_id string, query_response_hit_ids array<string>, "
                  "timestamp string")
EVENTS_SCHEMA = ("application string, action_name string, query_id string, client_id string, "
                 "timestamp string, message string, event_attributes struct<"
                 "object: struct<object_id: string, object_id_field: string>, "
                 "position: struct<ordinal: int>>")
QUERIES = [
    ("shop", "u1", "c1", "red shoes", "r1", ["p1", "p2", "p3"], "2024-05-01T10:00:00"),
    ("shop", "u2", "c2", "red shoes", "r2", ["p2", "p1"], "2024-05-01T10:01:00"),
    ("shop", "u3", "c3", "boots", "r3", [], "2024-05-01T10:02:00"),    # no results: no rows
]
EVENTS = [
    # u1: a click on p2 by its object id, and one on p3 by its ordinal alone (3rd result)
    ("shop", "click", "u1", "c1", "t", None, (("p2", "sku"), (2,))),
    ("shop", "click", "u1", "c1", "t", None, (None, (3,))),
    ("shop", "add_to_cart", "u1", "c1", "t", None, (("p2", "sku"), (2,))),   # not a click
    # u2: two clicks on p1 (a count of 2), one on p9, which u2 did not show
    ("shop", "click", "u2", "c2", "t", None, (("p1", "sku"), (2,))),
    ("shop", "click", "u2", "c2", "t", None, (("p1", "sku"), (2,))),
    ("shop", "click", "u2", "c2", "t", None, (("p9", "sku"), (1,))),
    # a click of a search ubi_queries lacks
    ("shop", "click", "u7", "c7", "t", None, (("p1", "sku"), (1,))),
]


@pytest.fixture(scope="module")
def ubi(spark):
    return (spark.createDataFrame(QUERIES, QUERIES_SCHEMA),
            spark.createDataFrame(EVENTS, EVENTS_SCHEMA))


@pytest.mark.slow  # several Spark jobs: about 5 s
def test_impressions_and_clicks_from_ubi(spark, ubi):
    checked = check_interactions(read_ubi(*ubi, partition_by=["application"]),
                                 partition_by=["application"])
    assert_df_equality(
        checked.rows,
        spark.createDataFrame(
            [("shop", "u1", "red shoes", "p1", 1, 0), ("shop", "u1", "red shoes", "p2", 2, 1),
             ("shop", "u1", "red shoes", "p3", 3, 1), ("shop", "u2", "red shoes", "p2", 1, 0),
             ("shop", "u2", "red shoes", "p1", 2, 2)],
            "application string, search_id string, query_id string, doc_id string, "
            "position int, clicked long"),
        ignore_row_order=True, ignore_nullable=True)
    rejected = checked.quarantine.select(F.col(S.RAW)[S.SEARCH_ID].alias("s"),
                                         F.col(S.RAW)[S.DOC_ID].alias("d"), S.REASON_CODE)
    assert sorted(rejected.collect()) == [("u2", "p9", "click_not_shown"),
                                          ("u7", "p1", "click_not_shown")]
    # 5 impressions + 6 click events = 11 rows = used 9 (5 + 4 folded) + quarantined 2
    assert (checked.accounts.input, checked.accounts.used,
            checked.accounts.quarantined_total) == (11, 9, 2)


def test_ordinal_base_zero_and_other_click_actions(spark, ubi):
    queries, _ = ubi
    events = spark.createDataFrame(
        [("shop", "select", "u1", "c1", "t", None, (None, (0,)))], EVENTS_SCHEMA)
    rows = read_ubi(queries, events, click_actions=["select"], ordinal_base=0)
    clicks = rows.where(F.col(S.POSITION).isNull()).select(S.SEARCH_ID, S.DOC_ID, S.CLICKED)
    assert clicks.collect() == [("u1", "p1", 1)]   # ordinal 0 of base 0: the first hit


def test_events_without_object_fields_are_read_by_ordinal(spark, ubi):
    queries, _ = ubi
    events = spark.createDataFrame(
        [("click", "u2", ((5,),)), ("click", "u2", ((1,),))],
        "action_name string, query_id string, event_attributes struct<position: "
        "struct<ordinal: int>>")
    clicks = read_ubi(queries, events).where(F.col(S.POSITION).isNull())
    # ordinal 1 of u2 is p2; ordinal 5 is past its 2 hits: no doc id (missing_doc_id)
    assert sorted(r[S.DOC_ID] or "" for r in clicks.collect()) == ["", "p2"]


def test_missing_ubi_column_is_named(spark, ubi):
    queries, events = ubi
    with pytest.raises(ConfigError, match="ubi_queries: no column 'query_response_hit_ids'"):
        read_ubi(queries.drop("query_response_hit_ids"), events)
    with pytest.raises(ConfigError, match="ubi_events: no column 'action_name'"):
        read_ubi(queries, events.drop("action_name"))


@pytest.mark.slow  # several Spark jobs: about 5 s
def test_the_docstrings_examples_run(spark):
    import doctest

    from releval.checks import interactions
    from releval.clicks import interleaving, online
    from releval.core.measures import online as online_measures
    from releval.io import ubi

    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    found = [t for module in (interactions, online, interleaving, online_measures, ubi)
             for t in finder.find(module, globs={**vars(module), "spark": spark}) if t.examples]
    assert {t.name.rsplit(".", 1)[-1] for t in found} >= {
        "check_interactions", "evaluate_clicks", "interleaving", "parse_online", "read_ubi"}
    for test in found:
        runner.run(test)
    assert runner.failures == 0
