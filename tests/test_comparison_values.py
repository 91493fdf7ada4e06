"""compare's values on fixed inputs, pinned: the p-values, ``min_detectable_diff`` and
``queries_needed`` of a family of 3 candidates x 4 measures (the driver's path), of single
groups (the executors' path) and of the power search alone (no Spark). They are checked
equal, not approximately: the randomization test's signs come from the SplitMix64 stream of
docs/statistics.md, and the power search's integers and roots from the same SciPy
functions, however the work is arranged. That the values are right is checked against SciPy
and statsmodels in test_paired_kernel.py and test_power.py."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from releval.config import ComparisonSettings
from releval.core import columns as S
from releval.stats import kernel
from releval.stats import paired_groups as G
from releval.stats import power as P

# (candidate, measure_key, num_pairs, t_p_value, randomization_p_value,
#  min_detectable_diff, queries_needed); randomization at 3,000 permutations
ZERO = [
    ('c1', 'P@5', 300, 0.016566658559647965, 0.021992669110296566, 0.07309098865593563, 3983),
    ('c1', 'RR', 300, 3.401400722410862e-07, 0.0003332222592469177, 0.06694544944824549, 3342),
    ('c1', 'map', 300, 5.232775967421571e-05, 0.0003332222592469177, 0.07422928161594923, 4108),
    ('c1', 'nDCG@10', 300, 0.08369843344563292, 0.08230589803398868, 0.06953357687919286, 3605),
    ('c2', 'P@5', 300, 0.005736244140238541, 0.005331556147950683, 0.06935911313557991, 3587),
    ('c2', 'RR', 300, 0.005585662437049923, 0.007664111962679107, 0.0718242738724213, 3847),
    ('c2', 'map', 300, 0.004896587886104315, 0.006331222925691436, 0.07865430921481394, 4613),
    ('c2', 'nDCG@10', 300, 0.06170395151926079, 0.06164611796067977, 0.07173444450856636, 3837),
    ('c3', 'P@5', 300, 0.034465774975886904, 0.038320559813395536, 0.06880030089098019, 3530),
    ('c3', 'RR', 300, 0.013267479790252267, 0.013995334888370544, 0.0728782477821308, 3960),
    ('c3', 'map', 300, 0.05807668715150303, 0.05898033988670443, 0.08017307209985822, 4792),
    ('c3', 'nDCG@10', 300, 0.00016958616472460773, 0.0006664445184938354, 0.06774476989205162, 3422),
]
SKIP = [
    ('c1', 'P@5', 275, 0.49023934933256796, 0.5131622792402533, 0.07399092178659868, 3740),
    ('c1', 'RR', 227, 0.5566457172927025, 0.5621459513495501, 0.0732672425352146, 3023),
    ('c1', 'map', 206, 0.08191445203084263, 0.08497167610796401, 0.08347223371016949, 3557),
    ('c1', 'nDCG@10', 300, 0.08369843344563292, 0.08230589803398868, 0.06953357687919286, 3605),
    ('c2', 'P@5', 276, 0.2551500118796028, 0.2642452515828057, 0.06967674471778772, 3329),
    ('c2', 'RR', 238, 0.11784872234425796, 0.109296901032989, 0.07379673918509513, 3217),
    ('c2', 'map', 200, 0.0005780427494127676, 0.0006664445184938354, 0.08852624576430068, 3883),
    ('c2', 'nDCG@10', 300, 0.06170395151926079, 0.06164611796067977, 0.07173444450856636, 3837),
    ('c3', 'P@5', 266, 0.7600277390167932, 0.7784071976007997, 0.06914335863388324, 3159),
    ('c3', 'RR', 246, 0.1785366371468454, 0.18027324225258248, 0.07474585805197109, 3411),
    ('c3', 'map', 198, 3.831173791937174e-08, 0.0003332222592469177, 0.08376222369747288, 3442),
    ('c3', 'nDCG@10', 300, 0.00016958616472460773, 0.0006664445184938354, 0.06774476989205162, 3422),
]
# (pairs, sd of the differences, min_detectable_diff, queries_needed) at alpha 0.05,
# power 0.8, effect of interest 0.02
POWER = [
    (300, 0.2, 0.03245424729719184, 787),
    (300, 0.05, 0.00811356182429796, 52),
    (1000, 0.31, 0.027490513434221778, 1888),
    (40, 0.5, 0.2271284698418132, 4908),
    (12, 0.9, 0.7997888387641213, 15896),
    (2, 0.3, 3.4649665307647113, 1768),
    (5000, 0.001, 3.962796313053374e-05, 2),
    (1000, 1e-13, math.nan, None),
    (3, 0.01, 0.032640435496996946, 5),
    (1000, 0.0101, 0.0008956586635020644, 5),
]
# (alpha, power, effect of interest, min_detectable_diff, queries_needed) at 50 pairs, sd 0.25
LEVELS = [
    (0.01, 0.9, 0.05, 0.14120795356277058, 376),
    (0.1, 0.5, 0.3, 0.058925363262361675, 4),
]
# (permutations, p of 500 differences, p of their first 37)
SINGLE = [
    (999, 0.51, 0.266),
    (10000, 0.5366463353664633, 0.2852714728527147),
]


def family() -> tuple[pd.DataFrame, np.ndarray]:
    """300 queries; the baseline (side 0) scores every query, candidate i (side i) each
    measure m's queries with probability 1 - 0.1 m; values on a grid of 0.2 (many ties)."""
    rng = np.random.default_rng(2052)
    n = 300
    keys = rng.integers(-2**63, 2**63 - 1, size=n, dtype=np.int64)
    rows = []
    for side in range(4):
        for m, key in enumerate(["nDCG@10", "P@5", "RR", "map"]):
            scored = rng.random(n) > (0.0 if side == 0 else 0.1 * m)
            base = np.round(rng.random(n) * 5) / 5
            for q in np.flatnonzero(scored):
                shift = 0.02 * side * (m - 1)
                rows.append((side, key, int(q), float(min(1.0, max(0.0, base[q] + shift)))))
    return pd.DataFrame(rows, columns=[G.SIDE, S.MEASURE_KEY, S.QUERY_ID, G.VALUE]), keys


