"""Every column name releval reads, writes or carries between steps, defined once."""

from __future__ import annotations

QUERY_ID = "query_id"
DOC_ID = "doc_id"
SCORE = "score"
RANK = "rank"
RELEVANCE = "relevance"
#: The run's window: per query of a run partition, the top documents the consumer used (k_q).
WINDOW = "window"
#: 1-based position of a document in its query's ranking (after tie-breaking).
POSITION = "position"
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
#: Confidence interval of a macro value (see releval.frames.intervals).
CI_LOW = "ci_low"
CI_HIGH = "ci_high"
CI_METHOD = "ci_method"
CI_LEVEL = "ci_level"
#: The batch job run that wrote a row (joins to the run-log table; see releval.job.lineage).
JOB_RUN_ID = "job_run_id"
#: The row's negative-label rule: "unjudged" or "judged" (evaluation.negative_labels).
NEGATIVE_LABELS = "negative_labels"
#: The per-query table's k_q of the row's query (null: no window, or not retrieved).
WINDOW_SIZE = "window_size"
#: The row's depth: each ranking evaluated at its first ``depth`` documents (null: all).
DEPTH = "depth"
INPUT = "input"
SOURCE = "source"
LINE = "line"
PARTITION = "partition"
RAW = "raw"
REASON_CODE = "reason_code"
MESSAGE = "message"
QRELS_KEY = "qrels_key"
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
#: An answer's score in [0, 1] from any evaluator, 1 = correct (the answers input).
ANSWER_SCORE = "answer_score"
#: The attribution table's columns (releval.stats.attribution).
CELL = "cell"
QUERIES = "queries"
SHARE = "share"
SHARE_CI_LOW = "share_ci_low"
SHARE_CI_HIGH = "share_ci_high"
ATTRIBUTED = "attributed"
RETRIEVED_BY_MEASURE = "retrieved_by"
RETRIEVED_AT = "retrieved_at"
CORRECT_AT = "correct_at"
KENDALL_TAU_B = "kendall_tau_b"
KENDALL_P_VALUE = "kendall_p_value"
MEAN_SCORE_WITH_EVIDENCE = "mean_score_with_evidence"
MEAN_SCORE_WITHOUT_EVIDENCE = "mean_score_without_evidence"
MIN_DETECTABLE_DIFF = "min_detectable_diff"
QUERIES_NEEDED = "queries_needed"
MEAN_DIFF_BEST = "mean_diff_best"
SIGN_HOLDS = "sign_holds"
#: Slices (a queries input's attributes): the slice column's name and the value as a string,
#: both null on the rows over all queries; a query's traffic weight.
SLICE = "slice"
SLICE_VALUE = "slice_value"
WEIGHT = "weight"
#: The per-query table's map of a query's slice values (slice column -> value as a string):
#: the slices its evaluation was asked for, from the queries input or the run; null: none.
SLICES = "slices"
#: The slice value of a scored query that the queries input does not list, and of a null
#: attribute.
UNLISTED_SLICE = "(unlisted)"
NULL_SLICE = "(null)"
#: The interactions input (the search log): one row per shown result of one search (a
#: result page shown to someone), its 1-based ``position`` and its clicks (0/1 or a count);
#: optionally the dwell in seconds and the team (which ranker contributed the result, as
#: team-draft interleaving logs it). ``query_id`` and ``doc_id`` are shared with the run.
SEARCH_ID = "search_id"
CLICKED = "clicked"
DWELL = "dwell"
TEAM = "team"
INTERACTION_COLUMNS = (SEARCH_ID, QUERY_ID, DOC_ID, POSITION, CLICKED, DWELL, TEAM)
#: Per (run partition, query) of the online measures: the searches its value is a mean over.
SEARCHES = "searches"
#: Click labels (releval.click_labels): a (query, doc)'s P(click | examined) with its interval,
#: P(satisfied | click) of the cascade models, its impressions and clicks, and the model.
ATTRACTIVENESS = "attractiveness"
ATTRACTIVENESS_LOW = "attractiveness_low"
ATTRACTIVENESS_HIGH = "attractiveness_high"
SATISFACTION = "satisfaction"
IMPRESSIONS = "impressions"
CLICKS = "clicks"
LABEL_SOURCE = "label_source"
#: The position-bias table: P(examined) per position relative to position 1, its interval and
#: the method of the estimate.
EXAMINATION = "examination"
EXAMINATION_LOW = "examination_low"
EXAMINATION_HIGH = "examination_high"
METHOD = "method"
#: The measure columns shared by the per-query, aggregate and comparison tables.
MEASURE_COLUMNS = (MEASURE, CUTOFF, REL_LEVEL, JUDGED_ONLY, MEASURE_KEY)

