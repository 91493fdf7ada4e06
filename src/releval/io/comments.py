"""The column comments of each output table (Delta keeps them; ``DESCRIBE`` shows them)."""

from __future__ import annotations

from releval.core import columns as C

PER_QUERY_COMMENTS = {
    C.QUERY_ID: "Query id, as in the run and the qrels.",
    C.MEASURE: (
        "Measure family: P, R, Hit, RR, nDCG, nDCG_exp, AP, Rprec, bpref, Judged, "
        "num_ret, num_rel, num_rel_ret."
    ),
    C.CUTOFF: "Rank cutoff k of the measure; null when the measure has none (RR, AP).",
    C.REL_LEVEL: "A document counts as relevant when its label >= rel_level (nDCG gains ignore it).",
    C.JUDGED_ONLY: (
        "true: judged-only (condensed-list) variant, unjudged documents removed from the "
        "ranking before cutting at k (trec_eval -J); key ends in [judged]. false: unjudged "
        "documents count as non-relevant."
    ),
    C.MEASURE_KEY: "The measure as written in the measure list, canonical form: P@10, nDCG@10, AP.",
    C.VALUE: "The measure's value for this query.",
    C.NUM_RET: "Documents the run retrieved for this query (all ranks; at most depth when set).",
    C.NUM_REL: "Documents of this query judged relevant (label >= rel_level) in the qrels.",
    C.NUM_REL_RET: "Relevant documents retrieved within the cutoff (all ranks when no cutoff).",
    C.JOB_RUN_ID: "Id of the job run that wrote this row; joins to the run-log table's job_run_id.",
    C.NEGATIVE_LABELS: (
        "What a negative qrels label meant (evaluation.negative_labels). unjudged: in the pool "
        "but not judged, as trec_eval reads it: dropped from the condensed list of [judged] "
        "measures, unjudged in Judged, skipped by bpref, never relevant. judged: a judgment, "
        "the document judged non-relevant (unless rel_level <= its label). Set on every row "
        "this release writes; rows migrated from schema version 1 hold judged."
    ),
    C.DEPTH: (
        "Each ranking was evaluated at its first depth documents (evaluation.depth, trec_eval "
        "-M): cut after the tie-break, before the judged-only condensation; every measure, "
        "num_ret included, saw only those. Null: every document (no depth)."
    ),
    C.ANSWER_SCORE: (
        "The answer's score in [0, 1] for this run partition and query, from the answers input "
        "(1 = correct); null when it has none (not configured, or its row was quarantined)."
    ),
    C.WINDOW_SIZE: (
        "The query's window k_q (run.window): the top documents its consumer used, where the "
        "@window measures cut the ranking. Null: no window, or the run partition did not "
        "retrieve the query."
    ),
    C.WEIGHT: (
        "The query's traffic weight from the queries input (queries.weight); null: no weight "
        "column, or the queries input does not list the query."
    ),
    C.SLICES: (
        "The query's slice values, slice column -> value as a string: the slices the "
        "evaluation was asked for, from the queries input or the run; (unlisted): the queries "
        "input does not list the query; (null): a null attribute. Null: no slices."
    ),
}


