"""Slices and traffic weights over Spark Connect: the synthetic search log of
tests/support/slices_support.py checked as on the classic session (tests/test_slices.py)."""

from __future__ import annotations

import pytest
from support.connect_support import CLIENT_PROLOGUE, last_json, run_client
from support.slices_support import expected_check

pytestmark = pytest.mark.slow  # a Spark Connect server and a client process

SCRIPT = CLIENT_PROLOGUE + """
from releval.runtime.mode import is_connect
from support.slices_support import check
print(json.dumps({"connect": is_connect(spark), **check(spark)}))
"""


def test_slices_and_weights_on_spark_connect(connect_url, tmp_path):
    got = last_json(run_client(connect_url, SCRIPT, cwd=tmp_path))
    assert got["connect"]
    assert got["worst_slice"] < 1e-12 and got["slice_rows"] == 100
    assert got["worst_weighted"] < 1e-9 and got["weighted_rows"] == 90
    assert got["balanced"]
    for key, value in expected_check().items():
        assert got[key] == value, key
