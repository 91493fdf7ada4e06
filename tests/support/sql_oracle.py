"""A second, independent computation of the statistics: a test oracle only.

Production computes the run and the qrels statistics with one engine, the Arrow kernel
(:func:`releval.core.engine.arrow_run_stats`: NumPy over whole shuffle partitions).
This module computes the same statistics with Spark SQL alone, from their descriptions
(:class:`releval.core.measures.stats.RunStat`, :class:`~releval.core.measures.stats.QrelsStat`) and
its own writing of the ranking rule (a window order): deduplication by ``groupBy``, a
shuffled hash join for the labels, the ranking window with running sums, and a
``groupBy``; the qrels statistics by the ideal ranking's window and a ``groupBy`` over
the qrels. The tests run every measure case, the trec_eval conformance and the
judged-only oracle through both (``query_measures(..., run_stats=sql_run_stats)``), so a
bug in either shows up as a disagreement.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyspark.sql import Column, DataFrame, Window, WindowSpec
from pyspark.sql import functions as F

from releval.core import columns as S
from releval.core.engine import (
    BEYOND_DEPTH,
    IN_QRELS,
    IN_RUN,
    REPEATED,
    RETRIEVED_BY,
    arrow_run_stats,
)
from releval.core.layout import by_query
from releval.core.measures.registry import Measure
from releval.core.measures.stats import QrelsStat, RunStat, Stats

_OCCURRENCES = "_occurrences"
_ORDINAL = "_ordinal"
_ALL_REPEATS = "_all_repeats"
IDEAL_POSITION = "_ideal_position"
#: Rank among the query's judged documents (null for unjudged rows); a row column.
JUDGED_POSITION = "_judged_position"


# --- the ranking rule, as a window order ---------------------------------------------------


def ranking_order(rank_by: str) -> list[Column]:
    """The sort order of a query's documents, best first (``releval.core.ranking``'s rule)."""
    if rank_by == "score":
        return [F.col(S.SCORE).desc(), F.col(S.DOC_ID).desc()]
    return [F.col(S.RANK).asc(), F.col(S.DOC_ID).desc()]


def query_window(*, rank_by: str, partition_columns: Sequence[str]) -> WindowSpec:
    """One query of one run, best document first."""
    return Window.partitionBy(*partition_columns, S.QUERY_ID).orderBy(*ranking_order(rank_by))


def position(*, rank_by: str, partition_columns: Sequence[str]) -> Column:
    """The 1-based rank of a document within its query."""
    if rank_by == "score":
        window = query_window(rank_by=rank_by, partition_columns=partition_columns)
        return F.row_number().over(window).cast("int")
    return F.col(S.RANK).cast("int")


# --- the statistics, as SQL over the ranked, judged rows -------------------------------------


def is_relevant(level: int) -> Column:
    """True when the row's label is >= level; unjudged rows (null label) are not relevant."""
    return F.coalesce(F.col(S.RELEVANCE) >= level, F.lit(False))


def is_judged() -> Column:
    """True when the row's document has a label (the qrels rows that are judgments)."""
    return F.col(S.RELEVANCE).isNotNull()


def is_judged_nonrelevant(level: int) -> Column:
    """True when the row's document is judged and its label is < level (bpref's non-relevant)."""
    return F.coalesce(is_judged() & (F.col(S.RELEVANCE) < level), F.lit(False))


#: Gain functions of DCG by name; both DCG and the ideal DCG use the same one.
GAINS: dict[str, Callable[[Column], Column]] = {
    "linear": lambda label: F.when(label > 0, label.cast("double")).otherwise(F.lit(0.0)),
    "exponential": lambda label: F.when(
        label > 0, F.pow(F.lit(2.0), label.cast("double")) - 1.0
    ).otherwise(F.lit(0.0)),
}


def discount(rank: Column) -> Column:
    """1 / log2(rank + 1)."""
    return F.lit(1.0) / F.log2(rank.cast("double") + 1.0)


class _RunSql:
    """The SQL of the run statistics: row columns (window functions over a query's ranked
    rows) and, from them, one aggregate per statistic."""

    def __init__(self, *, rank_by: str, partition_columns: Sequence[str]) -> None:
        self.window = query_window(rank_by=rank_by, partition_columns=partition_columns).rowsBetween(
            Window.unboundedPreceding, Window.currentRow
        )
        self.rows: dict[str, Column] = {}  # the row columns the aggregates read

    def _row(self, name: str, column: Callable[[], Column]) -> Column:
        if name not in self.rows:
            self.rows[name] = column()
        return F.col(name)

    def position(self, judged: bool) -> Column:
        """The rank the statistic uses: the position, or the condensed (judged-only) one."""
        if not judged:
            return F.col(S.POSITION)
        return self._row(
            JUDGED_POSITION,
            lambda: F.when(is_judged(), F.sum(is_judged().cast("int")).over(self.window)),
        )

    def within(self, judged: bool, cutoff: int | None) -> Column:
        """Rows the view counts at ranks 1..cutoff (the judged view: judged rows only)."""
        if cutoff is None and not judged:
            return F.lit(True)
        rank = self.position(judged)
        return rank.isNotNull() if cutoff is None else F.coalesce(rank <= cutoff, F.lit(False))

    def count(self, rows: Column) -> Column:
        return F.sum(F.when(rows, 1).otherwise(0)).cast("long")

    def running(self, name: str, rows: Callable[[], Column]) -> Column:
        """A row column: the running count of ``rows`` down the query's ranking."""
        return self._row(name, lambda: F.sum(rows().cast("long")).over(self.window))

    def aggregate(self, spec: RunStat) -> Column:
        return _RUN_SQL[spec.kind](self, spec, spec.level or 0)


