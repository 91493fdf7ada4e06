"""Measures of where relevant documents sit: reciprocal rank, average precision, R-precision."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from releval.core.measures import tie_aware
from releval.core.measures.registry import UNIT, Measure, MetricSpec, register
from releval.core.measures.stats import Stats, safe_divide


def _reciprocal_rank(m: Measure, s: Stats) -> Column:
    first = s.first_rel_position(level=m.rel_level)
    if m.window:  # the first relevant document is in the window if any relevant one is
        hit = s.rel_ret(level=m.rel_level, cutoff=m.cut) > 0
    else:
        hit = first.isNotNull() if m.cutoff is None else first <= m.cutoff
    return F.when(hit, F.lit(1.0) / first.cast("double")).otherwise(F.lit(0.0))


def _average_precision(m: Measure, s: Stats) -> Column:
    total = s.precision_sum(level=m.rel_level, cutoff=m.cut)
    return safe_divide(total, s.num_rel(level=m.rel_level))


def _rel_ret(m: Measure, s: Stats) -> Column:
    return s.rel_ret(level=m.rel_level, cutoff=m.cut)


register(
    MetricSpec(
        name="RR",
        ties=tie_aware.RECIPROCAL_RANK,
        bounds=UNIT,
        aliases=("MRR", "recip_rank"),
        cutoff="optional",
        value=_reciprocal_rank,
        num_rel_ret=_rel_ret,
        trec_name=lambda m: "recip_rank" if m.cutoff is None else None,
        best_variant=True,
        description="RR = 1 / rank of the first relevant document, 0 if none is retrieved "
        "(RR@k: 0 if none is at ranks 1..k). Its mean over queries is MRR. RR[best]: 1 / rank "
        "of the first relevant or unjudged document.",
    )
)

register(
    MetricSpec(
        name="AP",
        ties=tie_aware.AVERAGE_PRECISION,
        bounds=UNIT,
        aliases=("MAP", "map_cut"),
        cutoff="optional",
        value=_average_precision,
        num_rel_ret=_rel_ret,
        trec_name=lambda m: "map" if m.cutoff is None else f"map_cut_{m.cutoff}",
        description="AP = sum over relevant retrieved documents (at ranks 1..k for AP@k) of "
        "precision at their rank, divided by all relevant documents of the query in the "
        "qrels (retrieved or not); 0 when the query has none. Its mean is MAP.",
    )
)


def _r_precision_hits(m: Measure, s: Stats) -> Column:
    num_rel = s.num_rel(level=m.rel_level)
    positions = s.rel_positions(level=m.rel_level)
    return F.size(F.filter(positions, lambda p: p <= num_rel)).cast("long")


def _r_precision(m: Measure, s: Stats) -> Column:
    return safe_divide(_r_precision_hits(m, s), s.num_rel(level=m.rel_level))


register(
    MetricSpec(
        name="Rprec",
        bounds=UNIT,
        aliases=(),
        cutoff="none",
        value=_r_precision,
        num_rel_ret=_r_precision_hits,
        trec_name=lambda m: "Rprec",
        description="Rprec = (relevant documents at ranks 1..R) / R, R = relevant documents "
        "of the query in the qrels (precision at rank R, where it equals recall); divides "
        "by R even when fewer than R documents were retrieved; 0 when R = 0.",
    )
)

register(
    MetricSpec(
        name="GMAP",
        bounds=UNIT,
        aliases=("gm_map", "gm_ap"),
        cutoff="none",
        value=_average_precision,
        num_rel_ret=_rel_ret,
        averaging=("geometric",),
        trec_name=lambda m: "gm_map",
        trec_all_only=True,
        description="GMAP = the geometric mean of AP over queries, each AP floored at 0.00001 "
        "(trec_eval's gm_map; rewards systems that do not fail on any query). Per query it "
        "is AP; trec_eval prints only its mean.",
    )
)


def _rprec_mult_cut(m: Measure, s: Stats) -> Column:
    # trec_eval: (long) (x * R + 0.9)
    return F.floor(F.lit(m.param("mult")) * s.num_rel(level=m.rel_level) + F.lit(0.9))


def _rprec_mult_hits(m: Measure, s: Stats) -> Column:
    cut = _rprec_mult_cut(m, s)
    positions = s.rel_positions(level=m.rel_level)
    return F.size(F.filter(positions, lambda p: p <= cut)).cast("long")


def _rprec_mult(m: Measure, s: Stats) -> Column:
    return safe_divide(_rprec_mult_hits(m, s), _rprec_mult_cut(m, s))


register(
    MetricSpec(
        name="Rprec_mult",
        bounds=UNIT,
        aliases=(),
        cutoff="none",
        value=_rprec_mult,
        num_rel_ret=_rprec_mult_hits,
        params=(("mult", None),),
        trec_name=lambda m: f"Rprec_mult_{m.param('mult'):.2f}",
        description="Rprec_mult(mult=x) = precision at rank floor(x * R + 0.9), R = relevant "
        "documents of the query (Rprec at a multiple of R); 0 when that rank is 0.",
    )
)
