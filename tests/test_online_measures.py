"""releval.evaluate_clicks: the online measures by hand on a tiny log, against a pandas
computation on a random log, on every kind of search against a reference of the search rules,
the aggregate's weights and slices, and a gate rule."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import functions as F
from support.clicks_support import EXPECTED, check_cells, check_mixed

import releval
from releval.core import columns as S
from releval.core.measures.online import parse_online
from releval.errors import ConfigError, MeasureError

SCHEMA = ("bucket string, search_id string, query_id string, doc_id string, position int, "
          "clicked int, dwell double")
MEASURES = ["CTR@1", "CTR@3", "Abandonment", "ClickRR", "Clicks", "Success@30"]
TINY = [
    ("A", "s1", "q1", "a", 1, 0, None), ("A", "s1", "q1", "b", 2, 1, 40.0),
    ("A", "s1", "q1", "c", 3, 0, None),
    ("A", "s2", "q1", "a", 1, 0, None), ("A", "s2", "q1", "b", 2, 0, None),
    ("A", "s3", "q2", "d", 1, 1, 5.0), ("A", "s3", "q2", "e", 2, 0, None),
    ("A", "s3", "q2", "f", 3, 1, 100.0),
]


def values(result) -> dict[tuple[str, str], tuple[float, float]]:
    return {(r.query_id, r.measure_key): (r.value, r.weight)
            for r in result.per_query.collect()}


def test_tiny_log_by_hand(spark):
    result = releval.evaluate_clicks(spark.createDataFrame(TINY, SCHEMA), measures=MEASURES,
                                     partition_by=["bucket"])
    got = values(result)
    # s1: first click at 2 (dwell 40): CTR@1 0, CTR@3 1, Abandonment 0, ClickRR 1/2,
    #     Clicks 1, Success@30 1;  s2: no click: 0, 0, 1, 0, 0, 0
    # q1 = mean of s1, s2: CTR@1 0, CTR@3 1/2, Abandonment 1/2, ClickRR 1/4, Clicks 1/2,
    #     Success@30 1/2; weight 2 searches
    assert [got[("q1", m)] for m in MEASURES] == [
        (0.0, 2.0), (0.5, 2.0), (0.5, 2.0), (0.25, 2.0), (0.5, 2.0), (0.5, 2.0)]
    # s3: clicks at 1 (dwell 5) and 3 (dwell 100): 1, 1, 0, 1/1, 2, 1 (the click at 3)
    assert [got[("q2", m)] for m in MEASURES] == [
        (1.0, 1.0), (1.0, 1.0), (0.0, 1.0), (1.0, 1.0), (2.0, 1.0), (1.0, 1.0)]
    agg = {(r.measure_key, r.averaging): r.value for r in result.aggregate.collect()
           if r.slice is None}
    # macro: the mean over queries (ClickRR (1/4 + 1) / 2 = 0.625); weighted by searches:
    # the mean over searches (ClickRR (1/2 + 0 + 1) / 3 = 0.5)
    assert agg[("ClickRR", "macro")] == pytest.approx(0.625)
    assert agg[("ClickRR", "weighted")] == pytest.approx(0.5)
    assert result.accounts.interactions.input == 8 == result.accounts.interactions.used
    # the per-query sums both uses read are built once and kept until unpersist
    assert [k.storageLevel.useMemory for k in result.persisted] == [True]
    result.unpersist()
    assert [k.storageLevel.useMemory for k in result.persisted] == [False]


def random_log(seed: int, buckets=("A", "B"), queries=12) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for b in buckets:
        for q in range(queries):
            for s in range(rng.integers(1, 5)):
                for pos in range(1, rng.integers(2, 7)):
                    clicks = int(rng.choice([0, 0, 0, 1, 2], p=[.4, .2, .1, .2, .1]))
                    dwell = float(rng.uniform(0, 90)) if clicks and rng.random() < .8 else None
                    rows.append((b, f"{b}{q}-{s}", f"q{q}", f"d{pos}", pos, clicks, dwell))
    return pd.DataFrame(rows, columns=["bucket", "search_id", "query_id", "doc_id",
                                       "position", "clicked", "dwell"])


def pandas_reference(log: pd.DataFrame) -> pd.DataFrame:
    """Written here, not from the production code: per search, then the mean per query."""
    def per_search(g: pd.DataFrame) -> pd.Series:
        hit = g[g.clicked > 0]
        return pd.Series({
            "CTR@1": float((hit.position <= 1).any()), "CTR@3": float((hit.position <= 3).any()),
            "Abandonment": float(hit.empty),
            "ClickRR": 1.0 / hit.position.min() if not hit.empty else 0.0,
            "Clicks": float(g.clicked.sum()),
            "Success@30": float((hit.dwell.fillna(-1) >= 30).any()),
        })
    searches = log.groupby(["bucket", "query_id", "search_id"]).apply(
        per_search, include_groups=False).reset_index()
    means = searches.groupby(["bucket", "query_id"])[MEASURES].mean()
    means["searches"] = searches.groupby(["bucket", "query_id"]).size()
    return means


def test_against_pandas(spark):
    log = random_log(7)
    result = releval.evaluate_clicks(
        spark.createDataFrame(log.astype(object).where(log.notna(), None), SCHEMA),
        measures=MEASURES, partition_by="bucket")
    expected = pandas_reference(log)
    got = result.per_query.toPandas().set_index(["bucket", "query_id", "measure_key"])
    assert len(got) == len(expected) * len(MEASURES)
    for (bucket, query), row in expected.iterrows():
        for m in MEASURES:
            value, weight = got.loc[(bucket, query, m), ["value", "weight"]]
            assert value == pytest.approx(row[m], abs=1e-12)
            assert weight == row["searches"]


def gate_log(spark, base_abandoned: int, cand_abandoned: int, queries: int = 40):
    """Each query 4 searches per bucket; the first ``*_abandoned`` have no click."""
    rows = [(b, f"{b}{q}-{s}", f"q{q}", "d", 1, int(s >= n), None)
            for b, n in (("A", base_abandoned), ("B", cand_abandoned))
            for q in range(queries) for s in range(4)]
    return spark.createDataFrame(rows, SCHEMA)


@pytest.mark.slow  # several Spark jobs: over 5 s
def test_gate_rule_on_abandonment(spark):
    # every query: Abandonment 2/4 in A, 0/4 in B: a change of -0.5 on 40 queries
    better = releval.evaluate_clicks(gate_log(spark, 2, 0), measures=["Abandonment"],
                                     partition_by="bucket")
    gate = better.gate(baseline="bucket=A", candidates="bucket=B",
                       rules=["Abandonment change <= 0.01"])
    row = gate.table.first()
    assert (gate.decision, row.estimate) == ("pass", -0.5)
    # the reverse: every query abandons 0.5 more: the rule is broken, decisively
    worse = releval.evaluate_clicks(gate_log(spark, 0, 2), measures=["Abandonment"],
                                    partition_by="bucket")
    assert worse.gate(baseline="bucket=A", candidates="bucket=B",
                      rules=["Abandonment change <= 0.01"]).decision == "fail"
    comparison = worse.compare(baseline="bucket=A", candidates="bucket=B").first()
    assert (comparison.measure_key, comparison.mean_diff, comparison.num_pairs) == (
        "Abandonment", 0.5, 40)


@pytest.mark.slow  # several Spark jobs: over 5 s
def test_slices_and_a_queries_weight(spark):
    log = spark.createDataFrame(TINY, SCHEMA)
    queries = spark.createDataFrame([("q1", "head", 10.0), ("q2", "tail", 30.0)],
                                    "key string, segment string, hits double")
    result = releval.evaluate_clicks(log, measures=["ClickRR"], partition_by="bucket",
                                     queries=queries, queries_columns={"query_id": "key",
                                                                       "weight": "hits"},
                                     slices=["segment"])
    rows = {(r.averaging, r.slice_value): r.value for r in result.aggregate.collect()}
    # weighted by the queries' hits: (10 * 1/4 + 30 * 1) / 40 = 0.8125
    assert rows[("weighted", None)] == pytest.approx(0.8125)
    assert rows[("macro", "head")] == 0.25 and rows[("macro", "tail")] == 1.0
    assert {r.query_id: r.slices for r in result.per_query.collect()} == {
        "q1": {"segment": "head"}, "q2": {"segment": "tail"}}
    # without a weight column, slices keep the searches as the weight
    unweighted = releval.evaluate_clicks(log, measures=["ClickRR"], queries=queries,
                                         queries_columns={"query_id": "key"},
                                         slices=["segment"])
    assert {r.query_id: r.weight for r in unweighted.per_query.collect()} == {
        "q1": 2.0, "q2": 1.0}


def test_quarantine_and_repr(spark):
    rows = [*TINY, ("A", "s9", "q1", "z", None, 1, None)]   # a click the log never showed
    result = releval.evaluate_clicks(spark.createDataFrame(rows, SCHEMA),
                                     measures=["CTR@3"], partition_by="bucket")
    assert [(r.input, r.reason_code, r.bucket) for r in result.quarantine.collect()] == [
        ("interactions", "click_not_shown", "A")]
    assert result.accounts.quarantined == 1
    shown = repr(result)
    assert "CTR@3" in shown and "interactions DataFrame against clicks" in shown


def test_bad_measures_are_named(spark):
    log = spark.createDataFrame(TINY, SCHEMA).drop("dwell")
    with pytest.raises(ConfigError, match="Success@T reads the dwell"):
        releval.evaluate_clicks(log, measures=["Success@30"])
    with pytest.raises(ConfigError, match="use releval.interleaving"):
        releval.evaluate_clicks(log, measures=["Preference"])
    with pytest.raises(MeasureError, match="did you mean Abandonment"):
        releval.evaluate_clicks(log, measures=["Abandon"])
    with pytest.raises(MeasureError, match="needs @N"):
        parse_online("CTR")
    assert parse_online("clicks").spec.bounds is None


def test_per_query_schema_is_the_tables(spark):
    from releval.io.tables import per_query_schema

    result = releval.evaluate_clicks(spark.createDataFrame(TINY, SCHEMA), measures=["Clicks"])
    assert result.per_query.columns == per_query_schema([]).names
    assert result.per_query.where(F.col(S.NUM_RET) == 2).count() == 1   # q1: 2 searches


@pytest.mark.slow  # several Spark jobs: over 5 s
def test_compare_pairs_the_queries_both_buckets_saw(spark):
    rows = [*TINY, ("B", "s5", "q1", "a", 1, 1, None)]   # B saw q1 only
    result = releval.evaluate_clicks(spark.createDataFrame(rows, SCHEMA),
                                     measures=["ClickRR"], partition_by="bucket")
    found = result.compare(baseline="bucket=A", candidates="bucket=B", permutations=100).first()
    # q1: A 1/4, B 1 -> +3/4; q2 (A only) is no pair, not a 0 in B
    assert (found.num_pairs, found.mean_diff) == (1, 0.75)
    assert [r.query_id for r in result.changes(baseline="bucket=A",
                                               candidates="bucket=B").collect()] == ["q1"]


@pytest.mark.slow  # Delta writes and reads
def test_write_round_trip(spark, tmp_path):
    rows = [*TINY, ("A", "s9", "q1", "z", None, 1, None)]   # one click_not_shown
    result = releval.evaluate_clicks(spark.createDataFrame(rows, SCHEMA),
                                     measures=["ClickRR", "Clicks"], partition_by="bucket")
    out = {name: str(tmp_path / name) for name in ("per_query", "aggregate", "quarantine")}
    result.write(**out)
    read = {name: spark.read.format("delta").load(path) for name, path in out.items()}
    assert read["per_query"].count() == 4   # 2 queries x 2 measures
    macro = read["aggregate"].where("averaging = 'macro' AND measure_key = 'ClickRR'").first()
    assert (macro.bucket, macro.value, macro.num_queries) == ("A", 0.625, 2)   # (1/4 + 1) / 2
    quarantined = read["quarantine"].first()
    assert (quarantined.input, quarantined.reason_code, quarantined.bucket) == (
        "interactions", "click_not_shown", "A")
    result.write(quarantine=out["quarantine"])   # replaced, not appended
    assert spark.read.format("delta").load(out["quarantine"]).count() == 1


@pytest.mark.parametrize("integer_queries", [False, True])
def test_every_kind_of_search_against_a_reference_of_the_rules(spark, integer_queries):
    # clean pages, repeated positions, queries in conflict, pages past position 62, click
    # rows on shown and unshown documents, a null bucket: no (bucket, query, measure) on one
    # side only, no difference, 84 compared; string query ids are keyed by two hashes,
    # integer ones by the id
    got = check_mixed(spark, integer_queries=integer_queries)
    assert got == EXPECTED["mixed"] == [[], 0.0, 84]


@pytest.mark.parametrize("integer_queries", [False, True])
def test_impression_cells_of_every_kind_of_search_against_a_reference_of_the_rules(
        spark, integer_queries):
    # the same log: impressions and clicked impressions per (bucket, query, doc, position)
    # against the used impressions the rules give, counted in plain Python; 933 cells
    got = check_cells(spark, integer_queries=integer_queries)
    assert got == EXPECTED["cells"] == [[], 0.0, 933]