AGGREGATE_COMMENTS = {
    C.MEASURE: PER_QUERY_COMMENTS[C.MEASURE],
    C.CUTOFF: PER_QUERY_COMMENTS[C.CUTOFF],
    C.REL_LEVEL: PER_QUERY_COMMENTS[C.REL_LEVEL],
    C.JUDGED_ONLY: PER_QUERY_COMMENTS[C.JUDGED_ONLY],
    C.MEASURE_KEY: PER_QUERY_COMMENTS[C.MEASURE_KEY],
    C.AVERAGING: (
        "macro: mean over queries of the per-query values; micro: pooled counts over "
        "queries (P: sum num_rel_ret / (k * queries), R: sum num_rel_ret / sum num_rel); "
        "sum: total over queries (the num_* counts); geometric: geometric mean over queries, "
        "each value floored at 0.00001 (GMAP, GM_bpref); weighted: mean of the per-query "
        "values weighted by the queries input's weight (traffic), over the scored queries "
        "with a weight."
    ),
    C.VALUE: "The aggregate value.",
    C.NUM_QUERIES: "Queries that entered the aggregate.",
    C.JOB_RUN_ID: PER_QUERY_COMMENTS[C.JOB_RUN_ID],
    C.NEGATIVE_LABELS: PER_QUERY_COMMENTS[C.NEGATIVE_LABELS],
    C.DEPTH: PER_QUERY_COMMENTS[C.DEPTH],
    C.CI_LOW: (
        "Lower end of the confidence interval of a macro value (ci_method, ci_level); "
        "null for micro and sum rows and when num_queries < 2."
    ),
    C.CI_HIGH: (
        "Upper end of the confidence interval of a macro value (ci_method, ci_level); "
        "null for micro and sum rows and when num_queries < 2."
    ),
    C.CI_METHOD: (
        "How the interval was computed: t (Student t over queries); t-clipped (the t "
        "interval cut at the measure's range, e.g. [0, 1]); wilson (Wilson's score interval: "
        "a measure in [0, 1] whose every per-query value is 0 or 1, e.g. Hit@k); bootstrap "
        "(percentile, Poisson bootstrap over queries); linearized (a weighted row: the ratio "
        "estimator's linearized t interval, queries as the sampled units). Null for micro "
        "and sum rows."
    ),
    C.CI_LEVEL: "Coverage of the interval, e.g. 0.95; null for micro and sum rows.",
    C.SLICE: (
        "The queries input's column this row slices by (e.g. segment); null on the rows over "
        "all queries."
    ),
    C.SLICE_VALUE: (
        "The slice column's value, as a string: (null) for a null attribute, (unlisted) for "
        "scored queries the queries input does not list; null on the rows over all queries."
    ),
}


QUARANTINE_COMMENTS = {
    C.INPUT: "Which input the rejected row came from: run, qrels, answers or queries.",
    C.SOURCE: "The file (TREC text) or table/path the row was read from.",
    C.LINE: "1-based line number in a TREC text file; null for tables.",
    C.PARTITION: "The row's run partition (run partition column -> value); empty for qrels.",
    C.RAW: "The row's raw values as strings, keyed by canonical column name.",
    C.REASON_CODE: "Why the row was rejected (see releval.checks.rules.REASONS).",
    C.MESSAGE: "The reason in words.",
    C.QRELS_KEY: (
        "qrels rows: the qrels source and filter they were read with; every job that reads "
        "these qrels replaces the rows of its key. Null on run rows."
    ),
    C.JOB_RUN_ID: "Id of the job run that wrote this row (null outside a batch job).",
}


