"""Do two qrels versions rank the run partitions alike and reach the same decisions?

Every run partition is evaluated under both versions by the job's evaluation (the same row
checks, accounting and engine); the partitions' macro means per measure are ordered under
each (Kendall's tau-b, tau_AP with the reference as the truth), and each partition is
compared with a baseline under each (releval.frames.comparison) to find the flipped
decisions."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

from releval.checks.accounts import QualityReport
from releval.config import Config, QrelsSource
from releval.core import columns as S
from releval.core.engine import long_format
from releval.core.overall import MACRO, overall
from releval.errors import ComparisonError
from releval.evaluation.counts import query_counts
from releval.evaluation.evaluate import evaluate_inputs
from releval.evaluation.inputs import account, checked_inputs
from releval.evaluation.partitions import partition_label
from releval.evaluation.persisted import keeper, materialize
from releval.frames.aggregate import rows as aggregate_rows
from releval.frames.comparison import compare
from releval.io.readers import read_qrels_raw, read_run_raw, source_name
from releval.job.pipeline import job_measures
from releval.stats.agreement import kendall_tau_b, tau_ap

#: The comparison column whose value decides, by ``comparison.test``.
DECIDING_P = {"randomization": S.RANDOMIZATION_P_ADJUSTED, "t": S.T_P_ADJUSTED,
              "tukey": S.TUKEY_P_VALUE}


@dataclass(frozen=True)
class Flip:
    """A comparison with the baseline whose significance differs between the versions."""

    candidate: str
    measure_key: str
    reference_p: float | None
    other_p: float | None
    reference_significant: bool


@dataclass(frozen=True)
class MeasureAgreement:
    """One measure's orderings of the run partitions under both versions."""

    measure_key: str
    labels: tuple[str, ...]
    reference: tuple[float, ...]
    other: tuple[float, ...]
    tau_b: float | None
    tau_ap: float | None
    decisions: int | None = None
    flips: tuple[Flip, ...] = ()


@dataclass(frozen=True)
class SystemAgreement:
    """The measures' orderings and decisions, and both evaluations' accounts."""

    measures: tuple[MeasureAgreement, ...]
    baseline: str | None
    accounts: tuple[QualityReport, QualityReport]


@dataclass(frozen=True)
class _Evaluated:
    per_query: DataFrame
    means: dict[tuple[str, str], float]
    partitions: dict[str, dict[str, str]]
    report: QualityReport


def _evaluate(spark: SparkSession, config: Config, qrels: QrelsSource, kept: list[DataFrame]
              ) -> _Evaluated:
    """The job's evaluation of the config's run against ``qrels``, its accounts checked."""
    parts = list(config.run.partition_columns)
    measures = job_measures(dataclasses.replace(config, answers=None))
    inputs = checked_inputs(read_run_raw(spark, config.run), read_qrels_raw(spark, qrels),
                            rank_by=config.run.rank_by, partition_columns=parts)
    mine: list[DataFrame] = []
    ev = evaluate_inputs(
        inputs, measures=measures, missing_queries=config.evaluation.missing_queries,
        negative_labels=config.evaluation.negative_labels, depth=config.evaluation.depth,
        intervals=config.intervals, keep=keeper(mine))
    materialize(mine, partition_columns=parts,
                missing_queries=config.evaluation.missing_queries)
    queries = ev.queries.persist(StorageLevel.MEMORY_AND_DISK)
    mine.append(queries)
    kept.extend(mine)
    counts = query_counts(queries, parts, missing_queries=config.evaluation.missing_queries,
                          measures=measures, intervals=config.intervals)
    report = account(inputs, counts, run_name=source_name(config.run),
                     qrels_name=source_name(qrels), run_filter=config.run.filter,
                     qrels_filter=qrels.filter)
    means, partitions = {}, {}
    for row in overall(aggregate_rows(counts.sums, measures=measures, partition_columns=parts,
                                      intervals=config.intervals), MACRO):
        if row[S.VALUE] is None:
            continue
        values = {c: None if row[c] is None else str(row[c]) for c in parts}
        label = partition_label(values, parts)
        partitions[label] = values
        # rounded: sums of the same values in another order must not order two partitions
        means[(row[S.MEASURE_KEY], label)] = round(float(row[S.VALUE]), 12)
    return _Evaluated(long_format(queries, partition_columns=parts, measures=measures),
                      means, partitions, report)


def _decisions(config: Config, evaluated: Sequence[_Evaluated], baseline: Mapping[str, str],
               candidates: Mapping[str, Mapping[str, str]]) -> list[dict]:
    """(candidate, measure) -> (p, significant) under each version, for every pair."""
    chosen = DECIDING_P[config.comparison.test]
    found = []
    for ev in evaluated:
        rows = compare(ev.per_query, baseline=baseline, candidates=candidates,
                       missing_queries=config.evaluation.missing_queries,
                       settings=config.comparison).select(
            S.CANDIDATE, S.MEASURE_KEY, chosen, S.SIGNIFICANT).collect()
        found.append({(r[S.CANDIDATE], r[S.MEASURE_KEY]): (r[chosen], bool(r[S.SIGNIFICANT]))
                      for r in rows})
    return found


def system_agreement(
    spark: SparkSession, config: Config, other: QrelsSource, *,
    baseline: Mapping[str, str] | None, kept: list[DataFrame],
) -> SystemAgreement:
    """Both evaluations of the config's run (reference ``config.qrels``, then ``other``),
    the orderings per measure and, with ``baseline``, the flipped decisions.

    Raises:
        ComparisonError: the baseline is not a run partition of the run.
        AccountingError, InputError: as the job's accounting.
    """
    parts = list(config.run.partition_columns)
    evaluated = [_evaluate(spark, config, q, kept) for q in (config.qrels, other)]
    ref, oth = evaluated
    base_label = partition_label(baseline, parts) if baseline else None
    decisions: list[dict] = [{}, {}]
    if baseline is not None:
        if base_label not in ref.partitions:
            raise ComparisonError(f"the baseline {base_label} is not a run partition the run "
                                  f"scores; found {sorted(ref.partitions)}")
        candidates = {k: v for k, v in ref.partitions.items() if k != base_label}
        decisions = _decisions(config, evaluated, baseline, candidates)
    keys = sorted({m for m, _ in ref.means} & {m for m, _ in oth.means})
    measures = []
    for key in keys:
        labels = tuple(sorted(p for p in ref.partitions
                              if (key, p) in ref.means and (key, p) in oth.means))
        a = np.array([ref.means[(key, p)] for p in labels])
        b = np.array([oth.means[(key, p)] for p in labels])
        pairs = [c for c in decisions[0] if c[1] == key and c in decisions[1]]
        flips = tuple(
            Flip(c[0], key, decisions[0][c][0], decisions[1][c][0], decisions[0][c][1])
            for c in sorted(pairs) if decisions[0][c][1] != decisions[1][c][1])
        measures.append(MeasureAgreement(
            key, labels, tuple(a), tuple(b), kendall_tau_b(a, b), tau_ap(a, b, labels),
            len(pairs) if baseline is not None else None, flips))
    return SystemAgreement(tuple(measures), base_label, (ref.report, oth.report))
