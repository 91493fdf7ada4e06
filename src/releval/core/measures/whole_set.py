"""Measures of the whole retrieved set, as trec_eval defines them: set_P, set_recall,
set_relative_P, set_map, set_F and utility (no cutoff: every document retrieved counts)."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from releval.core.measures.registry import UNIT, Measure, MetricSpec, register
from releval.core.measures.stats import Stats, safe_divide


def _rel_ret(m: Measure, s: Stats) -> Column:
    return s.rel_ret(level=m.rel_level, cutoff=None)


def _num_rel(m: Measure, s: Stats) -> Column:
    return F.coalesce(s.num_rel(level=m.rel_level), F.lit(0))


def _set_p(m: Measure, s: Stats) -> Column:
    return safe_divide(_rel_ret(m, s), s.num_ret())


def _set_recall(m: Measure, s: Stats) -> Column:
    return safe_divide(_rel_ret(m, s), _num_rel(m, s))


def _set_relative_p(m: Measure, s: Stats) -> Column:
    return safe_divide(_rel_ret(m, s), F.least(s.num_ret(), _num_rel(m, s)))


def _set_map(m: Measure, s: Stats) -> Column:
    hits = _rel_ret(m, s).cast("double")
    return safe_divide(hits * hits, s.num_ret().cast("double") * _num_rel(m, s))


def _set_f(m: Measure, s: Stats) -> Column:
    p, r, x = _set_p(m, s), _set_recall(m, s), F.lit(m.param("beta"))
    return F.when(_rel_ret(m, s) > 0, (x + 1.0) * p * r / (x * p + r)).otherwise(F.lit(0.0))


def _utility(m: Measure, s: Stats) -> Column:
    hits = _rel_ret(m, s).cast("double")
    retrieved, relevant = s.num_ret().cast("double"), _num_rel(m, s).cast("double")
    return (
        F.lit(m.param("a")) * hits
        + F.lit(m.param("b")) * (retrieved - hits)
        + F.lit(m.param("c")) * (relevant - hits)
        + F.lit(m.param("d")) * (hits - retrieved - relevant)
    )


def _set(name: str, value, description: str, params=(), bounds=UNIT) -> None:
    register(MetricSpec(
        name=name, aliases=(), cutoff="none", value=value, num_rel_ret=_rel_ret,
        params=params, trec_name=lambda m: name, description=description, bounds=bounds,
    ))


_set("set_P", _set_p, "set_P = (relevant retrieved) / (retrieved); 0 when none is retrieved.")
_set("set_recall", _set_recall,
     "set_recall = (relevant retrieved) / R, R = relevant documents of the query; 0 when R = 0.")
_set("set_relative_P", _set_relative_p,
     "set_relative_P = (relevant retrieved) / min(retrieved, R); 0 when that is 0.")
_set("set_map", _set_map,
     "set_map = set_P * set_recall = (relevant retrieved)^2 / (retrieved * R); 0 when either "
     "is 0.")
_set("set_F", _set_f,
     "set_F(beta=x) = (x + 1) * P * R' / (x * P + R') with P = set_P, R' = set_recall "
     "(x weighs recall against precision; trec_eval's set_F); 0 when no relevant document is "
     "retrieved.", params=(("beta", 1.0),))
_set("utility", _utility,
     "utility(a, b, c, d) = a * (relevant retrieved) + b * (non-relevant retrieved) + "
     "c * (relevant not retrieved) + d * (non-relevant not retrieved), the last with a "
     "collection size of 0 as trec_eval's default; defaults a=1, b=-1, c=0, d=0.",
     params=(("a", 1.0), ("b", -1.0), ("c", 0.0), ("d", 0.0)), bounds=None)
