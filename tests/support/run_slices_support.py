"""Slices by a run column on four judged queries of one run partition: what
tests/connect/test_connect_run_slices.py checks over Spark Connect (the classic session's
checks are in tests/test_run_slices.py)."""

from __future__ import annotations

from pyspark.sql import SparkSession

import releval
from releval.core import columns as S

RUN = [
    ("q1", "a", 3.0, "mobile"), ("q1", "b", 2.0, "mobile"),    # RR 1
    ("q2", "a", 3.0, "mobile"), ("q2", "b", 2.0, "mobile"),    # RR 1/2
    ("q3", "a", 3.0, None),                                    # RR 0, (null)
    ("q5", "a", 3.0, "mobile"), ("q5", "b", 2.0, "desktop"),   # disagree: (conflicting)
]
QRELS = [("q1", "a", 1), ("q2", "b", 1), ("q3", "z", 1), ("q5", "a", 1)]


def check(spark: SparkSession) -> dict:
    """The RR macro rows per device, the quarantine's reasons and the run's account."""
    result = releval.evaluate(
        spark.createDataFrame(RUN, "query_id string, doc_id string, score double, "
                              "device string"),
        spark.createDataFrame(QRELS, "query_id string, doc_id string, relevance int"),
        measures=["RR"], slices=["device"])
    rows = {r[S.SLICE_VALUE] or "": [r[S.VALUE], r[S.NUM_QUERIES]]
            for r in result.aggregate.collect()
            if r[S.MEASURE_KEY] == "RR" and r[S.AVERAGING] == "macro"}
    reasons = sorted([r[S.RAW]["doc_id"], r[S.REASON_CODE]] for r in result.quarantine.collect())
    account = result.accounts.run
    return {"rows": rows, "reasons": reasons,
            "account": [account.input, account.used, account.quarantined_total]}
