"""Slices by a run column over Spark Connect (tests/support/run_slices_support.py), against
values worked by hand."""

from __future__ import annotations

import pytest
from support.connect_support import CLIENT_PROLOGUE, last_json, run_client

pytestmark = pytest.mark.slow  # a Spark Connect server and a client process

SCRIPT = CLIENT_PROLOGUE + """
from releval.runtime.mode import is_connect
from support.run_slices_support import check
print(json.dumps({"connect": is_connect(spark), **check(spark)}))
"""


def test_run_slices_on_spark_connect(connect_url, tmp_path):
    got = last_json(run_client(connect_url, SCRIPT, cwd=tmp_path))
    assert got["connect"]
    assert got["rows"] == {
        "": [pytest.approx((1 + 1 / 2 + 0 + 1) / 4), 4],    # q5 keeps its RR 1
        "mobile": [pytest.approx((1 + 1 / 2) / 2), 2],      # q1, q2
        "(null)": [0.0, 1],                                 # q3
        "(conflicting)": [1.0, 1],                          # q5: its rows disagree
    }
    assert got["reasons"] == []
    assert got["account"] == [7, 7, 0]  # every row used