# Hidden columns: carried between steps, never written to a table.
#: The row rules' reason of a row (null: clean).
REASON = "_reason"
#: Where a text input row was read: file, line, block and row within the block.
RAW_SOURCE = "_source"
RAW_LINE = "_line"
RAW_BLOCK = "_block"
RAW_ROW = "_row"
#: A TREC line with the wrong number of fields.
RAW_MALFORMED = "_malformed"
#: A gold label of a query whose rows (one per query) disagree on its labels.
GOLD_CONFLICT = "_gold_conflict"
#: A run element of a query with more than one ranked array in its run partition.
RANKING_REPEATED = "_ranking_repeated"
#: Per (run partition, query): retrieved by the run, judged in the qrels.
IN_RUN = "_in_run"
IN_QRELS = "_in_qrels"
#: Per (run partition, query): run rows dropped as a repeated document.
REPEATED = "_repeated"
#: Per (run partition, query): ranked rows beyond the depth (read, not evaluated).
BEYOND_DEPTH = "_beyond_depth"
#: Per (run partition, query) with a window: k_q, and the recall of the whole ranking and of
#: its window (the summary's "what the window lost").
WINDOW_K = "_window"
RECALL_ALL = "_recall_all"
RECALL_WINDOW = "_recall_window"
#: On a query's qrels row: how many run partitions retrieved it.
RETRIEVED_BY = "_retrieved_by"
#: On a ledger row: the tag (what was counted) and the count.
LEDGER = "_ledger"
LEDGER_ROWS = "_rows"
#: On a qrels row sent to the engine: the label as read (the accounts').
QRELS_LABEL = "_qrels_label"
IS_RUN = "_is_run"
#: On a row sent to the engine: a run row's value it is ranked by (score or rank); a qrels
#: row's label as read (``core.kernel.engine_rows`` gives it back as the kernel reads it).
ORDER = "_order"
MEASURES = "_measures"
#: In each entry of ``_measures`` when a ``[ties]`` measure was asked: its value depends on
#: the order of tied scores (null for the other measures).
TIE_DEPENDENT = "_tie_dependent"
#: On an answers row: the retrieval measure's value for its query (null: no qrels), and
#: whether the run retrieved or the qrels judged the query (the answers cover the run).
RETRIEVAL = "_retrieval"
COVERED = "_covered"
#: On an answers row: a run partition value as read does not cast to the run's type.
UNCAST_PARTITION = "_uncast_partition"

# The ledger's tags.
RECEIVED = "received"
USED = "used"
#: Before the tag of a qrels ledger row.
QRELS_LEDGER = "qrels:"
CONFLICTING = "conflicting_label"
EXACT_DUPLICATE = "exact_duplicate"
MAX_LABEL = "max_label"
#: A malformed text line: counted, never quarantined (the job fails on it).
MALFORMED = "malformed_line"

#: What a negative qrels label means: not judged (trec_eval) or a judgment.
NEGATIVE_LABEL_RULES = ("unjudged", "judged")


def quote_identifier(name: str) -> str:
    """``name`` as a Spark SQL identifier in backquotes."""
    return "`" + name.replace("`", "``") + "`"


def quote_literal(value: str) -> str:
    """``value`` as a Spark SQL string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
