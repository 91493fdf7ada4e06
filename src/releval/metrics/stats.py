"""Named per-query statistics that measures are built from.

A measure's ``value`` function asks a :class:`Stats` for the statistics it
needs (``stats.rel_ret(level=1, cutoff=10)``) and gets back a column reference.
The collector remembers each statistic once, under a stable name, so P@10 and
R@10 share one conditional sum and the whole measure list is computed in the
engine's one pass (:mod:`releval.metrics.kernel`).

Each statistic is described once, by what it is: a :class:`RunStat` (over a query's
ranked run rows) or a :class:`QrelsStat` (over a query's judgments: relevant count,
ideal DCG). The engine computes production's values from these descriptions. Each also
has a Spark SQL expression here (window functions over the ranked rows, aggregates over
the run and the qrels), which the tests' SQL oracle (``tests/sql_oracle.py``) computes
independently to check the engine:

* row columns: window functions over a query's ranked rows (running count of
  relevant documents, for AP);
* run aggregates: ``groupBy(partition, query)`` over the ranked, judged rows;
* qrels aggregates: ``groupBy(query)`` over the qrels (relevant count, ideal DCG).

Judged-only (condensed-list) measures ask a view of the collector,
``stats.judged()``: the same dictionaries, but every statistic that depends on
rank uses the *condensed position* (the rank among the query's judged documents,
a running count over the same window) and counts only judged rows. Their names
end in ``_j``, so the full and the condensed statistics live side by side.

A document is *judged* when it has a label: a null ``relevance`` is "not judged". The
labels arrive through :func:`releval.metrics.compute.judgment`, the one place where the
negative-label rule (``evaluation.negative_labels``) is applied: by default a negative label
is trec_eval's "in the pool, not judged" and arrives as null.

Statistics that need a qrels count inside a per-row term (R-precision cuts at
R = num_rel; bpref caps counts at num_rel) collect a small array per query
(positions of relevant documents, or judged non-relevant counts above them) and finish
the sum in the measure's expression, next to the qrels statistics.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.sql import Column, Window
from pyspark.sql import functions as F
from pyspark.sql.window import WindowSpec

from releval import schemas as S
from releval.ranking import query_window

IDEAL_POSITION = "_ideal_position"
#: Rank among the query's judged documents (null for unjudged rows); a row column.
JUDGED_POSITION = "_judged_position"


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


def is_judged() -> Column:
    """True when the row's document has a label (the qrels rows that are judgments)."""
    return F.col(S.RELEVANCE).isNotNull()


def is_judged_nonrelevant(level: int) -> Column:
    """True when the row's document is judged and its label is < level (bpref's non-relevant)."""
    return F.coalesce(is_judged() & (F.col(S.RELEVANCE) < level), F.lit(False))


def exponential_gain(label: Column) -> Column:
    """The web-search gain: 2^label - 1 when the label is positive, else 0."""
    return F.when(label > 0, F.pow(F.lit(2.0), label.cast("double")) - 1.0).otherwise(F.lit(0.0))


#: Gain functions of DCG by name; both DCG and the ideal DCG use the same one.
GAINS: dict[str, Callable[[Column], Column]] = {
    "linear": linear_gain,
    "exponential": exponential_gain,
}


def discount(position: Column) -> Column:
    """1 / log2(position + 1)."""
    return F.lit(1.0) / F.log2(position.cast("double") + 1.0)


