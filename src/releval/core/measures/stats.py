"""Named per-query statistics that measures are built from.

A measure asks a :class:`Stats` for a statistic (``stats.rel_ret(level=1, cutoff=10)``) and
gets its column; each is registered once by name, so measures share them in the engine's
one pass. ``stats.judged()`` ranks by condensed position. See docs/design/engine.md.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from pyspark.sql import Column
from pyspark.sql import functions as F

#: A statistic's cutoff: k, :data:`~releval.core.measures.registry.WINDOW` (each ranking's
#: own k_q) or None (all ranks).
Cutoff = int | str | None


def _suffix(cutoff: Cutoff) -> str:
    return "all" if cutoff is None else str(cutoff)


def _level(level: int) -> str:
    return f"m{-level}" if level < 0 else str(level)


@dataclass(frozen=True)
class RunStat:
    """A run statistic (``kind``: see the :class:`Stats` methods); ``judged``: judged rows
    only, at condensed positions; ``cutoff`` None: all ranks, ``"window"``: each ranking's
    first k_q documents (before the condensation)."""

    kind: str
    judged: bool = False
    level: int | None = None
    cutoff: Cutoff = None
    gain: str = "linear"
    #: a ``walk``'s walker (:data:`releval.core.walks.WALKERS`) and its parameter
    walker: str | None = None
    param: float | None = None
    #: ``rel_ret``, ``first_rel``: an unjudged document counts as relevant (the ``[best]`` bound)
    best: bool = False


@dataclass(frozen=True)
class QrelsStat:
    """A query's qrels statistic: ``num_rel`` (label >= level), ``num_nonrel`` or ``idcg``."""

    kind: str
    level: int | None = None
    cutoff: int | None = None
    gain: str = "linear"


