"""releval: distributed evaluation of search and RAG retrieval runs.

``releval.evaluate``, ``releval.compare``, ``releval.changes`` and ``releval.gate`` work on
DataFrames; ``releval.measures`` lists the measures. They load on first use, so Spark's Python
workers import only the engine.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

__version__ = "0.1.0"
__all__ = ["ClickLabels", "Gate", "Result", "changes", "click_labels", "compare", "evaluate",
           "evaluate_clicks", "gate", "interleaving", "measures"]
#: The public names defined outside ``api``: name -> module.
_ELSEWHERE = {"evaluate_clicks": "releval.clicks.online",
              "interleaving": "releval.clicks.interleaving",
              "click_labels": "releval.clicks.labels",
              "ClickLabels": "releval.clicks.labels_result"}


def __getattr__(name: str) -> Any:
    if name in _ELSEWHERE:
        from importlib import import_module

        return getattr(import_module(_ELSEWHERE[name]), name)
    if name in __all__:
        from releval import api

        return getattr(api, name)
    raise AttributeError(f"module 'releval' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public API (``__all__``, loaded or not), ``__version__`` and the subpackages
    already imported: what Tab offers, without the module's own imports."""
    loaded = {n for n, v in globals().items() if isinstance(v, ModuleType)}
    return sorted({*__all__, "__version__", *loaded})
