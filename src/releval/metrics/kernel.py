"""The Arrow engine: every statistic of a query computed by NumPy, a partition at a time.

The tests' SQL oracle (``tests/sql_oracle.py``) ranks with a window (a sort inside each
shuffle partition), joins the labels and aggregates with ``groupBy``. This engine sends
the run rows and the qrels rows of a shuffle partition together (one ``union``,
partitioned by query id: each query's rows and judgments are in the same partition)
through ``mapInArrow`` to a vectorized NumPy function that deduplicates (the rules of
:mod:`releval.repeats`), ranks (the rule of :mod:`releval.ranking`), attaches labels and computes every
:class:`~releval.metrics.stats.RunStat` and :class:`~releval.metrics.stats.QrelsStat`
the measures asked for, returning one row per (run partition, query), and one row per
query of the qrels with its qrels statistics (for the queries a run missed). No Python code
runs per row or per query: each step is one NumPy operation over the partition.

A partition is held in the Python worker's memory while it is computed, so the
shuffle partition count must keep partitions small (``releval.layout``).

Every qrels row the function receives with a label is a judgment, whatever the label; a
null label is not a judgment, but puts its query among the qrels' queries. The
negative-label rule is applied before, where both engines read their labels
(:func:`releval.metrics.compute.judgment`: by default a negative label arrives as null).

**The ledger** (``ledger=True``, what the batch job uses): the run rows arrive with the
row rules' ``_reason`` (``releval.quality``; null = clean) and nothing is filtered out
between the scan and the engine (a projection, the union and the one shuffle). The engine
first counts every run row it received per run partition, before anything else touches
them; ranking by rank, it gives the clean rows the repeated-row rules set aside their
reason (``duplicate_doc``, ``duplicate_rank``: :mod:`releval.repeats`); then it counts the
rows with a reason per reason (they are not ranked), drops and counts the repeated
documents (``_repeated``: ranking by score) and ranks the rest (``num_ret``). The
counts come back as *ledger rows* of the result (query id null, ``_ledger`` =
:data:`releval.quality.RECEIVED` or the reason, ``_rows`` = the count), next to the
queries' rows: the input accounting comes out of the evaluation's own pass, and a row the
engine loses between receiving and ranking breaks ``received = used + quarantined``. The
counts are data, not accumulators, so a retried task or a recomputed stage does not count
twice (``DataFrame.observe`` would, in Spark 4.0).

The qrels rows come the same way, every one with its row rules' reason and its label as
read (``_qrels_label``): the engine counts those it received and those rejected per
reason, and then, over the clean ones it keeps, the rows with a lower label than another
row of their (query, doc) (``conflicting_label``: the highest label is the one used), the
exact duplicate judgments (kept, counted once), the rows used and the highest used label.
A (query, doc)'s rows share a query, so one shuffle partition sees them all. These ledger
rows carry :data:`releval.quality.QRELS_LEDGER` before their tag and null partition
columns (the qrels belong to no run partition): the job's only pass over the qrels rows
that the evaluation does not make anyway.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from releval import schemas as S
from releval.arrays import codes as _codes
from releval.arrays import group_ids as _group_ids
from releval.arrays import to_numpy as _numpy
from releval.layout import by_query
from releval.metrics.stats import QrelsStat, RunStat, Stats
from releval.partitions import quote_identifier
from releval.quality import (
    CONFLICTING,
    EXACT_DUPLICATE,
    MAX_LABEL,
    QRELS_LEDGER,
    REASON,
    RECEIVED,
    USED,
)
from releval.ranking import best_first
from releval.repeats import highest_labels, mark_repeats, repeated_documents

_IS_RUN = "_is_run"
_ORDER = "_order"
_IN_RUN = "_in_run"
#: The query has a clean qrels row (``releval.metrics.compute.IN_QRELS``).
_IN_QRELS = "_in_qrels"
#: Run rows of the query dropped as a repeated document (``releval.metrics.compute.REPEATED``).
_REPEATED = "_repeated"
#: On the qrels' row of each query: how many run partitions retrieved it (with a clean
#: run row), 0 when none did (``releval.metrics.compute.query_table`` finds a one-run
#: job's missing queries by it); null on the other rows.
RETRIEVED_BY = "_retrieved_by"

#: On a ledger row: :data:`releval.quality.RECEIVED` (the run rows the engine received)
#: or the reason code of the rows the row rules rejected; null on a query's row.
LEDGER = "_ledger"
#: On a ledger row: how many rows.
LEDGER_ROWS = "_rows"
#: On a qrels row of the ledger's input: the typed label as read (the accounting's; the
#: ``relevance`` column holds the judgment the measures read, null when it is none).
QRELS_LABEL = "_qrels_label"

_COUNT_KINDS = ("num_ret", "ret", "judged_ret", "rel_ret")
_LIST_KINDS = ("rel_pos", "nonrel_above")


def _arrow_type(spec: RunStat) -> pa.DataType:
    if spec.kind in _COUNT_KINDS or spec.kind == "first_rel":
        return pa.int64()
    if spec.kind in _LIST_KINDS:
        return pa.list_(pa.int64())
    return pa.float64()


def _ddl(spec: RunStat) -> str:
    if spec.kind in _LIST_KINDS:
        return "array<bigint>"
    return "bigint" if spec.kind in _COUNT_KINDS or spec.kind == "first_rel" else "double"


class _Ranked:
    """One partition's deduplicated run rows in ranking order, with their labels."""

    def __init__(self, group: np.ndarray, position: np.ndarray, label: np.ndarray,
                 judged: np.ndarray, groups: int) -> None:
        self.group, self.position, self.label, self.judged = group, position, label, judged
        self.groups = groups
        self.starts = np.searchsorted(group, np.arange(groups))
        self.judged_position = self.running(judged.astype(np.int64))

    def running(self, values: np.ndarray) -> np.ndarray:
        """Running sum of ``values`` within each group, current row included."""
        total = np.cumsum(values)
        before = np.concatenate(([0], total))[self.starts][self.group]
        return total - before

    def per_group(self, weights: np.ndarray) -> np.ndarray:
        return np.bincount(self.group, weights=weights, minlength=self.groups)

    def relevant(self, level: int) -> np.ndarray:
        return self.judged & (self.label >= level)

    def view_position(self, judged: bool) -> np.ndarray:
        return self.judged_position if judged else self.position

    def within(self, *, judged: bool, cutoff: int | None) -> np.ndarray:
        """Rows the view counts at ranks 1..cutoff (the judged view: judged rows only)."""
        rows = self.judged if judged else np.ones(len(self.group), dtype=bool)
        if cutoff is None:
            return rows
        return rows & (self.view_position(judged) <= cutoff)

    def lists(self, selected: np.ndarray, values: np.ndarray) -> pa.Array:
        """One list per group of ``values`` at the selected rows, in ranking order."""
        counts = np.bincount(self.group[selected], minlength=self.groups)
        offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int32)
        return pa.ListArray.from_arrays(pa.array(offsets), pa.array(values[selected], pa.int64()))


