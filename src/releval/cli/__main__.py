"""``python -m releval.cli``."""

import sys

from releval.cli import main

sys.exit(main())
