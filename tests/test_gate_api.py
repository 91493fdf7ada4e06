"""releval.gate on the suite's session: designed per-query rows with known outcomes; the Spark
path gives the pure path's tests (:func:`releval.stats.gate.bounded_test`), Holm is
statsmodels', a 0/1 level rule's bounds are Clopper-Pearson's."""

from __future__ import annotations

import pytest
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint
from support import gate_support as D

import releval
from releval.errors import ConfigError, InputError
from releval.stats import gate as G

ALPHA = 0.05


@pytest.fixture(scope="module")
def frames(spark):
    return D.frames(spark)


def pure(x, rule_text):
    """The pure path's test of a rule over per-query values x."""
    rule = G.parse_rule(rule_text)
    return G.bounded_test(x, rule.tested_threshold, support=rule.support, greater=rule.greater,
                          alpha=ALPHA)


def test_clear_pass_and_the_table(frames):
    per_query, _ = frames
    g = releval.gate(per_query, baseline="system=base", candidates="system=good",
                     rules=["nDCG@10 change >= -0.01", "Hit@10 >= 0.8"])
    assert g.decision == "pass" and g.passed
    table = g.table
    assert table.columns == [*G.COLUMNS]
    rows = {r.rule: r for r in table.collect()}
    d = D.DIFFS["good"]
    change = rows["nDCG@10 change >= -0.01"]
    assert change.estimate == pytest.approx(0.05) and change.num_queries == 400
    want = pure(d, "nDCG@10 change >= -0.01")
    assert (change.p_pass, change.bound_low) == pytest.approx((want.p_pass, want.bound_low))
    assert change.queries_needed is None and change.slice is None
    hit = rows["Hit@10 >= 0.8"]  # 360 of 400 = 0.9: Clopper-Pearson at 1 - 2 alpha
    low, high = proportion_confint(360, 400, alpha=2 * ALPHA, method="beta")
    assert (hit.estimate, hit.bound_low, hit.bound_high) == pytest.approx((0.9, low, high))
    assert hit.outcome == "pass" and low > 0.8
    text = g.render()
    assert text.splitlines()[0].startswith("gate: PASS (2 pass; 2 rules)")
    assert "system=good against system=base" in text and repr(g) == text
    assert "<b>gate: PASS" in g._repr_html_()


def test_clear_fail_with_holm_failing_rows_first(frames):
    per_query, _ = frames
    rules = ["nDCG@10 change >= -0.01", "nDCG@10 >= 0.3", "nDCG@10 change >= -2%"]
    g = releval.gate(per_query, baseline={"system": "base"}, candidates={"system": "bad"},
                     rules=rules)
    assert g.decision == "fail" and not g.passed
    rows = {r.rule: r for r in g.table.collect()}
    d, c, b = D.DIFFS["bad"], D.values("bad"), D.BASE
    raw = [pure(d, rules[0]).p_fail, pure(c, rules[1]).p_fail,
           pure(c - 0.98 * b, rules[2]).p_fail]
    assert [rows[r].p_fail for r in rules] == pytest.approx(raw, rel=1e-9)
    reject, adjusted, *_ = multipletests(raw, alpha=ALPHA, method="holm")
    assert [rows[r].p_fail_adjusted for r in rules] == pytest.approx(list(adjusted), rel=1e-9)
    assert [rows[r].outcome == "fail" for r in rules] == list(reject)
    # c mean = 0.5 - 0.05 = 0.45 > 0.3: the level rule passes
    assert rows["nDCG@10 >= 0.3"].outcome == "pass"
    relative = rows["nDCG@10 change >= -2%"]
    assert relative.threshold == 0.0 and relative.estimate == pytest.approx((c - 0.98 * b).mean())
    assert relative.relative_change == pytest.approx(-0.05 / 0.5)  # a fraction: -10%
    lines = g.render().splitlines()
    assert lines[0].startswith("gate: FAIL (2 fail, 1 pass; 3 rules)")
    assert " fail " in lines[2] and " fail " in lines[3] and " pass " in lines[4]


def test_inconclusive_gives_the_queries_needed(frames):
    per_query, _ = frames
    g = releval.gate(per_query, baseline="system=base", candidates="system=small",
                     rules=["nDCG@10 change > 0"])
    assert g.decision == "inconclusive"
    row = g.table.first()
    d = D.DIFFS["small"]
    assert row.num_queries == 10 and row.outcome == "inconclusive"
    want = G.queries_needed(pure(d, "nDCG@10 change > 0"), 0.0, alpha=ALPHA)
    assert row.queries_needed == want and 10 < want < 1000