def _gain(label: np.ndarray, gain: str) -> np.ndarray:
    positive = np.where(label > 0, label, 0).astype(np.float64)
    return positive if gain == "linear" else np.where(label > 0, np.exp2(positive) - 1.0, 0.0)


def _first_rel(r: _Ranked, spec: RunStat) -> pa.Array:
    selected = r.relevant(spec.level or 0)
    groups = r.group[selected]
    first = np.flatnonzero(np.concatenate(([True], groups[1:] != groups[:-1]))[: len(groups)])
    out = np.zeros(r.groups, dtype=np.int64)
    mask = np.ones(r.groups, dtype=bool)
    out[groups[first]] = r.view_position(spec.judged)[selected][first]
    mask[groups[first]] = False
    return pa.array(out, pa.int64(), mask=mask)


def _count(r: _Ranked, spec: RunStat) -> np.ndarray:
    rows = r.within(judged=spec.judged, cutoff=spec.cutoff)
    if spec.kind == "judged_ret":
        rows = rows & r.judged
    elif spec.kind == "rel_ret":
        rows = rows & r.relevant(spec.level or 0)
    return r.per_group(rows).astype(np.int64)


def _dcg(r: _Ranked, spec: RunStat) -> np.ndarray:
    rows = r.within(judged=spec.judged, cutoff=spec.cutoff)
    position = np.maximum(r.view_position(spec.judged), 1).astype(np.float64)
    term = _gain(np.where(r.judged, r.label, 0), spec.gain) / np.log2(position + 1.0)
    return r.per_group(np.where(rows, term, 0.0))


