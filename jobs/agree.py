"""spark-submit entry point of the agreement job (docs/agreement.md).

    spark-submit --jars <delta jars> jobs/agree.py --config conf/local.toml \\
        --run --partition date=2026-11-28 --baseline system=bm25

Compares the config's second qrels version ([agree]) with [qrels], over the pairs both
judge and, with --run, over the run partitions' orderings and decisions; writes the
agreement table and prints it. The same command as ``releval agree``; user errors print
one line and exit with code 2.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from releval.cli import main as releval_main


def main(argv: Sequence[str] | None = None) -> int:
    return releval_main(["agree", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
