"""Each output table's schema, column comments and table properties, and its one writer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from releval.core import columns as C
from releval.core.columns import quote_identifier, quote_literal
from releval.core.frames import local_frame
from releval.io.atomic import (
    WriteResult,
    check_schema_version,
    read_table,
    replace_partitions,
)
from releval.io.comments import (
    AGGREGATE_COMMENTS,
    ATTRIBUTION_COMMENTS,
    PER_QUERY_COMMENTS,
    QUARANTINE_COMMENTS,
    QUARANTINE_PARTITION_COMMENT,
)
from releval.io.writers import with_comments

#: The measure columns shared by the per-query and the aggregate tables.
MEASURE_FIELDS = [
    T.StructField(C.MEASURE, T.StringType(), False),
    T.StructField(C.CUTOFF, T.IntegerType(), True),
    T.StructField(C.REL_LEVEL, T.IntegerType(), False),
    T.StructField(C.JUDGED_ONLY, T.BooleanType(), False),
    T.StructField(C.MEASURE_KEY, T.StringType(), False),
]


def per_query_schema(partition_fields: list[T.StructField]) -> T.StructType:
    """Schema of the per-query table: partition columns first, then the measure row.

    Columns added by a release go at the end (docs/migrations.md).
    """
    return T.StructType(
        [
            *partition_fields,
            T.StructField(C.QUERY_ID, T.StringType(), False),
            *MEASURE_FIELDS,
            T.StructField(C.VALUE, T.DoubleType(), False),
            T.StructField(C.NUM_RET, T.LongType(), False),
            T.StructField(C.NUM_REL, T.LongType(), False),
            T.StructField(C.NUM_REL_RET, T.LongType(), False),
            T.StructField(C.JOB_RUN_ID, T.StringType(), True),
            T.StructField(C.NEGATIVE_LABELS, T.StringType(), True),
            T.StructField(C.DEPTH, T.IntegerType(), True),
            T.StructField(C.ANSWER_SCORE, T.DoubleType(), True),
            T.StructField(C.WINDOW_SIZE, T.IntegerType(), True),
            T.StructField(C.WEIGHT, T.DoubleType(), True),
            T.StructField(C.SLICES, T.MapType(T.StringType(), T.StringType()), True),
        ]
    )

#: Delta's table property naming the columns whose file statistics it collects
STATS_COLUMNS_PROPERTY = "delta.dataSkippingStatsColumns"

def per_query_properties(
    run_partition_columns: Sequence[str], output_partition_columns: Sequence[str]
) -> dict[str, str]:
    """Table properties a new per-query table is created with.

    Delta's file statistics only for ``job_run_id`` and the run partition columns that do
    not partition the table: a file holds many queries and every measure, so statistics on
    ``query_id``, ``measure_key`` or ``value`` would skip no file and slow every write.
    """
    columns = [c for c in run_partition_columns if c not in output_partition_columns]
    quoted = [quote_identifier(c) for c in [*columns, C.JOB_RUN_ID]]
    return {STATS_COLUMNS_PROPERTY: ",".join(quoted)}

def aggregate_schema(partition_fields: list[T.StructField]) -> T.StructType:
    """Schema of the aggregate table: partition columns first, then one row per measure."""
    return T.StructType(
        [
            *partition_fields,
            *MEASURE_FIELDS,
            T.StructField(C.AVERAGING, T.StringType(), False),
            T.StructField(C.VALUE, T.DoubleType(), False),
            T.StructField(C.NUM_QUERIES, T.LongType(), False),
            T.StructField(C.JOB_RUN_ID, T.StringType(), True),
            T.StructField(C.NEGATIVE_LABELS, T.StringType(), True),
            # interval columns: at the end and nullable, as added columns are (docs/migrations.md)
            T.StructField(C.CI_LOW, T.DoubleType(), True),
            T.StructField(C.CI_HIGH, T.DoubleType(), True),
            T.StructField(C.CI_METHOD, T.StringType(), True),
            T.StructField(C.CI_LEVEL, T.DoubleType(), True),
            T.StructField(C.DEPTH, T.IntegerType(), True),
            T.StructField(C.SLICE, T.StringType(), True),
            T.StructField(C.SLICE_VALUE, T.StringType(), True),
        ]
    )

def attribution_schema(partition_fields: list[T.StructField]) -> T.StructType:
    """Schema of the attribution table: partition columns first, then one row per cell of
    retrieval x answer, each with its run partition's figures."""
    double, long_, string = T.DoubleType(), T.LongType(), T.StringType()
    return T.StructType(
        [
            *partition_fields,
            T.StructField(C.CELL, string, False),
            T.StructField(C.QUERIES, long_, False),
            T.StructField(C.SHARE, double, True),
            T.StructField(C.SHARE_CI_LOW, double, True),
            T.StructField(C.SHARE_CI_HIGH, double, True),
            T.StructField(C.ATTRIBUTED, long_, False),
            T.StructField(C.RETRIEVED_BY_MEASURE, string, False),
            T.StructField(C.RETRIEVED_AT, double, False),
            T.StructField(C.CORRECT_AT, double, False),
            T.StructField(C.KENDALL_TAU_B, double, True),
            T.StructField(C.KENDALL_P_VALUE, double, True),
            T.StructField(C.MEAN_SCORE_WITH_EVIDENCE, double, True),
            T.StructField(C.MEAN_SCORE_WITHOUT_EVIDENCE, double, True),
            T.StructField(C.CI_LEVEL, double, False),
            T.StructField(C.JOB_RUN_ID, string, True),
        ]
    )