def _prec_sum(r: _Ranked, spec: RunStat) -> np.ndarray:
    relevant = r.relevant(spec.level or 0)
    rows = relevant & r.within(judged=spec.judged, cutoff=spec.cutoff)
    running = r.running(relevant.astype(np.int64)).astype(np.float64)
    position = np.maximum(r.view_position(spec.judged), 1).astype(np.float64)
    return r.per_group(np.where(rows, running / position, 0.0))


def _rel_pos(r: _Ranked, spec: RunStat) -> pa.Array:
    return r.lists(r.relevant(spec.level or 0), r.view_position(spec.judged))


def _nonrel_above(r: _Ranked, spec: RunStat) -> pa.Array:
    level = spec.level or 0
    nonrel = r.judged & (r.label < level)
    return r.lists(r.relevant(level), r.running(nonrel.astype(np.int64)))


#: How the kernel computes each kind of :class:`RunStat` (one entry per kind).
KINDS: dict[str, Callable[[_Ranked, RunStat], Any]] = {
    "num_ret": _count,
    "ret": _count,
    "judged_ret": _count,
    "rel_ret": _count,
    "first_rel": _first_rel,
    "dcg": _dcg,
    "prec_sum": _prec_sum,
    "rel_pos": _rel_pos,
    "nonrel_above": _nonrel_above,
}


class _Judgments:
    """One partition's judgments grouped by query: one label per (query, doc), the highest,
    each query's labels best first (the ideal ranking)."""

    def __init__(self, query: np.ndarray, label: np.ndarray, queries: int) -> None:
        order = np.lexsort((-label, query))
        self.query, self.label, self.queries = query[order], label[order], queries
        starts = np.searchsorted(self.query, np.arange(queries))
        self.position = np.arange(len(order), dtype=np.int64) - starts[self.query] + 1

    def per_query(self, weights: np.ndarray) -> np.ndarray:
        return np.bincount(self.query, weights=weights, minlength=self.queries)


def _num_rel(j: _Judgments, spec: QrelsStat) -> np.ndarray:
    return j.per_query(j.label >= (spec.level or 0)).astype(np.int64)


def _num_nonrel(j: _Judgments, spec: QrelsStat) -> np.ndarray:
    return j.per_query(j.label < (spec.level or 0)).astype(np.int64)


def _idcg(j: _Judgments, spec: QrelsStat) -> np.ndarray:
    within = np.ones(len(j.label), dtype=bool) if spec.cutoff is None else j.position <= spec.cutoff
    term = _gain(j.label, spec.gain) / np.log2(j.position.astype(np.float64) + 1.0)
    return j.per_query(np.where(within, term, 0.0))


def _qrels_ddl(spec: QrelsStat) -> str:
    """The Spark type of a qrels statistic: the ideal DCG is a double, the counts bigints
    (what :data:`QRELS_KINDS` return: float64 and int64 arrays)."""
    return "double" if spec.kind == "idcg" else "bigint"


#: How the kernel computes each kind of :class:`QrelsStat` (one entry per kind).
QRELS_KINDS: dict[str, Callable[[_Judgments, QrelsStat], np.ndarray]] = {
    "num_rel": _num_rel,
    "num_nonrel": _num_nonrel,
    "idcg": _idcg,
}


