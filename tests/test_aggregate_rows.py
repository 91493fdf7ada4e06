"""releval.frames.aggregate.rows: the aggregate table's rows from the collected sums (no Spark)."""

from __future__ import annotations

import math

import pytest
from pyspark.sql import Row

from releval.config import IntervalSettings
from releval.core import columns as S
from releval.core.measures import parse_measures
from releval.frames.aggregate import INDEX, N, rows
from releval.frames.aggregate import sum_column as c


def summed(partition: dict, n: int, *measures: dict) -> list[Row]:
    """The collected sums of one run partition: a row per measure position."""
    return [Row(**partition, **{INDEX: i, N: n}, **{c(k): v for k, v in sums.items()})
            for i, sums in enumerate(measures)]


def test_rows_from_the_sums_by_hand():
    # measures, in the wide table's order: 0 = P@5, 1 = R@10, 2 = num_rel
    measures = parse_measures(["P@5", "R@10", "num_rel"])
    # system a, 4 scored queries: P@5 values 0.2, 0.4, 0.4, 0.6 -> mean 0.4,
    #   sd = sqrt((0.04 + 0 + 0 + 0.04) / 3) = 0.163299..., relevant retrieved in the top 5:
    #   1 + 2 + 2 + 3 = 8; R@10: mean 0.5, relevant retrieved in the top 10: 9 of 20 judged
    #   relevant; num_rel: 5 + 5 + 5 + 5 = 20
    sd = math.sqrt(0.08 / 3)
    per_measure = (
        {"mean": 0.4, "sd": sd, "nonbinary": 4, "rel_ret": 8},  # P@5
        {"mean": 0.5, "sd": 0.0, "nonbinary": 4, "rel_ret": 9, "rel": 20},  # R@10
        {"sum": 20.0},  # num_rel
    )
    # (evaluated at depth 100: the setting each row carries)
    a = summed({"system": "a", S.NEGATIVE_LABELS: "unjudged", S.DEPTH: 100}, 4, *per_measure)
    # system b: no scored query (every query without qrels): no rows
    b = summed({"system": "b", S.NEGATIVE_LABELS: "unjudged", S.DEPTH: 100}, 0, *per_measure)
    # a row with no measure position (by_measure's row for a wide row without measures)
    # is not a measure's sums
    ledger = Row(**{"system": "a", S.NEGATIVE_LABELS: "unjudged", S.DEPTH: 100, INDEX: None,
                    N: 0})
    made = rows([*b, ledger, *a], measures=measures, partition_columns=["system"])
    got = {(r[S.MEASURE_KEY], r[S.AVERAGING]): r for r in made}
    # the partitions in the order the sums come, then the measures in their order
    assert [(r[S.MEASURE_KEY], r[S.AVERAGING]) for r in made] == [
        ("P@5", "macro"), ("P@5", "micro"), ("R@10", "macro"), ("R@10", "micro"),
        ("num_rel", "sum"),
    ]
    assert sorted(got) == [
        ("P@5", "macro"), ("P@5", "micro"), ("R@10", "macro"), ("R@10", "micro"),
        ("num_rel", "sum"),
    ]
    assert {r["system"] for r in got.values()} == {"a"}
    assert {r[S.NUM_QUERIES] for r in got.values()} == {4}
    # P@5 micro: 8 relevant retrieved / (5 x 4 queries) = 0.4; R@10 micro: 9 / 20 = 0.45
    assert got["P@5", "micro"][S.VALUE] == pytest.approx(0.4)
    assert got["R@10", "micro"][S.VALUE] == pytest.approx(0.45)
    assert got["num_rel", "sum"][S.VALUE] == 20.0
    # the t interval of P@5: t_{0.975, 3} = 3.182446305284263, half = t * sd / sqrt(4)
    half = 3.182446305284263 * sd / 2
    p5 = got["P@5", "macro"]
    assert (p5[S.VALUE], p5[S.CI_LOW], p5[S.CI_HIGH]) == pytest.approx((0.4, 0.4 - half, 0.4 + half))
    assert (p5[S.CI_METHOD], p5[S.CI_LEVEL]) == ("t", 0.95)
    # R@10's values are all 0.5 (sd 0): the interval is the point
    r10 = got["R@10", "macro"]
    assert (r10[S.CI_LOW], r10[S.CI_HIGH]) == (0.5, 0.5)
    # micro and sum rows carry no interval
    for key in (("P@5", "micro"), ("R@10", "micro"), ("num_rel", "sum")):
        assert [got[key][c] for c in (S.CI_LOW, S.CI_HIGH, S.CI_METHOD, S.CI_LEVEL)] == [None] * 4
    assert {r[S.NEGATIVE_LABELS] for r in got.values()} == {"unjudged"}
    assert {r[S.DEPTH] for r in got.values()} == {100}


