"""Named per-query statistics that measures are built from.

A measure's ``value`` function asks a :class:`Stats` for the statistics it
needs (``stats.rel_ret(level=1, cutoff=10)``) and gets back a column reference.
The collector remembers each statistic once, under a stable name, so P@10 and
R@10 share one conditional sum and the whole measure list is computed in the
engine's one pass (:mod:`releval.core.kernel`).

Each statistic is described once, by what it is: a :class:`RunStat` (over a query's
ranked run rows) or a :class:`QrelsStat` (over a query's judgments: relevant count,
ideal DCG). The engine computes production's values from these descriptions, and only
the engine does. The tests' SQL oracle (``tests/support/sql_oracle.py``) computes the same
descriptions independently, with Spark SQL (window functions and aggregates), to check
the engine.

Judged-only (condensed-list) measures ask a view of the collector,
``stats.judged()``: the same dictionaries, but every statistic that depends on
rank uses the *condensed position* (the rank among the query's judged documents)
and counts only judged rows. Their names
end in ``_j``, so the full and the condensed statistics live side by side.

A document is *judged* when it has a label: a null ``relevance`` is "not judged". The
labels arrive through :func:`releval.core.engine.judgment`, the one place where the
negative-label rule (``evaluation.negative_labels``) is applied: by default a negative label
is trec_eval's "in the pool, not judged" and arrives as null.

Statistics that need a qrels count inside a per-row term (R-precision cuts at
R = num_rel; bpref caps counts at num_rel) are a small array per query
(positions of relevant documents, or judged non-relevant counts above them), and the
measure's expression finishes the sum, next to the qrels statistics.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from pyspark.sql import Column
from pyspark.sql import functions as F


def _suffix(cutoff: int | None) -> str:
    return "all" if cutoff is None else str(cutoff)


def _level(level: int) -> str:
    return f"m{-level}" if level < 0 else str(level)


@dataclass(frozen=True)
class RunStat:
    """What a run statistic is, independent of how it is computed.

    The engine (:mod:`releval.core.kernel`) computes the statistic from this
    description; so does the tests' SQL oracle, its own way.

    Attributes:
        kind: ``num_ret``, ``ret``, ``judged_ret``, ``rel_ret``, ``first_rel``, ``dcg``,
            ``prec_sum``, ``rel_pos`` or ``nonrel_above`` (see the :class:`Stats` methods).
        judged: counts judged rows only and ranks by the condensed position.
        level: relevance level (kinds that test relevance).
        cutoff: ranks 1..cutoff; None = all.
        gain: ``linear`` or ``exponential`` (``dcg``).
    """

    kind: str
    judged: bool = False
    level: int | None = None
    cutoff: int | None = None
    gain: str = "linear"


@dataclass(frozen=True)
class QrelsStat:
    """What a qrels statistic of a query is, independent of how it is computed.

    Production computes it in the engine's pass (:mod:`releval.core.kernel`), from the
    query's judgments there: one label per (query, doc), the highest. The tests' SQL
    oracle computes the same statistic over the qrels' ideal ranking.

    Attributes:
        kind: ``num_rel`` (judged documents with label >= level), ``num_nonrel`` (judged,
            label < level) or ``idcg`` (the DCG of the ideal ranking: the labels best
            first, positions 1..cutoff).
        level: relevance level (``num_rel``, ``num_nonrel``).
        cutoff: positions 1..cutoff of the ideal ranking; None = all (``idcg``).
        gain: ``linear`` or ``exponential`` (``idcg``).
    """

    kind: str
    level: int | None = None
    cutoff: int | None = None
    gain: str = "linear"


@dataclass
class Stats:
    """Collects named statistics; see the module docstring.

    Each method registers a statistic's description under its stable name and returns a
    reference to its column in the per-query table (which the engine fills).

    Attributes:
        partition_columns: the run's partition columns (statistics are per run and query).
        rank_by: the ranking rule the statistics' positions follow.
        run_default: name -> value when a query has no rows in the run (missing query).
        run_spec: name -> the :class:`RunStat` the engine computes.
        qrels_spec: name -> the :class:`QrelsStat` the engine computes.
        judged_only: this view ranks by the condensed position (see :meth:`judged`).
    """

    partition_columns: tuple[str, ...]
    rank_by: str = "score"
    run_default: dict[str, Column | None] = field(default_factory=dict)
    run_spec: dict[str, RunStat] = field(default_factory=dict)
    qrels_spec: dict[str, QrelsStat] = field(default_factory=dict)
    judged_only: bool = False

    def judged(self) -> Stats:
        """A view for judged-only measures: same dictionaries, condensed positions."""
        return dataclasses.replace(self, judged_only=True)

    def _name(self, name: str) -> str:
        return f"{name}_j" if self.judged_only else name

    def _run_stat(self, name: str, default: Column | None, spec: RunStat) -> Column:
        self.run_default.setdefault(name, default)
        self.run_spec.setdefault(name, spec)
        return F.col(name)

    def num_ret(self) -> Column:
        """Documents retrieved for the query (all ranks; judged view: judged documents)."""
        return self._run_stat(self._name("_num_ret"), F.lit(0).cast("long"),
                              RunStat("num_ret", judged=self.judged_only))

    def ret(self, *, cutoff: int | None) -> Column:
        """Documents retrieved at ranks 1..cutoff (fewer than k when the run is short)."""
        return self._run_stat(
            self._name(f"_ret_k{_suffix(cutoff)}"), F.lit(0).cast("long"),
            RunStat("ret", judged=self.judged_only, cutoff=cutoff),
        )

    def judged_ret(self, *, cutoff: int | None) -> Column:
        """Documents at ranks 1..cutoff that have a label in the qrels."""
        return self._run_stat(
            self._name(f"_judged_ret_k{_suffix(cutoff)}"), F.lit(0).cast("long"),
            RunStat("judged_ret", judged=self.judged_only, cutoff=cutoff),
        )

    def rel_ret(self, *, level: int, cutoff: int | None) -> Column:
        """Relevant documents (label >= level) retrieved at positions <= cutoff."""
        return self._run_stat(
            self._name(f"_rel_ret_l{_level(level)}_k{_suffix(cutoff)}"), F.lit(0).cast("long"),
            RunStat("rel_ret", judged=self.judged_only, level=level, cutoff=cutoff),
        )

    def first_rel_position(self, *, level: int) -> Column:
        """Position of the first relevant document; null when none was retrieved."""
        return self._run_stat(
            self._name(f"_first_rel_l{_level(level)}"), None,
            RunStat("first_rel", judged=self.judged_only, level=level),
        )

    def dcg(self, *, cutoff: int | None, gain: str = "linear") -> Column:
        """Sum over positions <= cutoff of gain(label) / log2(position + 1).

        ``gain``: ``linear`` (trec_eval's: the label when positive, else 0) or
        ``exponential`` (2^label - 1 when positive, else 0).
        """
        return self._run_stat(
            self._name(f"_dcg{'' if gain == 'linear' else '_' + gain}_k{_suffix(cutoff)}"),
            F.lit(0.0), RunStat("dcg", judged=self.judged_only, cutoff=cutoff, gain=gain),
        )

    def precision_sum(self, *, level: int, cutoff: int | None) -> Column:
        """Sum over relevant documents at positions <= cutoff of (relevant so far / position)."""
        return self._run_stat(
            self._name(f"_prec_sum_l{_level(level)}_k{_suffix(cutoff)}"), F.lit(0.0),
            RunStat("prec_sum", judged=self.judged_only, level=level, cutoff=cutoff),
        )

    def rel_positions(self, *, level: int) -> Column:
        """Array of the positions of the query's relevant retrieved documents (any order)."""
        return self._run_stat(
            self._name(f"_rel_pos_l{_level(level)}"), F.array().cast("array<long>"),
            RunStat("rel_pos", judged=self.judged_only, level=level),
        )

    def nonrel_above_relevant(self, *, level: int) -> Column:
        """Array with, for each relevant retrieved document, the judged non-relevant
        documents (label < level) ranked above it.

        Unjudged documents are skipped, so the array is the same in the judged-only view.
        A negative label is skipped too under the default rule (it arrives as "not judged",
        trec_eval's bpref), and counts as judged non-relevant under ``negative_labels =
        "judged"``.
        """
        return self._run_stat(
            f"_nonrel_above_l{_level(level)}", F.array().cast("array<long>"),
            RunStat("nonrel_above", level=level),
        )

    def _qrels_stat(self, name: str, spec: QrelsStat) -> Column:
        self.qrels_spec.setdefault(name, spec)
        return F.col(name)

    def num_rel(self, *, level: int) -> Column:
        """Documents of the query with label >= level in the qrels."""
        return self._qrels_stat(f"_num_rel_l{_level(level)}", QrelsStat("num_rel", level=level))

    def num_nonrel(self, *, level: int) -> Column:
        """Judged non-relevant documents of the query: label < level (bpref's N)."""
        return self._qrels_stat(f"_num_nonrel_l{_level(level)}", QrelsStat("num_nonrel", level=level))

    def ideal_dcg(self, *, cutoff: int | None, gain: str = "linear") -> Column:
        """DCG of the ideal ranking: all positive labels of the query, best first, cut at k."""
        return self._qrels_stat(
            f"_idcg{'' if gain == 'linear' else '_' + gain}_k{_suffix(cutoff)}",
            QrelsStat("idcg", cutoff=cutoff, gain=gain),
        )


def safe_divide(numerator: Column, denominator: Column) -> Column:
    """numerator / denominator, 0.0 when the denominator is 0 (no relevant documents)."""
    return F.when(denominator > 0, numerator.cast("double") / denominator.cast("double")).otherwise(
        F.lit(0.0)
    )
