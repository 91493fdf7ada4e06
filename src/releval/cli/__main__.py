"""``python -m releval.cli``."""

from releval.cli import run

run()
