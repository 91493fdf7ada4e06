"""A documented test hook: pause a job at a named stage so a test can kill it there.

When ``RELEVAL_TEST_PAUSE_AT`` names a stage (``before_write``, ``between_tables``,
``before_run_log``), the job writes that stage to the file ``RELEVAL_TEST_PAUSE_MARKER``
(if set) and sleeps ``RELEVAL_TEST_PAUSE_SECONDS`` (default 600), so a test can
SIGKILL it at a known point. Unset (always, in production) it does nothing.
"""

from __future__ import annotations

import os
import time

PAUSE_ENV = "RELEVAL_TEST_PAUSE_AT"
PAUSE_MARKER_ENV = "RELEVAL_TEST_PAUSE_MARKER"
PAUSE_SECONDS_ENV = "RELEVAL_TEST_PAUSE_SECONDS"


def pause(stage: str) -> None:
    """Sleep here when the test hook names ``stage``; otherwise return at once."""
    if os.environ.get(PAUSE_ENV) != stage:
        return
    marker = os.environ.get(PAUSE_MARKER_ENV)
    if marker:
        with open(marker, "w", encoding="utf-8") as fh:
            fh.write(stage)
    time.sleep(float(os.environ.get(PAUSE_SECONDS_ENV, "600")))
