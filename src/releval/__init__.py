"""releval: distributed evaluation of search and RAG retrieval runs."""

from __future__ import annotations

__version__ = "0.1.0"
