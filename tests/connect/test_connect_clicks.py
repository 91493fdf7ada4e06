"""The online measures, interleaving and the interactions' accounts over Spark Connect: the
hand-made log of tests/support/clicks_support.py checked as in the default session
(tests/test_interleaving.py)."""

from __future__ import annotations

import pytest
from support.clicks_support import EXPECTED
from support.connect_support import CLIENT_PROLOGUE, last_json, run_client

pytestmark = pytest.mark.slow  # a Spark Connect server and a client process

SCRIPT = CLIENT_PROLOGUE + """
from releval.runtime.mode import is_connect
from support.clicks_support import check
print(json.dumps({"connect": is_connect(spark), **check(spark)}))
"""


def test_online_measures_and_interleaving_on_spark_connect(connect_url, tmp_path):
    got = last_json(run_client(connect_url, SCRIPT, cwd=tmp_path))
    assert got.pop("connect")
    assert got == EXPECTED
