"""Column names and Spark schemas of every table releval reads or writes.

Inputs are mapped onto the canonical column names below as soon as they are
read (see ``releval.io.readers``); everything downstream uses only these names.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import types as T

from releval.partitions import quote_identifier

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
#: What a negative qrels label meant for the row: "unjudged" or "judged" (evaluation.negative_labels).
NEGATIVE_LABELS = "negative_labels"

#: Table property holding the version of the output schemas (see docs/migrations.md).
SCHEMA_VERSION_PROPERTY = "releval.schema_version"
SCHEMA_VERSION = "2"

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
    NEGATIVE_LABELS: (
        "What a negative qrels label meant (evaluation.negative_labels). unjudged: in the pool "
        "but not judged, as trec_eval reads it: dropped from the condensed list of [judged] "
        "measures, unjudged in Judged, skipped by bpref, never relevant. judged: a judgment, "
        "the document judged non-relevant (unless rel_level <= its label). Set on every row "
        "this release writes; rows migrated from schema version 1 hold judged."
    ),
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
    NEGATIVE_LABELS: PER_QUERY_COMMENTS[NEGATIVE_LABELS],
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
    """Schema of the per-query table: partition columns first, then the measure row.

    Columns added by a release go at the end (docs/migrations.md).
    """
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
            T.StructField(NEGATIVE_LABELS, T.StringType(), True),
        ]
    )


#: Delta's table property naming the columns whose file statistics it collects
STATS_COLUMNS_PROPERTY = "delta.dataSkippingStatsColumns"


def per_query_properties(
    run_partition_columns: Sequence[str], output_partition_columns: Sequence[str]
) -> dict[str, str]:
    """Table properties a new per-query table is created with.

    Delta's file statistics (min, max, null count) only for the run partition columns that
    do not partition the table, and ``job_run_id``: a file of the per-query table holds
    many queries and every measure (the rows are laid out by query), so the minimum and
    maximum of ``query_id``, ``measure_key`` or ``value`` let no query skip a file, and
    collecting them for every row was about a third of the write (10M run rows, 2M
    per-query rows: 5.3-6.2 s against 4.1-4.4 s warm, 13 s against 5 s on a new JVM).
    Each file's row count is recorded whatever this says.
    """
    columns = [c for c in run_partition_columns if c not in output_partition_columns]
    quoted = [quote_identifier(c) for c in [*columns, JOB_RUN_ID]]
    return {STATS_COLUMNS_PROPERTY: ",".join(quoted)}


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
            T.StructField(NEGATIVE_LABELS, T.StringType(), True),
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
QRELS_KEY = "qrels_key"

#: The rejected-row columns, as ``releval.quality`` produces them.
QUARANTINE_SCHEMA = T.StructType(
    [
        T.StructField(INPUT, T.StringType(), False),
        T.StructField(SOURCE, T.StringType(), True),
        T.StructField(LINE, T.LongType(), True),
        T.StructField(PARTITION, T.MapType(T.StringType(), T.StringType(), True), False),
        T.StructField(RAW, T.MapType(T.StringType(), T.StringType(), True), False),
        T.StructField(REASON_CODE, T.StringType(), False),
        T.StructField(MESSAGE, T.StringType(), False),
    ]
)


def quarantine_table_schema(partition_fields: list[T.StructField]) -> T.StructType:
    """Schema of the quarantine table: the run partition columns (null on qrels rows), the
    rejected-row columns, the qrels key (null on run rows) and the job run id."""
    return T.StructType(
        [
            *[T.StructField(f.name, f.dataType, True) for f in partition_fields],
            *QUARANTINE_SCHEMA.fields,
            T.StructField(QRELS_KEY, T.StringType(), True),
            T.StructField(JOB_RUN_ID, T.StringType(), True),
        ]
    )

QUARANTINE_COMMENTS = {
    INPUT: "Which input the rejected row came from: run or qrels.",
    SOURCE: "The file (TREC text) or table/path the row was read from.",
    LINE: "1-based line number in a TREC text file; null for tables.",
    PARTITION: "The row's run partition (run partition column -> value); empty for qrels.",
    RAW: "The row's raw values as strings, keyed by canonical column name.",
    REASON_CODE: "Why the row was rejected (see releval.quality.REASONS).",
    MESSAGE: "The reason in words.",
    QRELS_KEY: (
        "qrels rows: the qrels source and filter they were read with; every job that reads "
        "these qrels replaces the rows of its key. Null on run rows."
    ),
    JOB_RUN_ID: "Id of the job run that wrote this row (null outside a batch job).",
}

#: Comment of a run partition column in the quarantine table.
QUARANTINE_PARTITION_COMMENT = (
    "Run partition column of a rejected run row (null on qrels rows); a job replaces the run "
    "rows of exactly the run partitions it evaluates."
)

# --- comparison table (releval compare; see releval.inference.comparison) --------
COMPARISON_ID = "comparison_id"
COMPARED_AT = "compared_at"
BASELINE = "baseline"
CANDIDATE = "candidate"
PAIRING = "pairing"
NUM_PAIRS = "num_pairs"
BASELINE_MEAN = "baseline_mean"
CANDIDATE_MEAN = "candidate_mean"
MEAN_DIFF = "mean_diff"
DIFF_CI_LOW = "diff_ci_low"
DIFF_CI_HIGH = "diff_ci_high"
RELATIVE_CHANGE = "relative_change"
WINS = "wins"
TIES = "ties"
LOSSES = "losses"
EFFECT_SIZE = "effect_size"
T_P_VALUE = "t_p_value"
RANDOMIZATION_P_VALUE = "randomization_p_value"
T_P_ADJUSTED = "t_p_adjusted"
RANDOMIZATION_P_ADJUSTED = "randomization_p_adjusted"
TUKEY_P_VALUE = "tukey_p_value"
CORRECTION = "correction"
ALPHA = "alpha"
TEST = "test"
SIGNIFICANT = "significant"
PERMUTATIONS = "permutations"
SEED = "seed"
BASELINE_JOB_RUN_ID = "baseline_job_run_id"
CANDIDATE_JOB_RUN_ID = "candidate_job_run_id"

COMPARISON_COMMENTS = {
    COMPARISON_ID: (
        "Id (uuid4) of the comparison run that wrote the row (its Delta commit's userMetadata)."
    ),
    COMPARED_AT: "When the comparison ran (UTC).",
    BASELINE: "The baseline run partition, e.g. system=bm25/date=2026-11-28.",
    CANDIDATE: "The candidate run partition compared with the baseline.",
    MEASURE: PER_QUERY_COMMENTS[MEASURE],
    CUTOFF: PER_QUERY_COMMENTS[CUTOFF],
    REL_LEVEL: PER_QUERY_COMMENTS[REL_LEVEL],
    JUDGED_ONLY: PER_QUERY_COMMENTS[JUDGED_ONLY],
    MEASURE_KEY: PER_QUERY_COMMENTS[MEASURE_KEY],
    PAIRING: (
        "zero: every query either side scored is a pair, a query missing on one side scores 0 "
        "there; skip: the queries both sides scored."
    ),
    NUM_PAIRS: "Queries (pairs) every number of the row rests on.",
    BASELINE_MEAN: "Mean of the baseline's values over the pairs.",
    CANDIDATE_MEAN: "Mean of the candidate's values over the pairs.",
    MEAN_DIFF: "Mean of the differences candidate - baseline.",
    DIFF_CI_LOW: "Lower end of the t interval of mean_diff (level 1 - alpha); null below 2 pairs.",
    DIFF_CI_HIGH: "Upper end of the t interval of mean_diff (level 1 - alpha); null below 2 pairs.",
    RELATIVE_CHANGE: "mean_diff / baseline_mean; null when the baseline mean is 0.",
    WINS: "Pairs where the candidate is higher (differences within 1e-12 are ties).",
    TIES: "Pairs where both sides are equal (within 1e-12).",
    LOSSES: "Pairs where the candidate is lower.",
    EFFECT_SIZE: (
        "Paired Cohen's d (d_z): mean_diff / standard deviation of the differences; null "
        "when that deviation is 0 or below 2 pairs."
    ),
    T_P_VALUE: "Two-sided p-value of the paired t-test (scipy ttest_rel); null below 2 pairs.",
    RANDOMIZATION_P_VALUE: (
        "Two-sided p-value of the paired randomization (sign-flip) test: "
        "(1 + permutations at least as extreme) / (1 + permutations)."
    ),
    T_P_ADJUSTED: "t_p_value corrected over all candidates and measures of the comparison.",
    RANDOMIZATION_P_ADJUSTED: (
        "randomization_p_value corrected over all candidates and measures of the comparison."
    ),
    TUKEY_P_VALUE: (
        "Randomized Tukey HSD p-value of the pair, in the family of all pairs of the baseline "
        "and every candidate on this measure; null unless test = tukey."
    ),
    CORRECTION: "Multiple-comparison correction: holm (family-wise) or bh (Benjamini-Hochberg).",
    ALPHA: "Significance level.",
    TEST: (
        "Which test decides significant: randomization or t (corrected p-value), or tukey "
        "(the HSD p-value)."
    ),
    SIGNIFICANT: "The chosen test's p-value (corrected, or Tukey HSD) is below alpha.",
    PERMUTATIONS: "Permutations of the randomization test (and trials of the Tukey HSD test).",
    SEED: "Seed of the randomization test (hashed with each query id).",
    BASELINE_JOB_RUN_ID: "Evaluation run that wrote the baseline's per-query rows (run log).",
    CANDIDATE_JOB_RUN_ID: "Evaluation run that wrote the candidate's per-query rows (run log).",
}


def comparison_schema(partition_fields: list[T.StructField]) -> T.StructType:
    """Schema of the comparison table: output partition columns (the candidate's) first."""
    double, long_, string = T.DoubleType(), T.LongType(), T.StringType()
    return T.StructType(
        [
            *partition_fields,
            T.StructField(COMPARISON_ID, string, False),
            T.StructField(COMPARED_AT, T.TimestampType(), False),
            T.StructField(BASELINE, string, False),
            T.StructField(CANDIDATE, string, False),
            *MEASURE_FIELDS,
            T.StructField(PAIRING, string, False),
            T.StructField(NUM_PAIRS, long_, False),
            T.StructField(BASELINE_MEAN, double, False),
            T.StructField(CANDIDATE_MEAN, double, False),
            T.StructField(MEAN_DIFF, double, False),
            T.StructField(DIFF_CI_LOW, double, True),
            T.StructField(DIFF_CI_HIGH, double, True),
            T.StructField(RELATIVE_CHANGE, double, True),
            T.StructField(WINS, long_, False),
            T.StructField(TIES, long_, False),
            T.StructField(LOSSES, long_, False),
            T.StructField(EFFECT_SIZE, double, True),
            T.StructField(T_P_VALUE, double, True),
            T.StructField(RANDOMIZATION_P_VALUE, double, False),
            T.StructField(T_P_ADJUSTED, double, True),
            T.StructField(RANDOMIZATION_P_ADJUSTED, double, False),
            T.StructField(TUKEY_P_VALUE, double, True),
            T.StructField(CORRECTION, string, False),
            T.StructField(ALPHA, double, False),
            T.StructField(TEST, string, False),
            T.StructField(SIGNIFICANT, T.BooleanType(), False),
            T.StructField(PERMUTATIONS, long_, False),
            T.StructField(SEED, long_, False),
            T.StructField(BASELINE_JOB_RUN_ID, string, True),
            T.StructField(CANDIDATE_JOB_RUN_ID, string, True),
        ]
    )
