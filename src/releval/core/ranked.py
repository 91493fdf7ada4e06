"""A partition's ranked run rows, as the kernel's statistics read them: by ranking, with
their positions, labels and the per-row arrays several statistics share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from releval.core.judgments import Judgments
from releval.core.window import within_window


def segment_sums(values: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """``values[starts[i]:ends[i]].sum()`` for each i (0 where empty); ``starts`` ascending,
    each ``ends[i]`` between ``starts[i]`` and ``starts[i + 1]``."""
    out = np.zeros(len(starts), dtype=values.dtype)
    if not len(starts):
        return out
    bounds = np.empty(2 * len(starts), dtype=np.int64)
    bounds[0::2], bounds[1::2] = starts, ends
    # a trailing 0 keeps every bound a valid index; an empty segment sums one value: masked
    sums = np.add.reduceat(np.append(values, values.dtype.type(0)), bounds)[0::2]
    return np.where(ends > starts, sums, out)


class Ranked:
    """One partition's deduplicated run rows in ranking order, with their labels."""

    def __init__(self, group: np.ndarray, position: np.ndarray, label: np.ndarray,
                 judged: np.ndarray, groups: int, *, ordinal_positions: bool = False) -> None:
        self.group, self.position, self.label, self.judged = group, position, label, judged
        self.groups = groups
        self.starts = np.searchsorted(group, np.arange(groups))
        self.judged_position = self.running(judged.astype(np.int64))
        self.pooled = judged  # set wider by the caller when a walk asks (walks.Rankings)
        self.judgments: Judgments | None = None
        self.group_query = np.zeros(0, dtype=np.int64)
        self.tie = np.arange(len(group))  # set by the caller: a tie group's rows share an id
        self.window: np.ndarray | None = None  # each ranking's k_q (None: no window)
        self.ordinal_positions = ordinal_positions  # position is the 1-based row number
        self._ordinal: np.ndarray | None = None
        self._memo: dict[tuple[Any, ...], np.ndarray] = {}

    @property
    def ordinal(self) -> np.ndarray:
        """1-based rank counting every document (computed when first read)."""
        if self._ordinal is None:
            self._ordinal = np.arange(len(self.group), dtype=np.int64) - self.starts[self.group] + 1
        return self._ordinal

    def running(self, values: np.ndarray) -> np.ndarray:
        """Running sum of ``values`` within each group, current row included."""
        total = np.cumsum(values)
        before = np.concatenate(([0], total))[self.starts][self.group]
        return total - before

    def per_group(self, weights: np.ndarray) -> np.ndarray:
        return np.bincount(self.group, weights=weights, minlength=self.groups)

    def memo(self, key: tuple[Any, ...], compute: Callable[[], np.ndarray]) -> np.ndarray:
        """A per-row array several statistics share, computed once per partition (shared:
        read it, never write to it)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def relevant(self, level: int, *, best: bool = False) -> np.ndarray:
        """label >= level; with ``best`` an unjudged row too (the ``[best]`` bound)."""
        def compute() -> np.ndarray:
            relevant = self.judged & (self.label >= level)
            return relevant | ~self.judged if best else relevant
        return self.memo(("relevant", level, best), compute)

    def ends(self, *, judged: bool, cutoff: int | None) -> np.ndarray:
        """Per group: the end (exclusive) of its rows at view positions 1..cutoff. Positions
        never decrease within a group, so those rows are the group's first ones."""
        def compute() -> np.ndarray:
            if cutoff is None:
                return np.append(self.starts[1:], len(self.group)).astype(np.int64)
            if not judged and self.ordinal_positions:
                sizes = np.diff(np.append(self.starts, len(self.group)))
                return self.starts + np.minimum(sizes, cutoff)
            within = self.view_position(judged) <= cutoff
            return self.starts + np.bincount(self.group[within], minlength=self.groups)
        return self.memo(("ends", judged, cutoff), compute)

    def total(self, values: np.ndarray, *, judged: bool, cutoff: int | str | None) -> np.ndarray:
        """Per group: the sum of ``values`` (int64 or float64) over the rows the view counts
        at ranks 1..cutoff (:meth:`within`)."""
        if isinstance(cutoff, str):  # the window: each ranking's own k_q
            within = self.within(judged=judged, cutoff=cutoff)
            return self.per_group(np.where(within, values, 0)).astype(values.dtype)
        if judged:
            values = np.where(self.judged, values, 0)
        return segment_sums(values, self.starts, self.ends(judged=judged, cutoff=cutoff))

    def view_position(self, judged: bool) -> np.ndarray:
        return self.judged_position if judged else self.position

    def within(self, *, judged: bool, cutoff: int | str | None) -> np.ndarray:
        """Rows the view counts at ranks 1..cutoff (the judged view: judged rows only); the
        window keeps each ranking's first k_q documents, then the view's."""
        rows = self.judged if judged else np.ones(len(self.group), dtype=bool)
        if cutoff is None:
            return rows
        if isinstance(cutoff, str):
            return rows & within_window(self.group, self.ordinal, self.windows())
        return rows & (self.view_position(judged) <= cutoff)

    def cutoffs(self, cutoff: int | str | None) -> np.ndarray | None:
        """Each ranking's cutoff in documents: k, or its own k_q at the window; None: all."""
        if cutoff is None:
            return None
        if isinstance(cutoff, str):
            return self.windows()
        return np.full(self.groups, cutoff, dtype=np.int64)

    def windows(self) -> np.ndarray:
        """Each ranking's k_q; ValueError when the run rows carry no window."""
        if self.window is None:
            raise ValueError("a statistic is cut at the window, and the run has no window column")
        return self.window

    def lists(self, selected: np.ndarray, values: np.ndarray) -> pa.Array:
        """One list per group of ``values`` at the selected rows, in ranking order."""
        counts = np.bincount(self.group[selected], minlength=self.groups)
        offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int32)
        return pa.ListArray.from_arrays(pa.array(offsets), pa.array(values[selected], pa.int64()))


__all__ = ["Ranked", "segment_sums"]
