"""One aggregation over the evaluation's persisted wide table: the summary's query counts,
both inputs' ledgers, the unjudged shares and the aggregate's sums, fused into one ``groupBy``
because a pass of its own would read the persisted table again per concern."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F

from releval.checks.queries import LISTED
from releval.config import IntervalSettings
from releval.core import columns as S
from releval.core.columns import (
    BEYOND_DEPTH,
    IN_QRELS,
    IN_RUN,
    LEDGER,
    LEDGER_ROWS,
    QRELS_LEDGER,
    REPEATED,
    TIE_DEPENDENT,
    USED,
)
from releval.core.measures import Measure
from releval.core.measures.judged import JUDGED
from releval.core.overall import overall, overall_column
from releval.core.repeats import DUPLICATE_DOC
from releval.evaluation.summary import TieDependence, UnjudgedRate
from releval.frames.aggregate import ENTRY as AGGREGATE_ENTRY
from releval.frames.aggregate import INDEX as AGGREGATE_INDEX
from releval.frames.aggregate import N as AGGREGATE_N
from releval.frames.aggregate import by_measure, group_columns, sums, with_slices
from releval.frames.intervals import FEW_QUERIES


def _judged_cutoffs(measures: Sequence[Measure]) -> dict[int, int]:
    """cutoff k -> the index of its Judged@k entry in the wide table's measure array."""
    found: dict[int, int] = {}
    for i, m in enumerate(measures):
        if m.name == JUDGED and m.cutoff is not None and not m.judged_only:
            found.setdefault(int(m.cutoff), i)
    return found


@dataclass(frozen=True)
class Counts:
    """What :func:`query_counts` reads from the persisted per-query table."""

    #: the summary's query and partition counts
    queries: dict[str, int]
    #: the run's ledger, by partition values as strings
    run_ledger: dict[tuple[str | None, ...], dict[str, int]]
    #: the qrels' ledger rows as (tag without ``qrels:``, count), one per engine partition
    qrels_ledger: tuple[tuple[str, int], ...]
    unjudged: tuple[UnjudgedRate, ...]
    #: the aggregate's sums, one row per run partition and measure
    sums: tuple[Row, ...] = ()
    tie_dependent: tuple[TieDependence, ...] = ()


