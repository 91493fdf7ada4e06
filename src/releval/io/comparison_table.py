"""The comparison Delta table: one row per baseline, candidate and measure (and slice value,
averaging), its schema and its one writer (docs/statistics.md)."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from releval.core import columns as C
from releval.io.atomic import WriteResult, replace_partitions
from releval.io.comments import COMPARISON_COMMENTS
from releval.io.tables import MEASURE_FIELDS
from releval.io.writers import with_comments


def comparison_schema(partition_fields: list[T.StructField]) -> T.StructType:
    """Schema of the comparison table: output partition columns (the candidate's) first."""
    double, long_, string, bool_ = T.DoubleType(), T.LongType(), T.StringType(), T.BooleanType()
    return T.StructType(
        [
            *partition_fields,
            T.StructField(C.COMPARISON_ID, string, False),
            T.StructField(C.COMPARED_AT, T.TimestampType(), False),
            T.StructField(C.BASELINE, string, False),
            T.StructField(C.CANDIDATE, string, False),
            *MEASURE_FIELDS,
            T.StructField(C.PAIRING, string, False),
            T.StructField(C.NUM_PAIRS, long_, False),
            T.StructField(C.BASELINE_MEAN, double, False),
            T.StructField(C.CANDIDATE_MEAN, double, False),
            T.StructField(C.MEAN_DIFF, double, False),
            T.StructField(C.DIFF_CI_LOW, double, True),
            T.StructField(C.DIFF_CI_HIGH, double, True),
            T.StructField(C.RELATIVE_CHANGE, double, True),
            T.StructField(C.WINS, long_, False),
            T.StructField(C.TIES, long_, False),
            T.StructField(C.LOSSES, long_, False),
            T.StructField(C.EFFECT_SIZE, double, True),
            T.StructField(C.T_P_VALUE, double, True),
            T.StructField(C.RANDOMIZATION_P_VALUE, double, True),
            T.StructField(C.T_P_ADJUSTED, double, True),
            T.StructField(C.RANDOMIZATION_P_ADJUSTED, double, True),
            T.StructField(C.TUKEY_P_VALUE, double, True),
            T.StructField(C.CORRECTION, string, False),
            T.StructField(C.ALPHA, double, False),
            T.StructField(C.TEST, string, False),
            T.StructField(C.SIGNIFICANT, bool_, True),
            T.StructField(C.PERMUTATIONS, long_, False),
            T.StructField(C.SEED, long_, False),
            T.StructField(C.BASELINE_JOB_RUN_ID, string, True),
            T.StructField(C.CANDIDATE_JOB_RUN_ID, string, True),
            # added columns: at the end and nullable (docs/migrations.md)
            *[T.StructField(c, t, True) for c, t in [(C.MIN_DETECTABLE_DIFF, double),
              (C.QUERIES_NEEDED, long_), (C.MEAN_DIFF_BEST, double), (C.SIGN_HOLDS, bool_),
              (C.SLICE, string), (C.SLICE_VALUE, string), (C.AVERAGING, string)]],
        ]
    )


def write_comparison(
    rows: DataFrame,
    *,
    path: str | None,
    table: str | None,
    partition_fields: Sequence[T.StructField],
    output_partition_columns: Sequence[str],
    predicate: str,
    comparison_id: str,
) -> WriteResult:
    """Replace ``predicate``'s rows of the comparison table with ``rows`` in one commit."""
    return replace_partitions(
        rows,
        path=path,
        table=table,
        schema=with_comments(comparison_schema(list(partition_fields)), COMPARISON_COMMENTS),
        partition_columns=output_partition_columns,
        description="releval comparisons: one row per baseline, candidate and measure (and "
        "slice value, averaging).",
        predicate=predicate,
        user_metadata=f"releval comparison_id={comparison_id}",
    )