def test_pass_overall_fail_on_one_slice_and_weighted_fail(frames):
    per_query, queries = frames
    g = releval.gate(per_query, baseline="system=base", candidates="system=mixed",
                     rules=["nDCG@10 change >= -0.01", "nDCG@10 change >= -0.01 per segment",
                            "weighted nDCG@10 change >= -0.01"],
                     queries=queries, queries_columns={"weight": "traffic"})
    rows = [(r.rule, r.slice, r.slice_value, r.outcome, r.estimate) for r in g.table.collect()]
    assert [r[:4] for r in rows] == [
        ("nDCG@10 change >= -0.01", None, None, "pass"),
        ("nDCG@10 change >= -0.01 per segment", "segment", "head", "fail"),
        ("nDCG@10 change >= -0.01 per segment", "segment", "tail", "pass"),
        ("weighted nDCG@10 change >= -0.01", None, None, "fail")]
    # (100 x -0.1 + 300 x 0.1) / 400 = 0.05; weighted (100 x 100 x -0.1 + 300 x 0.1) / 10300
    assert rows[0][4] == pytest.approx(0.05) and rows[3][4] == pytest.approx(-970 / 10300)
    head = D.DIFFS["mixed"][:D.HEAD]
    want = pure(head, "nDCG@10 change >= -0.01")
    assert g.table.collect()[1].p_fail == pytest.approx(want.p_fail)
    assert g.decision == "fail"
    assert g.rules == {"nDCG@10 change >= -0.01": "pass",
                       "nDCG@10 change >= -0.01 per segment": "fail",
                       "weighted nDCG@10 change >= -0.01": "fail"}


def test_point_mode_is_mlflows_reading(frames):
    per_query, _ = frames
    g = releval.gate(per_query, baseline="system=base", candidates="system=small",
                     rules=["nDCG@10 change > 0.011"], mode="point")
    assert g.decision == "fail"  # 0.01 < 0.011, however noisy


def test_errors_name_what_is_wrong(frames, spark):
    per_query, queries = frames
    with pytest.raises(ConfigError, match=r"rule 'nDCG@10 => 0'.*expected"):
        releval.gate(per_query, baseline="system=base", candidates="system=good",
                     rules=["nDCG@10 => 0"])
    with pytest.raises(ConfigError, match=r"\['AP'\].*evaluated measures are \['Hit@10', "
                                          r"'nDCG@10'\]"):
        releval.gate(per_query, baseline="system=base", candidates="system=good",
                     rules=["AP change >= 0"])
    with pytest.raises(ConfigError, match="queries DataFrame: no column 'locale'"):
        releval.gate(per_query, baseline="system=base", candidates="system=good",
                     rules=["nDCG@10 change >= 0 per locale"], queries=queries)
    with pytest.raises(ConfigError, match="weighted rule needs"):
        releval.gate(per_query, baseline="system=base", candidates="system=good",
                     rules=["weighted nDCG@10 change >= 0"])
    bad = spark.createDataFrame([("q000", "head", 1.0), ("q000", "tail", 2.0)],
                                D.QUERIES_SCHEMA)
    with pytest.raises(InputError, match=r"queries DataFrame.*duplicate_query_id.*'query_id'"
                                         r".*q000"):
        releval.gate(per_query, baseline="system=base", candidates="system=good",
                     rules=["nDCG@10 change >= 0 per segment"], queries=bad)


def test_gate_on_an_evaluations_per_query_rows(spark):
    # 6 queries, one relevant document r each; base ranks it 2nd (RR 1/2), cand 1st (RR 1)
    run = spark.createDataFrame(
        [(s, f"q{i}", d, sc) for i in range(6) for s, order in
         (("base", ("x", "r")), ("cand", ("r", "x"))) for d, sc in zip(order, (2.0, 1.0),
                                                                         strict=True)],
        "system string, query_id string, doc_id string, score double")
    qrels = spark.createDataFrame([(f"q{i}", "r", 1) for i in range(6)],
                                  "query_id string, doc_id string, relevance int")
    result = releval.evaluate(run, qrels, measures=["RR"], partition_by=["system"])
    g = releval.gate(result.per_query, baseline="system=base", candidates="system=cand",
                     rules=["RR change >= 0.4", "RR >= 0.9"])
    # every difference is exactly 1 - 1/2 = 0.5 > 0.4, no spread: not certainty; the lower
    # bound is 0.5 - 1.5 U, U ~ Beta(1, 6): p_pass = P(U >= 0.1 / 1.5) = (14 / 15) ** 6.
    # RR = 1 on every query: Clopper-Pearson's lower bound is 0.05 ** (1 / 6) = 0.607
    rows = {r.rule: r for r in g.table.collect()}
    change = rows["RR change >= 0.4"]
    assert change.estimate == 0.5 and change.p_pass == pytest.approx((14 / 15) ** 6)
    assert change.outcome == "inconclusive" and change.queries_needed == 44
    low, _ = proportion_confint(6, 6, alpha=0.1, method="beta")
    assert rows["RR >= 0.9"].bound_low == pytest.approx(low) == pytest.approx(0.05 ** (1 / 6))
    assert rows["RR >= 0.9"].outcome == "inconclusive"
    assert g.decision == "inconclusive"


def test_log_mlflow_tags_the_decision_and_logs_each_rules_estimate_and_bounds(frames, tmp_path):
    import mlflow

    per_query, _ = frames
    mlflow.set_tracking_uri((tmp_path / "mlruns").as_uri())
    g = releval.gate(per_query, baseline="system=base", candidates="system=bad",
                     rules=["nDCG@10 change >= -0.01"])
    run = mlflow.get_run(g.log_mlflow())
    assert run.data.tags["releval.gate"] == "fail"
    row = g.table.first()
    name = "gate/nDCG_at_10_change_ge_minus0.01/"
    assert run.data.metrics[name + "estimate"] == pytest.approx(row.estimate)
    assert run.data.metrics[name + "bound_low"] == pytest.approx(row.bound_low)
    assert run.data.metrics[name + "bound_high"] == pytest.approx(row.bound_high)
