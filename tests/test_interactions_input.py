"""The interactions input's row rules (releval.checks.interactions): the used impressions with
click rows folded in, each quarantine reason on hand-made rows, and the accounts."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

from releval.checks.interaction_reasons import INTERACTION_REASONS
from releval.checks.interactions import check_interactions
from releval.core import columns as S
from releval.errors import ConfigError

SCHEMA = ("bucket string, sid string, q string, doc string, pos string, clicks string, "
          "dwell string, team string")
ROWS = [
    # bucket A, search s1: three clean impressions; a click row on b folds into b
    ("A", "s1", "q1", "a", "1", "1", "12.5", "x"),
    ("A", "s1", "q1", "b", "2", "0", None, "y"),
    ("A", "s1", "q1", "c", "3", "0", None, "x"),
    ("A", "s1", None, "b", None, "2", "40", None),   # click row: b gets 0 + 2, dwell 40
    ("A", "s1", None, "z", None, "1", None, None),   # click_not_shown: s1 did not show z
    # bucket A, search s2: two results at position 1 -> both duplicate_position
    ("A", "s2", "q2", "a", "1", "0", None, "x"),
    ("A", "s2", "q2", "b", "1", "1", None, "y"),
    ("A", "s2", "q2", "c", "2", "0", None, "x"),     # clean
    # bucket A, search s3: rows disagree on the query -> every row conflicting_query_id
    ("A", "s3", "q1", "a", "1", "0", None, "x"),
    ("A", "s3", "q9", "b", "2", "0", None, "y"),
    # bucket B: one bad row per per-row reason
    ("B", " ", "q1", "a", "1", "0", None, "x"),        # missing_search_id
    ("B", "s4", "q1", None, "2", "0", None, "x"),      # missing_doc_id
    ("B", "s4", "q1", "c", "3", "-1", None, "x"),      # invalid_click (negative)
    ("B", "s4", "q1", "d", "4", "0.5", None, "x"),     # invalid_click (not an integer)
    ("B", "s4", "q1", "e", "5", "yes", None, "x"),     # invalid_click (non-numeric)
    ("B", "s4", "q1", "f", "6", "0", "long", "x"),     # invalid_dwell
    ("B", "s4", "q1", "g", "7", "1", "-3", "x"),       # negative_dwell
    ("B", "s4", "q1", "h", None, "0", None, "x"),      # missing_position (no click)
    ("B", "s4", "q1", "i", "0", "0", None, "x"),       # invalid_position
    ("B", "s4", "q1", "j", "2.5", "0", None, "x"),     # invalid_position
    ("B", "s4", "", "k", "8", "0", None, "x"),         # missing_query_id
    ("B", "s4", "q1", "l", "9", "0", None, ""),        # missing_team (team=True)
    ("B", "s4", "q1", "m", "1", "3", "5", "y"),        # clean
]
COLUMNS = {"search_id": "sid", "query_id": "q", "doc_id": "doc", "position": "pos",
           "clicked": "clicks"}


@pytest.fixture(scope="module")
def checked(spark):
    return check_interactions(spark.createDataFrame(ROWS, SCHEMA), COLUMNS,
                              partition_by=["bucket"], team=True, name="log")


def test_used_rows_have_canonical_names_and_folded_clicks(spark, checked):
    assert_df_equality(
        checked.rows,
        spark.createDataFrame(
            [("A", "s1", "q1", "a", 1, 1, 12.5, "x"),
             ("A", "s1", "q1", "b", 2, 2, 40.0, "y"),    # 0 own clicks + 2 folded
             ("A", "s1", "q1", "c", 3, 0, None, "x"),
             ("A", "s2", "q2", "c", 2, 0, None, "x"),
             ("B", "s4", "q1", "m", 1, 3, 5.0, "y")],
            "bucket string, search_id string, query_id string, doc_id string, position int, "
            "clicked long, dwell double, team string"),
        ignore_row_order=True, ignore_nullable=True)


def test_every_reason_on_its_row(spark, checked):
    got = checked.quarantine.select(
        S.INPUT, S.SOURCE, F.col(S.PARTITION)["bucket"].alias("bucket"),
        F.col(S.RAW)[S.SEARCH_ID].alias("sid"), F.col(S.RAW)[S.DOC_ID].alias("doc"),
        S.REASON_CODE)
    expected = [
        ("A", "s1", "z", "click_not_shown"),
        ("A", "s2", "a", "duplicate_position"), ("A", "s2", "b", "duplicate_position"),
        ("A", "s3", "a", "conflicting_query_id"), ("A", "s3", "b", "conflicting_query_id"),
        ("B", " ", "a", "missing_search_id"), ("B", "s4", None, "missing_doc_id"),
        ("B", "s4", "c", "invalid_click"), ("B", "s4", "d", "invalid_click"),
        ("B", "s4", "e", "invalid_click"), ("B", "s4", "f", "invalid_dwell"),
        ("B", "s4", "g", "negative_dwell"), ("B", "s4", "h", "missing_position"),
        ("B", "s4", "i", "invalid_position"), ("B", "s4", "j", "invalid_position"),
        ("B", "s4", "k", "missing_query_id"), ("B", "s4", "l", "missing_team"),
    ]
    assert_df_equality(
        got, spark.createDataFrame([("interactions", "log", *r) for r in expected],
                                   "input string, source string, bucket string, sid string, "
                                   "doc string, reason_code string"),
        ignore_row_order=True, ignore_nullable=True)
    codes = {r[-1] for r in expected} - {"missing_doc_id", "missing_query_id"}
    assert codes == {code for code, _ in INTERACTION_REASONS}
    message = checked.quarantine.where(F.col(S.REASON_CODE) == "click_not_shown").first()
    assert "did not show" in message[S.MESSAGE]
    assert message[S.RAW] == {"search_id": "s1", "query_id": None, "doc_id": "z",
                              "position": None, "clicked": "1", "dwell": None, "team": None}


def test_accounts_sum_to_the_input_rows(checked):
    account = checked.accounts
    # A: 10 rows = used 5 (s1 a, b, c, the click row folded into b, s2 c)
    #    + quarantined 5 (z, s2 a, s2 b, s3 a, s3 b)
    # B: 13 rows = used 1 (m) + quarantined 12
    by = {p.partition: (p.input, p.used, p.quarantined_total) for p in account.partitions}
    assert by == {"bucket=A": (10, 5, 5), "bucket=B": (13, 1, 12)}
    assert account.input == len(ROWS) == account.used + account.quarantined_total
    assert account.quarantined == {
        "click_not_shown": 1, "conflicting_query_id": 2, "duplicate_position": 2,
        "invalid_click": 3, "invalid_dwell": 1, "invalid_position": 2, "missing_doc_id": 1,
        "missing_position": 1, "missing_query_id": 1, "missing_search_id": 1,
        "missing_team": 1, "negative_dwell": 1}


def test_without_team_rule_a_blank_team_is_used(spark):
    rows = [("s", "q", "a", 1, 0, "")]
    checked = check_interactions(spark.createDataFrame(
        rows, "search_id string, query_id string, doc_id string, position int, clicked int, "
        "team string"))
    assert checked.rows.count() == 1 and checked.quarantine.count() == 0


def test_boolean_clicks_and_integer_ids_are_read(spark):
    rows = [(7, 70, 1, 1, True), (7, 70, 2, 2, False)]
    checked = check_interactions(spark.createDataFrame(
        rows, "search_id long, query_id int, doc_id int, position long, clicked boolean"))
    assert sorted(checked.rows.select(S.DOC_ID, S.CLICKED, S.QUERY_ID).collect()) == [
        ("1", 1, "70"), ("2", 0, "70")]


def test_bad_columns_are_named(spark):
    df = spark.createDataFrame([("s", "q", "a", 1, 0)],
                               "sid string, query_id string, doc_id string, position int, "
                               "clicked int")
    with pytest.raises(ConfigError, match=r"log: no column 'search_id' \(search_id\)"):
        check_interactions(df, name="log")
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['search'\]"):
        check_interactions(df, {"search": "sid"})
    with pytest.raises(ConfigError, match="no column 'team'"):
        check_interactions(df, {"search_id": "sid"}, team=True)
    with pytest.raises(ConfigError, match="no partition column 'day'"):
        check_interactions(df, {"search_id": "sid"}, partition_by="day")


NAN, INF = float("nan"), float("inf")
#: (sid, query, doc, position, clicks, dwell): each per-row reason reachable with numbers
NUMERIC_ROWS = [
    (1, 10, 100, 1.0, 1.0, 12.5),       # clean
    (1, 10, 101, 2.0, 0.0, None),       # clean
    (2, 10, 100, 1.0, -1.0, None),      # invalid_click: negative
    (2, 10, 101, 2.0, 0.5, None),       # invalid_click: not an integer
    (2, 10, 102, 3.0, 3e9, None),       # invalid_click: past 2^31 - 1
    (2, 10, 103, 4.0, 0.0, NAN),        # invalid_dwell
    (2, 10, 104, 5.0, 0.0, INF),        # invalid_dwell
    (2, 10, 105, 6.0, 1.0, -3.0),       # negative_dwell
    (2, 10, 106, None, 0.0, None),      # missing_position
    (2, 10, 107, 0.0, 0.0, None),       # invalid_position
    (2, 10, 108, 2.5, 0.0, None),       # invalid_position
    (2, 10, 109, 3e9, 0.0, None),       # invalid_position: past 2^31 - 1
    (None, 10, 110, 7.0, 0.0, None),    # missing_search_id
    (2, None, 111, 8.0, 0.0, None),     # missing_query_id
    (2, 10, None, 9.0, 0.0, None),      # missing_doc_id
    (3, 11, 100, 1.0, 0.0, None),       # clean; the click row below folds into it
    (3, None, 100, None, 2.0, 40.0),    # click row
]


def _text(v):
    if v is None:
        return None
    if isinstance(v, float) and v != v:
        return "NaN"
    return "Infinity" if v == INF else str(v)


def _reasons(spark, rows, schema) -> dict:
    checked = check_interactions(spark.createDataFrame(rows, schema), {
        "search_id": "sid", "query_id": "q", "doc_id": "doc", "position": "pos",
        "clicked": "clicks"})
    return {(r["_raw_search_id"], r["_raw_doc_id"], r["_raw_position"] is None): r["_reason"]
            for r in checked.labelled.collect()}


def test_numeric_columns_give_each_row_the_reason_its_text_gives(spark):
    # the rules compare numeric columns as they are and read text through a cast to double:
    # the same row, typed either way, gets the same reason
    as_text = _reasons(spark, [tuple(_text(v) for v in r) for r in NUMERIC_ROWS],
                       "sid string, q string, doc string, pos string, clicks string, "
                       "dwell string")
    as_doubles = _reasons(spark, NUMERIC_ROWS, "sid long, q long, doc long, pos double, "
                          "clicks double, dwell double")
    integral = [r for r in NUMERIC_ROWS
                if all(v is None or (v == v and abs(v) < 2**62 and v == int(v)) for v in r[3:5])]
    as_longs = _reasons(spark, [(*r[:3], *(None if v is None else int(v) for v in r[3:5]), r[5])
                                for r in integral],
                        "sid long, q long, doc long, pos long, clicks long, dwell double")
    expected = dict(as_text)
    assert len(expected) == len(NUMERIC_ROWS) and as_doubles == expected
    assert as_longs == {k: expected[k] for k in as_longs}
    assert len(as_longs) == len(NUMERIC_ROWS) - 2 and sorted(filter(None, expected.values())) == sorted([
        "invalid_click", "invalid_click", "invalid_click", "invalid_dwell", "invalid_dwell",
        "negative_dwell", "missing_position", "invalid_position", "invalid_position",
        "invalid_position", "missing_search_id", "missing_query_id", "missing_doc_id"])