COMPARISON_COMMENTS = {
    C.COMPARISON_ID: (
        "Id (uuid4) of the comparison run that wrote the row (its Delta commit's userMetadata)."
    ),
    C.COMPARED_AT: "When the comparison ran (UTC).",
    C.BASELINE: "The baseline run partition, e.g. system=bm25/date=2026-11-28.",
    C.CANDIDATE: "The candidate run partition compared with the baseline.",
    C.MEASURE: PER_QUERY_COMMENTS[C.MEASURE],
    C.CUTOFF: PER_QUERY_COMMENTS[C.CUTOFF],
    C.REL_LEVEL: PER_QUERY_COMMENTS[C.REL_LEVEL],
    C.JUDGED_ONLY: PER_QUERY_COMMENTS[C.JUDGED_ONLY],
    C.MEASURE_KEY: PER_QUERY_COMMENTS[C.MEASURE_KEY],
    C.PAIRING: (
        "zero: every query either side scored is a pair, a query missing on one side scores 0 "
        "there; skip: the queries both sides scored."
    ),
    C.NUM_PAIRS: "Queries (pairs) every number of the row rests on.",
    C.BASELINE_MEAN: "Mean of the baseline's values over the pairs.",
    C.CANDIDATE_MEAN: "Mean of the candidate's values over the pairs.",
    C.MEAN_DIFF: "Mean of the differences candidate - baseline.",
    C.DIFF_CI_LOW: "Lower end of the t interval of mean_diff (level 1 - alpha); null below 2 pairs.",
    C.DIFF_CI_HIGH: "Upper end of the t interval of mean_diff (level 1 - alpha); null below 2 pairs.",
    C.RELATIVE_CHANGE: "mean_diff / baseline_mean; null when the baseline mean is 0.",
    C.WINS: "Pairs where the candidate is higher (differences within 1e-12 are ties).",
    C.TIES: "Pairs where both sides are equal (within 1e-12).",
    C.LOSSES: "Pairs where the candidate is lower.",
    C.EFFECT_SIZE: (
        "Paired Cohen's d (d_z): mean_diff / standard deviation of the differences; null "
        "when that deviation is 0 or below 2 pairs."
    ),
    C.T_P_VALUE: "Two-sided p-value of the paired t-test (scipy ttest_rel); null below 2 pairs.",
    C.RANDOMIZATION_P_VALUE: (
        "Two-sided p-value of the paired randomization (sign-flip) test: "
        "(1 + permutations at least as extreme) / (1 + permutations)."
    ),
    C.T_P_ADJUSTED: "t_p_value corrected over all candidates and measures of the comparison.",
    C.RANDOMIZATION_P_ADJUSTED: (
        "randomization_p_value corrected over all candidates and measures of the comparison."
    ),
    C.TUKEY_P_VALUE: (
        "Randomized Tukey HSD p-value of the pair, in the family of all pairs of the baseline "
        "and every candidate on this measure; null unless test = tukey."
    ),
    C.CORRECTION: "Multiple-comparison correction: holm (family-wise) or bh (Benjamini-Hochberg).",
    C.ALPHA: "Significance level.",
    C.TEST: (
        "Which test decides significant: randomization or t (corrected p-value), or tukey "
        "(the HSD p-value)."
    ),
    C.SIGNIFICANT: (
        "The chosen test's p-value (corrected, or Tukey HSD) is below alpha; null on "
        "weighted rows (no test)."
    ),
    C.PERMUTATIONS: "Permutations of the randomization test (and trials of the Tukey HSD test).",
    C.SEED: "Seed of the randomization test (hashed with each query id).",
    C.BASELINE_JOB_RUN_ID: "Evaluation run that wrote the baseline's per-query rows (run log).",
    C.CANDIDATE_JOB_RUN_ID: "Evaluation run that wrote the candidate's per-query rows (run log).",
    C.MIN_DETECTABLE_DIFF: (
        "Smallest true mean difference the two-sided paired t-test at alpha (before "
        "correction) detects with probability comparison.power at num_pairs: d_min (noncentral "
        "t) times the standard deviation of the differences; null when that deviation is 0 or "
        "below 2 pairs. Not significant with a large value: too few queries to tell."
    ),
    C.QUERIES_NEEDED: (
        "Pairs the same t-test needs to detect a true difference of "
        "comparison.effect_of_interest with probability comparison.power, at this row's "
        "standard deviation of the differences; null when it is undefined (deviation 0, "
        "below 2 pairs)."
    ),
    C.MEAN_DIFF_BEST: (
        "For a measure with a [best] bound (P@k, Hit@k, RR) whose [best] key was evaluated "
        "too: the mean difference with every unjudged retrieved document relevant on both "
        "sides (mean_diff: every one non-relevant); null otherwise."
    ),
    C.SIGN_HOLDS: (
        "Whether mean_diff and mean_diff_best have the same sign (both 0 counts as the same); "
        "false: judging the unjudged documents could reverse the comparison. Null with "
        "mean_diff_best."
    ),
    C.SLICE: (
        "The queries input's column this row compares within (e.g. segment); null on the "
        "rows over all queries. Slice rows are corrected as one family of their own "
        "(candidates x measures x slice values)."
    ),
    C.SLICE_VALUE: AGGREGATE_COMMENTS[C.SLICE_VALUE],
    C.AVERAGING: (
        "macro: the pairs' plain means and the paired tests; weighted: the means weighted by "
        "the queries input's weight (traffic) over the pairs of listed queries, mean_diff's "
        "interval the ratio estimator's linearized one; no test, so effect_size, the "
        "p-values, significant, min_detectable_diff and queries_needed are null."
    ),
}


