"""``releval compare`` with answers: each side's per-query cells, from the per-query table's
``answer_score`` and retrieval measure with the thresholds the attribution table records,
and each candidate's :class:`~releval.stats.moves.Moves` against the baseline."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import reduce

import numpy as np
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from releval.config import Config
from releval.core import columns as S
from releval.frames.comparison import side_condition
from releval.io.atomic import read_table, table_exists
from releval.stats.attribution import CELLS, NO_QRELS, Thresholds, cell_codes
from releval.stats.moves import Moves, moves

_SIDE = "_side"


@dataclass(frozen=True)
class AnswerMoves:
    """The moves of each candidate with answers, the thresholds they were made with, and
    notes on the candidates left out."""

    thresholds: Thresholds
    moves: tuple[Moves, ...]
    notes: tuple[str, ...] = ()

    def render(self, baseline: str) -> list[str]:
        t = self.thresholds
        lines = [f"retrieval and the answer, query by query against {baseline}: evidence "
                 f"retrieved when {t.retrieved_by} >= {t.retrieved_at:g}, correct when "
                 f"answer_score >= {t.correct_at:g} (docs/answers.md)"]
        for found in self.moves:
            lines += ["  " + line for line in found.render()]
        return lines + [f"  note: {n}" for n in self.notes]


def _tagged(df: DataFrame, sides: Mapping[str, Mapping[str, str]], *columns: str) -> DataFrame:
    return reduce(DataFrame.unionByName, [
        df.where(side_condition(values)).select(F.lit(label).alias(_SIDE), *columns)
        for label, values in sides.items()
    ])


def side_thresholds(
    spark: SparkSession, config: Config, sides: Mapping[str, Mapping[str, str]]
) -> dict[str, set[tuple[str, float, float]]]:
    """label -> the (retrieved_by, retrieved_at, correct_at) of its attribution rows (empty:
    none, or no attribution table)."""
    path, table = config.located("attribution")
    found: dict[str, set[tuple[str, float, float]]] = {label: set() for label in sides}
    if not (path or table) or not table_exists(spark, path=path, table=table):
        return found
    rows = _tagged(read_table(spark, path=path, table=table), sides,
                   S.RETRIEVED_BY_MEASURE, S.RETRIEVED_AT, S.CORRECT_AT).distinct().collect()
    for r in rows:
        found[r[_SIDE]].add((r[S.RETRIEVED_BY_MEASURE], float(r[S.RETRIEVED_AT]),
                             float(r[S.CORRECT_AT])))
    return found


def side_cells(
    per_query: DataFrame, sides: Mapping[str, Mapping[str, str]], t: Thresholds
) -> dict[str, dict[str, str]]:
    """label -> query id -> cell, over the per-query rows of the retrieval measure with an
    answer score (queries with qrels only; a null measure value is in no cell)."""
    rows = _tagged(
        per_query.where((F.col(S.MEASURE_KEY) == t.retrieved_by)
                        & F.col(S.ANSWER_SCORE).isNotNull()),
        sides, S.QUERY_ID, S.VALUE, S.ANSWER_SCORE).collect()
    found: dict[str, dict[str, str]] = {label: {} for label in sides}
    for label in sides:
        mine = [r for r in rows if r[_SIDE] == label]
        value = np.array([np.nan if r[S.VALUE] is None else r[S.VALUE] for r in mine], float)
        score = np.array([r[S.ANSWER_SCORE] for r in mine], float)
        for r, code in zip(mine, cell_codes(value, score, t), strict=True):
            if CELLS[code] != NO_QRELS:
                found[label][r[S.QUERY_ID]] = CELLS[code]
    return found


def answer_moves(
    spark: SparkSession, config: Config, per_query: DataFrame, *, baseline: str,
    sides: Mapping[str, Mapping[str, str]],
) -> AnswerMoves | None:
    """Each candidate's moves against the baseline (label -> run partition in ``sides``);
    None when the baseline has no attribution rows (no answers). A candidate without
    answers, or whose attribution used other thresholds, is left out with a note."""
    found = side_thresholds(spark, config, sides)
    if len(found[baseline]) != 1:
        return None
    (retrieved_by, retrieved_at, correct_at), = found[baseline]
    t = Thresholds(retrieved_by=retrieved_by, retrieved_at=retrieved_at, correct_at=correct_at)
    notes, kept = [], {baseline: sides[baseline]}
    for label, values in sides.items():
        if label == baseline:
            continue
        if not found[label]:
            notes.append(f"{label} has no attribution rows (no answers): its cells are not "
                         "compared")
        elif found[label] != found[baseline]:
            notes.append(f"{label}'s attribution used other thresholds "
                         f"{sorted(found[label])}: its cells are not compared")
        else:
            kept[label] = values
    cells = side_cells(per_query, kept, t)
    return AnswerMoves(t, tuple(moves(cells[baseline], cells[label], label=label)
                                for label in kept if label != baseline), tuple(notes))
