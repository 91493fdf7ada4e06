"""Measures for incomplete judgments: Judged@k and bpref.

Other measures count an unjudged document as non-relevant. ``Judged@k`` says how much of
the top k was judged; ``bpref`` (Buckley and Voorhees, trec_eval's definition) uses judged
documents only.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from releval.core.measures.registry import Measure, MetricSpec, register
from releval.core.measures.stats import Stats, safe_divide


def _judged(m: Measure, s: Stats) -> Column:
    return safe_divide(s.judged_ret(cutoff=m.cutoff), s.ret(cutoff=m.cutoff))


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
        aliases=(),
        cutoff="optional",
        value=_judged,
        num_rel_ret=lambda m, s: s.rel_ret(level=m.rel_level, cutoff=m.cutoff),
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
