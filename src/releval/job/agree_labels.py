"""Label agreement of two qrels versions over the (query, document) pairs both judge.

Each version's rows pass the qrels row rules; a document judged twice keeps its highest
label, as in the evaluation (lower labels: ``conflicting_label``; the same label again: an
exact duplicate, used and counted once). Spark counts the pairs by query and label pair; the statistics
are :mod:`releval.stats.agreement`'s."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from releval.checks.rules import typed_qrels
from releval.config import QrelsSource
from releval.core import columns as S
from releval.core.columns import REASON
from releval.errors import AccountingError, InputError
from releval.io.readers import read_qrels_raw, source_name
from releval.stats.agreement import Kappa, binary_agreement, kappa, kappa_interval

#: The reason of a repeated judgment with a lower label, set aside (the highest is kept).
REPEATED = "conflicting_label"


@dataclass(frozen=True)
class QrelsAccount:
    """One version's rows: ``input = used + sum(quarantined)``; the used rows are the
    judged pairs and their exact duplicates."""

    name: str
    input: int
    pairs: int
    exact_duplicates: int
    quarantined: dict[str, int]

    @property
    def used(self) -> int:
        return self.pairs + self.exact_duplicates

    def render(self) -> str:
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(self.quarantined.items())) or "none"
        dups = f" + {self.exact_duplicates} exact duplicates" if self.exact_duplicates else ""
        return (f"{self.name}: {self.input} rows = {self.pairs} judged pairs{dups} + "
                f"{sum(self.quarantined.values())} quarantined ({reasons})")


@dataclass(frozen=True)
class LabelAgreement:
    """The label statistics of two versions (reference rows, other columns)."""

    labels: np.ndarray
    table: np.ndarray
    queries: int
    reference_only: int
    other_only: int
    kappa: Kappa
    interval: tuple[float | None, float | None]
    binary: float | None
    accounts: tuple[QrelsAccount, QrelsAccount]

    @property
    def pairs(self) -> int:
        return int(self.table.sum())

    def confusion(self) -> dict[str, int]:
        """Pairs by ``"reference/other"`` label, the cells that hold any."""
        return {f"{a}/{b}": int(self.table[i, j]) for i, a in enumerate(self.labels)
                for j, b in enumerate(self.labels) if self.table[i, j]}


def _judged(spark: SparkSession, src: QrelsSource) -> tuple[DataFrame, DataFrame]:
    """(reasons: ``_reason``, rows; pairs: query_id, doc_id, label, lower, same) of one
    version: ``lower`` rows of the pair have a lower label, ``same`` more rows its label."""
    typed = typed_qrels(read_qrels_raw(spark, src).rows)
    reasons = typed.groupBy(REASON).agg(F.count(F.lit(1)).alias("rows"))
    by_label = typed.where(F.col(REASON).isNull()).groupBy(S.QUERY_ID, S.DOC_ID, S.RELEVANCE).agg(
        F.count(F.lit(1)).alias("n"))
    pairs = by_label.groupBy(S.QUERY_ID, S.DOC_ID).agg(
        F.max(S.RELEVANCE).alias("label"), F.max_by("n", S.RELEVANCE).alias("top"),
        F.sum("n").alias("rows"))
    pairs = pairs.select(S.QUERY_ID, S.DOC_ID, "label", (F.col("rows") - F.col("top")).alias(
        "lower"), (F.col("top") - 1).alias("same"))
    return reasons, pairs


def label_agreement(
    spark: SparkSession, reference: QrelsSource, other: QrelsSource, *, relevance_level: int,
    resamples: int, seed: int, level: float,
) -> LabelAgreement:
    """Compare ``other``'s labels with ``reference``'s over the pairs both judge.

    Raises:
        InputError: a version has no rows (after its filter).
        AccountingError: a version's rows are not all used or quarantined.
    """
    sides = [_judged(spark, src) for src in (reference, other)]
    ref, oth = sides[0][1].alias("r"), sides[1][1].alias("o")
    joined = ref.join(oth, [S.QUERY_ID, S.DOC_ID], "full_outer")
    counts = joined.groupBy(S.QUERY_ID, F.col("r.label").alias("a"),
                            F.col("o.label").alias("b")).agg(
        F.count(F.lit(1)).alias("n"), *(F.sum(f"{t}.{c}").alias(f"{t}{c}")
                                        for t in "ro" for c in ("lower", "same"))).collect()
    accounts = []
    for k, (src, (reasons, _)) in enumerate(zip((reference, other), sides, strict=True)):
        found = {r[REASON]: int(r["rows"]) for r in reasons.collect()}
        side, t = ("a", "r") if k == 0 else ("b", "o")
        pairs = sum(int(r["n"]) for r in counts if r[side] is not None)
        lower, same = (sum(int(r[f"{t}{c}"] or 0) for r in counts) for c in ("lower", "same"))
        quarantined = {c: n for c, n in found.items() if c is not None}
        if lower:
            quarantined[REPEATED] = quarantined.get(REPEATED, 0) + lower
        account = QrelsAccount(source_name(src) + (f" where {src.filter}" if src.filter else ""),
                               sum(found.values()), pairs, same, quarantined)
        if account.input == 0:
            raise InputError(f"qrels {account.name} has no rows: nothing to compare")
        if account.input != account.used + sum(quarantined.values()):
            raise AccountingError(f"{account.render()}: the rows do not add up")
        accounts.append(account)
    both = [r for r in counts if r["a"] is not None and r["b"] is not None]
    labels = np.array(sorted({int(r["a"]) for r in both} | {int(r["b"]) for r in both}),
                      dtype=np.int64)
    queries = sorted({r[S.QUERY_ID] for r in both})
    index = {q: i for i, q in enumerate(queries)}
    tables = np.zeros((len(queries), len(labels), len(labels)), dtype=np.int64)
    for r in both:
        i, j = np.searchsorted(labels, [int(r["a"]), int(r["b"])])
        tables[index[r[S.QUERY_ID]], i, j] += int(r["n"])
    table = tables.sum(axis=0) if len(queries) else np.zeros((0, 0), dtype=np.int64)
    return LabelAgreement(
        labels=labels, table=table, queries=len(queries),
        reference_only=sum(int(r["n"]) for r in counts if r["b"] is None),
        other_only=sum(int(r["n"]) for r in counts if r["a"] is None),
        kappa=kappa(table, labels),
        interval=kappa_interval(tables, labels, resamples=resamples, seed=seed, level=level),
        binary=binary_agreement(table, labels, relevance_level),
        accounts=(accounts[0], accounts[1]),
    )
