"""A test hook: pause a job at a named stage so a test can kill it there.

The job calls :func:`pause` at ``before_write``, ``between_tables`` and
``before_run_log``. It does nothing unless a test has installed a hook with
:func:`install` in the job's own process (``tests/support/paused_job.py`` does so before it
runs ``jobs/evaluate.py``): nothing in the environment of a production run can turn it
on.
"""

from __future__ import annotations

from collections.abc import Callable

_hook: Callable[[str], None] | None = None


def install(hook: Callable[[str], None] | None) -> None:
    """Make :func:`pause` call ``hook(stage)`` (None removes it). For tests only."""
    global _hook
    _hook = hook


def pause(stage: str) -> None:
    """Call the installed test hook with ``stage``; without one, return at once."""
    if _hook is not None:
        _hook(stage)
