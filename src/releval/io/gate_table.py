"""The gate Delta table: one row per run partition, rule and slice value (docs/usage.md,
"Release gates"), written with the job's other tables and replaced as they are."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from releval.io.atomic import WriteResult, replace_partitions
from releval.io.writers import with_comments

BASELINE, DECISION = "baseline", "decision"
ALPHA, MODE, GATED_AT, JOB_RUN_ID = "alpha", "mode", "gated_at", "job_run_id"
_GATE_FIELDS = [
    ("rule", T.StringType(), "The rule as written, e.g. 'nDCG@10 change >= -0.01'."),
    ("measure_key", T.StringType(), "The rule's measure."),
    ("slice", T.StringType(), "The slice column of a 'per SLICE' rule (null: all queries)."),
    ("slice_value", T.StringType(), "The slice value of the row (null: all queries)."),
    ("estimate", T.DoubleType(), "The tested mean: the candidate's (a level rule), candidate - "
     "baseline (change), candidate - (1 + r) x baseline (relative, against 0); weighted for a "
     "weighted rule."),
    ("bound_low", T.DoubleType(), "The one-sided (1 - alpha) lower bound of the estimate."),
    ("bound_high", T.DoubleType(), "The one-sided (1 - alpha) upper bound of the estimate."),
    ("threshold", T.DoubleType(), "The rule's threshold for the estimate (0 for a relative rule)."),
    ("outcome", T.StringType(), "pass, fail, inconclusive, or no_baseline (a change rule of a "
     "run partition without a baseline)."),
    ("p_pass", T.DoubleType(), "One-sided p-value of the test that the rule holds."),
    ("p_fail", T.DoubleType(), "One-sided p-value of the test that the rule is broken."),
    ("p_fail_adjusted", T.DoubleType(), "p_fail after Holm's correction over every fail test "
     "of the run partition's gate."),
    ("num_queries", T.LongType(), "The queries tested: both sides scored them (a change rule), "
     "the candidate did (a level rule); with a positive weight (a weighted rule)."),
    ("queries_needed", T.LongType(), "An inconclusive row: the queries whose test would decide "
     "it with probability 0.8 at the observed mean and spread (every value equal: the queries "
     "at which that value decides)."),
    ("relative_change", T.DoubleType(), "A change rule: (candidate mean - baseline mean) / "
     "baseline mean, a fraction as in the comparison table, over the pairs."),
    (BASELINE, T.StringType(), "The baseline run partition, e.g. system=bm25/date=2026-11-28 "
     "(null: none)."),
    (DECISION, T.StringType(), "The run partition's gate: pass, fail, inconclusive or "
     "no_baseline (every rule needs one and there is none)."),
    (ALPHA, T.DoubleType(), "The gate's level."),
    (MODE, T.StringType(), "confidence (the tests decide) or point (the estimates do)."),
    (GATED_AT, T.TimestampType(), "When the gate ran (UTC)."),
    (JOB_RUN_ID, T.StringType(), "The batch job run that wrote the row (joins to the run log)."),
]
COMMENTS = {name: comment for name, _, comment in _GATE_FIELDS}
PARTITION_COMMENT = "A run partition column of the gated (candidate) run partition."


def gate_schema(partition_fields: Sequence[T.StructField]) -> T.StructType:
    """The gate table's schema: the gated run partition's columns, then the gate's."""
    return T.StructType([
        *[T.StructField(f.name, f.dataType, True) for f in partition_fields],
        *[T.StructField(name, dtype, True) for name, dtype, _ in _GATE_FIELDS],
    ])


def write_gate(rows: DataFrame, *, path: str | None, table: str | None,
               partition_fields: Sequence[T.StructField],
               output_partition_columns: Sequence[str], predicate: str | None,
               job_run_id: str) -> WriteResult:
    """Replace ``predicate``'s rows of the gate table (None: all) with ``rows`` in one commit."""
    comments = {**COMMENTS, **{f.name: PARTITION_COMMENT for f in partition_fields}}
    return replace_partitions(
        rows, path=path, table=table,
        schema=with_comments(gate_schema(partition_fields), comments),
        partition_columns=output_partition_columns,
        description="releval gates: one row per gated run partition, rule and slice value.",
        predicate=predicate, user_metadata=f"releval gate job_run_id={job_run_id}",
    )
