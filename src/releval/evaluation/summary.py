"""What a job read, scored and wrote, rendered for people: the summary and its overview."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pyspark.sql import Row

from releval.checks.accounts import QualityReport
from releval.config import IntervalSettings
from releval.core import columns as S
from releval.core.measures import Measure
from releval.core.overall import HEADLINE, overall
from releval.evaluation.windows import WindowSpread, render_windows
from releval.frames.intervals import FEW_QUERIES
from releval.stats.attribution import CELLS, NO_QRELS, SHARED_CELLS

#: Measures that gain nothing from graded labels when every label is 0/1 (or negative).
GRADED_MEASURES = ("nDCG", "nDCG_exp")


@dataclass(frozen=True)
class UnjudgedRate:
    """The unjudged share of the top k of one run partition."""

    partition: tuple[tuple[str, str], ...]
    cutoff: int
    share: float
    queries: int

    def label(self) -> str:
        where = ", ".join(f"{c}={v}" for c, v in self.partition)
        return f"{where + ' ' if where else ''}top {self.cutoff}"


@dataclass(frozen=True)
class TieDependence:
    """Of one run partition's scored queries, those whose value of a ``[ties]`` measure
    depends on the order of tied scores."""

    partition: tuple[tuple[str, str], ...]
    measure_key: str
    queries: int
    scored: int


def render_ties(found: Sequence[TieDependence]) -> list[str]:
    """One summary line: per ``[ties]`` measure, the range over run partitions of the
    queries whose value depends on the order of tied scores (empty without such measures)."""
    by_key: dict[str, list[TieDependence]] = {}
    for t in found:
        by_key.setdefault(t.measure_key, []).append(t)
    if not by_key:
        return []
    parts = []
    for key, group in sorted(by_key.items()):
        low, high = min(t.queries for t in group), max(t.queries for t in group)
        most = max(t.scored for t in group)
        parts.append(f"{key} {low if low == high else f'{low}-{high}'} of {most}")
    partitions = len({t.partition for t in found})
    return [
        "  queries whose value depends on the order of tied scores (range over "
        f"{partitions} run partition(s)): {', '.join(parts)}; the plain measures break ties "
        "by doc id descending (trec_eval), the [ties] values average over every order"
    ]


def render_lines(
    rates: Sequence[UnjudgedRate],
    *,
    warning_share: float,
    binary_labels: bool,
    measures: Sequence[Measure],
) -> list[str]:
    """The summary lines about judgment coverage (empty when there is nothing to say).

    One line with the range of the unjudged share over the run partitions at each k, one
    WARNING line per k where some run partition is above ``warning_share``, and one line
    that says where the per-partition figures are (the aggregate table's Judged@k rows,
    ``releval report``): a screen, however many partitions the job evaluated.
    """
    lines: list[str] = []
    by_k: dict[int, list[UnjudgedRate]] = {}
    for rate in sorted(rates, key=lambda r: (r.cutoff, r.partition)):
        by_k.setdefault(rate.cutoff, []).append(rate)
    if by_k:
        ranges = []
        for k, group in by_k.items():
            low, high = min(r.share for r in group), max(r.share for r in group)
            ranges.append(f"top {k} {low:.1%}" if low == high else f"top {k} {low:.1%}-{high:.1%}")
        lines.append(
            "  unjudged share of the top k (1 - mean Judged@k, queries with results; range over "
            f"{len({r.partition for r in rates})} run partition(s)): {', '.join(ranges)}"
        )
    warned = 0
    for k, group in by_k.items():
        high = [r for r in group if r.share > warning_share]
        if not high:
            continue
        warned += 1
        worst = max(high, key=lambda r: r.share)
        where = ", ".join(f"{c}={v}" for c, v in worst.partition) or "the run"
        lines.append(
            f"  WARNING: top {k} more than {warning_share:.0%} unjudged in {len(high)} of "
            f"{len(group)} run partition(s) (worst: {where}, {worst.share:.1%})"
        )
    if warned:
        lines.append(
            "    unjudged documents count as non-relevant, so P@k, nDCG@k and the like "
            "undercount: compare with the judged-only variants (e.g. nDCG@10[judged]) or bpref; "
            "per run partition: Judged@k in the aggregate table, or releval report"
        )
    if binary_labels and any(m.name in GRADED_MEASURES for m in measures):
        lines.append(
            "  note: all qrels labels are binary (at most 1): nDCG adds little over Recall and AP "
            "here, and nDCG_exp equals nDCG."
        )
    return lines




@dataclass(frozen=True)
class Summary:
    """What a job read, scored and wrote."""

    run_rows: int
    qrels_rows: int
    run_partitions: int
    queries_scored: int
    queries_without_qrels: int
    queries_missing_from_run: int
    missing_queries: str
    per_query_rows: int
    aggregate_rows: int
    per_query_version: int = 0
    aggregate_version: int = 0
    unjudged: tuple[UnjudgedRate, ...] = ()
    unjudged_warning_share: float = 0.2
    binary_labels: bool = False
    measures: tuple[Measure, ...] = ()
    quality: QualityReport | None = None
    #: (fewest, most) queries the means of one run partition rest on
    queries_per_mean: tuple[int, int] = (0, 0)
    #: run partitions whose means rest on fewer than FEW_QUERIES queries
    partitions_with_few_queries: int = 0
    intervals: IntervalSettings = IntervalSettings()
    #: each ranking's first ``depth`` documents were evaluated (None: all)
    depth: int | None = None
    #: ranked run rows past the depth: read and used (in the accounts), not evaluated
    rows_beyond_depth: int = 0
    #: per run partition: the window's k_q and the recall it lost (empty: no window)
    windows: tuple[WindowSpread, ...] = ()
    #: the aggregate table's rows this job wrote (a few per run partition), as written
    aggregate: tuple[Row, ...] = ()
    #: per run partition and [ties] measure: the queries whose value depends on tie order
    tie_dependent: tuple[TieDependence, ...] = ()
    #: the attribution table's rows this job wrote (five per run partition with answers)
    attribution: tuple[Row, ...] = ()
    attribution_rows: int | None = None
    attribution_version: int | None = None

    def overview(self, measure_keys: Sequence[str], partition_columns: Sequence[str]) -> str:
        """The rows written as a table for people (:func:`render_overview`)."""
        return render_overview(
            self.aggregate, measure_keys=measure_keys, partition_columns=partition_columns
        )

    def render(self) -> str:
        missing_rule = "scored 0, in means" if self.missing_queries == "zero" else "skipped"
        answers = self.quality.answers if self.quality is not None else None
        read = f", answers {answers.input}" if answers is not None else ""
        wrote = (f", attribution {self.attribution_rows}"
                 if self.attribution_rows is not None else "")
        lines = [
            "releval job summary",
            f"  input rows: run {self.run_rows}, qrels {self.qrels_rows}{read}; rows written: "
            f"per-query {self.per_query_rows}, aggregate {self.aggregate_rows}{wrote}",
            f"  run partitions evaluated: {self.run_partitions}; queries scored (run partition "
            f"x query): {self.queries_scored}",
            f"  run queries without qrels (not scored): {self.queries_without_qrels}; qrels "
            f"queries missing from a run ({missing_rule}): {self.queries_missing_from_run}",
        ]
        low, high = self.queries_per_mean
        spread = f"{low}" if low == high else f"{low} to {high}"
        lines.append(
            f"  queries per mean: {spread} per run partition; each macro value has a "
            f"{self.intervals.level:.0%} {self.intervals.method} interval (ci_low, ci_high)"
            + (", inside the measure's range (Wilson's for 0/1 values; ci_method)"
               if self.intervals.method == "t" else "")
        )
        if self.partitions_with_few_queries:
            lines.append(
                f"  WARNING: {self.partitions_with_few_queries} run partition(s) rest on fewer "
                f"than {FEW_QUERIES} queries: their intervals are wide, and differences between "
                "systems there are weak evidence"
            )
        if self.depth is not None:
            lines.append(
                f"  depth {self.depth}: each ranking evaluated at its first {self.depth} "
                f"documents; {self.rows_beyond_depth} ranked run rows beyond it (used, not "
                "evaluated)"
            )
        lines += render_windows(self.windows)
        if self.quality is not None:
            lines.append(self.quality.render())
        lines += render_lines(
            self.unjudged,
            warning_share=self.unjudged_warning_share,
            binary_labels=self.binary_labels,
            measures=self.measures,
        )
        lines += render_ties(self.tie_dependent)
        lines += render_attribution(self.attribution)
        return "\n".join(lines)


def aggregate_order(parts: Sequence[str]) -> Callable[[Row], tuple[tuple[bool, object], ...]]:
    """Sort key of aggregate rows: as :func:`read_aggregate` orders them (nulls first)."""
    keys = [*parts, S.MEASURE, S.CUTOFF, S.MEASURE_KEY, S.AVERAGING]
    return lambda row: tuple((row[k] is not None, row[k] if row[k] is not None else "") for k in keys)


def render_overview(
    rows: Sequence[Row], *, measure_keys: Sequence[str], partition_columns: Sequence[str]
) -> str:
    """The aggregate rows a job wrote (already on the driver) as a text table (no Spark job).

    One line per run partition (in the rows' order) with its query count and one column
    per measure key: the macro mean (the sum for counts), rounded to 4 decimals.
    """
    parts = list(partition_columns)
    table: dict[tuple[object, ...], dict[str, object]] = {}
    for row in overall(list(rows), HEADLINE):
        key = tuple(row[c] for c in parts)
        line = table.setdefault(key, {**{c: row[c] for c in parts}, S.NUM_QUERIES: row[S.NUM_QUERIES]})
        if row[S.MEASURE_KEY] in measure_keys and row[S.VALUE] is not None:
            line[row[S.MEASURE_KEY]] = round(float(row[S.VALUE]), 4)
    header = [*parts, S.NUM_QUERIES, *measure_keys]
    return text_table(header, [[_cell(line.get(h)) for h in header] for line in table.values()])


def text_table(header: Sequence[str], cells: Sequence[Sequence[str]]) -> str:
    """Rows of cells under a header, as a text table with rules."""
    widths = [max([len(h), *(len(c[i]) for c in cells)]) for i, h in enumerate(header)]
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"

    def fmt(values: Sequence[str]) -> str:
        return "| " + " | ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)) + " |"

    return "\n".join([rule, fmt(header), rule, *(fmt(c) for c in cells), rule])


#: The run partitions the summary's attribution names (the table holds them all).
SHOWN_ATTRIBUTION = 30


def render_attribution(rows: Sequence[Row], *, shown: int = SHOWN_ATTRIBUTION) -> list[str]:
    """The attribution rows a job wrote (already on the driver) as summary lines: the
    thresholds, then one line per run partition (the first ``shown``) with the share of each
    cell of the attributed queries, the no_qrels count and Kendall's tau-b (empty without
    rows)."""
    if not rows:
        return []
    first = rows[0]
    fields = list(first.asDict())
    parts = fields[: fields.index(S.CELL)]  # the run partition columns come first
    by_partition: dict[tuple[object, ...], dict[str, Row]] = {}
    for row in rows:
        by_partition.setdefault(tuple(row[c] for c in parts), {})[row[S.CELL]] = row
    header = [*parts, S.ATTRIBUTED, *CELLS, S.KENDALL_TAU_B]
    cells = []
    ordered = sorted(by_partition, key=lambda k: tuple((v is not None, "" if v is None else v)
                                                      for v in k))
    for key in ordered[:shown]:
        cell = by_partition[key]
        any_row = next(iter(cell.values()))
        shares = [_share(cell.get(c)) for c in SHARED_CELLS]
        no_qrels = cell.get(NO_QRELS)
        tau = any_row[S.KENDALL_TAU_B]
        cells.append([*(_cell(v) for v in key), str(any_row[S.ATTRIBUTED]), *shares,
                      str(no_qrels[S.QUERIES] if no_qrels else 0),
                      "NULL" if tau is None else f"{tau:.3f}"])
    lines = [
        f"  retrieval and the answer: evidence retrieved when {first[S.RETRIEVED_BY_MEASURE]} >= "
        f"{first[S.RETRIEVED_AT]:g}, correct when answer_score >= {first[S.CORRECT_AT]:g}; "
        "share of the attributed queries (answered, with qrels) per cell, no_qrels counted "
        "apart (attribution table: intervals, mean scores)",
    ]
    more = len(ordered) - shown
    tail = [f"  and {more} more run partition(s): the attribution table"] if more > 0 else []
    return lines + ["  " + line for line in text_table(header, cells).splitlines()] + tail


def _share(row: Row | None) -> str:
    return "NULL" if row is None or row[S.SHARE] is None else f"{row[S.SHARE]:.1%}"


def _cell(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, float):
        return f"{value:.4f}".rstrip("0").rstrip(".") if value == value else "NaN"
    return str(value)
