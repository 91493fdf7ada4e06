"""spark-submit entry point of the comparison job (docs/statistics.md).

    spark-submit --jars <delta jars> jobs/compare.py --config conf/local.toml \\
        --baseline system=bm25 --candidate system=hybrid --candidate system=dense \\
        --partition date=2026-11-28

Reads the per-query table the config names, compares each candidate run partition with
the baseline over the same queries, writes the comparison table and prints it. The same
command as ``releval compare``; user errors print one line and exit with code 2.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from releval.cli import main as releval_main


def main(argv: Sequence[str] | None = None) -> int:
    return releval_main(["compare", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
