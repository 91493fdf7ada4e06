"""Counts that explain the other measures (trec_eval's num_ret, num_rel, num_rel_ret,
num_nonrel_judged_ret)."""

from __future__ import annotations

from pyspark.sql import functions as F

from releval.core.measures.registry import MetricSpec, register

register(
    MetricSpec(
        name="num_ret",
        aliases=(),
        cutoff="none",
        value=lambda m, s: s.num_ret().cast("double"),
        num_rel_ret=lambda m, s: s.rel_ret(level=m.rel_level, cutoff=None),
        averaging=("sum",),
        trec_name=lambda m: "num_ret",
        description="Documents retrieved for the query. Aggregated as a sum.",
    )
)

register(
    MetricSpec(
        name="num_rel",
        aliases=(),
        cutoff="none",
        value=lambda m, s: F.coalesce(s.num_rel(level=m.rel_level), F.lit(0)).cast("double"),
        num_rel_ret=lambda m, s: s.rel_ret(level=m.rel_level, cutoff=None),
        averaging=("sum",),
        trec_name=lambda m: "num_rel",
        description="Relevant documents of the query in the qrels. Aggregated as a sum.",
    )
)

register(
    MetricSpec(
        name="num_rel_ret",
        aliases=(),
        cutoff="none",
        value=lambda m, s: s.rel_ret(level=m.rel_level, cutoff=None).cast("double"),
        num_rel_ret=lambda m, s: s.rel_ret(level=m.rel_level, cutoff=None),
        averaging=("sum",),
        trec_name=lambda m: "num_rel_ret",
        description="Relevant documents retrieved (all ranks). Aggregated as a sum.",
    )
)

register(
    MetricSpec(
        name="num_nonrel_judged_ret",
        aliases=(),
        cutoff="none",
        value=lambda m, s: (
            s.judged_ret(cutoff=None) - s.rel_ret(level=m.rel_level, cutoff=None)
        ).cast("double"),
        num_rel_ret=lambda m, s: s.rel_ret(level=m.rel_level, cutoff=None),
        averaging=("sum",),
        trec_name=lambda m: "num_nonrel_judged_ret",
        description="Judged non-relevant documents retrieved (all ranks). Aggregated as a sum.",
    )
)
