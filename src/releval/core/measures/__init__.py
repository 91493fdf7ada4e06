"""Retrieval measures: the registry and the families that register into it."""

from __future__ import annotations

from releval.core.measures import counts, dcg, incomplete, rank_based, set_based  # noqa: F401  (register specs)
from releval.core.measures.registry import (
    REGISTRY,
    Measure,
    MetricSpec,
    parse_measure,
    parse_measures,
)

__all__ = ["REGISTRY", "Measure", "MetricSpec", "parse_measure", "parse_measures"]