def _num_ret(q: _RunSql, s: RunStat, level: int) -> Column:
    return q.count(q.within(s.judged, None)) if s.judged else F.count(F.lit(1))


def _dcg(q: _RunSql, s: RunStat, level: int) -> Column:
    term = GAINS[s.gain](F.coalesce(F.col(S.RELEVANCE), F.lit(0))) * discount(q.position(s.judged))
    return F.sum(F.when(q.within(s.judged, s.cutoff), term).otherwise(0.0))


def _prec_sum(q: _RunSql, s: RunStat, level: int) -> Column:
    running = q.running(f"_cum_rel_l{level}".replace("-", "m"), lambda: is_relevant(level))
    term = running.cast("double") / q.position(s.judged).cast("double")
    return F.sum(F.when(is_relevant(level) & q.within(s.judged, s.cutoff), term).otherwise(0.0))


def _nonrel_above(q: _RunSql, s: RunStat, level: int) -> Column:
    running = q.running(f"_cum_nonrel_l{level}".replace("-", "m"),
                        lambda: is_judged_nonrelevant(level))
    return F.collect_list(F.when(is_relevant(level), running))


def _relevant(s: RunStat, level: int) -> Column:
    """Relevant; for a ``[best]`` statistic an unjudged row too."""
    return is_relevant(level) | ~is_judged() if s.best else is_relevant(level)


#: The oracle's SQL for each kind of :class:`RunStat` (one entry per kind, like the
#: engine's ``releval.core.kernel.KINDS``).
_RUN_SQL: dict[str, Callable[[_RunSql, RunStat, int], Column]] = {
    "num_ret": _num_ret,
    "ret": lambda q, s, level: q.count(q.within(s.judged, s.cutoff)),
    "judged_ret": lambda q, s, level: q.count(is_judged() & q.within(s.judged, s.cutoff)),
    "rel_ret": lambda q, s, level: q.count(_relevant(s, level) & q.within(s.judged, s.cutoff)),
    "first_rel": lambda q, s, level: F.min(F.when(_relevant(s, level), q.position(s.judged))),
    "dcg": _dcg,
    "prec_sum": _prec_sum,
    "rel_pos": lambda q, s, level: F.collect_list(
        F.when(is_relevant(level), q.position(s.judged).cast("long"))
    ),
    "nonrel_above": _nonrel_above,
}


def _idcg(spec: QrelsStat) -> Column:
    ideal = F.col(IDEAL_POSITION)
    within = F.lit(True) if spec.cutoff is None else ideal <= spec.cutoff
    term = GAINS[spec.gain](F.col(S.RELEVANCE)) * discount(ideal)
    return F.sum(F.when(within, term).otherwise(0.0))


#: The oracle's SQL for each kind of :class:`QrelsStat`, over the judgments with their
#: ``IDEAL_POSITION``.
_QRELS_SQL: dict[str, Callable[[QrelsStat], Column]] = {
    "num_rel": lambda spec: F.sum(is_relevant(spec.level or 0).cast("long")),
    "num_nonrel": lambda spec: F.sum(is_judged_nonrelevant(spec.level or 0).cast("long")),
    "idcg": _idcg,
}


# --- the oracle -----------------------------------------------------------------------------


def oracle_supports(measure: Measure) -> bool:
    """Whether the oracle has SQL for every statistic of ``measure`` (not the walks)."""
    stats = Stats(partition_columns=())
    measure.spec.value(measure, stats)
    return all(spec.kind in _RUN_SQL for spec in stats.run_spec.values())


def deduplicate(
    run: DataFrame, *, rank_by: str, partition_columns: Sequence[str], count_as: str | None = None
) -> DataFrame:
    """One row per (run partition, query, doc): its best-ranked occurrence (an aggregation).

    With ``count_as``, also that column: how many rows the document had.
    """
    keys = [*partition_columns, S.QUERY_ID, S.DOC_ID]
    best = F.max(S.SCORE).alias(S.SCORE) if rank_by == "score" else F.min(S.RANK).alias(S.RANK)
    counted = [F.count(F.lit(1)).alias(count_as)] if count_as else []
    return run.groupBy(*keys).agg(best, *counted)


