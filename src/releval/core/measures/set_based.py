"""Set-based measures over the top k: Precision@k, Recall@k, Hit@k (Success@k)."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from releval.core.measures import tie_aware
from releval.core.measures.registry import UNIT, Measure, MetricSpec, register
from releval.core.measures.stats import Stats, cutoff_size, safe_divide


def _rel_ret(m: Measure, s: Stats) -> Column:
    return s.rel_ret(level=m.rel_level, cutoff=m.cut)


def _precision(m: Measure, s: Stats) -> Column:
    # trec_eval divides by k even when fewer than k documents were retrieved; @window by k_q
    return safe_divide(_rel_ret(m, s), cutoff_size(s, m.cut))


def _recall(m: Measure, s: Stats) -> Column:
    return safe_divide(_rel_ret(m, s), s.num_rel(level=m.rel_level))


def _hit(m: Measure, s: Stats) -> Column:
    return F.when(_rel_ret(m, s) > 0, F.lit(1.0)).otherwise(F.lit(0.0))


register(
    MetricSpec(
        name="P",
        ties=tie_aware.PRECISION,
        bounds=UNIT,
        aliases=("Precision",),
        cutoff="required",
        value=_precision,
        num_rel_ret=_rel_ret,
        averaging=("macro", "micro"),
        micro="cutoff_x_queries",
        trec_name=lambda m: f"P_{m.cutoff}",
        best_variant=True,
        description="P@k = (relevant documents at ranks 1..k) / k; divides by k even when "
        "fewer than k documents were retrieved. P@k[best]: every unjudged document at ranks "
        "1..k counted relevant, the most judging them can give. P@window divides by the "
        "query's k_q.",
    )
)

register(
    MetricSpec(
        name="R",
        ties=tie_aware.RECALL,
        bounds=UNIT,
        aliases=("Recall",),
        cutoff="required",
        value=_recall,
        num_rel_ret=_rel_ret,
        averaging=("macro", "micro"),
        micro="num_rel",
        trec_name=lambda m: f"recall_{m.cutoff}",
        description="R@k = (relevant documents at ranks 1..k) / (relevant documents of the "
        "query in the qrels); 0 when the query has none.",
    )
)

register(
    MetricSpec(
        name="Hit",
        ties=tie_aware.HIT,
        bounds=UNIT,
        aliases=("Success",),
        cutoff="required",
        value=_hit,
        num_rel_ret=_rel_ret,
        trec_name=lambda m: f"success_{m.cutoff}",
        best_variant=True,
        description="Hit@k = 1 if a relevant document is at ranks 1..k, else 0. Hit@k[best]: "
        "1 if a relevant or unjudged document is at ranks 1..k.",
    )
)


def _relative_precision(m: Measure, s: Stats) -> Column:
    denominator = F.least(cutoff_size(s, m.cut), s.num_rel(level=m.rel_level))
    return safe_divide(_rel_ret(m, s), denominator)


register(
    MetricSpec(
        name="relative_P",
        bounds=UNIT,
        aliases=(),
        cutoff="required",
        value=_relative_precision,
        num_rel_ret=_rel_ret,
        trec_name=lambda m: f"relative_P_{m.cutoff}",
        description="relative_P@k = (relevant documents at ranks 1..k) / min(k, R): P@k "
        "relative to the best a run could do; 0 when R = 0.",
    )
)