#: The rejected-row columns, as ``releval.checks.rules`` produces them.
QUARANTINE_SCHEMA = T.StructType(
    [
        T.StructField(C.INPUT, T.StringType(), False),
        T.StructField(C.SOURCE, T.StringType(), True),
        T.StructField(C.LINE, T.LongType(), True),
        T.StructField(C.PARTITION, T.MapType(T.StringType(), T.StringType(), True), False),
        T.StructField(C.RAW, T.MapType(T.StringType(), T.StringType(), True), False),
        T.StructField(C.REASON_CODE, T.StringType(), False),
        T.StructField(C.MESSAGE, T.StringType(), False),
    ]
)

def quarantine_table_schema(partition_fields: list[T.StructField]) -> T.StructType:
    """Schema of the quarantine table: the run partition columns (null on qrels rows), the
    rejected-row columns, the qrels key (null on run rows) and the job run id."""
    return T.StructType(
        [
            *[T.StructField(f.name, f.dataType, True) for f in partition_fields],
            *QUARANTINE_SCHEMA.fields,
            T.StructField(C.QRELS_KEY, T.StringType(), True),
            T.StructField(C.JOB_RUN_ID, T.StringType(), True),
        ]
    )


def quarantine_predicate(*, run_predicate: str | None, qrels: str, answers: bool = False,
                         queries: bool = False) -> str:
    """The quarantine rows a job replaces: the run rows (and with ``answers`` the answers
    rows) of the evaluated partitions (``run_predicate``, the outputs' replaceWhere; None:
    every such row), the qrels rows of the qrels key ``qrels`` it read and, with
    ``queries``, every queries row (the queries input is read whole)."""
    where = f" AND ({run_predicate})" if run_predicate else ""
    qrels_rows = f"{C.INPUT} = 'qrels' AND {C.QRELS_KEY} = {quote_literal(qrels)}"
    answers_rows = f" OR ({C.INPUT} = 'answers'{where})" if answers else ""
    queries_rows = f" OR ({C.INPUT} = 'queries')" if queries else ""
    return f"({C.INPUT} = 'run'{where}) OR ({qrels_rows}){answers_rows}{queries_rows}"


def quarantine_rows(
    rejected: DataFrame, *, partition_fields: Sequence[T.StructField], qrels: str,
    job_run_id: str | None,
) -> DataFrame:
    """Rejected rows (:data:`QUARANTINE_SCHEMA`) as the quarantine table holds them: the run
    partition columns first, ``qrels_key`` on qrels rows, ``job_run_id`` on every row."""
    return rejected.select(
        *[F.col(C.PARTITION)[f.name].try_cast(f.dataType).alias(f.name) for f in partition_fields],
        *QUARANTINE_SCHEMA.names,
        F.when(F.col(C.INPUT) == "qrels", F.lit(qrels)).alias(C.QRELS_KEY),
        F.lit(job_run_id).cast("string").alias(C.JOB_RUN_ID),
    )


def write_quarantine(
    rejected: DataFrame | None,
    *,
    spark: SparkSession,
    path: str | None,
    table: str | None,
    partition_fields: Sequence[T.StructField],
    output_partition_columns: Sequence[str],
    run_predicate: str | None,
    qrels: str,
    job_run_id: str | None = None,
    answers: bool = False,
    queries: bool = False,
) -> None:
    """Replace the job's rows (:func:`quarantine_predicate`; ``answers``, ``queries``: the
    job read answers, a queries input) of the quarantine table.

    With ``rejected`` None the job's old rows are removed, so no stale rejection stays;
    nothing is written when there are none or no table, as an empty write costs Spark jobs.
    """
    predicate = quarantine_predicate(run_predicate=run_predicate, qrels=qrels, answers=answers,
                                     queries=queries)
    fields = list(partition_fields)
    if rejected is None:
        if not check_schema_version(spark, path=path, table=table):
            return  # no table and nothing to keep: none is created
        existing = read_table(spark, path=path, table=table)
        if not existing.where(predicate).inputFiles():
            return
        rejected = local_frame(spark, [], QUARANTINE_SCHEMA)
    rows = quarantine_rows(rejected, partition_fields=fields, qrels=qrels, job_run_id=job_run_id)
    comments = {**QUARANTINE_COMMENTS, **{f.name: QUARANTINE_PARTITION_COMMENT for f in fields}}
    # retried like the output writes: two jobs starting at once both create the table
    replace_partitions(
        rows, path=path, table=table,
        schema=with_comments(quarantine_table_schema(fields), comments),
        partition_columns=[C.INPUT, *output_partition_columns],
        description="releval quarantine: one row per rejected input row, with the reason.",
        predicate=predicate,
        user_metadata=f"releval quarantine job_run_id={job_run_id}",
    )


