"""``jobs/evaluate.py`` with a pause injected at one stage, for the kill tests.

    python tests/support/paused_job.py STAGE MARKER_FILE [evaluate.py arguments...]

At ``STAGE`` the job writes the stage name to ``MARKER_FILE`` and sleeps (600 s), so the
test can SIGKILL it at a known point. The hook exists only in this process.
"""

from __future__ import annotations

import runpy
import sys
import time
from pathlib import Path

from releval.runtime import testhooks


def main() -> None:
    stage, marker, *args = sys.argv[1:]

    def hook(at: str) -> None:
        if at == stage:
            Path(marker).write_text(at, encoding="utf-8")
            time.sleep(600)

    testhooks.install(hook)
    job = Path(__file__).resolve().parents[2] / "jobs" / "evaluate.py"
    sys.argv = [str(job), *args]
    runpy.run_path(str(job), run_name="__main__")


if __name__ == "__main__":
    main()
