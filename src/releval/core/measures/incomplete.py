"""Measures for incomplete judgments: Judged@k and bpref.

Other measures count an unjudged document as non-relevant. ``Judged@k`` says how much of
the top k was judged; ``bpref`` (Buckley and Voorhees, trec_eval's definition) uses judged
documents only.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from releval.core.measures.registry import UNIT, Measure, MetricSpec, register
from releval.core.measures.stats import Stats, cutoff_size, safe_divide


def _judged(m: Measure, s: Stats) -> Column:
    return safe_divide(s.judged_ret(cutoff=m.cut), s.ret(cutoff=m.cut))


def _bpref(m: Measure, s: Stats) -> Column:
    num_rel = s.num_rel(level=m.rel_level)
    num_nonrel = s.num_nonrel(level=m.rel_level)
    above = s.nonrel_above_relevant(level=m.rel_level)
    cap = F.least(num_nonrel, num_rel).cast("double")

    def preference(n: Column) -> Column:
        # 1 - min(n, R) / min(N, R); n > 0 implies N >= n > 0 and R > 0 (a relevant doc exists)
        return F.when(n > 0, 1.0 - F.least(n, num_rel).cast("double") / cap).otherwise(1.0)

    total = F.aggregate(above, F.lit(0.0), lambda acc, n: acc + preference(n))
    return safe_divide(total, num_rel)


def _bpref_rel_ret(m: Measure, s: Stats) -> Column:
    return F.size(s.nonrel_above_relevant(level=m.rel_level)).cast("long")


register(
    MetricSpec(
        name="Judged",
        bounds=UNIT,
        aliases=(),
        cutoff="optional",
        value=_judged,
        num_rel_ret=lambda m, s: s.rel_ret(level=m.rel_level, cutoff=m.cut),
        trec_name=None,
        judged_variant=False,
        description="Judged@k = (documents at ranks 1..k with a judgment in the qrels; a "
        "negative label is none unless negative_labels = 'judged') / (documents at ranks "
        "1..k); divides by the documents "
        "actually retrieved when the run has fewer than k (ir_measures divides by k); "
        "0 when nothing was retrieved. Without @k: over all retrieved documents. "
        "1 - Judged@k is the unjudged rate, which every other measure counts as non-relevant.",
    )
)

register(
    MetricSpec(
        name="bpref",
        bounds=UNIT,
        aliases=(),
        cutoff="none",
        value=_bpref,
        num_rel_ret=_bpref_rel_ret,
        trec_name=lambda m: "bpref",
        description="bpref = (1/R) * sum over relevant retrieved documents d of "
        "(1 - min(n_d, R) / min(N, R)), where n_d = judged non-relevant documents "
        "(label < rel) ranked above d, R = relevant documents of the query, N = its "
        "judged non-relevant documents; a term is 1 when n_d = 0; 0 when R = 0. Unjudged "
        "documents are skipped, and so are negative labels by default (trec_eval: in the "
        "pool, not judged; negative_labels = 'judged' counts them as non-relevant).",
    )
)

register(
    MetricSpec(
        name="GM_bpref",
        bounds=UNIT,
        aliases=(),
        cutoff="none",
        value=_bpref,
        num_rel_ret=_bpref_rel_ret,
        averaging=("geometric",),
        trec_name=lambda m: "gm_bpref",
        trec_all_only=True,
        description="GM_bpref = the geometric mean of bpref over queries, each floored at "
        "0.00001 (trec_eval's gm_bpref). Per query it is bpref.",
    )
)


def _unjudged(m: Measure, s: Stats) -> Column:
    unjudged = s.ret(cutoff=m.cut) - s.judged_ret(cutoff=m.cut)
    return safe_divide(unjudged, cutoff_size(s, m.cut))


register(
    MetricSpec(
        name="unj",
        bounds=UNIT,
        aliases=(),
        cutoff="required",
        value=_unjudged,
        num_rel_ret=lambda m, s: s.rel_ret(level=m.rel_level, cutoff=m.cut),
        trec_name=lambda m: f"unj_{m.cutoff}",
        description="unj@k = (documents at ranks 1..k without a judgment) / k; divides by k "
        "even when fewer were retrieved (trec_eval's unj; Judged@k divides by the documents "
        "retrieved). 0 under [judged], where every document is judged.",
    )
)


def _inf_ap(m: Measure, s: Stats) -> Column:
    return s.walk("infAP", level=m.rel_level)


register(
    MetricSpec(
        name="infAP",
        bounds=UNIT,
        aliases=(),
        cutoff="none",
        value=_inf_ap,
        num_rel_ret=lambda m, s: s.rel_ret(level=m.rel_level, cutoff=None),
        trec_name=lambda m: "infAP",
        description="infAP (Yilmaz and Aslam) = (1/R) * sum over relevant retrieved documents "
        "at rank k of 1/k + ((k - 1)/k) * (d/(k - 1)) * ((r + e)/(r + n + 2e)), with d the "
        "documents above in the pool (judged or not), r and n the relevant and judged "
        "non-relevant ones above, e = 0.00001; the first term alone at rank 1. For sampled "
        "judgments: a qrels row with a negative label is in the pool but not judged.",
    )
)