def test_one_query_has_no_interval_and_a_zero_denominator_gives_zero():
    measures = parse_measures(["P@5", "R@10"])
    one = summed({"date": None, S.NEGATIVE_LABELS: "judged", S.DEPTH: None}, 1,
                 {"mean": 0.2, "sd": 0.0, "nonbinary": 1, "rel_ret": 1},
                 {"mean": 0.0, "sd": 0.0, "nonbinary": 0, "rel_ret": 0, "rel": 0})
    got = {(r[S.MEASURE_KEY], r[S.AVERAGING]): r
           for r in rows(one, measures=measures, partition_columns=["date"],
                         intervals=IntervalSettings(level=0.9))}
    assert (got["P@5", "macro"][S.CI_LOW], got["P@5", "macro"][S.CI_HIGH]) == (None, None)
    assert got["P@5", "macro"][S.CI_LEVEL] == 0.9
    # R@10 micro: 0 relevant documents in the qrels -> 0.0 (safe_divide), not an error
    assert got["R@10", "micro"][S.VALUE] == 0.0
    assert got["P@5", "micro"][S.VALUE] == pytest.approx(1 / 5)
    assert got["P@5", "macro"]["date"] is None and got["P@5", "macro"][S.DEPTH] is None


def macro_row(measure: str, n: int, sums: dict) -> dict:
    """The macro row of one measure of one run partition, from its sums."""
    made = rows(summed({"system": "a", S.NEGATIVE_LABELS: "unjudged", S.DEPTH: None}, n, sums),
                measures=parse_measures([measure]), partition_columns=["system"])
    (row,) = [r for r in made if r[S.AVERAGING] == "macro"]
    return row


def test_values_all_0_or_1_get_wilsons_interval():
    # Hit@10 = 1 on 99 of 100 queries: mean 0.99, sd = sqrt(0.99 * 0.01 * 100 / 99) = 0.1.
    # t: 0.99 +- t_{0.975,99} * 0.1 / 10 = 0.99 +- 1.984217 * 0.01 = [0.970158, 1.009842],
    # past 1. Wilson, z = 1.959964, z^2/n = 0.0384146:
    #   center = (0.99 + 0.0192073) / 1.0384146 = 0.9718732
    #   half = z * sqrt(0.99 * 0.01 / 100 + 0.0384146 / 400) / 1.0384146 = 0.0263594
    #   [0.9455138, 0.9982326]
    # All 20 queries 1 (P@1 = 1 everywhere): t has width 0; Wilson [20 / (20 + z^2), 1]
    hit = macro_row("Hit@10", 100, {"mean": 0.99, "sd": 0.1, "nonbinary": 0, "rel_ret": 99})
    assert (hit[S.CI_LOW], hit[S.CI_HIGH]) == pytest.approx((0.9455138, 0.9982326), abs=1e-7)
    assert (hit[S.CI_METHOD], hit[S.CI_LEVEL]) == ("wilson", 0.95)
    ones = macro_row("P@1", 20, {"mean": 1.0, "sd": 0.0, "nonbinary": 0, "rel_ret": 20})
    assert (ones[S.CI_LOW], ones[S.CI_HIGH], ones[S.CI_METHOD]) == (
        pytest.approx(20 / (20 + 1.959963984540054**2)), 1.0, "wilson")
    assert ones[S.CI_LOW] == pytest.approx(0.8388748, abs=1e-7)


def test_a_t_interval_past_the_measures_range_is_clipped():
    # P@5 of 5 queries: 0.2, 0, 0, 0, 0: mean 0.04, deviations 0.16, -0.04 x 4,
    # s^2 = (0.0256 + 4 * 0.0016) / 4 = 0.008; half = t_{0.975,4} * sqrt(0.008 / 5)
    # = 2.776445 * 0.04 = 0.1110578: [-0.0710578, 0.1510578] -> [0, 0.1510578]
    sd = math.sqrt(0.008)
    p5 = macro_row("P@5", 5, {"mean": 0.04, "sd": sd, "nonbinary": 1, "rel_ret": 1})
    assert (p5[S.CI_LOW], p5[S.CI_HIGH]) == (0.0, pytest.approx(0.04 + 0.1110578, abs=1e-7))
    assert p5[S.CI_METHOD] == "t-clipped"
    # the same sums for utility, which has no bounds: the t interval as it is
    u = macro_row("utility", 5, {"mean": 0.04, "sd": sd, "nonbinary": 1, "rel_ret": 1})
    assert (u[S.CI_LOW], u[S.CI_METHOD]) == (
        pytest.approx(0.04 - 0.1110578, abs=1e-7), "t")
    # utility values all 0 or 1 are not a proportion: no Wilson for an unbounded measure
    u01 = macro_row("utility", 4, {"mean": 0.5, "sd": math.sqrt(1 / 3), "nonbinary": 0,
                                   "rel_ret": 2})
    assert u01[S.CI_METHOD] == "t"