def same(a: float | None, b: float | None) -> bool:
    return a == b or (a is not None and b is not None and math.isnan(a) and math.isnan(b))


@pytest.mark.parametrize(("missing_queries", "expected"), [("zero", ZERO), ("skip", SKIP)])
def test_family_values_are_pinned(missing_queries, expected):
    pdf, keys = family()
    settings = ComparisonSettings(permutations=3000, seed=1)
    pair_rows = G.pairs(pdf, ["c1", "c2", "c3"], missing_queries=missing_queries)
    found = [(t[S.CANDIDATE], t[S.MEASURE_KEY], t[S.NUM_PAIRS], t[S.T_P_VALUE],
              t[S.RANDOMIZATION_P_VALUE], t[S.MIN_DETECTABLE_DIFF], t[S.QUERIES_NEEDED])
             for t in G.tests(pair_rows, keys, settings)]
    assert sorted(found) == sorted(expected)
    # the executors' path: one group at a time, the same values
    for label, key, n, t_p, rand_p, mdd, needed in expected[:4]:
        g = pair_rows[(pair_rows[S.CANDIDATE] == label) & (pair_rows[S.MEASURE_KEY] == key)]
        one = G.one_test(g[G.B].to_numpy(), g[G.C].to_numpy(),
                         keys[g[S.QUERY_ID].to_numpy()], settings)
        assert (one[S.NUM_PAIRS], one[S.T_P_VALUE], one[S.RANDOMIZATION_P_VALUE],
                one[S.MIN_DETECTABLE_DIFF], one[S.QUERIES_NEEDED]) == (n, t_p, rand_p, mdd, needed)


def test_power_values_are_pinned():
    for n, sd, mdd, needed in POWER:
        found = P.power_of(n, sd, alpha=0.05, power=0.8, effect_of_interest=0.02)
        assert same(found.min_detectable_diff, mdd) and found.queries_needed == needed, (n, sd)
    for alpha, power, effect, mdd, needed in LEVELS:
        found = P.power_of(50, 0.25, alpha=alpha, power=power, effect_of_interest=effect)
        assert (found.min_detectable_diff, found.queries_needed) == (mdd, needed)


def test_single_group_randomization_is_pinned():
    rng = np.random.default_rng(7)
    keys = rng.integers(-2**63, 2**63 - 1, size=500, dtype=np.int64)
    d = np.round(rng.normal(0.01, 0.2, 500), 2)
    for permutations, p_all, p_first in SINGLE:
        assert kernel.randomization_p(d, keys, permutations=permutations) == p_all
        assert kernel.randomization_p(d[:37], keys[:37], permutations=permutations) == p_first


def test_signs_are_the_draws_below_a_half():
    # the sign of (draw, query) is +1 where that draw's U[0, 1) (SplitMix64's top 53 bits)
    # is below 1/2, however many hashes are made at once
    rng = np.random.default_rng(3)
    for n in (1, 7, 1000, kernel.HASH_CELLS + 3):
        keys = rng.integers(-2**63, 2**63 - 1, size=n, dtype=np.int64)
        for draws in (np.arange(0, 5, dtype=np.uint64), np.arange(100, 400, dtype=np.uint64)):
            signs = kernel.random_signs(keys, draws)
            assert np.array_equal(signs, np.where(kernel.uniforms(keys, draws) < 0.5, 1.0, -1.0))
