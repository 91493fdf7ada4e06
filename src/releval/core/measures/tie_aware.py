"""The ``[ties]`` forms of P@k, R@k, Hit@k, RR, AP and nDCG@k: each one's expected value over
every ordering of tied scores (McSherry and Najork, ECIR 2008; :mod:`releval.core.ties`)."""

from __future__ import annotations

from pyspark.sql import Column

from releval.core.measures.registry import Measure, TieVariant
from releval.core.measures.stats import Stats, cutoff_size, safe_divide


def _expected(what: str, gain: str = "linear"):
    def column(m: Measure, s: Stats) -> Column:
        return s.tie_aware(what, level=m.rel_level, cutoff=m.cut, gain=gain)
    return column


def _precision(m: Measure, s: Stats) -> Column:
    return safe_divide(_expected("rel_ret")(m, s), cutoff_size(s, m.cut))


def _recall(m: Measure, s: Stats) -> Column:
    return safe_divide(_expected("rel_ret")(m, s), s.num_rel(level=m.rel_level))


def _average_precision(m: Measure, s: Stats) -> Column:
    return safe_divide(_expected("prec_sum")(m, s), s.num_rel(level=m.rel_level))


def _ndcg(gain: str):
    def value(m: Measure, s: Stats) -> Column:
        return safe_divide(_expected("dcg", gain)(m, s), s.ideal_dcg(cutoff=m.cut, gain=gain))
    return value


PRECISION = TieVariant(_precision, _expected("dep_set"))
RECALL = TieVariant(_recall, _expected("dep_set"))
HIT = TieVariant(_expected("hit"), _expected("dep_hit"))
RECIPROCAL_RANK = TieVariant(_expected("rr"), _expected("dep_rr"))
AVERAGE_PRECISION = TieVariant(_average_precision, _expected("dep_ap"))
NDCG = TieVariant(_ndcg("linear"), _expected("dep_dcg"))
NDCG_EXP = TieVariant(_ndcg("exponential"), _expected("dep_dcg", "exponential"))