ATTRIBUTION_COMMENTS = {
    C.CELL: (
        "success: evidence retrieved, answer correct; generation_miss: retrieved, wrong; "
        "retrieval_miss: not retrieved, wrong; answered_without_evidence: not retrieved, "
        "correct; no_qrels: answered queries the qrels do not judge (outside the shares)."
    ),
    C.QUERIES: "Answered queries of the run partition in this cell.",
    C.SHARE: "queries / attributed; null for no_qrels and when attributed = 0.",
    C.SHARE_CI_LOW: "Lower end of the Wilson score interval of share (ci_level).",
    C.SHARE_CI_HIGH: "Upper end of the Wilson score interval of share (ci_level).",
    C.ATTRIBUTED: (
        "Answered queries with qrels in the run partition: the four cells but no_qrels, the "
        "shares' denominator (the same on every row of the partition)."
    ),
    C.RETRIEVED_BY_MEASURE: (
        "The retrieval measure (answers.retrieved_by): evidence retrieved when its value >= "
        "retrieved_at; 0 for a judged query the run partition did not retrieve."
    ),
    C.RETRIEVED_AT: "The retrieval measure's threshold (answers.retrieved_at).",
    C.CORRECT_AT: "An answer is correct when answer_score >= correct_at (answers.correct_at).",
    C.KENDALL_TAU_B: (
        "Kendall's tau-b between the retrieval measure and the answer score over the attributed "
        "queries of the run partition; null below 2 queries or when either side is constant."
    ),
    C.KENDALL_P_VALUE: "Two-sided p-value of kendall_tau_b (scipy.stats.kendalltau).",
    C.MEAN_SCORE_WITH_EVIDENCE: (
        "Mean answer score of the attributed queries whose evidence was retrieved; null if none."
    ),
    C.MEAN_SCORE_WITHOUT_EVIDENCE: (
        "Mean answer score of the attributed queries whose evidence was not retrieved; null if "
        "none."
    ),
    C.CI_LEVEL: "Coverage of the Wilson intervals (intervals.level), e.g. 0.95.",
    C.JOB_RUN_ID: PER_QUERY_COMMENTS[C.JOB_RUN_ID],
}


#: Comment of a run partition column in the quarantine table.
QUARANTINE_PARTITION_COMMENT = (
    "Run partition column of a rejected run row (null on qrels rows); a job replaces the run "
    "rows of exactly the run partitions it evaluates."
)


RUN_LOG_COMMENTS = {
    C.JOB_RUN_ID: "Id (uuid4) of the job run; the job_run_id of every output row it wrote.",
    "status": "succeeded | failed | nothing_pending. A run killed mid-way has no row.",
    "started_at": "When the job run started (UTC).",
    "finished_at": "When the job run wrote this row (UTC).",
    "releval_version": "The releval package version that ran.",
    "config_hash": "sha256 of the canonical JSON of the config, [spark] section excluded.",
    "config_json": "The canonical JSON the hash is computed over.",
    "run_source": "The run input: format and path or table.",
    "run_version": "Delta version the run input was read at (versionAsOf); null for Parquet/TREC.",
    "run_filter": "The run filter applied: config run.filter and the partition selection.",
    "qrels_source": "The qrels input: format and path or table.",
    "qrels_version": "Delta version the qrels were read at (versionAsOf); null for Parquet/TREC.",
    "qrels_filter": "The qrels filter of the config (e.g. a qrels_version predicate).",
    "selection": "The partitions asked for on the command line, as text.",
    "replace_predicate": "The replaceWhere predicate of the output writes; null: whole table.",
    "partitions": "The run partitions evaluated, each a map column -> value (a failed run "
    "that stopped before its input accounting lists only the --pending partitions it chose).",
    "per_query_version": "Version of the per-query table this run committed.",
    "aggregate_version": "Version of the aggregate table this run committed.",
    "per_query_rows": "Rows written to the per-query table.",
    "aggregate_rows": "Rows written to the aggregate table.",
    "error": "The error of a failed run (first line).",
}