def _labels(qrels: pa.Table, query: np.ndarray, doc: np.ndarray, docs: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted (query, doc) keys of the qrels' judgments and their label (the highest per key).

    A row with a null label is not a judgment (:func:`releval.metrics.compute.judgment`).
    """
    labels = qrels.column(S.RELEVANCE)
    if labels.null_count:
        judged = _numpy(pc.is_valid(labels)).astype(bool)
        query, doc, labels = query[judged], doc[judged], labels.filter(pa.array(judged))
    key = query * docs + doc
    order, first, best = highest_labels(key, _numpy(labels).astype(np.int64))
    return key[order][first], best[first]


def partition_stats(
    table: pa.Table, *, specs: dict[str, RunStat], partition_columns: Sequence[str], rank_by: str,
    qrels_specs: dict[str, QrelsStat] | None = None,
) -> pa.Table:
    """The statistics of every (run partition, query) in one shuffle partition.

    Args:
        table: run rows (``_is_run`` true: partition columns, query_id, doc_id, ``_order``
            = score or rank) and qrels rows (``_is_run`` false: query_id, doc_id, relevance)
            of the same queries.
        specs: run statistic name -> what to compute.
        partition_columns: the run's partition columns.
        rank_by: "score" or "rank" (:mod:`releval.ranking`).
        qrels_specs: qrels statistic name -> what to compute (from the query's judgments).

    Returns:
        Partition columns, query_id, ``_in_run``, ``_in_qrels`` (the query has a clean
        qrels row), ``_repeated`` (run rows dropped as a repeated document),
        ``_retrieved_by`` (on the qrels' rows: the run partitions that retrieved the
        query) and one column
        per statistic (the qrels statistics null when the query has no qrels): a row per
        (run partition, query) of the run, then a row per query of the qrels (``_in_run``
        false, null partition columns and run statistics); with a ``_reason`` column in
        ``table`` (the ledger: see the module docstring) also ``_ledger`` and ``_rows``,
        and the ledger rows of the partition after the queries' rows.
    """
    ledger = None
    if REASON in table.column_names:
        if rank_by == "rank":  # repeats are set aside like rejected rows (see the function)
            table = _set_aside_repeats_by_rank(table, partition_columns)
        # counted first, from every row received: nothing is dropped before this
        is_run = pc.equal(table.column(_IS_RUN), True)
        rejected = pc.is_valid(table.column(REASON))
        any_rejected = pc.any(rejected).as_py()
        received = [
            _ledger_rows(
                table.select(list(partition_columns)).filter(is_run),
                table.select([*partition_columns, REASON]).filter(pc.and_(is_run, rejected))
                if any_rejected else None,
                partition_columns,
            ),
            _qrels_received(table.select([REASON]).filter(pc.invert(is_run))),
        ]
        if any_rejected:  # copies the partition's columns: only when a row was rejected
            table = table.filter(pc.invert(rejected))
        # the qrels rows kept, counted from what the evaluation reads
        kept = _qrels_kept(table.filter(pc.invert(pc.equal(table.column(_IS_RUN), True))))
        ledger = pa.concat_tables([*received, kept], promote_options="default")
    stats = _query_stats(table, specs=specs, qrels_specs=qrels_specs or {},
                         partition_columns=partition_columns, rank_by=rank_by)
    if ledger is None:
        return stats
    n = stats.num_rows
    stats = stats.append_column(LEDGER, pa.nulls(n, pa.string())).append_column(
        LEDGER_ROWS, pa.nulls(n, pa.int64())
    )
    m = ledger.num_rows
    ledger = ledger.select([c for c in [*partition_columns, LEDGER, LEDGER_ROWS]])
    filled = [
        ledger.column(f.name).cast(f.type) if f.name in ledger.column_names
        else pa.array(np.zeros(m, dtype=bool)) if f.name in (_IN_RUN, _IN_QRELS)
        else pa.array(np.zeros(m, dtype=np.int64)) if f.name == _REPEATED
        else pa.nulls(m, f.type)
        for f in stats.schema
    ]
    return pa.concat_tables([stats, pa.Table.from_arrays(filled, schema=stats.schema)])


def _set_aside_repeats_by_rank(table: pa.Table, partition_columns: Sequence[str]) -> pa.Table:
    """``rank_by = "rank"``: the clean run rows the repeated-row rules of ``releval.repeats``
    set aside get their reason, as the quarantine's labelling gives it: a repeated
    document's other occurrences ``duplicate_doc``, then the rows that share a logged rank
    with a document before them in tie order ``duplicate_rank``.

    Both at once, before anything is counted: a document whose best occurrence loses its
    rank is not ranked at a worse occurrence instead."""
    clean_run = pc.and_(pc.equal(table.column(_IS_RUN), True), pc.is_null(table.column(REASON)))
    rows = np.flatnonzero(_numpy(clean_run).astype(bool))
    if not len(rows):
        return table
    run = table.take(pa.array(rows))
    reasons = _numpy(table.column(REASON)).astype(object)
    rank = _numpy(run.column(_ORDER)).astype(np.float64)
    if not mark_repeats(reasons, rows, run, rank, rank_by="rank", partition_columns=partition_columns):
        return table
    return table.set_column(table.schema.get_field_index(REASON), REASON,
                            pa.array(reasons, pa.string()))


def _ledger_rows(
    run: pa.Table, rejected: pa.Table | None, partition_columns: Sequence[str]
) -> pa.Table:
    """Per run partition: the run rows received (``run``: their partition columns), and the
    rows the row rules rejected per reason (``rejected``: partition columns and reason).

    Returns:
        Partition columns, ``_ledger`` (:data:`RECEIVED` or the reason) and ``_rows``.
    """
    parts = list(partition_columns)
    counts = run.group_by(parts).aggregate([([], "count_all")])
    tables = [pa.table({**{c: counts.column(c) for c in parts},
                        LEDGER: pa.array([RECEIVED] * counts.num_rows, pa.string()),
                        LEDGER_ROWS: counts.column("count_all").cast(pa.int64())})]
    if rejected is not None:
        reasons = rejected.group_by([*parts, REASON]).aggregate([([], "count_all")])
        tables.append(pa.table({**{c: reasons.column(c) for c in parts},
                                LEDGER: reasons.column(REASON).cast(pa.string()),
                                LEDGER_ROWS: reasons.column("count_all").cast(pa.int64())}))
    return pa.concat_tables(tables)


def _qrels_ledger(counts: dict[str, int]) -> pa.Table:
    """Qrels ledger rows (null partition columns, added by :func:`partition_stats`)."""
    tags = [k for k, n in counts.items() if n or k in (RECEIVED, MAX_LABEL)]
    return pa.table({
        LEDGER: pa.array([QRELS_LEDGER + k for k in tags], pa.string()),
        LEDGER_ROWS: pa.array([counts[k] for k in tags], pa.int64()),
    })


def _qrels_received(reasons: pa.Table) -> pa.Table:
    """The qrels rows received (their ``_reason`` column), and those rejected per reason."""
    counts = {RECEIVED: reasons.num_rows}
    if reasons.num_rows and reasons.column(REASON).null_count < reasons.num_rows:
        per = reasons.filter(pc.is_valid(reasons.column(REASON))).group_by([REASON]).aggregate(
            [([], "count_all")]
        )
        counts.update(zip(per.column(REASON).to_pylist(), per.column("count_all").to_pylist(),
                          strict=True))
    return _qrels_ledger(counts)


def _qrels_kept(qrels: pa.Table) -> pa.Table:
    """Over the clean qrels rows the evaluation reads: the rows with a lower label than
    another row of their (query, doc) (``conflicting_label``), the exact duplicates, the
    rows used (the others) and the highest used label."""
    if not qrels.num_rows:
        return _qrels_ledger({})
    query, _ = _codes(qrels.column(S.QUERY_ID))
    doc, dictionary = _codes(qrels.column(S.DOC_ID))
    key = query * max(len(dictionary), 1) + doc
    label = _numpy(qrels.column(QRELS_LABEL)).astype(np.int64)
    order, first, best = highest_labels(key, label)
    label = label[order]
    conflicting = int(np.count_nonzero(label < best))
    return _qrels_ledger({
        USED: len(label) - conflicting,
        CONFLICTING: conflicting,
        EXACT_DUPLICATE: int(np.count_nonzero((label == best) & ~first)),
        MAX_LABEL: int(label.max()),
    })


def _query_stats(
    table: pa.Table, *, specs: dict[str, RunStat], qrels_specs: dict[str, QrelsStat],
    partition_columns: Sequence[str], rank_by: str,
) -> pa.Table:
    """:func:`partition_stats` of clean rows: one row per (run partition, query)."""
    is_run = _numpy(table.column(_IS_RUN)).astype(bool)
    query_all, query_dictionary = _codes(table.column(S.QUERY_ID))
    doc_all, doc_dictionary = _codes(table.column(S.DOC_ID))
    docs = max(len(doc_dictionary), 1)

    run = table.filter(pa.array(is_run))
    run_query, run_doc = query_all[is_run], doc_all[is_run]
    qrels_key, qrels_label = _labels(
        table.filter(pa.array(~is_run)), query_all[~is_run], doc_all[~is_run], docs
    )
    keys = [*partition_columns, S.QUERY_ID]
    group = _group_ids(run, keys, run_query, len(query_dictionary))
    order_value = _numpy(run.column(_ORDER)).astype(np.float64)
    primary = -order_value if rank_by == "score" else order_value
    order = best_first(group, primary, run_doc, doc_dictionary)
    groups = int(group.max()) + 1 if len(group) else 0  # each group keeps at least one row
    # one row per (group, doc): its first occurrence in ranking order is the best one
    repeated = repeated_documents(group[order], run_doc[order], docs)
    dropped = np.bincount(group[order][repeated], minlength=groups).astype(np.int64)
    if repeated.any():
        order = order[~repeated]
    group, run_query, run_doc, order_value = group[order], run_query[order], run_doc[order], order_value[order]
    starts = np.searchsorted(group, np.arange(groups))
    first_row = order[starts]
    if rank_by == "score":
        position = np.arange(len(group), dtype=np.int64) - starts[group] + 1
    else:
        position = order_value.astype(np.int64)
    run_key = run_query * docs + run_doc
    at = np.searchsorted(qrels_key, run_key)
    at[at >= len(qrels_key)] = 0
    judged = (qrels_key[at] == run_key) if len(qrels_key) else np.zeros(len(run_key), dtype=bool)
    label = np.where(judged, qrels_label[at] if len(qrels_key) else 0, 0)
    ranked = _Ranked(group, position, label, judged, groups)

    # the qrels statistics of every query of the partition, from its judgments
    queries = len(query_dictionary)
    in_qrels = np.zeros(queries, dtype=bool)
    in_qrels[query_all[~is_run]] = True  # any clean qrels row, a judgment or not
    judgments = _Judgments(qrels_key // docs, qrels_label, queries)
    per_query = {name: QRELS_KINDS[spec.kind](judgments, spec) for name, spec in qrels_specs.items()}

    group_query = run_query[starts] if groups else np.zeros(0, dtype=np.int64)
    scored = in_qrels[group_query]
    columns: dict[str, Any] = {k: run.column(k).take(pa.array(first_row)) for k in keys}
    columns[_IN_RUN] = pa.array(np.ones(groups, dtype=bool))
    columns[_IN_QRELS] = pa.array(scored)
    columns[_REPEATED] = pa.array(dropped)
    columns[RETRIEVED_BY] = pa.nulls(groups, pa.int64())  # said on the qrels' rows only
    for name, spec in specs.items():
        columns[name] = KINDS[spec.kind](ranked, spec)
    for name, values in per_query.items():
        columns[name] = pa.array(values[group_query], mask=~scored)
    queries_rows = pa.table(columns)
    # and one row per query of the qrels, for the queries a run partition did not retrieve
    judged_queries = np.flatnonzero(in_qrels)
    n = len(judged_queries)
    # a group is a (run partition, query): the run partitions that retrieved each query
    retrieved_by = np.bincount(group_query, minlength=queries).astype(np.int64)
    qrels_rows = {
        **{c: pa.nulls(n, run.schema.field(c).type) for c in partition_columns},
        S.QUERY_ID: query_dictionary.take(pa.array(judged_queries)).cast(pa.string()),
        _IN_RUN: pa.array(np.zeros(n, dtype=bool)),
        _IN_QRELS: pa.array(np.ones(n, dtype=bool)),
        _REPEATED: pa.array(np.zeros(n, dtype=np.int64)),
        RETRIEVED_BY: pa.array(retrieved_by[judged_queries]),
        **{name: pa.nulls(n, _arrow_type(spec)) for name, spec in specs.items()},
        **{name: pa.array(values[judged_queries]) for name, values in per_query.items()},
    }
    return pa.concat_tables([
        queries_rows,
        pa.Table.from_arrays([qrels_rows[f.name].cast(f.type) for f in queries_rows.schema],
                             schema=queries_rows.schema),
    ])


def arrow_run_stats(
    run: DataFrame,
    qrels: DataFrame,
    *,
    stats: Stats,
    partition_columns: Sequence[str],
    laid_out_by_query: bool = False,
    ledger: bool = False,
) -> DataFrame:
    """One row per (run partition, query) with every run statistic of ``stats``.

    Args:
        run: canonical run rows.
        qrels: canonical qrels rows (a null relevance: not a judgment).
        stats: the collector the measures filled.
        partition_columns: the run's partition columns.
        laid_out_by_query: ignored: the union of both inputs is shuffled by query id here
            (a union of two partitioned inputs is not partitioned).
        ledger: ``run`` holds every run row with the row rules' ``_reason``, ``qrels``
            every qrels row with its ``_reason`` and ``_qrels_label``; the result gets the
            ledger rows of both (see the module docstring).

    Returns:
        Partition columns, query_id, ``_in_run``, ``_repeated``, ``_retrieved_by`` and the
        statistics, like the SQL oracle; with ``ledger`` also ``_ledger`` and ``_rows``.
    """
    parts = list(partition_columns)
    order_column = S.SCORE if stats.rank_by == "score" else S.RANK
    rows = run.select(
        *parts, S.QUERY_ID, S.DOC_ID,
        F.col(order_column).cast("double").alias(_ORDER),
        F.lit(None).cast("int").alias(S.RELEVANCE),
        F.lit(True).alias(_IS_RUN),
        *([F.col(REASON), F.lit(None).cast("int").alias(QRELS_LABEL)] if ledger else []),
    )
    judgments = qrels.select(
        *[F.lit(None).cast(run.schema[c].dataType).alias(c) for c in parts],
        S.QUERY_ID, S.DOC_ID,
        F.lit(None).cast("double").alias(_ORDER),
        F.col(S.RELEVANCE).cast("int").alias(S.RELEVANCE),
        F.lit(False).alias(_IS_RUN),
        *([F.col(REASON), F.col(QRELS_LABEL).cast("int").alias(QRELS_LABEL)] if ledger else []),
    )
    specs = dict(stats.run_spec)
    qrels_specs = dict(stats.qrels_spec)
    rank_by = stats.rank_by
    part_ddl = [f"{quote_identifier(c)} {run.schema[c].dataType.simpleString()}" for c in parts]
    schema = ", ".join([
        *part_ddl, f"`{S.QUERY_ID}` string", f"`{_IN_RUN}` boolean", f"`{_IN_QRELS}` boolean",
        f"`{_REPEATED}` bigint", f"`{RETRIEVED_BY}` bigint",
        *[f"`{n}` {_ddl(s)}" for n, s in specs.items()],
        *[f"`{n}` {_qrels_ddl(s)}" for n, s in qrels_specs.items()],
        *([f"`{LEDGER}` string", f"`{LEDGER_ROWS}` bigint"] if ledger else []),
    ])

    def compute(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        collected = list(batches)
        if not collected or not any(b.num_rows for b in collected):
            return
        table = partition_stats(
            pa.Table.from_batches(collected), specs=specs, partition_columns=parts, rank_by=rank_by,
            qrels_specs=qrels_specs,
        )
        yield from table.to_batches()

    return by_query(rows.unionByName(judgments)).mapInArrow(compute, schema)


__all__ = ["KINDS", "LEDGER", "LEDGER_ROWS", "QRELS_LABEL", "RETRIEVED_BY", "arrow_run_stats",
           "partition_stats"]
