"""Column names and Spark schemas of every table releval reads or writes.

Inputs are mapped onto the canonical column names below as soon as they are
read (see ``releval.io.readers``); everything downstream uses only these names.
"""

from __future__ import annotations

from pyspark.sql import types as T

# --- canonical input columns -------------------------------------------------
QUERY_ID = "query_id"
DOC_ID = "doc_id"
SCORE = "score"
RANK = "rank"
RELEVANCE = "relevance"

# --- derived columns -----------------------------------------------------------
#: 1-based position of a document in its query's ranking (after tie-breaking).
POSITION = "position"

# --- output columns ------------------------------------------------------------
MEASURE = "measure"
CUTOFF = "cutoff"
REL_LEVEL = "rel_level"
JUDGED_ONLY = "judged_only"
MEASURE_KEY = "measure_key"
VALUE = "value"
NUM_RET = "num_ret"
NUM_REL = "num_rel"
NUM_REL_RET = "num_rel_ret"
AVERAGING = "averaging"
NUM_QUERIES = "num_queries"
#: Confidence interval of a macro value (see releval.inference.intervals).
CI_LOW = "ci_low"
CI_HIGH = "ci_high"
CI_METHOD = "ci_method"
CI_LEVEL = "ci_level"
#: The batch job run that wrote a row (joins to the run-log table; see releval.lineage).
JOB_RUN_ID = "job_run_id"

#: Table property holding the version of the output schemas (see docs/migrations.md).
SCHEMA_VERSION_PROPERTY = "releval.schema_version"
SCHEMA_VERSION = "1"

RUN_SCHEMA = T.StructType(
    [
        T.StructField(QUERY_ID, T.StringType(), True),
        T.StructField(DOC_ID, T.StringType(), True),
        T.StructField(SCORE, T.DoubleType(), True),
        T.StructField(RANK, T.IntegerType(), True),
    ]
)

QRELS_SCHEMA = T.StructType(
    [
        T.StructField(QUERY_ID, T.StringType(), True),
        T.StructField(DOC_ID, T.StringType(), True),
        T.StructField(RELEVANCE, T.IntegerType(), True),
    ]
)

#: The measure columns shared by the per-query and the aggregate tables.
MEASURE_FIELDS = [
    T.StructField(MEASURE, T.StringType(), False),
    T.StructField(CUTOFF, T.IntegerType(), True),
    T.StructField(REL_LEVEL, T.IntegerType(), False),
    T.StructField(JUDGED_ONLY, T.BooleanType(), False),
    T.StructField(MEASURE_KEY, T.StringType(), False),
]

PER_QUERY_COMMENTS = {
    QUERY_ID: "Query id, as in the run and the qrels.",
    MEASURE: (
        "Measure family: P, R, Hit, RR, nDCG, nDCG_exp, AP, Rprec, bpref, Judged, "
        "num_ret, num_rel, num_rel_ret."
    ),
    CUTOFF: "Rank cutoff k of the measure; null when the measure has none (RR, AP).",
    REL_LEVEL: "A document counts as relevant when its label >= rel_level (nDCG gains ignore it).",
    JUDGED_ONLY: (
        "true: judged-only (condensed-list) variant, unjudged documents removed from the "
        "ranking before cutting at k (trec_eval -J); key ends in [judged]. false: unjudged "
        "documents count as non-relevant."
    ),
    MEASURE_KEY: "The measure as written in the measure list, canonical form: P@10, nDCG@10, AP.",
    VALUE: "The measure's value for this query.",
    NUM_RET: "Documents the run retrieved for this query (all ranks).",
    NUM_REL: "Documents of this query judged relevant (label >= rel_level) in the qrels.",
    NUM_REL_RET: "Relevant documents retrieved within the cutoff (all ranks when no cutoff).",
    JOB_RUN_ID: "Id of the job run that wrote this row; joins to the run-log table's job_run_id.",
}

