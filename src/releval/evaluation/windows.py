"""Per run partition, the spread of the window k_q and what the window lost: the mean recall
of the whole ranking against the mean recall of the window (R@window)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from releval.core import columns as S


@dataclass(frozen=True)
class WindowSpread:
    """One run partition's k_q (over the queries it retrieved) and its mean recall over the
    scored queries: of the whole ranking and of the window."""

    partition: tuple[tuple[str, str], ...]
    low: int
    median: float
    high: int
    recall_all: float
    recall_window: float

    def label(self) -> str:
        return ", ".join(f"{c}={v}" for c, v in self.partition) or "the run"


def window_spreads(queries: DataFrame, partition_columns: Sequence[str]) -> tuple[WindowSpread, ...]:
    """The :class:`WindowSpread` of each run partition of the engine's wide rows (one Spark
    job); empty when the rows have no window."""
    if S.WINDOW_K not in queries.columns:
        return ()
    parts = list(partition_columns)
    size = F.when(F.col(S.IN_RUN), F.col(S.WINDOW_K))
    scored = F.col(S.IN_QRELS)
    rows = queries.where(F.col(S.IN_RUN) | scored).groupBy(*parts).agg(
        F.min(size).alias("low"), F.median(size).alias("median"), F.max(size).alias("high"),
        F.avg(F.when(scored, F.col(S.RECALL_ALL))).alias("all"),
        F.avg(F.when(scored, F.col(S.RECALL_WINDOW))).alias("window"),
    ).collect()
    found = [
        WindowSpread(tuple((c, str(r[c])) for c in parts), int(r["low"]), float(r["median"]),
                     int(r["high"]), float(r["all"] or 0.0), float(r["window"] or 0.0))
        for r in rows if r["low"] is not None
    ]
    return tuple(sorted(found, key=lambda w: w.partition))


def render_windows(spreads: Sequence[WindowSpread]) -> list[str]:
    """The summary's lines: per run partition, k_q's min / median / max and the recall lost."""
    if not spreads:
        return []
    lines = ["  window k_q per run partition (min / median / max; mean recall of the whole "
             "ranking -> of the window, R@window):"]
    for w in spreads:
        lines.append(f"    {w.label()}: k_q {w.low} / {w.median:g} / {w.high}; recall "
                     f"{w.recall_all:.4f} -> {w.recall_window:.4f} "
                     f"(lost {w.recall_all - w.recall_window:.4f})")
    return lines
