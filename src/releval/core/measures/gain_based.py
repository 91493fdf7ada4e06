"""Measures that walk the ranking with graded gains: rbp and its residual, G, binG,
ndcg_rel and Rndcg (trec_eval's definitions, :mod:`releval.core.walks`)."""

from __future__ import annotations

from pyspark.sql import Column

from releval.core.measures.registry import UNIT, Measure, MetricSpec, register
from releval.core.measures.stats import Stats


def _rel_ret(m: Measure, s: Stats) -> Column:
    return s.rel_ret(level=m.rel_level, cutoff=None)


def _walked(walker: str, param: str | None = None):
    def value(m: Measure, s: Stats) -> Column:
        return s.walk(walker, level=m.rel_level, param=m.param(param) if param else None)
    return value


register(MetricSpec(
    name="rbp", aliases=(), cutoff="none", bounds=UNIT, value=_walked("rbp", "p"), num_rel_ret=_rel_ret,
    params=(("p", 0.9),), trec_name=lambda m: "rbp",
    description="rbp(p) = (1 - p) * sum over ranks i of gain_i * p^(i - 1) (Moffat and Zobel's "
    "rank-biased precision; p is the user's persistence); gain = label, scaled to [0, 1] by "
    "the query's highest label when that is above 1; unjudged documents gain 0.",
))

register(MetricSpec(
    name="rbp_resid", aliases=(), cutoff="none", bounds=UNIT, value=_walked("rbp_resid"),
    num_rel_ret=_rel_ret, trec_name=lambda m: "rbp_resid",
    description="rbp_resid = p^n + (1 - p) * sum over unjudged documents at rank i of "
    "p^(i - 1), p = 0.9, n = documents retrieved: how much rbp could still rise if the "
    "unjudged documents and those past the ranking were relevant (trec_eval's rbp_resid); "
    "0 when every retrieved document is judged.",
))

register(MetricSpec(
    name="binG", aliases=(), cutoff="none", bounds=UNIT, value=_walked("binG"), num_rel_ret=_rel_ret,
    trec_name=lambda m: "binG",
    description="binG = (1/R) * sum over relevant retrieved documents of "
    "1 / log2(2 + documents above it that are not relevant); 0 when R = 0.",
))

register(MetricSpec(
    name="G", aliases=(), cutoff="none", bounds=UNIT, value=_walked("G"), num_rel_ret=_rel_ret,
    trec_name=lambda m: "G",
    description="G = sum over retrieved documents of gain / log2(2 + ideal cost so far - "
    "gain so far), over the ideal ranking's total gain (trec_eval's normalized gain; "
    "gain = label, unjudged 0).",
))

register(MetricSpec(
    name="ndcg_rel", aliases=(), cutoff="none", bounds=UNIT, value=_walked("ndcg_rel"),
    num_rel_ret=_rel_ret, trec_name=lambda m: "ndcg_rel",
    description="ndcg_rel = nDCG at the rank of each relevant (positive gain) document, "
    "averaged over the query's documents with positive gain; one not retrieved counts the "
    "nDCG at the end of the ranking (trec_eval's ndcg_rel).",
))

register(MetricSpec(
    name="Rndcg", aliases=(), cutoff="none", bounds=UNIT, value=_walked("Rndcg"), num_rel_ret=_rel_ret,
    trec_name=lambda m: "Rndcg",
    description="Rndcg = nDCG averaged at the ranks where the ideal ranking's gain changes "
    "(the R levels of each gain), and at the end of the ranking (trec_eval's Rndcg); 0 when "
    "R = 0.",
))
