"""The gate's rules and one-sided tests (no Spark): the bounded test against exact
Beta / binomial values and a brute-force Dirichlet simulation, Student's t (a measure with no
known range) against scipy, Holm against statsmodels; the table's edges; Hypothesis
properties."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from releval.errors import ConfigError
from releval.stats import gate as G
from releval.stats.mean_bounds import mean_bounds

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


def brute(x, lo, draws=400_000):
    """The lower statistic by an independent simulation: Dirichlet(1, ..., 1) over x and lo."""
    u = np.random.default_rng(11).dirichlet(np.ones(len(x) + 1), draws)
    return u @ np.concatenate([[lo], x])


def brute_low(x, lo, alpha=ALPHA):
    return float(np.quantile(brute(x, lo), alpha))


def test_clear_pass_is_the_dirichlet_bound_with_the_range_end():
    # 100 pairs, mean difference 0.05 (50 would not do: a loss of 1 on 6% of the queries
    # could hide in 50, not in 100)
    b, c = designed(0.05, 10)
    table = G.gate_rows(pairs(b, c), [G.parse_rule("nDCG@10 change >= -0.01")], alpha=ALPHA)
    row = table.iloc[0]
    assert row.outcome == G.PASS and row.num_queries == 100 and row.method == G.BOUNDED
    assert row.estimate == pytest.approx(0.05, abs=1e-12)
    d = c - b
    # the lower bound: alpha quantile of U_0 (-1) + sum U_i d_i (an independent simulation)
    assert row.bound_low == pytest.approx(brute_low(d, -1.0), abs=2e-3)
    assert -0.01 < row.bound_low < 0.05 < row.bound_high
    assert row.p_pass == pytest.approx(np.mean(brute(d, -1.0) <= -0.01), abs=1.5e-3)
    assert row.p_pass < ALPHA
    assert row.p_fail == pytest.approx(1.0)
    assert pd.isna(row.queries_needed) and row.threshold == -0.01
    assert row.relative_change == pytest.approx(0.10)  # a fraction: 0.05 / 0.5


def test_equal_values_are_not_certainty():
    # five queries that each gain 0.5 against change >= -0.05: the lower bound is
    # 0.5 - 1.5 u, u the 95% quantile of Beta(1, 5); p_pass = (1 - 0.55 / 1.5) ** 5
    b = np.full(5, 0.25)
    row = G.gate_rows(pairs(b, b + 0.5), [G.parse_rule("nDCG@10 change >= -0.05")]).iloc[0]
    assert row.p_pass == pytest.approx((1 - 0.55 / 1.5) ** 5, rel=1e-12)
    assert row.bound_low == pytest.approx(0.5 - 1.5 * (1 - 0.05 ** (1 / 5)), rel=1e-12)
    assert row.outcome == G.INCONCLUSIVE
    # the n at which that constant gain decides: (1 - 0.55 / 1.5) ** n < 0.05 from n = 7
    assert row.queries_needed == 7
    b7 = np.full(7, 0.25)
    seven = G.gate_rows(pairs(b7, b7 + 0.5), [G.parse_rule("nDCG@10 change >= -0.05")])
    assert seven.outcome[0] == G.PASS


def test_an_unchanged_system_passes_a_non_inferiority_rule():
    b = np.linspace(0.0, 1.0, 1000)
    row = G.gate_rows(pairs(b, b), [G.parse_rule("nDCG@10 change >= -0.01")]).iloc[0]
    assert row.outcome == G.PASS and row.p_pass == pytest.approx(0.99 ** 1000, rel=1e-9)
    zero = G.gate_rows(pairs(b, b), [G.parse_rule("nDCG@10 change > 0")]).iloc[0]
    assert zero.outcome == G.INCONCLUSIVE and zero.queries_needed is pd.NA


def test_clear_fail_and_holm_against_statsmodels():
    b, c = designed(-0.05, 20)  # 200 pairs
    b2, c2 = designed(-0.03, 30)
    frame = pd.concat([pairs(b, c), pairs(b2, c2, key="RR")], ignore_index=True)
    rules = [G.parse_rule(r) for r in
             ("nDCG@10 change >= -0.01", "RR change > 0", "nDCG@10 >= 0.4")]
    table = G.gate_rows(frame, rules, alpha=ALPHA)
    assert list(table.outcome) == [G.FAIL, G.FAIL, G.PASS]
    reject, adjusted, *_ = multipletests(list(table.p_fail), alpha=ALPHA, method="holm")
    assert np.allclose(table.p_fail_adjusted, adjusted, rtol=1e-12)
    assert list(reject) == [o == G.FAIL for o in table.outcome]
    assert G.decide(table.outcome) == G.FAIL


def test_holm_can_leave_a_fail_inconclusive():
    # two rules whose raw p_fail is between 0.025 and 0.05: Holm over two leaves both open
    b = np.full(10, 0.6)
    c = b - 0.3  # ten queries each lose 0.3; the upper bound is -0.3 + 1.3 U, U ~ Beta(1, 10)
    frame = pd.concat([pairs(b, c), pairs(b, c, key="RR")])
    rules = [G.parse_rule("nDCG@10 change >= 0.06"), G.parse_rule("RR change >= 0.06")]
    table = G.gate_rows(frame, rules, alpha=ALPHA)
    raw = (1 - 0.36 / 1.3) ** 10  # P(U >= 0.36 / 1.3)
    assert np.allclose(table.p_fail, raw) and 0.025 < raw < 0.05
    assert np.allclose(table.p_fail_adjusted, min(1.0, 2 * raw))
    assert list(table.outcome) == [G.INCONCLUSIVE] * 2


def test_inconclusive_with_queries_needed_that_decide():
    b, c = designed(0.01, 1)  # 10 pairs, mean 0.01 above 0: not enough
    rule = G.parse_rule("nDCG@10 change > 0")
    row = G.gate_rows(pairs(b, c), [rule], alpha=ALPHA).iloc[0]
    assert row.outcome == G.INCONCLUSIVE
    more = int(row.queries_needed)
    assert 10 < more < 100_000
    # with that many queries at the same mean and spread, the designed data passes
    b2, c2 = designed(0.01, math.ceil(more / 10))
    assert G.gate_rows(pairs(b2, c2), [rule]).outcome[0] == G.PASS
    assert G.decide(["pass", "inconclusive"]) == G.INCONCLUSIVE


def test_pass_overall_fail_on_one_slice():
    # head: 100 queries losing 0.1; tail: 300 queries gaining 0.1. Overall mean
    # (100 x -0.1 + 300 x 0.1) / 400 = 0.05, a pass; the head slice fails
    bh, ch = designed(-0.1, 10)
    bt, ct = designed(0.10, 30)
    b, c = np.concatenate([bh, bt]), np.concatenate([ch, ct])
    frame = pairs(b, c, segment=["head"] * 100 + ["tail"] * 300)
    rules = [G.parse_rule("nDCG@10 change >= -0.01"),
             G.parse_rule("nDCG@10 change >= -0.01 per segment")]
    table = G.gate_rows(frame, rules, alpha=ALPHA)
    assert list(zip(table.slice_value.fillna("-"), table.outcome, strict=True)) == [
        ("-", G.PASS), ("head", G.FAIL), ("tail", G.PASS)]
    assert table.estimate.iloc[0] == pytest.approx(0.05)
    assert G.rule_outcomes(table) == {rules[0].text: G.PASS, rules[1].text: G.FAIL}
    assert G.decide(table.outcome) == G.FAIL


def test_weighted_fail_under_unweighted_pass():
    # 140 queries; head queries carry weight 100, tail 1: the weighted mean is
    # (20 x 100 x -0.3 + 120 x 0.25) / (2000 + 120) = -570 / 2120, the unweighted 24 / 140
    bh, ch = designed(-0.3, 2)
    bt, ct = designed(0.25, 12)
    b, c = np.concatenate([bh, bt]), np.concatenate([ch, ct])
    w = np.array([100.0] * 20 + [1.0] * 120)
    frame = pairs(b, c, weight=w)
    table = G.gate_rows(frame, [G.parse_rule("nDCG@10 change >= -0.01"),
                                G.parse_rule("weighted nDCG@10 change >= -0.01")], alpha=ALPHA)
    assert list(table.outcome) == [G.PASS, G.FAIL]
    assert table.estimate[0] == pytest.approx(24 / 140)
    assert table.estimate[1] == pytest.approx(-570 / 2120)
    # an unlisted query (no weight) and a zero-weight one are left out of the weighted rule
    frame.loc[0, "weight"] = np.nan
    frame.loc[1, "weight"] = 0.0
    again = G.gate_rows(frame, [G.parse_rule("weighted nDCG@10 change >= -0.01")])
    assert again.num_queries[0] == 138


def test_weight_on_a_few_queries_counts_as_a_few():
    # 200 queries, 5 of them carry 95% of the traffic: Kish's n_eff is about 5.5
    w = np.r_[np.full(5, 0.19), np.full(195, 0.05 / 195)]
    d = np.full(200, 0.3)
    bounds = mean_bounds(d, lo=-1.0, hi=1.0, weights=w)
    assert bounds.n_eff == pytest.approx(w.sum() ** 2 / (w @ w))
    assert 5.0 < bounds.n_eff < 6.0
    b = np.full(200, 0.5)
    heavy = G.gate_rows(pairs(b, b + d, weight=w),
                        [G.parse_rule("weighted nDCG@10 change >= 0")]).iloc[0]
    even = G.gate_rows(pairs(b, b + d), [G.parse_rule("nDCG@10 change >= 0")]).iloc[0]
    # as 5.5 queries each gaining 0.3: p_pass = (1 - 0.3 / 1.3) ** n_eff
    assert heavy.p_pass == pytest.approx((1 - 0.3 / 1.3) ** bounds.n_eff, rel=1e-9)
    assert heavy.outcome == G.INCONCLUSIVE and even.outcome == G.PASS
    assert heavy.queries_needed > 200


def test_relative_rule_tests_candidate_minus_scaled_baseline():
    b = np.linspace(0.2, 1.0, 40)
    c = b * 0.99 + np.tile(WIGGLE, 4)
    row = G.gate_rows(pairs(b, c, key="RR"), [G.parse_rule("RR change >= -2%")]).iloc[0]
    q = c - 0.98 * b
    assert row.threshold == 0.0 and row.estimate == pytest.approx(q.mean())
    # c - 0.98 b lies in [-0.98, 1]: the lower bound's atom is at -0.98
    assert row.bound_low == pytest.approx(brute_low(q, -0.98), abs=3e-3)
    assert row.relative_change == pytest.approx((c.mean() - b.mean()) / b.mean())
    assert row.outcome == (G.PASS if row.p_pass < ALPHA else G.INCONCLUSIVE)


def test_level_rule_on_zero_one_values_is_clopper_pearson():
    # 92 hits of 100: the bounds are Clopper-Pearson's, p_pass the exact binomial tail
    x = np.array([1.0] * 92 + [0.0] * 8)
    b = np.full(100, np.nan)  # a level rule reads only the candidate
    table = G.gate_rows(pairs(b, x, key="Hit@10"),
                        [G.parse_rule("Hit@10 >= 0.8"), G.parse_rule("Hit@10 >= 0.9")])
    low, high = proportion_confint(92, 100, alpha=2 * ALPHA, method="beta")
    assert table.bound_low[0] == pytest.approx(low) and table.bound_high[0] == pytest.approx(high)
    for i, p0 in enumerate((0.8, 0.9)):
        assert table.p_pass[i] == pytest.approx(stats.binom.sf(91, 100, p0), rel=1e-9)
        assert table.p_fail[i] == pytest.approx(stats.binom.cdf(92, 100, p0), rel=1e-9)
    assert list(table.outcome) == [G.PASS, G.INCONCLUSIVE]


def test_a_measure_with_no_known_range_keeps_students_t():
    x = np.array([3.0, 5.0, 4.0, 6.0, 5.0, 7.0, 4.0, 5.0])
    row = G.gate_rows(pairs(np.full(8, np.nan), x, key="num_rel"),
                      [G.parse_rule("num_rel >= 3")]).iloc[0]
    p, ci = scipy_one_sided(x, 3.0, True)
    assert row.method == G.STUDENT and row.p_pass == pytest.approx(p, rel=1e-9)
    assert row.bound_low == pytest.approx(ci.low, rel=1e-9)


def test_a_slice_with_no_rows_has_an_explicit_row():
    b, c = designed(0.05, 2)
    frame = pairs(b, c, segment=["head"] * 20)
    table = G.gate_rows(frame, [G.parse_rule("RR change >= -0.01 per segment")])
    assert len(table) == 1
    row = table.iloc[0]
    assert row.outcome == G.INCONCLUSIVE and row.num_queries == 0 and row.slice == "segment"
    assert G.rule_outcomes(table) == {"RR change >= -0.01 per segment": G.INCONCLUSIVE}


def test_a_query_one_side_scored_is_in_no_slice():
    b, c = designed(0.05, 4)
    frame = pairs(b, c, segment=["head"] * 20 + ["tail"] * 20)
    only_base = pd.DataFrame({"measure_key": "nDCG@10", "query_id": ["x1", "x2"],
                              G.BASE: [0.3, 0.4], G.CAND: np.nan, "weight": np.nan,
                              "segment": np.nan})
    only_cand = only_base.assign(query_id=["y1", "y2"], **{G.BASE: np.nan, G.CAND: 0.5,
                                                           "segment": "head"})
    table = G.gate_rows(pd.concat([frame, only_base, only_cand], ignore_index=True),
                        [G.parse_rule("nDCG@10 change >= -0.01 per segment"),
                         G.parse_rule("nDCG@10 >= 0.1 per segment")])
    changes = table[table.rule.str.contains("change")]
    assert list(changes.slice_value) == ["head", "tail"]
    assert list(changes.num_queries) == [20, 20] and list(changes.num_unpaired) == [4, 4]
    levels = table[~table.rule.str.contains("change")]  # the candidate's scored queries
    assert list(levels.num_queries) == [22, 20] and list(levels.num_unpaired) == [0, 0]


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


@pytest.mark.parametrize(("text", "says"), [
    ("P@10 >= 2", "[0, 1]"), ("RR change >= -200%", "-100%"), ("nDCG@10 change >= -1.5", "[-1, 1]"),
    ("nDCG@10 change <= 2", "[-1, 1]"), ("Hit@10 >= -0.1", "[0, 1]")])
def test_a_threshold_outside_the_measures_range_is_rejected(text, says):
    with pytest.raises(ConfigError) as err:
        G.parse_rule(text)
    assert repr(text) in str(err.value) and says in str(err.value)


def test_thresholds_at_the_ends_and_counts_are_accepted():
    assert G.parse_rule("nDCG@10 change >= -1").support == (-1.0, 1.0)
    assert G.parse_rule("P@10 <= 1").support == (0.0, 1.0)
    assert G.parse_rule("RR change >= -100%").support == (0.0, 1.0)  # c - 0 x b
    assert G.parse_rule("RR change >= -2%").support == (-0.98, 1.0)
    assert G.parse_rule("num_rel >= 1000").support is None


@pytest.mark.parametrize(("text", "word"), [("nDCG@10 chnage >= 0", "change"),
                                            ("wieghted nDCG@10 >= 0.5", "weighted"),
                                            ("nDCG@10 change >= 0 pr segment", "per")])
def test_a_mistyped_keyword_gets_a_suggestion(text, word):
    with pytest.raises(ConfigError, match=f"did you mean '{word}'"):
        G.parse_rule(text)


RULES = [G.parse_rule(r) for r in ("nDCG@10 change >= -0.05", "nDCG@10 >= 0.3",
                                    "weighted nDCG@10 change > 0", "RR change >= -5%",
                                    "nDCG@10 change >= -0.05 per segment")]
values = st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1), st.floats(0, 3),
                            st.sampled_from(["a", "b"])), min_size=1, max_size=25)


def frame_of(rows, key="nDCG@10"):
    b, c, w, seg = (list(t) for t in zip(*rows, strict=True))
    return pd.DataFrame({"measure_key": key, "query_id": [f"q{i}" for i in range(len(b))],
                         G.BASE: b, G.CAND: c, "weight": w, "segment": seg})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values, st.randoms(use_true_random=False))
def test_the_order_of_rows_changes_no_output(rows, rnd):
    frame = pd.concat([frame_of(rows), frame_of(rows, "RR")], ignore_index=True)
    shuffled = frame.sample(frac=1.0, random_state=rnd.randrange(1 << 30))
    one = G.gate_rows(frame, RULES)
    two = G.gate_rows(shuffled, RULES)
    pd.testing.assert_frame_equal(one, two)


@settings(max_examples=40, deadline=None)
@given(values, st.floats(0.0, 0.2))
def test_a_larger_margin_never_turns_a_pass_into_a_fail(rows, extra):
    frame = frame_of(rows)
    order = {G.FAIL: 0, G.INCONCLUSIVE: 1, G.PASS: 2}
    for text in ("nDCG@10 change >= {}", "nDCG@10 >= {}", "weighted nDCG@10 change >= {}"):
        t = -0.05 if "change" in text else 0.3
        tight = G.gate_rows(frame, [G.parse_rule(text.format(t))]).outcome[0]
        loose = G.gate_rows(frame, [G.parse_rule(text.format(t - extra))]).outcome[0]
        assert order[loose] >= order[tight]


def test_an_aa_gate_fails_at_most_alpha_of_the_time():
    # a system against itself: differences exactly 0, or symmetric noise around 0
    rng = np.random.default_rng(3)
    rule = G.parse_rule("nDCG@10 change >= 0")
    fails = 0
    reps = 300
    for i in range(reps):
        n = [2, 5, 20, 100][i % 4]
        b = rng.uniform(0.2, 0.8, n)
        c = b if i % 8 < 2 else b + np.clip(rng.normal(0, 0.05, n), -0.15, 0.15)
        fails += G.gate_rows(pairs(b, c), [rule]).outcome[0] == G.FAIL
    assert fails / reps <= ALPHA


def test_equal_counts_decide_nothing():
    row = G.gate_rows(pairs(np.full(30, np.nan), np.full(30, 7.0), key="num_rel"),
                      [G.parse_rule("num_rel >= 3")]).iloc[0]
    assert row.method == G.STUDENT and row.outcome == G.INCONCLUSIVE
    assert (row.p_pass, row.p_fail) == (1.0, 1.0) and row.queries_needed is pd.NA
