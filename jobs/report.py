"""Entry point of the report (no Spark: it reads the Delta tables with deltalake).

    python jobs/report.py --config conf/local.toml --output warehouse/releval/report.html

The same command as ``releval report``; user errors print one line and exit with code 2.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from releval.cli import main as releval_main
from releval.cli import run


def main(argv: Sequence[str] | None = None) -> int:
    return releval_main(["report", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    run(["report", *sys.argv[1:]])
