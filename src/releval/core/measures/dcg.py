"""Discounted cumulative gain: nDCG@k with graded labels (trec_eval's ndcg_cut), linear or
exponential gain."""

from __future__ import annotations

from pyspark.sql import Column

from releval.core.measures import tie_aware
from releval.core.measures.registry import UNIT, Measure, MetricSpec, register
from releval.core.measures.stats import Stats, safe_divide


def _ndcg(m: Measure, s: Stats) -> Column:
    return safe_divide(s.dcg(cutoff=m.cut), s.ideal_dcg(cutoff=m.cut))


register(
    MetricSpec(
        name="nDCG",
        ties=tie_aware.NDCG,
        bounds=UNIT,
        aliases=("ndcg_cut",),
        cutoff="optional",
        value=_ndcg,
        num_rel_ret=lambda m, s: s.rel_ret(level=m.rel_level, cutoff=m.cut),
        trec_name=lambda m: "ndcg" if m.cutoff is None else f"ndcg_cut_{m.cutoff}",
        description="nDCG@k = DCG@k / IDCG@k with DCG@k = sum over ranks i <= k of "
        "gain(label_i) / log2(i + 1), gain = label if label > 0 else 0 (unjudged: 0); "
        "IDCG@k is the DCG of all positive labels of the query in the qrels sorted "
        "descending, cut at k (nDCG@window: at the query's k_q); 0 when IDCG is 0. The "
        "relevance level does not change gains.",
    )
)


def _ndcg_exp(m: Measure, s: Stats) -> Column:
    gain = "exponential"
    return safe_divide(s.dcg(cutoff=m.cut, gain=gain), s.ideal_dcg(cutoff=m.cut, gain=gain))


register(
    MetricSpec(
        name="nDCG_exp",
        ties=tie_aware.NDCG_EXP,
        bounds=UNIT,
        aliases=(),
        cutoff="optional",
        value=_ndcg_exp,
        num_rel_ret=lambda m, s: s.rel_ret(level=m.rel_level, cutoff=m.cut),
        trec_name=None,
        description="nDCG_exp@k: nDCG@k with the web-search gain 2^label - 1 (label > 0, "
        "else 0) in both DCG and IDCG (Burges et al. 2005); the same as nDCG@k when all "
        "labels are 0/1. Not a trec_eval measure. The relevance level does not change gains.",
    )
)