@dataclass
class Stats:
    """Collects named statistics; ``run_default``: each one's value for a query not in the run;
    ``depth``: every run statistic reads each ranking's first ``depth`` documents (None: all);
    ``window``: the run rows carry each query's k_q (``S.WINDOW``); ``negative_labels``: the
    rule an engine reads the qrels' labels by (``"unjudged"`` or ``"judged"``); ``slices``: run
    columns the engine carries per (run partition, query) (:mod:`releval.core.run_slices`)."""

    partition_columns: tuple[str, ...]
    rank_by: str = "score"
    depth: int | None = None
    window: bool = False
    negative_labels: str = "unjudged"
    slices: tuple[str, ...] = ()
    run_default: dict[str, Column | None] = field(default_factory=dict)
    run_spec: dict[str, RunStat] = field(default_factory=dict)
    qrels_spec: dict[str, QrelsStat] = field(default_factory=dict)
    judged_only: bool = False
    best: bool = False

    def judged(self) -> Stats:
        """A view for judged-only measures: same dictionaries, condensed positions."""
        return dataclasses.replace(self, judged_only=True)

    def unjudged_relevant(self) -> Stats:
        """A view for ``[best]`` measures: ``rel_ret`` and ``first_rel_position`` count every
        unjudged document as relevant; the other statistics are the plain ones."""
        return dataclasses.replace(self, best=True)

    def _best(self, name: str) -> str:
        return f"{name}_b" if self.best else name

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

    def ret(self, *, cutoff: Cutoff) -> Column:
        """Documents retrieved at ranks 1..cutoff (fewer than k when the run is short)."""
        return self._run_stat(
            self._name(f"_ret_k{_suffix(cutoff)}"), F.lit(0).cast("long"),
            RunStat("ret", judged=self.judged_only, cutoff=cutoff),
        )

    def judged_ret(self, *, cutoff: Cutoff) -> Column:
        """Documents at ranks 1..cutoff that have a label in the qrels."""
        return self._run_stat(
            self._name(f"_judged_ret_k{_suffix(cutoff)}"), F.lit(0).cast("long"),
            RunStat("judged_ret", judged=self.judged_only, cutoff=cutoff),
        )

    def rel_ret(self, *, level: int, cutoff: Cutoff) -> Column:
        """Relevant documents (label >= level) retrieved at positions <= cutoff."""
        return self._run_stat(
            self._best(self._name(f"_rel_ret_l{_level(level)}_k{_suffix(cutoff)}")),
            F.lit(0).cast("long"),
            RunStat("rel_ret", judged=self.judged_only, level=level, cutoff=cutoff, best=self.best),
        )

    def window_size(self) -> Column:
        """The ranking's window k_q (null for a query the run partition did not retrieve)."""
        return self._run_stat("_window_k", None, RunStat("window"))

    def first_rel_position(self, *, level: int) -> Column:
        """Position of the first relevant document; null when none was retrieved."""
        return self._run_stat(
            self._best(self._name(f"_first_rel_l{_level(level)}")), None,
            RunStat("first_rel", judged=self.judged_only, level=level, best=self.best),
        )

    def dcg(self, *, cutoff: Cutoff, gain: str = "linear") -> Column:
        """Sum of gain(label) / log2(position + 1) to cutoff; gain: label or 2^label - 1."""
        return self._run_stat(
            self._name(f"_dcg{'' if gain == 'linear' else '_' + gain}_k{_suffix(cutoff)}"),
            F.lit(0.0), RunStat("dcg", judged=self.judged_only, cutoff=cutoff, gain=gain),
        )

    def precision_sum(self, *, level: int, cutoff: Cutoff) -> Column:
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
        """Per relevant retrieved document, the judged non-relevant ones above (both views)."""
        return self._run_stat(
            f"_nonrel_above_l{_level(level)}", F.array().cast("array<long>"),
            RunStat("nonrel_above", level=level),
        )

    def walk(self, walker: str, *, level: int, param: float | None = None) -> Column:
        """A value computed by walking the ranking in order (:mod:`releval.core.walks`)."""
        suffix = "" if param is None else "_p" + f"{param:g}".replace(".", "d").replace("-", "m")
        return self._run_stat(
            self._name(f"_walk_{walker}_l{_level(level)}{suffix}"), F.lit(0.0),
            RunStat("walk", judged=self.judged_only, level=level, walker=walker, param=param),
        )

    def tie_aware(self, what: str, *, level: int, cutoff: Cutoff, gain: str = "linear") -> Column:
        """The expected value of a statistic over every ordering of tied scores, or whether
        the query's value depends on that order (1.0/0.0): ``what`` is a key of
        :mod:`releval.core.ties`' table (``rel_ret``, ``hit``, ``rr``, ``prec_sum``, ``dcg``,
        ``dep_set``, ...)."""
        g = "" if gain == "linear" else "_" + gain
        return self._run_stat(
            self._name(f"_ties_{what}{g}_l{_level(level)}_k{_suffix(cutoff)}"), F.lit(0.0),
            RunStat(f"ties_{what}", judged=self.judged_only, level=level, cutoff=cutoff, gain=gain),
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

    def ideal_dcg(self, *, cutoff: Cutoff, gain: str = "linear") -> Column:
        """DCG of the ideal ranking: all positive labels of the query, best first, cut at k
        (at the window: per ranking, 0 for a query the run partition did not retrieve)."""
        if isinstance(cutoff, str):
            return self._run_stat(
                f"_idcg{'' if gain == 'linear' else '_' + gain}_k{cutoff}", F.lit(0.0),
                RunStat("idcg", cutoff=cutoff, gain=gain),
            )
        return self._qrels_stat(
            f"_idcg{'' if gain == 'linear' else '_' + gain}_k{_suffix(cutoff)}",
            QrelsStat("idcg", cutoff=cutoff, gain=gain),
        )


def cutoff_size(s: Stats, cutoff: Cutoff) -> Column:
    """The ranks a cutoff keeps: k, or the ranking's window k_q (null: query not retrieved)."""
    return s.window_size().cast("double") if isinstance(cutoff, str) else F.lit(float(cutoff or 1))


def safe_divide(numerator: Column, denominator: Column) -> Column:
    """numerator / denominator, 0.0 when the denominator is 0 (no relevant documents)."""
    return F.when(denominator > 0, numerator.cast("double") / denominator.cast("double")).otherwise(
        F.lit(0.0)
    )
