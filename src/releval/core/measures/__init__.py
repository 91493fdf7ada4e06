"""Retrieval measures: the registry and the families that register into it."""

from __future__ import annotations

from releval.core.measures import (  # noqa: F401  (register specs)
    counts,
    dcg,
    gain_based,
    incomplete,
    interpolated,
    rank_based,
    set_based,
    whole_set,
)
from releval.core.measures.registry import (
    REGISTRY,
    Measure,
    MetricSpec,
    check_window,
    parse_measure,
    parse_measures,
)

__all__ = ["REGISTRY", "Measure", "MetricSpec", "check_window", "parse_measure", "parse_measures"]