#: About this many per-query rows go to one file of the per-query table (a few MB).
ROWS_PER_FILE = 1_000_000


def per_query_rows(
    per_query: DataFrame, *, partition_columns: Sequence[str], job_run_id: str | None
) -> DataFrame:
    """The per-query rows (:func:`releval.core.engine.long_format`) as the table holds them."""
    fields = [per_query.schema[c] for c in partition_columns]
    with_id = per_query.withColumn(C.JOB_RUN_ID, F.lit(job_run_id).cast("string"))
    return with_id.select(*per_query_schema(fields).names)


def write_per_query(
    per_query: DataFrame,
    *,
    rows: int,
    path: str | None,
    table: str | None,
    partition_fields: Sequence[T.StructField],
    output_partition_columns: Sequence[str],
    predicate: str | None,
    job_run_id: str | None,
) -> WriteResult:
    """Replace ``predicate``'s rows of the per-query table with ``per_query`` in one commit.

    Args:
        per_query: the rows (:func:`releval.core.engine.long_format`), without ``job_run_id``.
        rows: about how many rows ``per_query`` has: it is written in files of about
            :data:`ROWS_PER_FILE` rows.
        path, table: the table's location.
        partition_fields: the run partition columns' fields.
        output_partition_columns: the columns the table is partitioned by.
        predicate: the replaceWhere predicate (None: the whole table).
        job_run_id: written to every row and the commit's userMetadata.
    """
    fields = list(partition_fields)
    parts = [f.name for f in fields]
    files = max(1, -(-rows // ROWS_PER_FILE))
    return replace_partitions(
        per_query_rows(per_query.coalesce(files), partition_columns=parts,
                       job_run_id=job_run_id),
        path=path,
        table=table,
        schema=with_comments(per_query_schema(fields), PER_QUERY_COMMENTS),
        partition_columns=output_partition_columns,
        description="releval per-query measures: one row per run partition, query, measure.",
        predicate=predicate,
        user_metadata=f"releval job_run_id={job_run_id}",
        properties=per_query_properties(parts, output_partition_columns),
    )


def _write_rows(
    spark: SparkSession, rows: Sequence[Mapping[str, Any]], schema: T.StructType, *,
    path: str | None, table: str | None, output_partition_columns: Sequence[str],
    predicate: str | None, job_run_id: str | None, description: str,
) -> tuple[tuple[Row, ...], WriteResult]:
    """Replace ``predicate``'s rows of a table with rows made on the driver, in one commit."""
    written = tuple(
        Row(**{f.name: job_run_id if f.name == C.JOB_RUN_ID else r[f.name]
               for f in schema.fields})
        for r in rows
    )
    result = replace_partitions(
        local_frame(spark, [tuple(r) for r in written], schema),
        path=path, table=table, schema=schema, partition_columns=output_partition_columns,
        description=description, predicate=predicate,
        user_metadata=f"releval job_run_id={job_run_id}",
    )
    return written, result


def write_aggregate(
    spark: SparkSession,
    rows: Sequence[Mapping[str, Any]],
    *,
    path: str | None,
    table: str | None,
    partition_fields: Sequence[T.StructField],
    output_partition_columns: Sequence[str],
    predicate: str | None,
    job_run_id: str | None,
) -> tuple[tuple[Row, ...], WriteResult]:
    """Replace ``predicate``'s rows of the aggregate table with ``rows`` in one commit.

    Args:
        spark: the session.
        rows: the aggregate rows (:func:`releval.frames.aggregate.rows`), on the driver.
        path, table, partition_fields, output_partition_columns, predicate, job_run_id:
            as for :func:`write_per_query`.

    Returns:
        The rows as written (``job_run_id`` set) and the commit.
    """
    schema = with_comments(aggregate_schema(list(partition_fields)), AGGREGATE_COMMENTS)
    return _write_rows(
        spark, rows, schema, path=path, table=table,
        output_partition_columns=output_partition_columns, predicate=predicate,
        job_run_id=job_run_id,
        description="releval aggregate measures: one row per run partition, measure, averaging.",
    )


def write_attribution(
    spark: SparkSession, rows: Sequence[Mapping[str, Any]], *, path: str | None,
    table: str | None, partition_fields: Sequence[T.StructField],
    output_partition_columns: Sequence[str], predicate: str | None, job_run_id: str | None,
) -> tuple[tuple[Row, ...], WriteResult]:
    """Replace ``predicate``'s rows of the attribution table with ``rows``
    (:func:`releval.frames.attribution.rows`) in one commit; arguments and result as
    :func:`write_aggregate`."""
    schema = with_comments(attribution_schema(list(partition_fields)), ATTRIBUTION_COMMENTS)
    return _write_rows(
        spark, rows, schema, path=path, table=table,
        output_partition_columns=output_partition_columns, predicate=predicate,
        job_run_id=job_run_id,
        description="releval attribution: one row per run partition and cell of retrieval "
        "x answer.",
    )