def cut_at_depth(unique: DataFrame, *, stats: Stats, partition_columns: Sequence[str]) -> DataFrame:
    """The first ``stats.depth`` rows of each query's ranking (of :func:`deduplicate`'s rows),
    each with ``_beyond_depth`` (its query's rows past the depth) and ``_all_repeats`` (its
    query's repeats, those of the rows past the depth included), by window functions."""
    whole = Window.partitionBy(*partition_columns, S.QUERY_ID)
    ordinal = F.row_number().over(
        query_window(rank_by=stats.rank_by, partition_columns=partition_columns)
    )
    return unique.withColumn(_ORDINAL, ordinal).select(
        "*",
        F.sum((F.col(_ORDINAL) > stats.depth).cast("long")).over(whole).alias(BEYOND_DEPTH),
        F.sum(F.col(_OCCURRENCES) - 1).over(whole).alias(_ALL_REPEATS),
    ).where(F.col(_ORDINAL) <= stats.depth)


def prepare_qrels(qrels: DataFrame, negative_labels: str = "unjudged") -> DataFrame:
    """One label per (query, doc): the highest, when a document was judged twice (a null
    label: not a judgment, kept so that its query is in the query set). Under
    ``negative_labels="unjudged"`` (trec_eval's rule) a negative label is no judgment."""
    label = F.col(S.RELEVANCE)
    if negative_labels == "unjudged":
        label = F.when(label >= 0, label)
    return qrels.groupBy(S.QUERY_ID, S.DOC_ID).agg(F.max(label).alias(S.RELEVANCE))


def qrels_stats(judgments: DataFrame, stats: Stats) -> DataFrame:
    """One row per query of the qrels: ``_in_qrels`` and every qrels statistic of ``stats``,
    from its SQL aggregate over the ideal ranking (labels best first, then doc id)."""
    ideal = Window.partitionBy(S.QUERY_ID).orderBy(F.col(S.RELEVANCE).desc(), F.col(S.DOC_ID).asc())
    return (
        judgments.withColumn(IDEAL_POSITION, F.row_number().over(ideal))
        .groupBy(S.QUERY_ID)
        .agg(F.first(F.lit(True)).alias(IN_QRELS),
             *[_QRELS_SQL[spec.kind](spec).alias(n) for n, spec in stats.qrels_spec.items()])
    )


def judge(run: DataFrame, qrels: DataFrame) -> DataFrame:
    """Attach each retrieved document's label; unjudged documents get a null ``relevance``."""
    return run.join(qrels.hint("shuffle_hash"), on=[S.QUERY_ID, S.DOC_ID], how="left")


def sql_run_stats(
    run: DataFrame,
    qrels: DataFrame,
    *,
    stats: Stats,
    partition_columns: Sequence[str],
    laid_out_by_query: bool = False,
) -> DataFrame:
    """One row per (run partition, query) with every run statistic, by window functions."""
    parts = list(partition_columns)
    if not laid_out_by_query:
        run, qrels = by_query(run), by_query(qrels)
    unique = deduplicate(run, rank_by=stats.rank_by, partition_columns=parts, count_as=_OCCURRENCES)
    repeated, beyond = F.sum(F.col(_OCCURRENCES) - 1), F.lit(0).cast("long")
    if stats.depth is not None:
        unique = cut_at_depth(unique, stats=stats, partition_columns=parts)
        repeated, beyond = F.max(_ALL_REPEATS), F.max(BEYOND_DEPTH)
    judgments = prepare_qrels(qrels, stats.negative_labels)
    judged = judge(unique, judgments)
    rank = position(rank_by=stats.rank_by, partition_columns=parts).alias(S.POSITION)
    # the aggregates first: building them registers the row columns they read
    sql = _RunSql(rank_by=stats.rank_by, partition_columns=parts)
    aggregates = [sql.aggregate(spec).alias(n) for n, spec in stats.run_spec.items()]
    rows = judged.select("*", rank, *[c.alias(n) for n, c in sql.rows.items()])
    run_q = rows.groupBy(*parts, S.QUERY_ID).agg(
        F.first(F.lit(True)).alias(IN_RUN),
        repeated.alias(REPEATED),
        beyond.alias(BEYOND_DEPTH),
        *aggregates,
    )
    per_query = qrels_stats(judgments, stats)
    retrieved = run_q.join(per_query, on=S.QUERY_ID, how="left").withColumn(
        IN_QRELS, F.coalesce(F.col(IN_QRELS), F.lit(False))
    )
    # on each query's qrels row: the run partitions that retrieved it (its rows of run_q)
    retrieved_by = run_q.groupBy(S.QUERY_ID).agg(F.count(F.lit(1)).alias(RETRIEVED_BY))
    queries = per_query.join(retrieved_by, on=S.QUERY_ID, how="left").select(
        *[F.lit(None).cast(run.schema[c].dataType).alias(c) for c in parts],
        S.QUERY_ID, F.lit(False).alias(IN_RUN), IN_QRELS, F.lit(0).cast("long").alias(REPEATED),
        F.lit(0).cast("long").alias(BEYOND_DEPTH),
        F.coalesce(F.col(RETRIEVED_BY), F.lit(0)).alias(RETRIEVED_BY),
        *stats.qrels_spec.keys(),
    )
    return retrieved.unionByName(queries, allowMissingColumns=True)


#: The engines the tests compare: production's and the oracle.
ENGINES = {"arrow": arrow_run_stats, "sql": sql_run_stats}
