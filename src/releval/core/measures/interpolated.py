"""The interpolated precision-recall curve: iprec(recall=x) and its 11-point average."""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column
from pyspark.sql import functions as F

from releval.core.measures.registry import UNIT, Measure, MetricSpec, register
from releval.core.measures.stats import Stats

#: the standard recall points 0.0, 0.1, ... 1.0
RECALL_POINTS = tuple(i / 10 for i in range(11))


def _iprec(m: Measure, s: Stats) -> Column:
    return s.walk("iprec", level=m.rel_level, param=m.param("recall"))


def _iprec_avg(m: Measure, s: Stats) -> Column:
    points = [s.walk("iprec", level=m.rel_level, param=r) for r in RECALL_POINTS]
    return reduce(lambda a, b: a + b, points) / F.lit(float(len(points)))


def _rel_ret(m: Measure, s: Stats) -> Column:
    return s.rel_ret(level=m.rel_level, cutoff=None)


register(
    MetricSpec(
        name="iprec",
        bounds=UNIT,
        aliases=("iprec_at_recall",),
        cutoff="none",
        value=_iprec,
        num_rel_ret=_rel_ret,
        params=(("recall", None),),
        trec_name=lambda m: f"iprec_at_recall_{m.param('recall'):.2f}",
        description="iprec(recall=x) = the highest precision at any rank at or below the "
        "round(x * R)-th relevant document (interpolated precision at recall x; R = relevant "
        "documents of the query, rounded half up as trec_eval 10.0); 0 when fewer than "
        "round(x * R) relevant documents are retrieved. The points of the recall-precision "
        "graph.",
    )
)

register(
    MetricSpec(
        name="iprec_avg",
        bounds=UNIT,
        aliases=(),
        cutoff="none",
        value=_iprec_avg,
        num_rel_ret=_rel_ret,
        trec_name=lambda m: "11pt_avg",
        description="iprec_avg = the mean of iprec(recall=x) over the 11 points x = 0.0, 0.1, "
        "..., 1.0 (trec_eval's 11pt_avg).",
    )
)