AGGREGATE_COMMENTS = {
    MEASURE: PER_QUERY_COMMENTS[MEASURE],
    CUTOFF: PER_QUERY_COMMENTS[CUTOFF],
    REL_LEVEL: PER_QUERY_COMMENTS[REL_LEVEL],
    JUDGED_ONLY: PER_QUERY_COMMENTS[JUDGED_ONLY],
    MEASURE_KEY: PER_QUERY_COMMENTS[MEASURE_KEY],
    AVERAGING: (
        "macro: mean over queries of the per-query values; micro: pooled counts over "
        "queries (P: sum num_rel_ret / (k * queries), R: sum num_rel_ret / sum num_rel); "
        "sum: total over queries (the num_* counts)."
    ),
    VALUE: "The aggregate value.",
    NUM_QUERIES: "Queries that entered the aggregate.",
    JOB_RUN_ID: PER_QUERY_COMMENTS[JOB_RUN_ID],
    CI_LOW: (
        "Lower end of the confidence interval of a macro value (ci_method, ci_level); "
        "null for micro and sum rows and when num_queries < 2."
    ),
    CI_HIGH: (
        "Upper end of the confidence interval of a macro value (ci_method, ci_level); "
        "null for micro and sum rows and when num_queries < 2."
    ),
    CI_METHOD: (
        "How the interval was computed: t (Student t over queries) or bootstrap "
        "(percentile, Poisson bootstrap over queries); null for micro and sum rows."
    ),
    CI_LEVEL: "Coverage of the interval, e.g. 0.95; null for micro and sum rows.",
}


def per_query_schema(partition_fields: list[T.StructField]) -> T.StructType:
    """Schema of the per-query table: partition columns first, then the measure row."""
    return T.StructType(
        [
            *partition_fields,
            T.StructField(QUERY_ID, T.StringType(), False),
            *MEASURE_FIELDS,
            T.StructField(VALUE, T.DoubleType(), False),
            T.StructField(NUM_RET, T.LongType(), False),
            T.StructField(NUM_REL, T.LongType(), False),
            T.StructField(NUM_REL_RET, T.LongType(), False),
            T.StructField(JOB_RUN_ID, T.StringType(), True),
        ]
    )


def aggregate_schema(partition_fields: list[T.StructField]) -> T.StructType:
    """Schema of the aggregate table: partition columns first, then one row per measure."""
    return T.StructType(
        [
            *partition_fields,
            *MEASURE_FIELDS,
            T.StructField(AVERAGING, T.StringType(), False),
            T.StructField(VALUE, T.DoubleType(), False),
            T.StructField(NUM_QUERIES, T.LongType(), False),
            T.StructField(JOB_RUN_ID, T.StringType(), True),
            # added with the intervals (issue 12): at the end, nullable (docs/migrations.md)
            T.StructField(CI_LOW, T.DoubleType(), True),
            T.StructField(CI_HIGH, T.DoubleType(), True),
            T.StructField(CI_METHOD, T.StringType(), True),
            T.StructField(CI_LEVEL, T.DoubleType(), True),
        ]
    )


# --- quarantine table ----------------------------------------------------------
INPUT = "input"
SOURCE = "source"
LINE = "line"
PARTITION = "partition"
RAW = "raw"
REASON_CODE = "reason_code"
MESSAGE = "message"
JOB_PARTITION = "job_partition"

QUARANTINE_SCHEMA = T.StructType(
    [
        T.StructField(INPUT, T.StringType(), False),
        T.StructField(SOURCE, T.StringType(), True),
        T.StructField(LINE, T.LongType(), True),
        T.StructField(PARTITION, T.MapType(T.StringType(), T.StringType(), True), False),
        T.StructField(RAW, T.MapType(T.StringType(), T.StringType(), True), False),
        T.StructField(REASON_CODE, T.StringType(), False),
        T.StructField(MESSAGE, T.StringType(), False),
        T.StructField(JOB_PARTITION, T.StringType(), False),
    ]
)

QUARANTINE_COMMENTS = {
    INPUT: "Which input the rejected row came from: run or qrels.",
    SOURCE: "The file (TREC text) or table/path the row was read from.",
    LINE: "1-based line number in a TREC text file; null for tables.",
    PARTITION: "The row's run partition (run partition column -> value); empty for qrels.",
    RAW: "The row's raw values as strings, keyed by canonical column name.",
    REASON_CODE: "Why the row was rejected (see releval.validate.REASONS).",
    MESSAGE: "The reason in words.",
    JOB_PARTITION: (
        "The run partitions the job evaluated (output partition values, e.g. 'date=2024-05-01'), "
        "or 'all'; a re-run of the same job replaces its rows."
    ),
}
