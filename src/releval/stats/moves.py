"""How a candidate's answered queries moved between the attribution cells against the
baseline, query by query, and whether each answer gained or lost came from retrieval or
from generation. Pure Python over the per-query cells (:data:`SHARED_CELLS` names);
see docs/answers.md."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from releval.stats.attribution import (
    ANSWERED_WITHOUT_EVIDENCE,
    GENERATION_MISS,
    RETRIEVAL_MISS,
    SHARED_CELLS,
    SUCCESS,
)

#: (from, to) moves that gain a correct answer because the evidence is now retrieved.
GAIN_FROM_RETRIEVAL = ((RETRIEVAL_MISS, SUCCESS),)
#: Other wrong -> correct moves: the answer changed with the evidence unchanged or lost.
GAIN_FROM_GENERATION = ((GENERATION_MISS, SUCCESS), (RETRIEVAL_MISS, ANSWERED_WITHOUT_EVIDENCE),
                        (GENERATION_MISS, ANSWERED_WITHOUT_EVIDENCE))
#: Correct -> wrong because the evidence is no longer retrieved.
LOSS_TO_RETRIEVAL = ((SUCCESS, RETRIEVAL_MISS),)
#: Other correct -> wrong moves.
LOSS_TO_GENERATION = ((SUCCESS, GENERATION_MISS), (ANSWERED_WITHOUT_EVIDENCE, RETRIEVAL_MISS),
                      (ANSWERED_WITHOUT_EVIDENCE, GENERATION_MISS))


@dataclass(frozen=True)
class Moves:
    """One candidate against the baseline: ``counts[i][j]`` queries were in cell
    ``SHARED_CELLS[i]`` for the baseline and ``SHARED_CELLS[j]`` for the candidate;
    ``baseline_only`` and ``candidate_only`` queries have a cell on one side only."""

    candidate: str
    counts: tuple[tuple[int, ...], ...]
    baseline_only: int = 0
    candidate_only: int = 0

    def count(self, source: str, target: str) -> int:
        """The queries that moved from cell ``source`` to cell ``target``."""
        return self.counts[SHARED_CELLS.index(source)][SHARED_CELLS.index(target)]

    @property
    def paired(self) -> int:
        """Queries with a cell on both sides."""
        return sum(sum(row) for row in self.counts)

    def _sum(self, moves: tuple[tuple[str, str], ...]) -> int:
        return sum(self.count(a, b) for a, b in moves)

    def reading(self) -> str:
        """One sentence: the answers gained and lost, by retrieval and by generation."""
        def listed(moves: tuple[tuple[str, str], ...]) -> str:
            found = [f"{a} -> {b} {self.count(a, b)}" for a, b in moves if self.count(a, b)]
            return f" ({', '.join(found)})" if found else ""

        gained = self._sum(GAIN_FROM_RETRIEVAL) + self._sum(GAIN_FROM_GENERATION)
        lost = self._sum(LOSS_TO_RETRIEVAL) + self._sum(LOSS_TO_GENERATION)
        return (
            f"{self.candidate}: answers gained: {self._sum(GAIN_FROM_RETRIEVAL)} from retrieval "
            f"(retrieval_miss -> success), {self._sum(GAIN_FROM_GENERATION)} from generation"
            f"{listed(GAIN_FROM_GENERATION)}; lost: {self._sum(LOSS_TO_RETRIEVAL)} to retrieval "
            f"(success -> retrieval_miss), {self._sum(LOSS_TO_GENERATION)} to generation"
            f"{listed(LOSS_TO_GENERATION)}; net {gained - lost:+d} of {self.paired} queries "
            "answered on both sides"
        )

    def render(self) -> list[str]:
        """The reading and the transition counts as text lines (rows: the baseline's cell,
        columns: the candidate's)."""
        width = max(len(c) for c in SHARED_CELLS)
        corner = "baseline | candidate"
        lines = [self.reading(), f"  {corner:<{width}}  " + "  ".join(SHARED_CELLS)]
        for cell, row in zip(SHARED_CELLS, self.counts, strict=True):
            lines.append(f"  {cell:<{width}}  " + "  ".join(
                f"{n:>{len(c)}}" for n, c in zip(row, SHARED_CELLS, strict=True)))
        if self.baseline_only or self.candidate_only:
            lines.append(f"  answered on one side only (not in the counts): baseline "
                         f"{self.baseline_only}, candidate {self.candidate_only}")
        return lines


def moves(
    baseline: Mapping[str, str], candidate: Mapping[str, str], *, label: str
) -> Moves:
    """Pair two sides' per-query cells (query id -> a name of :data:`SHARED_CELLS`) and count
    the moves of the queries present on both sides.

    Args:
        label: the candidate's name in the reading.

    Raises:
        ValueError: a cell that is not one of :data:`SHARED_CELLS` (``no_qrels`` included: a
            query without qrels has none on either side, so it never moves).
    """
    index = {c: i for i, c in enumerate(SHARED_CELLS)}
    for side in (baseline, candidate):
        unknown = sorted({c for c in side.values() if c not in index})
        if unknown:
            raise ValueError(f"cells {unknown} are not among {list(SHARED_CELLS)}")
    counts = [[0] * len(SHARED_CELLS) for _ in SHARED_CELLS]
    for query, cell in baseline.items():
        if query in candidate:
            counts[index[cell]][index[candidate[query]]] += 1
    both = sum(1 for q in baseline if q in candidate)
    return Moves(label, tuple(tuple(r) for r in counts), baseline_only=len(baseline) - both,
                 candidate_only=len(candidate) - both)