@dataclass(frozen=True)
class RunStat:
    """What a run statistic is, independent of how it is computed.

    The SQL engine computes a statistic from its Spark aggregate; the Arrow engine
    (:mod:`releval.metrics.kernel`) computes the same statistic from this description.

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

    Production computes it in the engine's pass (:mod:`releval.metrics.kernel`), from the
    query's judgments there: one label per (query, doc), the highest. The Spark aggregate
    of :attr:`Stats.qrels` computes the same statistic in the tests' SQL oracle.

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

    Attributes:
        partition_columns: the run's partition columns (windows are per run and query).
        rank_by: the ranking rule; running statistics use the ranking's own window, so
            positions and running counts share one sort.
        row: name -> row-level column over the ranked, judged run (built when called;
            the tests' SQL oracle).
        run: name -> aggregate over a query's ranked, judged rows (built when called, after
            which ``row`` holds the row columns it reads; the tests' SQL oracle).
        run_default: name -> value when a query has no rows in the run (missing query).
        run_spec: name -> the :class:`RunStat` the engine computes.
        qrels: name -> aggregate over a query's qrels rows (built when called; the tests'
            SQL oracle).
        qrels_spec: name -> the :class:`QrelsStat` the engine computes.

    The SQL expressions are functions, called only by the oracle: production computes the
    statistics from their specs, and building hundreds of unused Spark columns (a Py4J
    call each) cost seconds of driver time per job.
        judged_only: this view ranks by the condensed position (see :meth:`judged`).
    """

    partition_columns: tuple[str, ...]
    rank_by: str = "score"
    row: dict[str, Callable[[], Column]] = field(default_factory=dict)
    run: dict[str, Callable[[], Column]] = field(default_factory=dict)
    run_default: dict[str, Column | None] = field(default_factory=dict)
    run_spec: dict[str, RunStat] = field(default_factory=dict)
    qrels: dict[str, Callable[[], Column]] = field(default_factory=dict)
    qrels_spec: dict[str, QrelsStat] = field(default_factory=dict)
    judged_only: bool = False

    def judged(self) -> Stats:
        """A view for judged-only measures: same dictionaries, condensed positions."""
        return dataclasses.replace(self, judged_only=True)

    def _window(self) -> WindowSpec:
        """A query's rows in ranking order, from the first to the current row."""
        return query_window(
            rank_by=self.rank_by, partition_columns=self.partition_columns
        ).rowsBetween(Window.unboundedPreceding, Window.currentRow)

    def _position(self) -> Column:
        """The rank this view uses: the position, or the condensed (judged-only) position
        (a row column, registered when the SQL expressions are built)."""
        if not self.judged_only:
            return F.col(S.POSITION)
        self.row.setdefault(
            JUDGED_POSITION,
            lambda: F.when(is_judged(), F.sum(is_judged().cast("int")).over(self._window())),
        )
        return F.col(JUDGED_POSITION)

    def _within(self, cutoff: int | None) -> Column:
        """Rows this view counts that sit at ranks 1..cutoff (unjudged rows excluded if judged)."""
        if cutoff is None and not self.judged_only:
            return F.lit(True)
        position = self._position()
        if cutoff is None:
            return position.isNotNull()
        return F.coalesce(position <= cutoff, F.lit(False))

    def _name(self, name: str) -> str:
        return f"{name}_j" if self.judged_only else name

    def _run_stat(
        self, name: str, agg: Callable[[], Column], default: Column | None, spec: RunStat
    ) -> Column:
        self.run.setdefault(name, agg)
        self.run_default.setdefault(name, default)
        self.run_spec.setdefault(name, spec)
        return F.col(name)

    def num_ret(self) -> Column:
        """Documents retrieved for the query (all ranks; judged view: judged documents)."""
        if not self.judged_only:
            return self._run_stat(
                "_num_ret", lambda: F.count(F.lit(1)), F.lit(0).cast("long"), RunStat("num_ret")
            )
        return self._run_stat(
            self._name("_num_ret"),
            lambda: F.sum(F.when(self._within(None), 1).otherwise(0)).cast("long"),
            F.lit(0).cast("long"), RunStat("num_ret", judged=True),
        )

    def ret(self, *, cutoff: int | None) -> Column:
        """Documents retrieved at ranks 1..cutoff (fewer than k when the run is short)."""
        return self._run_stat(
            self._name(f"_ret_k{_suffix(cutoff)}"),
            lambda: F.sum(F.when(self._within(cutoff), 1).otherwise(0)).cast("long"),
            F.lit(0).cast("long"), RunStat("ret", judged=self.judged_only, cutoff=cutoff),
        )

    def judged_ret(self, *, cutoff: int | None) -> Column:
        """Documents at ranks 1..cutoff that have a label in the qrels."""
        return self._run_stat(
            self._name(f"_judged_ret_k{_suffix(cutoff)}"),
            lambda: F.sum(F.when(is_judged() & self._within(cutoff), 1).otherwise(0)).cast("long"),
            F.lit(0).cast("long"), RunStat("judged_ret", judged=self.judged_only, cutoff=cutoff),
        )

    def rel_ret(self, *, level: int, cutoff: int | None) -> Column:
        """Relevant documents (label >= level) retrieved at positions <= cutoff."""
        return self._run_stat(
            self._name(f"_rel_ret_l{_level(level)}_k{_suffix(cutoff)}"),
            lambda: F.sum(
                F.when(is_relevant(level) & self._within(cutoff), 1).otherwise(0)
            ).cast("long"),
            F.lit(0).cast("long"),
            RunStat("rel_ret", judged=self.judged_only, level=level, cutoff=cutoff),
        )

    def first_rel_position(self, *, level: int) -> Column:
        """Position of the first relevant document; null when none was retrieved."""
        return self._run_stat(
            self._name(f"_first_rel_l{_level(level)}"),
            lambda: F.min(F.when(is_relevant(level), self._position())),
            None, RunStat("first_rel", judged=self.judged_only, level=level),
        )

    def dcg(self, *, cutoff: int | None, gain: str = "linear") -> Column:
        """Sum over positions <= cutoff of gain(label) / log2(position + 1).

        ``gain`` names a function of :data:`GAINS` (linear: trec_eval's; exponential).
        """
        def agg() -> Column:
            term = GAINS[gain](F.coalesce(F.col(S.RELEVANCE), F.lit(0))) * discount(self._position())
            return F.sum(F.when(self._within(cutoff), term).otherwise(0.0))

        return self._run_stat(
            self._name(f"_dcg{'' if gain == 'linear' else '_' + gain}_k{_suffix(cutoff)}"),
            agg, F.lit(0.0), RunStat("dcg", judged=self.judged_only, cutoff=cutoff, gain=gain),
        )

    def precision_sum(self, *, level: int, cutoff: int | None) -> Column:
        """Sum over relevant documents at positions <= cutoff of (relevant so far / position)."""
        running = f"_cum_rel_l{_level(level)}"

        def agg() -> Column:
            self.row.setdefault(
                running, lambda: F.sum(is_relevant(level).cast("int")).over(self._window())
            )
            term = F.col(running).cast("double") / self._position().cast("double")
            return F.sum(F.when(is_relevant(level) & self._within(cutoff), term).otherwise(0.0))

        return self._run_stat(
            self._name(f"_prec_sum_l{_level(level)}_k{_suffix(cutoff)}"), agg, F.lit(0.0),
            RunStat("prec_sum", judged=self.judged_only, level=level, cutoff=cutoff),
        )

    def rel_positions(self, *, level: int) -> Column:
        """Array of the positions of the query's relevant retrieved documents (any order)."""
        return self._run_stat(
            self._name(f"_rel_pos_l{_level(level)}"),
            lambda: F.collect_list(F.when(is_relevant(level), self._position().cast("long"))),
            F.array().cast("array<long>"),
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
        running = f"_cum_nonrel_l{_level(level)}"

        def agg() -> Column:
            self.row.setdefault(
                running,
                lambda: F.sum(is_judged_nonrelevant(level).cast("long")).over(self._window()),
            )
            return F.collect_list(F.when(is_relevant(level), F.col(running)))

        return self._run_stat(
            f"_nonrel_above_l{_level(level)}", agg, F.array().cast("array<long>"),
            RunStat("nonrel_above", level=level),
        )

    def _qrels_stat(self, name: str, agg: Callable[[], Column], spec: QrelsStat) -> Column:
        self.qrels.setdefault(name, agg)
        self.qrels_spec.setdefault(name, spec)
        return F.col(name)

    def num_rel(self, *, level: int) -> Column:
        """Documents of the query with label >= level in the qrels."""
        return self._qrels_stat(f"_num_rel_l{_level(level)}",
                                lambda: F.sum(is_relevant(level).cast("long")),
                                QrelsStat("num_rel", level=level))

    def num_nonrel(self, *, level: int) -> Column:
        """Judged non-relevant documents of the query: label < level (bpref's N)."""
        return self._qrels_stat(
            f"_num_nonrel_l{_level(level)}", lambda: F.sum(is_judged_nonrelevant(level).cast("long")),
            QrelsStat("num_nonrel", level=level),
        )

    def ideal_dcg(self, *, cutoff: int | None, gain: str = "linear") -> Column:
        """DCG of the ideal ranking: all positive labels of the query, best first, cut at k."""
        def agg() -> Column:
            g = GAINS[gain](F.col(S.RELEVANCE))
            within = F.lit(True) if cutoff is None else F.col(IDEAL_POSITION) <= cutoff
            return F.sum(F.when(within, g * discount(F.col(IDEAL_POSITION))).otherwise(0.0))

        return self._qrels_stat(
            f"_idcg{'' if gain == 'linear' else '_' + gain}_k{_suffix(cutoff)}", agg,
            QrelsStat("idcg", cutoff=cutoff, gain=gain),
        )


def safe_divide(numerator: Column, denominator: Column) -> Column:
    """numerator / denominator, 0.0 when the denominator is 0 (no relevant documents)."""
    return F.when(denominator > 0, numerator.cast("double") / denominator.cast("double")).otherwise(
        F.lit(0.0)
    )
