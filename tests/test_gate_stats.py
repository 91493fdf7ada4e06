"""The gate's rules and one-sided tests (no Spark), against scipy's ttest_1samp and
statsmodels' Holm, Wilson interval, score test and one-sided power."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestPower
from statsmodels.stats.proportion import proportion_confint, proportions_ztest

from releval.errors import ConfigError
from releval.stats import gate as G

ALPHA = 0.05
#: ten deviations with mean 0 and standard deviation 0.02 * sqrt(10 / 9 * 0.5) ...: a
#: fixed spread added to designed means
WIGGLE = np.array([-0.02, 0.02, -0.01, 0.01, 0.0, -0.03, 0.03, 0.015, -0.015, 0.0])


def pairs(b, c, *, key="nDCG@10", weight=None, **slices) -> pd.DataFrame:
    n = len(b)
    return pd.DataFrame({"measure_key": key, "query_id": [f"q{i:03d}" for i in range(n)],
                         G.BASE: np.asarray(b, float), G.CAND: np.asarray(c, float),
                         "weight": np.nan if weight is None else np.asarray(weight, float),
                         **slices})


def designed(mean_diff: float, repeats: int, base: float = 0.5):
    """Pairs whose differences are ``mean_diff + WIGGLE`` repeated: mean exactly mean_diff."""
    d = np.tile(mean_diff + WIGGLE, repeats)
    b = np.full(len(d), base)
    return b, b + d


def scipy_one_sided(x, popmean, greater):
    alt = "greater" if greater else "less"
    r = stats.ttest_1samp(x, popmean, alternative=alt)
    ci = r.confidence_interval(confidence_level=1 - ALPHA)
    return r.pvalue, ci


def test_clear_pass_against_scipy():
    b, c = designed(0.05, 5)  # 50 pairs, mean difference 0.05, far above -0.01
    table = G.gate_rows(pairs(b, c), [G.parse_rule("nDCG@10 change >= -0.01")], alpha=ALPHA)
    row = table.iloc[0]
    assert row.outcome == G.PASS and row.num_queries == 50
    assert row.estimate == pytest.approx(0.05, abs=1e-12)
    d = c - b
    p, ci = scipy_one_sided(d, -0.01, True)
    assert row.p_pass == pytest.approx(p, rel=1e-9) and p < ALPHA
    assert row.bound_low == pytest.approx(ci.low, rel=1e-9)  # the one-sided lower bound
    q, ci_less = scipy_one_sided(d, -0.01, False)
    assert row.p_fail == pytest.approx(q, rel=1e-9)
    assert row.bound_high == pytest.approx(ci_less.high, rel=1e-9)
    assert pd.isna(row.queries_needed) and row.threshold == -0.01
    # relative change: mean c / mean b - 1 = 0.05 / 0.5 = 10%
    assert row.relative_change == pytest.approx(10.0)


def test_clear_fail_and_holm_against_statsmodels():
    b, c = designed(-0.05, 5)
    b2, c2 = designed(-0.012, 3)  # 30 pairs, below 0 by 3.7 standard errors
    frame = pd.concat([pairs(b, c), pairs(b2, c2, key="RR")], ignore_index=True)
    rules = [G.parse_rule(r) for r in
             ("nDCG@10 change >= -0.01", "RR change > 0", "nDCG@10 >= 0.4")]
    table = G.gate_rows(frame, rules, alpha=ALPHA)
    assert list(table.outcome) == [G.FAIL, G.FAIL, G.PASS]
    raw = []
    for rule, x in [(rules[0], c - b), (rules[1], c2 - b2), (rules[2], c)]:
        p, _ = scipy_one_sided(x, rule.threshold, False)  # the fail test: below the threshold
        raw.append(p)
    assert np.allclose(table.p_fail, raw, rtol=1e-9)
    reject, adjusted, *_ = multipletests(raw, alpha=ALPHA, method="holm")
    assert np.allclose(table.p_fail_adjusted, adjusted, rtol=1e-9)
    assert list(reject) == [o == G.FAIL for o in table.outcome]
    assert G.decide(table.outcome) == G.FAIL


def test_holm_can_leave_a_fail_inconclusive():
    # two rules just failing on their own (p_fail ~ 0.03 each); Holm over two: 0.03 x 2 > 0.05
    # on the smaller only if both are above 0.025 -> both inconclusive
    x = np.tile(WIGGLE, 2)  # sd of 20 values
    sd = x.std(ddof=1)
    shift = -stats.t.isf(0.03, 19) * sd / math.sqrt(20)  # a mean whose p_fail is 0.03
    b = np.full(20, 0.5)
    frame = pd.concat([pairs(b, b + x + shift), pairs(b, b + x + shift, key="RR")])
    table = G.gate_rows(frame, [G.parse_rule("nDCG@10 change >= 0"),
                                G.parse_rule("RR change >= 0")], alpha=ALPHA)
    assert np.allclose(table.p_fail, 0.03, rtol=1e-9)
    _, adjusted, *_ = multipletests([0.03, 0.03], method="holm")
    assert np.allclose(table.p_fail_adjusted, adjusted) and np.allclose(adjusted, 0.06)
    assert list(table.outcome) == [G.INCONCLUSIVE] * 2


def test_inconclusive_with_queries_needed_against_statsmodels():
    b, c = designed(0.01, 1)  # 10 pairs, mean 0.01 above 0, sd 0.0179: not enough
    row = G.gate_rows(pairs(b, c), [G.parse_rule("nDCG@10 change > 0")], alpha=ALPHA).iloc[0]
    assert row.outcome == G.INCONCLUSIVE
    d = c - b
    effect = 0.01 / d.std(ddof=1)
    want = TTestPower().solve_power(effect_size=effect, alpha=ALPHA, power=G.POWER,
                                    alternative="larger")
    assert row.queries_needed == math.ceil(float(np.squeeze(want)))
    # with that many queries at the same spread, the designed data passes
    more = int(row.queries_needed)
    b2, c2 = designed(0.01, math.ceil(more / 10))
    assert G.gate_rows(pairs(b2, c2), [G.parse_rule("nDCG@10 change > 0")]).outcome[0] == G.PASS
    assert G.decide(["pass", "inconclusive"]) == G.INCONCLUSIVE


def test_pass_overall_fail_on_one_slice():
    # head: 20 queries losing 0.05; tail: 60 queries gaining 0.1. Overall mean
    # (20 x -0.05 + 60 x 0.1) / 80 = 0.0625, a pass; the head slice fails
    bh, ch = designed(-0.05, 2)
    bt, ct = designed(0.10, 6)
    b, c = np.concatenate([bh, bt]), np.concatenate([ch, ct])
    frame = pairs(b, c, segment=["head"] * 20 + ["tail"] * 60)
    rules = [G.parse_rule("nDCG@10 change >= -0.01"),
             G.parse_rule("nDCG@10 change >= -0.01 per segment")]
    table = G.gate_rows(frame, rules, alpha=ALPHA)
    assert list(zip(table.slice_value.fillna("-"), table.outcome, strict=True)) == [
        ("-", G.PASS), ("head", G.FAIL), ("tail", G.PASS)]
    assert table.estimate.iloc[0] == pytest.approx(0.0625)
    p_head, _ = scipy_one_sided(ch - bh, -0.01, False)
    assert table.p_fail.iloc[1] == pytest.approx(p_head, rel=1e-9)
    assert G.rule_outcomes(table) == {rules[0].text: G.PASS, rules[1].text: G.FAIL}
    assert G.decide(table.outcome) == G.FAIL


def test_weighted_fail_under_unweighted_pass():
    # the same 80 queries; head queries carry weight 100, tail 1: the weighted mean is
    # (20 x 100 x -0.05 + 60 x 0.1) / (2000 + 60) = -94 / 2060 = -0.045631
    bh, ch = designed(-0.05, 2)
    bt, ct = designed(0.10, 6)
    b, c = np.concatenate([bh, bt]), np.concatenate([ch, ct])
    w = np.array([100.0] * 20 + [1.0] * 60)
    frame = pairs(b, c, weight=w)
    table = G.gate_rows(frame, [G.parse_rule("nDCG@10 change >= -0.01"),
                                G.parse_rule("weighted nDCG@10 change >= -0.01")], alpha=ALPHA)
    assert list(table.outcome) == [G.PASS, G.FAIL]
    row = table.iloc[1]
    assert row.estimate == pytest.approx(-94 / 2060)
    d = c - b
    m = -94 / 2060
    v = 80 / 79 * np.sum(w * w * (d - m) ** 2) / w.sum() ** 2  # the linearized variance
    t = (m + 0.01) / math.sqrt(v)
    assert row.p_fail == pytest.approx(stats.t.cdf(t, 79), rel=1e-9)
    assert row.bound_high == pytest.approx(m + stats.t.ppf(0.95, 79) * math.sqrt(v))
    # an unlisted query (no weight) is left out of the weighted rule only
    frame.loc[0, "weight"] = np.nan
    again = G.gate_rows(frame, [G.parse_rule("weighted nDCG@10 change >= -0.01")])
    assert again.num_queries[0] == 79


def test_relative_rule_is_the_exact_test_of_candidate_minus_scaled_baseline():
    b = np.linspace(0.2, 1.0, 40)
    c = b * 0.99 + np.tile(WIGGLE, 4)
    row = G.gate_rows(pairs(b, c, key="RR"), [G.parse_rule("RR change >= -2%")]).iloc[0]
    q = c - 0.98 * b
    p, ci = scipy_one_sided(q, 0.0, True)
    assert row.threshold == 0.0 and row.estimate == pytest.approx(q.mean())
    assert row.p_pass == pytest.approx(p, rel=1e-9) and row.bound_low == pytest.approx(ci.low)
    assert row.relative_change == pytest.approx(100 * (c.mean() - b.mean()) / b.mean())
    assert row.outcome == (G.PASS if p < ALPHA else G.INCONCLUSIVE)


def test_level_rule_on_zero_one_values_uses_wilson():
    # 92 hits of 100 against 0.8: Wilson's lower bound at level 0.90 is above 0.8
    x = np.array([1.0] * 92 + [0.0] * 8)
    b = np.full(100, np.nan)  # a level rule reads only the candidate
    table = G.gate_rows(pairs(b, x, key="Hit@10"),
                        [G.parse_rule("Hit@10 >= 0.8"), G.parse_rule("Hit@10 >= 0.9")],
                        binary={"Hit@10"})
    low, high = proportion_confint(92, 100, alpha=2 * ALPHA, method="wilson")
    assert table.bound_low[0] == pytest.approx(low) and table.bound_high[0] == pytest.approx(high)
    for i, p0 in enumerate((0.8, 0.9)):
        _, p = proportions_ztest(92, 100, value=p0, alternative="larger", prop_var=p0)
        assert table.p_pass[i] == pytest.approx(p, rel=1e-9)
        assert (table.p_pass[i] < ALPHA) == (table.bound_low[i] > p0)
    assert list(table.outcome) == [G.PASS, G.INCONCLUSIVE]
    # not bounded in [0, 1] (binary not given): Student's t
    t_row = G.gate_rows(pairs(b, x, key="Hit@10"), [G.parse_rule("Hit@10 >= 0.8")]).iloc[0]
    assert t_row.p_pass == pytest.approx(stats.ttest_1samp(x, 0.8, alternative="greater").pvalue)


def test_point_mode_reads_the_estimates():
    b, c = designed(-0.001, 1)  # a 0.001 drop that is noise
    frame = pairs(b, c)
    rule = G.parse_rule("nDCG@10 change >= 0")
    assert G.gate_rows(frame, [rule], mode="point").outcome[0] == G.FAIL
    assert G.gate_rows(frame, [rule]).outcome[0] == G.INCONCLUSIVE
    with pytest.raises(ConfigError, match="mode"):
        G.gate_rows(frame, [rule], mode="strict")


def test_no_baseline_and_no_shared_query():
    b, c = designed(0.05, 2)
    table = G.gate_rows(pairs(b, c), [G.parse_rule("nDCG@10 change > 0"),
                                      G.parse_rule("nDCG@10 >= 0.1")], baseline=False)
    assert list(table.outcome) == [G.NO_BASELINE, G.PASS]
    assert G.decide(table.outcome) == G.PASS and G.decide([G.NO_BASELINE]) == G.NO_BASELINE
    none = pairs(np.full(20, np.nan), c)  # the baseline scored none of these queries
    row = G.gate_rows(none, [G.parse_rule("nDCG@10 change > 0")]).iloc[0]
    assert row.outcome == G.INCONCLUSIVE and row.num_queries == 0


@pytest.mark.parametrize("text", ["nDCG@10 >= ", "nDCG@10 change => 0", "nDCG@10 >= 90%",
                                  "change >= 0", "nDCG@10 change >= 0 per", "nDCG@10 ~ 1"])
def test_an_invalid_rule_names_itself_and_the_form(text):
    with pytest.raises(ConfigError) as err:
        G.parse_rule(text)
    assert repr(text) in str(err.value) and "expected" in str(err.value)


def test_rule_forms():
    r = G.parse_rule("weighted ndcg_cut_10 change > 0 per segment")
    assert (r.measure_key, r.op, r.threshold, r.change, r.weighted, r.slice) == (
        "nDCG@10", ">", 0.0, True, True, "segment")
    r = G.parse_rule("Judged@10 <= 0.5 weighted")
    assert (r.greater, r.weighted, r.change) == (False, True, False)
