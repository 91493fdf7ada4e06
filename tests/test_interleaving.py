"""releval.interleaving: Preference against a hand count, the default session's run of the
shared hand-made log (tests/support/clicks_support.py, also run over Spark Connect), and an
A/A team-draft simulation: Preference about 0 and the gate passing at most alpha."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from support.clicks_support import EXPECTED, check, preferences, team_draft_aa

import releval
from releval.errors import ConfigError
from releval.stats import gate as G

SCHEMA = ("search_id string, query_id string, doc_id string, position int, clicked int, "
          "team string")


def test_preference_against_a_hand_count(spark):
    rows = [
        # q1, s1: new 2 clicks, old 1 -> win; s2: new 0, old 1 -> loss; s3: no click -> tie
        ("s1", "q1", "a", 1, 2, "new"), ("s1", "q1", "b", 2, 1, "old"),
        ("s2", "q1", "a", 1, 0, "new"), ("s2", "q1", "b", 2, 1, "old"),
        ("s3", "q1", "a", 1, 0, "old"), ("s3", "q1", "b", 2, 0, "new"),
        # q1, s4: new 1, old 1 -> tie; a click on a third team's result is not read
        ("s4", "q1", "a", 1, 1, "new"), ("s4", "q1", "b", 2, 1, "old"),
        ("s4", "q1", "c", 3, 5, "ads"),
        # q2, s5 and s6: new wins both
        ("s5", "q2", "a", 1, 1, "new"), ("s5", "q2", "b", 2, 0, "old"),
        ("s6", "q2", "b", 1, 0, "old"), ("s6", "q2", "a", 2, 1, "new"),
    ]
    result = releval.interleaving(spark.createDataFrame(rows, SCHEMA), baseline="old",
                                  candidates=["new", "ads"])
    got = {(r.team, r.query_id): (r.value, r.weight) for r in result.per_query.collect()}
    # new: q1 (1 win - 1 loss) / 4 searches = 0; q2 (2 - 0) / 2 = 1
    assert got[("new", "q1")] == (0.0, 4.0) and got[("new", "q2")] == (1.0, 2.0)
    # ads: q1: s4 5 > 1 -> win; s1, s2 losses (old 1 > 0); s3 tie -> (1 - 2) / 4;
    # q2: old has no click, ads no result: two ties -> 0
    assert got[("ads", "q1")] == (-0.25, 4.0) and got[("ads", "q2")] == (0.0, 2.0)
    # the baseline against itself: 0
    assert got[("old", "q1")] == (0.0, 4.0) and got[("old", "q2")] == (0.0, 2.0)


def test_the_shared_log_in_the_default_session(spark):
    assert check(spark) == EXPECTED


def test_teams_are_checked(spark):
    log = spark.createDataFrame([("s1", "q1", "a", 1, 1, "new")], SCHEMA)
    with pytest.raises(ConfigError, match="other than the baseline"):
        releval.interleaving(log, baseline="old", candidates=["old"])
    with pytest.raises(ConfigError, match="no column 'team'"):
        releval.interleaving(log.drop("team"), baseline="old", candidates="new")


def test_the_teams_when_the_call_names_none(spark):
    def page(clicked, shown):
        """One search: ``clicked``'s result at 1 clicked, ``shown``'s at 2 not."""
        return spark.createDataFrame([("s0", "q1", "d0", 1, 1, clicked),
                                      ("s0", "q1", "d1", 2, 0, shown)], SCHEMA)

    def teams(result):
        return sorted((r.team, r.value) for r in result.per_query.collect())

    # "control" is the baseline (a name in BASELINE_TEAMS) though "beta" sorts first; beta's
    # result got the click: a win, (1 - 0) / 1 search = 1 (with beta as the baseline, control
    # would hold -1)
    assert teams(releval.interleaving(page("beta", "control"))) == [
        ("beta", 1.0), ("control", 0.0)]
    # "old" is the baseline though "new" sorts first; old's result got the click: a loss, -1
    assert teams(releval.interleaving(page("old", "new"))) == [("new", -1.0), ("old", 0.0)]
    # no known name: the first in sorted order, x1, is the baseline; x2's click: a win, +1
    assert teams(releval.interleaving(page("x2", "x1"))) == [("x1", 0.0), ("x2", 1.0)]
    three = page("a", "b").union(spark.createDataFrame([("s0", "q1", "d2", 3, 0, "c")], SCHEMA))
    # named baseline: every other team is a candidate; a's click a win, c's nothing a tie
    assert teams(releval.interleaving(three, baseline="b")) == [
        ("a", 1.0), ("b", 0.0), ("c", 0.0)]
    with pytest.raises(ConfigError, match="more or fewer than two teams"):
        releval.interleaving(three)


ALPHA = 0.05


def level_values(prefs: np.ndarray) -> pd.DataFrame:
    """A level rule's values (the candidate's; no baseline) as the gate's test reads them."""
    return pd.DataFrame({G.BASE: np.nan, G.CAND: prefs})


