"""``releval compare`` over the per-query table: check the sides, compare, write, report."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import reduce
from operator import or_

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from releval.checks.queries import CheckedQueries, carried
from releval.config import ComparisonSettings, Config
from releval.core import columns as S
from releval.core.columns import quote_literal
from releval.core.overall import MACRO, overall
from releval.errors import ComparisonError
from releval.evaluation import compare_slices as slices_out
from releval.evaluation.answer_moves import AnswerMoves, answer_moves
from releval.evaluation.partitions import KeyFilter, partition_label
from releval.frames.changes import changes
from releval.frames.comparison import compare, side_condition
from releval.frames.intervals import FEW_QUERIES
from releval.io import comparison_table
from releval.io.atomic import read_table, table_exists
from releval.job.lineage import run_log_location
from releval.job.pipeline import job_queries


@dataclass(frozen=True)
class QrelsCheck:
    """What the run log says about the qrels behind each side."""

    notes: tuple[str, ...] = ()


def _side_runs(
    per_query: DataFrame, sides: Mapping[str, Mapping[str, str]]
) -> dict[str, tuple[int, list[str | None]]]:
    """label -> (per-query rows, job_run_ids) of each side: one small aggregation."""
    tagged = reduce(DataFrame.unionByName, [
        per_query.where(side_condition(values)).select(
            F.lit(label).alias("_side"), F.col(S.JOB_RUN_ID).cast("string").alias(S.JOB_RUN_ID))
        for label, values in sides.items()
    ])
    rows = tagged.groupBy("_side").agg(
        F.count(F.lit(1)).alias("rows"), F.collect_set(S.JOB_RUN_ID).alias("ids"),
        F.count_if(F.col(S.JOB_RUN_ID).isNull()).alias("no_id")).collect()
    found = {r["_side"]: (int(r["rows"]), sorted(r["ids"]) + ([None] if r["no_id"] else []))
             for r in rows}
    return {label: found.get(label, (0, [])) for label in sides}


def check_qrels(
    spark: SparkSession, config: Config, runs: Mapping[str, Sequence[str | None]], *,
    baseline: str,
) -> QrelsCheck:
    """Refuse a pair of sides evaluated against different qrels (source, version, filter).

    The qrels of a side are those of the evaluation runs (``job_run_id``) that wrote its
    per-query rows, as the run log records them. A side without a run-log record cannot
    be checked: a note says so.

    Raises:
        ComparisonError: one line naming both sides and both qrels.
    """
    path, table = run_log_location(config)
    ids = sorted({i for side in runs.values() for i in side if i is not None})
    records: dict[str, tuple] = {}
    if ids and (path or table) and table_exists(spark, path=path, table=table):
        log = read_table(spark, path=path, table=table).where(F.col(S.JOB_RUN_ID).isin(ids))
        wanted = log.select(S.JOB_RUN_ID, "qrels_source", "qrels_version", "qrels_filter")
        for r in wanted.collect():
            records[r[S.JOB_RUN_ID]] = (r["qrels_source"], r["qrels_version"], r["qrels_filter"])
    notes = []

    def qrels_of(label: str) -> set[tuple] | None:
        if not runs[label] or any(i is None or i not in records for i in runs[label]):
            notes.append(f"qrels of {label} not checked: no run-log record of its evaluation")
            return None
        return {records[i] for i in runs[label]}

    def describe(q: set[tuple]) -> str:
        return "; ".join(f"{s} @v{v} filter {f!r}" for s, v, f in sorted(q, key=str))

    base = qrels_of(baseline)
    for label in runs:
        if label == baseline:
            continue
        other = qrels_of(label)
        if base is not None and other is not None and (base != other or len(base) > 1):
            raise ComparisonError(
                f"{label} and the baseline {baseline} were evaluated against different qrels "
                f"({describe(other)} vs {describe(base)}); re-evaluate them with the same qrels"
            )
    return QrelsCheck(notes=tuple(dict.fromkeys(notes)))


def comparison_location(config: Config) -> tuple[str | None, str | None]:
    """(path, table) of the comparison table: configured, or next to the per-query table."""
    return config.located("comparison")


@dataclass(frozen=True)
class ComparisonReport:
    """A finished comparison: its rows (sorted) and what to say about them."""

    comparison_id: str
    baseline: str
    settings: ComparisonSettings
    pairing: str
    rows: tuple[dict, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)
    version: int = -1
    #: how the answered queries moved between the attribution cells (None: no answers)
    answers: AnswerMoves | None = None
    #: each slice value's weight (the queries input's; None: no queries input)
    slice_weights: Mapping[str, Mapping[str, float]] | None = None
    #: the queries that lost most (``worst`` per candidate and measure), their slices
    worst: tuple[dict, ...] = ()
    worst_count: int = 0
    slices: tuple[str, ...] = ()

    def render(self) -> str:
        s = self.settings
        every = self.rows
        rows = overall(every, MACRO)
        lines = [
            "releval comparison",
            f"  comparison_id: {self.comparison_id} (table version {self.version})",
            f"  baseline: {self.baseline}; pairing: {self.pairing}",
            (f"  * = significant: {s.test} test, {s.correction} correction over "
             f"{len(rows)} comparisons (candidates x measures), alpha {s.alpha}; "
             if s.test != "tukey" else
             f"  * = significant: randomized Tukey HSD (all pairs of the baseline and the "
             f"candidates, one family per measure), alpha {s.alpha}; p(t), p(rand) "
             f"{s.correction}-corrected; ")
            + f"randomization tests with {s.permutations} permutations, seed {s.seed}",
            *(f"  note: {n}" for n in self.notes),
        ]
        few = sorted({(r[S.CANDIDATE], r[S.NUM_PAIRS]) for r in rows
                      if r[S.NUM_PAIRS] < FEW_QUERIES})
        if few:  # one line, however many candidates: the counts are the table's num_pairs
            listed = ", ".join(f"{c} {n}" for c, n in few[:3])
            more = f" and {len(few) - 3} more (num_pairs)" if len(few) > 3 else ""
            lines.append(f"  WARNING: {len(few)} candidate(s) rest on fewer than {FEW_QUERIES} "
                         f"queries, weak comparisons: {listed}{more}")
        hsd = s.test == "tukey"
        header = (f"  {'':1} {'candidate':<28} {'measure':<16} {'n':>5} {'base':>7} {'cand':>7} "
                  f"{'diff':>8} {f'{1 - s.alpha:.0%} CI':>19} {'rel':>7} {'W/T/L':>13} {'d':>6} "
                  f"{'p(t)':>9} {'p(rand)':>9}" + (f" {'p(HSD)':>9}" if hsd else "")
                  + f" {'mdd':>7} {'needed':>7} {'diff[best]':>10} {'holds':>5}")
        lines += ["", header]

        def num(v: float | None, fmt: str) -> str:
            return "-" if v is None or v != v else format(v, fmt)

        for r in rows:
            ci = (f"[{num(r[S.DIFF_CI_LOW], '+.4f')}, {num(r[S.DIFF_CI_HIGH], '+.4f')}]"
                  if r[S.DIFF_CI_LOW] is not None else "-")
            wtl = f"{r[S.WINS]}/{r[S.TIES]}/{r[S.LOSSES]}"
            lines.append(
                f"  {'*' if r[S.SIGNIFICANT] else ' '} {r[S.CANDIDATE]:<28} {r[S.MEASURE_KEY]:<16} "
                f"{r[S.NUM_PAIRS]:>5} {num(r[S.BASELINE_MEAN], '.4f'):>7} "
                f"{num(r[S.CANDIDATE_MEAN], '.4f'):>7} {num(r[S.MEAN_DIFF], '+.4f'):>8} {ci:>19} "
                f"{num(r[S.RELATIVE_CHANGE], '+.1%'):>7} {wtl:>13} "
                f"{num(r[S.EFFECT_SIZE], '+.2f'):>6} {num(r[S.T_P_ADJUSTED], '.2g'):>9} "
                f"{num(r[S.RANDOMIZATION_P_ADJUSTED], '.2g'):>9}"
                + (f" {num(r[S.TUKEY_P_VALUE], '.2g'):>9}" if hsd else "")
                + f" {num(r[S.MIN_DETECTABLE_DIFF], '.4f'):>7}"
                + f" {'-' if r[S.QUERIES_NEEDED] is None else r[S.QUERIES_NEEDED]:>7}"
                + f" {num(r.get(S.MEAN_DIFF_BEST), '+.4f'):>10} {_holds(r.get(S.SIGN_HOLDS)):>5}"
            )
        lines.append(f"  p(t), p(rand): {s.correction}-corrected over all rows"
                     + ("; p(HSD): all pairs of one measure, not corrected across measures"
                        if hsd else "")
                     + "; the raw p-values are in the comparison table")
        lines.append(f"  mdd: the smallest true difference the t-test (alpha {s.alpha}) detects "
                     f"with power {s.power} at n; needed: the pairs it needs to detect "
                     f"{s.effect_of_interest} (docs/statistics.md)")
        if any(r.get(S.MEAN_DIFF_BEST) is not None for r in rows):
            lines.append("  diff[best]: diff with every unjudged document relevant on both "
                         "sides; holds: the same sign as diff (docs/incomplete-judgments.md)")
        lines += slices_out.render_slices(every, alpha=s.alpha)
        lines += slices_out.sign_warnings(every, self.slice_weights)
        if self.worst_count:
            lines += slices_out.render_worst(self.worst, count=self.worst_count,
                                             slices=self.slices)
        if self.answers is not None:
            lines += ["", *self.answers.render(self.baseline)]
        return "\n".join(lines)


def _holds(value: bool | None) -> str:
    return "-" if value is None else "yes" if value else "NO"


def run(
    spark: SparkSession,
    config: Config,
    *,
    baseline: Mapping[str, str],
    candidates: Sequence[Mapping[str, str]],
    comparison_id: str | None = None,
    queries: CheckedQueries | None = None,
    worst: int = 0,
) -> ComparisonReport:
    """Compare ``candidates`` with ``baseline`` (run partitions, column -> value) and write
    the rows to the comparison table, replacing the earlier comparison of the same
    baseline in the candidates' output partitions.

    With ``queries`` (checked; a rejected row must have been refused), else the weight and
    slices the per-query rows carry (:func:`releval.checks.queries.carried`), else the
    config's ``[queries]``, also the rows per slice value and, with a weight, the weighted rows;
    ``worst``: the report lists the queries that lost most, per candidate and measure.

    Raises:
        ComparisonError: a side has no per-query rows, or two sides used different qrels.
        InputError: a row of the config's ``[queries]`` is rejected.
    """
    parts = list(config.run.partition_columns)
    base_label = partition_label(baseline, parts)
    cands = {partition_label(c, parts): dict(c) for c in candidates}
    if base_label in cands:
        raise ComparisonError(f"the baseline {base_label} is also a candidate")
    per_query = read_table(spark, path=config.output.per_query_path,
                           table=config.output.per_query_table)
    runs = _side_runs(per_query, {base_label: baseline, **cands})
    absent = [k for k, (n, _) in runs.items() if n == 0]
    if absent:
        raise ComparisonError(
            f"no per-query rows for {', '.join(absent)}: evaluate it first, or check the values")
    check = check_qrels(spark, config, {k: ids for k, (_, ids) in runs.items()},
                        baseline=base_label)
    settings = config.comparison
    if queries is None:
        queries = carried(per_query.where(reduce(or_, [side_condition(s) for s in
                                                       [baseline, *cands.values()]])),
                          slices=None, baseline=side_condition(baseline))
    if queries is None and config.queries is not None:
        queries = job_queries(spark, config)
        if queries is not None:
            slices_out.refuse_rejected(queries, query_id=config.queries.query_id,
                                       weight=config.queries.weight)
    sliced = {} if queries is None else {"queries": queries.used, "slices": queries.slices,
                                         "weighted": queries.weighted}
    result = compare(per_query, baseline=baseline, candidates=cands,
                     missing_queries=config.evaluation.missing_queries, settings=settings,
                     **sliced)

    comparison_id = comparison_id or str(uuid.uuid4())
    out_parts = list(config.output_partition_columns)
    part_fields = [per_query.schema[c] for c in out_parts]
    candidate = F.col(S.CANDIDATE)

    def per_candidate(values: Mapping[str, str | None], dtype: T.DataType) -> Column:
        return F.coalesce(*[F.when(candidate == k, F.lit(v)) for k, v in values.items()],
                          F.lit(None)).cast(dtype)

    def run_id(ids: Sequence[str | None]) -> str | None:
        return ",".join(i for i in ids if i) or None

    rows = result.select(
        "*",
        *[per_candidate({k: v[c] for k, v in cands.items()}, f.dataType).alias(c)
          for c, f in zip(out_parts, part_fields, strict=True)],
        F.lit(comparison_id).alias(S.COMPARISON_ID),
        F.lit(datetime.now(UTC)).alias(S.COMPARED_AT),
        F.lit(base_label).alias(S.BASELINE),
        F.lit(config.evaluation.missing_queries).alias(S.PAIRING),
        F.lit(settings.correction).alias(S.CORRECTION),
        F.lit(float(settings.alpha)).alias(S.ALPHA),
        F.lit(settings.test).alias(S.TEST),
        F.lit(settings.permutations).cast("long").alias(S.PERMUTATIONS),
        F.lit(settings.seed).cast("long").alias(S.SEED),
        F.lit(run_id(runs[base_label][1])).alias(S.BASELINE_JOB_RUN_ID),
        per_candidate({k: run_id(runs[k][1]) for k in cands}, T.StringType()).alias(
            S.CANDIDATE_JOB_RUN_ID),
    )
    predicate = " AND ".join([
        f"{S.BASELINE} = {quote_literal(base_label)}",
        *(KeyFilter(key=c, values=tuple(sorted({v[c] for v in cands.values()}))).predicate()
          for c in out_parts),
    ])
    path, table = comparison_location(config)
    if not (path or table):
        raise ComparisonError("no place for the comparison table: set output.comparison_path")
    written = comparison_table.write_comparison(
        rows, path=path, table=table, partition_fields=part_fields,
        output_partition_columns=out_parts, predicate=predicate, comparison_id=comparison_id,
    )
    saved = read_table(spark, path=path, table=table).where(
        F.col(S.COMPARISON_ID) == comparison_id).orderBy(
            S.CANDIDATE, S.MEASURE, S.CUTOFF, S.MEASURE_KEY, F.col(S.SLICE).asc_nulls_first(),
            S.SLICE_VALUE, S.AVERAGING)
    moved = () if not worst else tuple(slices_out.worst_queries(changes(
        per_query, baseline=baseline, candidates=cands,
        missing_queries=config.evaluation.missing_queries,
        **({} if queries is None else {"queries": queries.used, "slices": queries.slices,
                                       "weighted": queries.weighted})), worst))
    return ComparisonReport(
        comparison_id=comparison_id,
        baseline=base_label,
        settings=settings,
        pairing=config.evaluation.missing_queries,
        rows=tuple(r.asDict() for r in saved.collect()),
        notes=check.notes,
        version=written.version,
        answers=answer_moves(spark, config, per_query, baseline=base_label,
                             sides={base_label: baseline, **cands}),
        slice_weights=None if queries is None else slices_out.slice_weights(queries),
        worst=moved, worst_count=worst, slices=() if queries is None else queries.slices,
    )
