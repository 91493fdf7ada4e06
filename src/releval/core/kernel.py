"""The NumPy statistics of one shuffle partition: rank, judge and measure every query.

:func:`partition_stats` gets all of a query's run and qrels rows in one partition; it
deduplicates, ranks, attaches labels and computes every statistic the measures asked for.
See docs/design/engine.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from releval.core import columns as S
from releval.core.arrays import codes as _codes
from releval.core.arrays import gain_of as _gain
from releval.core.arrays import group_ids as _group_ids
from releval.core.arrays import to_numpy as _numpy
from releval.core.columns import (
    BEYOND_DEPTH,
    IN_QRELS,
    IN_RUN,
    IS_RUN,
    LEDGER,
    LEDGER_ROWS,
    ORDER,
    QRELS_LABEL,
    REASON,
    REPEATED,
    RETRIEVED_BY,
)
from releval.core.judgments import QRELS_KINDS, ideal_at_window, qrels_ddl
from releval.core.judgments import Judgments as _Judgments
from releval.core.ledger import (
    ledger_rows,
    qrels_kept,
    qrels_received,
    set_aside_repeats_by_rank,
)
from releval.core.measures.stats import QrelsStat, RunStat
from releval.core.ranked import Ranked
from releval.core.ranking import best_first, beyond_depth
from releval.core.repeats import highest_labels, repeated_documents
from releval.core.run_slices import slice_values
from releval.core.ties import TIE_KINDS, tie_groups
from releval.core.walks import walk
from releval.core.window import group_windows, set_aside_conflicting_windows

_COUNT_KINDS = ("num_ret", "ret", "judged_ret", "rel_ret", "window")
_LIST_KINDS = ("rel_pos", "nonrel_above")


def _arrow_type(spec: RunStat) -> pa.DataType:
    if spec.kind in _COUNT_KINDS or spec.kind == "first_rel":
        return pa.int64()
    if spec.kind in _LIST_KINDS:
        return pa.list_(pa.int64())
    return pa.float64()


def run_ddl(spec: RunStat) -> str:
    if spec.kind in _LIST_KINDS:
        return "array<bigint>"
    return "bigint" if spec.kind in _COUNT_KINDS or spec.kind == "first_rel" else "double"


def _first_rel(r: Ranked, spec: RunStat) -> pa.Array:
    selected = r.relevant(spec.level or 0, best=spec.best)
    groups = r.group[selected]
    first = np.flatnonzero(np.concatenate(([True], groups[1:] != groups[:-1]))[: len(groups)])
    out = np.zeros(r.groups, dtype=np.int64)
    mask = np.ones(r.groups, dtype=bool)
    out[groups[first]] = r.view_position(spec.judged)[selected][first]
    mask[groups[first]] = False
    return pa.array(out, pa.int64(), mask=mask)


def _count(r: Ranked, spec: RunStat) -> np.ndarray:
    def rows() -> np.ndarray:
        if spec.kind == "judged_ret":
            return r.judged.astype(np.int64)
        if spec.kind == "rel_ret":
            return r.relevant(spec.level or 0, best=spec.best).astype(np.int64)
        return np.ones(len(r.group), dtype=np.int64)  # num_ret and ret count every row
    counted = spec.kind if spec.kind in ("judged_ret", "rel_ret") else "ret"
    return r.total(r.memo(("count", counted, spec.level, spec.best), rows),
                   judged=spec.judged, cutoff=spec.cutoff)


def _dcg(r: Ranked, spec: RunStat) -> np.ndarray:
    def term() -> np.ndarray:
        position = np.maximum(r.view_position(spec.judged), 1).astype(np.float64)
        return _gain(np.where(r.judged, r.label, 0), spec.gain) / np.log2(position + 1.0)
    return r.total(r.memo(("dcg", spec.gain, spec.judged), term), judged=spec.judged,
                   cutoff=spec.cutoff)


def _prec_sum(r: Ranked, spec: RunStat) -> np.ndarray:
    def term() -> np.ndarray:
        relevant = r.relevant(spec.level or 0)
        running = r.running(relevant.astype(np.int64)).astype(np.float64)
        position = np.maximum(r.view_position(spec.judged), 1).astype(np.float64)
        return np.where(relevant, running / position, 0.0)
    return r.total(r.memo(("prec_sum", spec.level, spec.judged), term), judged=spec.judged,
                   cutoff=spec.cutoff)


def _rel_pos(r: Ranked, spec: RunStat) -> pa.Array:
    return r.lists(r.relevant(spec.level or 0), r.view_position(spec.judged))


def _nonrel_above(r: Ranked, spec: RunStat) -> pa.Array:
    level = spec.level or 0
    nonrel = r.judged & (r.label < level)
    return r.lists(r.relevant(level), r.running(nonrel.astype(np.int64)))


#: How the kernel computes each kind of :class:`RunStat` (one entry per kind).
KINDS: dict[str, Callable[[Ranked, RunStat], Any]] = {
    "num_ret": _count,
    "ret": _count,
    "judged_ret": _count,
    "rel_ret": _count,
    "first_rel": _first_rel,
    "dcg": _dcg,
    "prec_sum": _prec_sum,
    "rel_pos": _rel_pos,
    "nonrel_above": _nonrel_above,
    "walk": walk,
    **TIE_KINDS,
    "window": lambda r, spec: r.windows(),
    "idcg": lambda r, spec: ideal_at_window(r.judgments, r.group_query, r.windows(), spec.gain),
}


def engine_rows(table: pa.Table, *, negative_labels: str) -> pa.Table:
    """The engine's rows as :func:`partition_stats` reads them. A qrels row's label travels
    in ``_order`` (each column is shuffled at a fixed cost per row); this gives it back as
    ``relevance``, the label the measures read, and, with ``_reason``, as ``_qrels_label``.

    ``relevance`` is null when the row is not a judgment: a rejected row, a null label, or a
    negative label under ``negative_labels="unjudged"`` (trec_eval's rule: pooled, not
    judged); under ``"judged"`` a negative label is a judgment, non-relevant at every level
    above it. This is the one place the rule applies.
    """
    is_run = table.column(IS_RUN)
    value = table.column(ORDER)
    label = pc.cast(pc.if_else(is_run, pa.scalar(None, pa.float64()), value), pa.int32())
    judged = pc.greater_equal(label, 0) if negative_labels == "unjudged" else pc.is_valid(label)
    if REASON in table.column_names:
        judged = pc.and_(judged, pc.is_null(table.column(REASON)))
        table = table.append_column(QRELS_LABEL, label)
    table = table.set_column(table.schema.get_field_index(ORDER), ORDER,
                             pc.if_else(is_run, value, pa.scalar(None, pa.float64())))
    return table.append_column(S.RELEVANCE, pc.if_else(judged, label, pa.scalar(None, pa.int32())))


def _labels(qrels: pa.Table, query: np.ndarray, doc: np.ndarray, docs: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted (query, doc) keys of the qrels' judgments (non-null labels), highest label each."""
    labels = qrels.column(S.RELEVANCE)
    if labels.null_count:
        judged = _numpy(pc.is_valid(labels)).astype(bool)
        query, doc, labels = query[judged], doc[judged], labels.filter(pa.array(judged))
    key = query * docs + doc
    order, first, best = highest_labels(key, _numpy(labels).astype(np.int64))
    return key[order][first], best[first]


