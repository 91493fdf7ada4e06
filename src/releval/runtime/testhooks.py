"""A test hook: pause a job at a named stage so a test can kill it there.

Only :func:`install`, in the job's own process (``tests/support/paused_job.py``), turns it on;
nothing in a production run's environment can.
"""

from __future__ import annotations

from collections.abc import Callable

_hook: Callable[[str], None] | None = None


def install(hook: Callable[[str], None] | None) -> None:
    """Make :func:`pause` call ``hook(stage)`` (None removes it). For tests only."""
    global _hook
    _hook = hook


def pause(stage: str) -> None:
    """Call the installed test hook with ``stage`` (e.g. ``before_run_log``), if there is one."""
    if _hook is not None:
        _hook(stage)
