"""releval.click_labels over Spark Connect: the hand-made log's simplified DBN counts and
accounts, and the PBM against the plain EM, as in the default session
(tests/test_click_labels.py)."""

from __future__ import annotations

import pytest
from support.click_labels_support import EXPECTED
from support.connect_support import CLIENT_PROLOGUE, last_json, run_client

pytestmark = pytest.mark.slow  # a Spark Connect server and a client process

SCRIPT = (
    CLIENT_PROLOGUE
    + """
from releval.runtime.mode import is_connect
from support.click_labels_support import check
print(json.dumps({"connect": is_connect(spark), **check(spark)}))
"""
)


def test_click_labels_on_spark_connect(connect_url, tmp_path):
    got = last_json(run_client(connect_url, SCRIPT, cwd=tmp_path))
    assert got.pop("connect")
    assert got == EXPECTED