def partition_stats(
    table: pa.Table, *, specs: dict[str, RunStat], partition_columns: Sequence[str], rank_by: str,
    qrels_specs: dict[str, QrelsStat] | None = None, depth: int | None = None,
    slices: Sequence[str] = (),
) -> pa.Table:
    """The statistics of every (run partition, query) in one shuffle partition.

    Args:
        table: run rows (``_is_run`` true, ``_order`` = score or rank) and qrels rows
            (``_is_run`` false, relevance) of the same queries.
        specs: run statistic name -> what to compute.
        rank_by: "score" or "rank" (:mod:`releval.core.ranking`).
        qrels_specs: qrels statistic name -> what to compute.
        depth: evaluate only each ranking's first ``depth`` documents (None: all).
        slices: run columns constant per (run partition, query), strings
            (:mod:`releval.core.run_slices`): each row gives its group's value (null on the
            qrels' rows).

    Returns:
        A row per (run partition, query) of the run, then a row per qrels query (``_in_run``
        false, ``_retrieved_by``: the run partitions that retrieved it), with the flags,
        ``_repeated``, ``_beyond_depth`` and one column per statistic; when ``table`` has
        ``_reason``, also ``_ledger``, ``_rows`` and the partition's ledger rows.
    """
    ledger = None
    if REASON in table.column_names:
        if S.WINDOW in table.column_names:  # a whole query set aside, before any count
            table = set_aside_conflicting_windows(table, partition_columns)
        if rank_by == "rank":  # repeats are set aside like rejected rows (see the function)
            table = set_aside_repeats_by_rank(table, partition_columns)
        # counted first, from every row received: nothing is dropped before this
        is_run = pc.equal(table.column(IS_RUN), True)
        rejected = pc.is_valid(table.column(REASON))
        any_rejected = pc.any(rejected).as_py()
        received = [
            ledger_rows(
                table.select(list(partition_columns)).filter(is_run),
                table.select([*partition_columns, REASON]).filter(pc.and_(is_run, rejected))
                if any_rejected else None,
                partition_columns,
            ),
            qrels_received(table.select([REASON]).filter(pc.invert(is_run))),
        ]
        if any_rejected:  # copies the partition's columns: only when a row was rejected
            table = table.filter(pc.invert(rejected))
        # the qrels rows kept, counted from what the evaluation reads
        kept = qrels_kept(table.filter(pc.invert(pc.equal(table.column(IS_RUN), True))))
        ledger = pa.concat_tables([*received, kept], promote_options="default")
    stats = _query_stats(table, specs=specs, qrels_specs=qrels_specs or {},
                         partition_columns=partition_columns, rank_by=rank_by, depth=depth,
                         slices=slices)
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
        else pa.array(np.zeros(m, dtype=bool)) if f.name in (IN_RUN, IN_QRELS)
        else pa.array(np.zeros(m, dtype=np.int64)) if f.name in (REPEATED, BEYOND_DEPTH)
        else pa.nulls(m, f.type)
        for f in stats.schema
    ]
    return pa.concat_tables([stats, pa.Table.from_arrays(filled, schema=stats.schema)])