def query_counts(
    queries: DataFrame,
    parts: Sequence[str],
    *,
    missing_queries: str,
    measures: Sequence[Measure],
    intervals: IntervalSettings = IntervalSettings(),
    slices: Sequence[str] = (),
    weighted: bool = False,
) -> Counts:
    """The summary's query counts, both inputs' ledgers, the unjudged shares and the
    aggregate's sums, from one aggregation by run partition and measure (and, with
    ``slices``, slice value: the same aggregation, :func:`releval.frames.aggregate.with_slices`).

    The unjudged share at k is 1 - the mean Judged@k over scored queries that retrieved any.

    Args:
        queries: the wide table; with slices or a weight, with the queries' attributes and
            :data:`LISTED` (:func:`releval.checks.queries.with_attributes`).
    """
    # grouped by the typed values (the aggregate's rows), named by their strings (ledger keys)
    as_string = [F.col(c).cast("string").alias(_as_string(c)) for c in parts]
    judged = _judged_cutoffs(measures)
    with_results = F.col(IN_QRELS) & (F.col(S.NUM_RET) > 0)
    # one row per (query row, measure) (by_measure): the sums are the same few columns for
    # every measure, so Spark compiles the aggregation; the counts take each wide row once, at
    # its first measure (a null index: by_measure's one row for a null or empty array)
    once = (F.col(AGGREGATE_INDEX).isNull() | (F.col(AGGREGATE_INDEX) == 0)) & overall_column()
    # a [ties] measure's entry says if the query's value depends on the order of tied scores
    ties = [i for i, m in enumerate(measures) if m.tie_aware]
    tie_count = ([F.count_if(F.col(IN_QRELS) & F.col(AGGREGATE_ENTRY)[TIE_DEPENDENT])
                  .alias("tie_dependent")] if ties else [])
    # grouped by the ledger columns too (null on query rows): each distinct ledger row comes
    # back with its multiplicity, and the aggregation stays declarative (not collect_list)
    listed = ([F.count_if(once & F.col(IN_QRELS) & ~F.col(LISTED)).alias("unlisted")]
              if LISTED in queries.columns else [])
    found = by_measure(with_slices(queries, slices)).groupBy(
        *group_columns(parts), *as_string, LEDGER, LEDGER_ROWS
    ).agg(
        F.count_if(once).alias("items"),
        F.count_if(once & F.col(IN_RUN)).alias("run_queries"),
        F.count_if(once & F.col(IN_RUN) & F.col(IN_QRELS)).alias("scored"),
        F.count_if(once & F.col(IN_RUN) & ~F.col(IN_QRELS)).alias("without_qrels"),
        F.count_if(once & ~F.col(IN_RUN) & F.col(IN_QRELS)).alias("missing"),
        F.sum(F.when(once, F.col(REPEATED))).alias("repeated"),
        # the rows ranked: those evaluated (num_ret) and those past the depth
        F.sum(F.when(once & F.col(IN_RUN), F.col(S.NUM_RET) + F.col(BEYOND_DEPTH)))
        .alias("evaluated"),
        F.sum(F.when(once & F.col(IN_RUN), F.col(BEYOND_DEPTH))).alias("beyond_depth"),
        # per measure: the same for each; Judged@k's mean is the judged share of the top k
        F.count_if(with_results).alias("with_results"),
        F.avg(F.when(with_results, F.col(AGGREGATE_ENTRY)[S.VALUE])).alias("judged"),
        *sums(measures=measures, intervals=intervals, weighted=weighted),
        *tie_count,
        *listed,
    ).collect()
    summed = [r for r in found if r[LEDGER] is None]  # a row per (partition, slice, measure)
    by_index = overall(summed)  # a row per (partition, measure)
    rows = [r for r in by_index if r[AGGREGATE_INDEX] in (None, 0)]  # a row per partition
    counts = {k: sum(int(r[k] or 0) for r in rows)
              for k in ("scored", "without_qrels", "missing", "beyond_depth")}
    counts["unlisted"] = sum(int(r["unlisted"] or 0) for r in rows) if listed else 0
    # the queries each partition's means rest on: scored ones, plus missing ones scored 0
    in_means = [
        int(r["scored"]) + (int(r["missing"]) if missing_queries == "zero" else 0) for r in rows
    ]
    in_means = [n for n in in_means if n > 0]
    counts["min_queries"] = min(in_means, default=0)
    counts["max_queries"] = max(in_means, default=0)
    counts["few_queries"] = sum(1 for n in in_means if n < FEW_QUERIES)
    # partitions with a ranked row and no null value; an all-rejected one is only in the ledger
    counts["partitions"] = (
        sum(1 for r in rows if r["run_queries"] and all(r[c] is not None for c in parts))
        if parts else 1
    )
    by_partition: dict[tuple[str | None, ...], dict[str, int]] = {}
    qrels: list[tuple[str, int]] = []
    for r in found:
        key = tuple(r[_as_string(c)] for c in parts)
        if r[LEDGER] is not None:
            tag, n = r[LEDGER], int(r[LEDGER_ROWS])
            if tag.startswith(QRELS_LEDGER):
                qrels += [(tag.removeprefix(QRELS_LEDGER), n)] * int(r["items"])
            else:
                entry = by_partition.setdefault(key, {})
                entry[tag] = entry.get(tag, 0) + n * int(r["items"])
            continue
        if r["repeated"]:
            entry = by_partition.setdefault(key, {})
            entry[DUPLICATE_DOC] = entry.get(DUPLICATE_DOC, 0) + int(r["repeated"])
        if r["evaluated"]:
            by_partition.setdefault(key, {})[USED] = int(r["evaluated"])
    judged_of = {
        (tuple(r[c] for c in parts), r[AGGREGATE_INDEX]): r for r in by_index
    }
    rates = tuple(
        UnjudgedRate(
            partition=tuple((c, str(r[_as_string(c)])) for c in parts),
            cutoff=k,
            share=1.0 - float(j["judged"]),
            queries=int(j["with_results"]),
        )
        for r in rows
        for k, i in judged.items()
        if (j := judged_of.get((tuple(r[c] for c in parts), i))) is not None
        and j["judged"] is not None
    )
    tie_dependent = tuple(
        TieDependence(
            partition=tuple((c, str(r[_as_string(c)])) for c in parts),
            measure_key=measures[int(r[AGGREGATE_INDEX])].key,
            queries=int(r["tie_dependent"] or 0),
            scored=int(r[AGGREGATE_N] or 0),
        )
        for r in by_index
        if r[AGGREGATE_INDEX] is not None and int(r[AGGREGATE_INDEX]) in ties
    )
    return Counts(counts, by_partition, tuple(qrels), rates, tuple(summed), tie_dependent)


def _as_string(column: str) -> str:
    return f"_string_{column}"
