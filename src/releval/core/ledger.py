"""The engine's ledger: the input rows it received, rejected and used, counted as data.

Ledger rows (``_ledger`` the tag, ``_rows`` the count) come back with the queries' rows,
so a retried task does not count twice. See docs/design/checks.md.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from releval.core import columns as S
from releval.core.arrays import codes as _codes
from releval.core.arrays import to_numpy as _numpy
from releval.core.columns import (
    CONFLICTING,
    EXACT_DUPLICATE,
    IS_RUN,
    LEDGER,
    LEDGER_ROWS,
    MAX_LABEL,
    ORDER,
    QRELS_LABEL,
    QRELS_LEDGER,
    REASON,
    RECEIVED,
    USED,
)
from releval.core.repeats import highest_labels, mark_repeats


def set_aside_repeats_by_rank(table: pa.Table, partition_columns: Sequence[str]) -> pa.Table:
    """``rank_by = "rank"``: give the clean run rows set aside as repeats their reason.

    Before anything is counted, so a document whose best occurrence loses its rank is not
    ranked at a worse occurrence instead."""
    clean_run = pc.and_(pc.equal(table.column(IS_RUN), True), pc.is_null(table.column(REASON)))
    rows = np.flatnonzero(_numpy(clean_run).astype(bool))
    if not len(rows):
        return table
    run = table.take(pa.array(rows))
    reasons = _numpy(table.column(REASON)).astype(object)
    rank = _numpy(run.column(ORDER)).astype(np.float64)
    if not mark_repeats(reasons, rows, run, rank, rank_by="rank", partition_columns=partition_columns):
        return table
    return table.set_column(table.schema.get_field_index(REASON), REASON,
                            pa.array(reasons, pa.string()))


def ledger_rows(
    run: pa.Table, rejected: pa.Table | None, partition_columns: Sequence[str]
) -> pa.Table:
    """Per run partition: the run rows received and those rejected per reason.

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


def qrels_ledger(counts: dict[str, int]) -> pa.Table:
    """Qrels ledger rows (null partition columns, added by :func:`partition_stats`)."""
    tags = [k for k, n in counts.items() if n or k in (RECEIVED, MAX_LABEL)]
    return pa.table({
        LEDGER: pa.array([QRELS_LEDGER + k for k in tags], pa.string()),
        LEDGER_ROWS: pa.array([counts[k] for k in tags], pa.int64()),
    })


def qrels_received(reasons: pa.Table) -> pa.Table:
    """The qrels rows received (their ``_reason`` column), and those rejected per reason."""
    counts = {RECEIVED: reasons.num_rows}
    if reasons.num_rows and reasons.column(REASON).null_count < reasons.num_rows:
        per = reasons.filter(pc.is_valid(reasons.column(REASON))).group_by([REASON]).aggregate(
            [([], "count_all")]
        )
        counts.update(zip(per.column(REASON).to_pylist(), per.column("count_all").to_pylist(),
                          strict=True))
    return qrels_ledger(counts)


def qrels_kept(qrels: pa.Table) -> pa.Table:
    """Of the clean qrels rows: the ``conflicting_label`` rows, exact duplicates, rows used
    and the highest label."""
    if not qrels.num_rows:
        return qrels_ledger({})
    query, _ = _codes(qrels.column(S.QUERY_ID))
    doc, dictionary = _codes(qrels.column(S.DOC_ID))
    key = query * max(len(dictionary), 1) + doc
    label = _numpy(qrels.column(QRELS_LABEL)).astype(np.int64)
    order, first, best = highest_labels(key, label)
    label = label[order]
    conflicting = int(np.count_nonzero(label < best))
    return qrels_ledger({
        USED: len(label) - conflicting,
        CONFLICTING: conflicting,
        EXACT_DUPLICATE: int(np.count_nonzero((label == best) & ~first)),
        MAX_LABEL: int(label.max()),
    })
