"""Named per-query statistics that measures are built from.

A measure's ``value`` function asks a :class:`Stats` for the statistics it
needs (``stats.rel_ret(level=1, cutoff=10)``) and gets back a column reference.
The collector remembers each statistic once, under a stable name, so P@10 and
R@10 share one conditional sum and the whole measure list is computed in one
``groupBy`` over the ranked run and one over the qrels.

Statistics come from three places:

* row columns: window functions over a query's ranked rows (running count of
  relevant documents, for AP);
* run aggregates: ``groupBy(partition, query)`` over the ranked, judged rows;
* qrels aggregates: ``groupBy(query)`` over the qrels (relevant count, ideal DCG).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import Column, Window
from pyspark.sql import functions as F

from releval import schemas as S
from releval.ranking import query_window

IDEAL_POSITION = "_ideal_position"


def _within(cutoff: int | None) -> Column:
    return F.lit(True) if cutoff is None else F.col(S.POSITION) <= cutoff


def _suffix(cutoff: int | None) -> str:
    return "all" if cutoff is None else str(cutoff)


def _level(level: int) -> str:
    return f"m{-level}" if level < 0 else str(level)


def is_relevant(level: int) -> Column:
    """True when the row's label is >= level; unjudged rows (null label) are not relevant."""
    return F.coalesce(F.col(S.RELEVANCE) >= level, F.lit(False))


def linear_gain(label: Column) -> Column:
    """trec_eval's gain: the label itself when positive, else 0."""
    return F.when(label > 0, label.cast("double")).otherwise(F.lit(0.0))


def discount(position: Column) -> Column:
    """1 / log2(position + 1)."""
    return F.lit(1.0) / F.log2(position.cast("double") + 1.0)


@dataclass
class Stats:
    """Collects named statistics; see the module docstring.

    Attributes:
        partition_columns: the run's partition columns (windows are per run and query).
        rank_by: the ranking rule; running statistics use the ranking's own window, so
            positions and running counts share one sort.
        row: name -> row-level column over the ranked, judged run.
        run: name -> aggregate over a query's ranked, judged rows.
        run_default: name -> value when a query has no rows in the run (missing query).
        qrels: name -> aggregate over a query's qrels rows.
    """

    partition_columns: tuple[str, ...]
    rank_by: str = "score"
    row: dict[str, Column] = field(default_factory=dict)
    run: dict[str, Column] = field(default_factory=dict)
    run_default: dict[str, Column | None] = field(default_factory=dict)
    qrels: dict[str, Column] = field(default_factory=dict)

    def _run_stat(self, name: str, agg: Column, default: Column | None) -> Column:
        self.run.setdefault(name, agg)
        self.run_default.setdefault(name, default)
        return F.col(name)

    def num_ret(self) -> Column:
        """Documents retrieved for the query (all ranks)."""
        return self._run_stat("_num_ret", F.count(F.lit(1)), F.lit(0).cast("long"))

    def rel_ret(self, *, level: int, cutoff: int | None) -> Column:
        """Relevant documents (label >= level) retrieved at positions <= cutoff."""
        name = f"_rel_ret_l{_level(level)}_k{_suffix(cutoff)}"
        hit = is_relevant(level) & _within(cutoff)
        agg = F.sum(F.when(hit, 1).otherwise(0)).cast("long")
        return self._run_stat(name, agg, F.lit(0).cast("long"))

    def first_rel_position(self, *, level: int) -> Column:
        """Position of the first relevant document; null when none was retrieved."""
        name = f"_first_rel_l{_level(level)}"
        agg = F.min(F.when(is_relevant(level), F.col(S.POSITION)))
        return self._run_stat(name, agg, None)

    def dcg(self, *, cutoff: int | None) -> Column:
        """Sum over positions <= cutoff of gain(label) / log2(position + 1)."""
        name = f"_dcg_k{_suffix(cutoff)}"
        gain = linear_gain(F.coalesce(F.col(S.RELEVANCE), F.lit(0)))
        agg = F.sum(F.when(_within(cutoff), gain * discount(F.col(S.POSITION))).otherwise(0.0))
        return self._run_stat(name, agg, F.lit(0.0))

    def precision_sum(self, *, level: int, cutoff: int | None) -> Column:
        """Sum over relevant documents at positions <= cutoff of (relevant so far / position)."""
        running = f"_cum_rel_l{_level(level)}"
        window = query_window(
            rank_by=self.rank_by, partition_columns=self.partition_columns
        ).rowsBetween(Window.unboundedPreceding, Window.currentRow)
        self.row.setdefault(running, F.sum(is_relevant(level).cast("int")).over(window))
        name = f"_prec_sum_l{_level(level)}_k{_suffix(cutoff)}"
        term = F.col(running).cast("double") / F.col(S.POSITION).cast("double")
        agg = F.sum(F.when(is_relevant(level) & _within(cutoff), term).otherwise(0.0))
        return self._run_stat(name, agg, F.lit(0.0))

    def num_rel(self, *, level: int) -> Column:
        """Documents of the query with label >= level in the qrels."""
        name = f"_num_rel_l{_level(level)}"
        self.qrels.setdefault(name, F.sum(is_relevant(level).cast("long")))
        return F.col(name)

    def ideal_dcg(self, *, cutoff: int | None) -> Column:
        """DCG of the ideal ranking: all positive labels of the query, best first, cut at k."""
        name = f"_idcg_k{_suffix(cutoff)}"
        gain = linear_gain(F.col(S.RELEVANCE))
        within = F.lit(True) if cutoff is None else F.col(IDEAL_POSITION) <= cutoff
        agg = F.sum(F.when(within, gain * discount(F.col(IDEAL_POSITION))).otherwise(0.0))
        self.qrels.setdefault(name, agg)
        return F.col(name)


def safe_divide(numerator: Column, denominator: Column) -> Column:
    """numerator / denominator, 0.0 when the denominator is 0 (no relevant documents)."""
    return F.when(denominator > 0, numerator.cast("double") / denominator.cast("double")).otherwise(
        F.lit(0.0)
    )