def _query_stats(
    table: pa.Table, *, specs: dict[str, RunStat], qrels_specs: dict[str, QrelsStat],
    partition_columns: Sequence[str], rank_by: str, depth: int | None,
    slices: Sequence[str] = (),
) -> pa.Table:
    """:func:`partition_stats` of clean rows: one row per (run partition, query)."""
    is_run = _numpy(table.column(IS_RUN)).astype(bool)
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
    row_group = group  # each run row's group, in the run's order
    order_value = _numpy(run.column(ORDER)).astype(np.float64)
    primary = -order_value if rank_by == "score" else order_value
    order = best_first(group, primary, run_doc, doc_dictionary)
    groups = int(group.max()) + 1 if len(group) else 0  # each group keeps at least one row
    # one row per (group, doc): its first occurrence in ranking order is the best one
    repeated = repeated_documents(group[order], run_doc[order], docs)
    dropped = np.bincount(group[order][repeated], minlength=groups).astype(np.int64)
    if repeated.any():
        order = order[~repeated]
    # then each ranking's first ``depth`` rows (trec_eval -M); the rest are counted, not evaluated
    beyond = beyond_depth(group[order], depth)
    cut = np.bincount(group[order][beyond], minlength=groups).astype(np.int64)
    if beyond.any():
        order = order[~beyond]
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
    ranked = Ranked(group, position, label, judged, groups, ordinal_positions=rank_by == "score")
    if any(spec.kind in TIE_KINDS for spec in specs.values()):
        ranked.tie = tie_groups(group, order_value, rank_by)
    if S.WINDOW in run.column_names:
        ranked.window = group_windows(group, _numpy(run.column(S.WINDOW))[order], groups)
    if any(spec.kind == "walk" for spec in specs.values()):
        # in the qrels without a judgment (a negative label read as unjudged): infAP's pool
        pool = np.unique(query_all[~is_run] * docs + doc_all[~is_run])
        ranked.pooled = judged | np.isin(run_key, pool)

    # the qrels statistics of every query of the partition, from its judgments
    queries = len(query_dictionary)
    in_qrels = np.zeros(queries, dtype=bool)
    in_qrels[query_all[~is_run]] = True  # any clean qrels row, a judgment or not
    judgments = _Judgments(qrels_key // docs, qrels_label, queries)
    per_query = {name: QRELS_KINDS[spec.kind](judgments, spec) for name, spec in qrels_specs.items()}

    group_query = run_query[starts] if groups else np.zeros(0, dtype=np.int64)
    ranked.judgments, ranked.group_query = judgments, group_query
    scored = in_qrels[group_query]
    columns: dict[str, Any] = {k: run.column(k).take(pa.array(first_row)) for k in keys}
    for c in slices:  # (conflicting) when the group's rows disagree: its score stays
        columns[c] = slice_values(run.column(c), row_group, groups, first_row)
    columns[IN_RUN] = pa.array(np.ones(groups, dtype=bool))
    columns[IN_QRELS] = pa.array(scored)
    columns[REPEATED] = pa.array(dropped)
    columns[BEYOND_DEPTH] = pa.array(cut)
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
        **{c: pa.nulls(n, pa.string()) for c in slices},
        IN_RUN: pa.array(np.zeros(n, dtype=bool)),
        IN_QRELS: pa.array(np.ones(n, dtype=bool)),
        REPEATED: pa.array(np.zeros(n, dtype=np.int64)),
        BEYOND_DEPTH: pa.array(np.zeros(n, dtype=np.int64)),
        RETRIEVED_BY: pa.array(retrieved_by[judged_queries]),
        **{name: pa.nulls(n, _arrow_type(spec)) for name, spec in specs.items()},
        **{name: pa.array(values[judged_queries]) for name, values in per_query.items()},
    }
    return pa.concat_tables([
        queries_rows,
        pa.Table.from_arrays([qrels_rows[f.name].cast(f.type) for f in queries_rows.schema],
                             schema=queries_rows.schema),
    ])


__all__ = ["KINDS", "QRELS_KINDS", "engine_rows", "partition_stats", "qrels_ddl"]