def aa_pass_rate(replicates: int, *, queries: int, searches: int, seed: int
                 ) -> tuple[float, np.ndarray]:
    """The share of A/A logs on which the gate's test passes 'Preference > 0', and the
    per-query preferences, on the pure statistics layer (the gate's own rule test)."""
    team, clicked = team_draft_aa(np.random.default_rng(seed), logs=replicates,
                                  queries=queries, searches=searches)
    prefs = preferences(team, clicked)
    rule = G.parse_rule("Preference > 0")
    passed = [G.rule_test(rule, level_values(p), alpha=ALPHA).p_pass < ALPHA
              for p in prefs]
    return float(np.mean(passed)), prefs


def test_aa_interleaving_preference_is_about_zero_and_the_gate_passes_at_most_alpha():
    rate, prefs = aa_pass_rate(400, queries=60, searches=5, seed=60)
    # Preference about 0: within 3 standard errors of the mean over every query
    assert abs(prefs.mean()) < 3 * prefs.std() / np.sqrt(prefs.size)
    # at most alpha + 3 Monte Carlo standard errors (sqrt(0.05 * 0.95 / 400) = 0.011)
    assert rate <= ALPHA + 3 * np.sqrt(ALPHA * (1 - ALPHA) / 400)


def test_aa_the_gate_passes_a_real_preference():
    # the same design with the candidate's results clicked more: the gate must see it
    rng = np.random.default_rng(61)
    team, clicked = team_draft_aa(rng, logs=50, queries=60, searches=5)
    extra = (rng.random(clicked.shape) < 0.25) & (team == 1)
    prefs = preferences(team, np.maximum(clicked, extra))
    rule = G.parse_rule("Preference > 0")
    rate = np.mean([G.rule_test(rule, level_values(p), alpha=ALPHA).p_pass < ALPHA
                    for p in prefs])
    assert rate > 0.8


@pytest.mark.slow
def test_aa_spark_decides_as_the_statistics_layer(spark):
    """A few simulated A/A logs through Spark: the per-query Preference and the gate's
    decision are those of the pure layer on the same log."""
    team, clicked = team_draft_aa(np.random.default_rng(62), logs=3, queries=40, searches=4)
    expected = preferences(team, clicked)
    for i in range(3):
        rows = [(f"s{q}-{s}", f"q{q}", f"d{p}", p + 1, int(clicked[i, q, s, p]),
                 "new" if team[i, q, s, p] else "old")
                for q in range(40) for s in range(4) for p in range(team.shape[-1])]
        result = releval.interleaving(spark.createDataFrame(rows, SCHEMA), baseline="old",
                                      candidates="new")
        got = {r.query_id: r.value for r in result.per_query.collect() if r.team == "new"}
        assert np.allclose([got[f"q{q}"] for q in range(40)], expected[i], atol=1e-12)
        gate = result.gate(baseline="team=old", candidates="team=new",
                           rules=["Preference > 0"], alpha=ALPHA)
        test = G.rule_test(G.parse_rule("Preference > 0"), level_values(expected[i]),
                           alpha=ALPHA)
        assert gate.table.first().p_pass == pytest.approx(test.p_pass, abs=1e-12)
        assert (gate.decision == "pass") == (test.p_pass < ALPHA)
