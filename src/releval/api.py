"""The public face: evaluate runs, compare them and gate a release on DataFrames, and list the
measures (:func:`evaluate` returns a :class:`releval.result.Result`, :func:`gate` a
:class:`releval.gating.Gate`)."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from releval.arguments import (
    Side,
    attributes,
    checked_queries,
    mapping,
    measure_keys,
    queries_input,
    sides,
)
from releval.checks.answers import ANSWERS_RAW_COLUMNS
from releval.config import (
    DATAFRAME,
    AnswersSource,
    ComparisonSettings,
    IntervalSettings,
    check_comparison,
    check_correct_at,
    check_depth,
)
from releval.core import columns as S
from releval.core.measures import REGISTRY
from releval.core.measures.judged import with_judged_measures
from releval.core.measures.registry import parse_measures
from releval.errors import ConfigError, SignDisagreementWarning
from releval.evaluation import answers as job_answers
from releval.evaluation.compare_slices import sign_disagreements, slice_weights
from releval.evaluation.evaluate import evaluate_inputs
from releval.evaluation.inputs import checked_inputs
from releval.evaluation.persisted import keeper
from releval.frames import changes as query_changes
from releval.frames import comparison
from releval.gating import Gate, gate
from releval.io.readers import raw_answers_input, raw_qrels_input, raw_run_input
from releval.io.shapes import counted
from releval.result import Result
from releval.sources import check_run_slices, qrels_source, run_source, split_slices


def evaluate(
    run: DataFrame,
    qrels: DataFrame | None,
    *,
    measures: Sequence[str],
    partition_by: Sequence[str] = (),
    columns: Mapping[str, str] | None = None,
    qrels_columns: Mapping[str, str] | None = None,
    rank_by: str | None = None,
    relevance_level: int = 1,
    judged_only: bool = False,
    missing_queries: str = "zero",
    negative_labels: str = "unjudged",
    depth: int | None = None,
    window: str | None = None,
    ci_level: float = 0.95,
    answers: DataFrame | None = None,
    answers_columns: Mapping[str, str] | None = None,
    correct_at: float = 0.5,
    retrieved_by: str | None = None,
    retrieved_at: float = 1.0,
    queries: DataFrame | None = None,
    queries_columns: Mapping[str, str] | None = None,
    slices: Sequence[str] = (),
) -> Result:
    """Evaluate a run DataFrame against a qrels DataFrame, query by query.

    The row rules, the quarantine, the accounting and the engine are the batch job's.
    Nothing runs until a table of the result, or its accounts, is used.

    Args:
        run: one row per retrieved document: query id, doc id, score and/or rank, and the
            ``partition_by`` columns; or, with ``columns={"ranked": ...}``, one row per run
            partition and query holding the ranking as an array (docs/inputs.md).
        qrels: one row per judgment: query id, doc id, relevance (an integer label); or,
            with ``qrels_columns={"relevant": ...}`` or ``{"graded": ...}``, one row per
            query holding its labels; None: ``run`` holds them in that form.
        measures: names as ``releval measures`` lists them: ``"nDCG@10"``,
            ``"P(rel=2)@5"``, ``"AP"``, ``"map"``; Judged@k is added for each cutoff k.
        partition_by: the run columns that identify one run (system, date, ...).
        columns, qrels_columns: releval's column name -> yours, e.g.
            ``{"doc_id": "item_id", "rank": "position"}``; ``ranked`` (an array of ids, or
            of ``{id, score}`` structs, in rank order) replaces ``doc_id``, ``score`` and
            ``rank``; ``relevant`` (an array of ids, label 1) or ``graded`` (a map id ->
            grade, or an array of ``{id, grade}`` structs) replaces ``doc_id`` and
            ``relevance``.
        rank_by: ``"score"`` (descending, ties by doc id descending, as trec_eval; the
            default) or ``"rank"`` (the given positions); a ranked array is ranked by its
            positions.
        relevance_level: the lowest label that counts as relevant.
        judged_only: evaluate every measure on the judged documents only (trec_eval -J).
        missing_queries: ``"zero"``: a judged query a run did not retrieve scores 0
            (trec_eval -c); ``"skip"``: it is left out.
        negative_labels: ``"unjudged"`` (trec_eval) or ``"judged"``.
        depth: evaluate only each ranking's first ``depth`` documents (a positive integer;
            trec_eval -M); None: all. Recorded in the ``depth`` column of both tables.
        window: the run column holding, per query of a run partition, the number of top
            documents the consumer used (k_q), read by the ``@window`` measures
            (``"R@window"``, ``"nDCG@window"``); a row without a positive integer there,
            or a query whose rows disagree on it, is quarantined.
        ci_level: the level of each macro value's t interval (and of the attribution's
            Wilson intervals).
        answers: one answer score in [0, 1] per run partition and query (the
            ``partition_by`` columns, query id, score): the per-query rows gain
            ``answer_score`` and the result an ``attribution`` (docs/answers.md).
        answers_columns: releval's answers column -> yours (``query_id``, ``answer_score``).
        correct_at: an answer is correct when its score >= this.
        retrieved_by, retrieved_at: its evidence was retrieved when this measure (added to
            ``measures`` if missing; default ``Hit@window`` with a window, else ``Hit@10``)
            >= ``retrieved_at``.
        queries: one row per query with its attributes and, optionally, a traffic weight
            (:func:`releval.checks.queries.check_queries`): the aggregate gains rows per
            slice value and, with a weight, ``averaging = 'weighted'`` rows
            (docs/statistics.md); the per-query rows carry each query's ``weight`` and
            ``slices``. Bad rows go to the quarantine (``input = 'queries'``).
        queries_columns: releval's queries column -> yours (``query_id``, ``weight``).
        slices: the columns to slice the aggregate by: each a column of ``queries``, or a
            column of ``run`` that holds one value per query of a run partition (a query
            whose rows disagree on it keeps its score, slice value ``(conflicting)``); a name that
            both have, or neither, is a ConfigError. The per-query rows carry each query's
            values in ``slices``, which :func:`compare`, :func:`changes` and :func:`gate` read.

    Returns:
        A :class:`Result`: ``per_query``, ``aggregate``, ``quarantine``, ``accounts`` and,
        with answers, ``attribution``.

    Example:
        >>> run = spark.createDataFrame(
        ...     [("q1", "a", 2.0), ("q1", "b", 1.0)], "qid string, item string, s double")
        >>> qrels = spark.createDataFrame([("q1", "b", 1)], "qid string, item string, label int")
        >>> result = evaluate(run, qrels, measures=["P@1", "RR"],
        ...     columns={"query_id": "qid", "doc_id": "item", "score": "s"},
        ...     qrels_columns={"query_id": "qid", "doc_id": "item", "relevance": "label"})
        >>> sorted((r.measure_key, r.value) for r in result.aggregate.collect()
        ...        if r.averaging == "macro")
        [('Judged@1', 0.0), ('P@1', 0.0), ('RR', 0.5)]

        One row per query, the labels in the same frame:

        >>> rag = spark.createDataFrame([("q1", ["a", "b"], ["b"])],
        ...     "question string, retrieved array<string>, gold array<string>")
        >>> result = evaluate(rag, None, measures=["RR"],
        ...     columns={"query_id": "question", "ranked": "retrieved"},
        ...     qrels_columns={"relevant": "gold"})
        >>> result.per_query.where("measure_key = 'RR'").first().value
        0.5
    """
    parts = tuple(partition_by)
    run_slices, queries_slices = split_slices(slices, run, queries)
    run_src = dataclasses.replace(run_source(run, columns, parts, rank_by, window),
                                  slices=run_slices)
    check_run_slices(run_slices, run_src, columns)
    qrels_src = qrels_source(run if qrels is None else qrels, qrels_columns,
                              run_src.query_id if qrels is None else None)
    check_depth(depth, "depth")
    inputs = checked_inputs(
        raw_run_input(run, run_src, section="columns"),
        raw_qrels_input(run if qrels is None else qrels, qrels_src, section="qrels_columns"),
        rank_by=run_src.rank_by, partition_columns=parts, slices=run_slices)
    parsed = parse_measures(list(measures), relevance_level=relevance_level,
                            judged_only=judged_only)
    thresholds, index = None, 0
    if answers is not None:
        src = AnswersSource(format=DATAFRAME, **mapping(answers_columns, ANSWERS_RAW_COLUMNS,
                                                         "answers_columns", answers),
                            correct_at=correct_at, retrieved_by=retrieved_by,
                            retrieved_at=retrieved_at)
        check_correct_at(correct_at, "correct_at")
        fields = [inputs.run.schema[c] for c in parts]
        inputs = dataclasses.replace(inputs, answers=raw_answers_input(
            answers, src, partition_fields=fields, section="answers_columns"))
        measure = job_answers.retrieval_measure(src.retrieval_measure(window),
                                                relevance_level=relevance_level)
        parsed = job_answers.with_retrieval_measure(parsed, measure)
        index = job_answers.measure_index(parsed, measure)
        thresholds = job_answers.thresholds(src, measure, level=ci_level)
    parsed = with_judged_measures(parsed, relevance_level=relevance_level, window=bool(window))
    attributes = checked_queries(queries, queries_columns, queries_slices)
    kept: list[DataFrame] = []
    evaluation = dataclasses.replace(evaluate_inputs(
        inputs, measures=parsed, missing_queries=missing_queries,
        negative_labels=negative_labels, depth=depth, intervals=IntervalSettings(level=ci_level),
        keep=keeper(kept),
    ), attributes=attributes)
    # the engine's result is persisted (``keep``); each table projects its measures from it
    settings = {"measures": ",".join(measures), "relevance_level": relevance_level,
                "judged_only": judged_only, "missing_queries": missing_queries,
                "negative_labels": negative_labels, "depth": depth, "rank_by": run_src.rank_by}
    qrels_name = "qrels DataFrame" if qrels is not None else "run DataFrame (gold labels)"
    return Result(evaluation, inputs, missing_queries, counted("run DataFrame", run_src.ranked),
                  counted(qrels_name, qrels_src.gold), kept, thresholds, index,
                  settings=settings)


def compare(
    per_query: DataFrame,
    *,
    baseline: Side,
    candidates: Side | Sequence[Side],
    measures: Sequence[str] | None = None,
    slices: Sequence[str] | None = None,
    alpha: float = 0.05,
    missing_queries: str = "zero",
    correction: str = "holm",
    test: str = "randomization",
    permutations: int = 10000,
    seed: int = 20261130,
    power: float = 0.8,
    effect_of_interest: float = 0.02,
    queries: DataFrame | None = None,
    queries_columns: Mapping[str, str] | None = None,
) -> DataFrame:
    """Compare candidates with a baseline query by query: the paired tests of ``releval compare``.

    Args:
        per_query: per-query rows (``Result.per_query`` or the per-query table).
        baseline: the baseline's run partition, ``{"system": "bm25"}`` or ``"system=bm25"``.
        candidates: a candidate's run partition, in the same forms, or a list of them.
        measures: the measures to compare (``"nDCG@10"``; a ``[best]`` form, listed too,
            fills ``mean_diff_best``); None: every measure both sides have.
        slices: rows per slice value too, their tests corrected as one family (candidates x
            measures x slice values); None: the slices the per-query rows carry (none
            with ``queries``).
        alpha: the significance level (and 1 - the difference interval's level).
        missing_queries: ``"zero"``: every query either side scored is a pair (0 where
            missing); ``"skip"``: the queries both sides scored.
        correction: ``"holm"`` or ``"bh"``, over all candidates and measures.
        test: which p-value marks a row significant: ``"randomization"``, ``"t"`` or
            ``"tukey"``.
        permutations, seed: of the randomization (and Tukey HSD) tests.
        power: the paired t-test's chance to detect ``min_detectable_diff`` (and the
            ``effect_of_interest`` with ``queries_needed`` pairs), at ``alpha``.
        effect_of_interest: the true difference, in the measure's units, that
            ``queries_needed`` is for.
        queries: one row per query with its attributes and, optionally, a traffic weight
            (docs/statistics.md), in place of the ``weight`` and ``slices`` the per-query
            rows carry; a row that is not usable (a repeated or missing query id, a null,
            negative or non-finite weight) is an error.
        queries_columns: releval's queries column -> yours: ``query_id`` and ``weight``
            (the traffic weight; none when not named).

    Returns:
        One row per (candidate, measure): means, the difference with its interval, wins /
        ties / losses, Cohen's d, the p-values, ``significant``, ``min_detectable_diff``,
        ``queries_needed``, and ``mean_diff_best`` and ``sign_holds`` for a measure whose
        ``[best]`` form is among the per-query rows. ``slice`` and ``slice_value`` are null
        on these rows, ``averaging`` is ``macro``. With slices, the same per (candidate,
        measure, slice value); with a weight, rows with ``averaging = 'weighted'`` (over
        all queries and per slice value): the weighted means and the difference's
        linearized interval, with no test (its p-values, ``significant``,
        ``effect_size``, ``min_detectable_diff`` and ``queries_needed`` null).

    Warns:
        SignDisagreementWarning: with slices or a weight, a candidate's difference over all
            queries has one sign and its weighted difference, or the slice values holding
            most of the weight, the other (one warning per candidate and measure).

    Raises:
        InputError: a side names an unknown column, or a queries row is not usable (its
            reason, column and the row).
        ConfigError: an unknown ``queries_columns`` key, a column ``queries`` lacks, or
            a slice neither ``queries`` nor the per-query rows have.
        ComparisonError: a side has two per-query rows for one query and measure.

    Example:
        >>> run = spark.createDataFrame([(s, q, d, float(x)) for s, q, d, x in [
        ...     ("bm25", "q1", "a", 2), ("bm25", "q1", "b", 1), ("bm25", "q2", "c", 1),
        ...     ("dense", "q1", "b", 2), ("dense", "q1", "a", 1), ("dense", "q2", "c", 1)]],
        ...     "system string, query_id string, doc_id string, score double")
        >>> qrels = spark.createDataFrame([("q1", "b", 1), ("q2", "c", 1)],
        ...     "query_id string, doc_id string, relevance int")
        >>> result = evaluate(run, qrels, measures=["RR"], partition_by=["system"])
        >>> row = compare(result.per_query, baseline="system=bm25",
        ...               candidates="system=dense", measures=["RR"]).first()
        >>> row.candidate, row.mean_diff  # RR per query: bm25 1/2, 1; dense 1, 1
        ('system=dense', 0.25)
    """
    base, labels = sides(per_query, baseline, candidates)
    settings = check_comparison(ComparisonSettings(
        permutations=permutations, seed=seed, correction=correction, alpha=alpha, test=test,
        power=power, effect_of_interest=effect_of_interest), source="releval.compare")
    keys = measure_keys(measures)
    rows = per_query if keys is None else per_query.where(F.col(S.MEASURE_KEY).isin(keys))
    # what the rows hold and the attributes they carry, in one job
    surveyed = comparison.survey(rows, [base, *labels.values()],
                                 carried=queries is None and not queries_columns)
    checked = attributes(per_query, baseline=base, candidates=list(labels.values()),
                         queries=queries, queries_columns=queries_columns, slices=slices,
                         found=surveyed.carried)
    found = comparison.compare(
        rows, baseline=base, candidates=labels, missing_queries=missing_queries,
        settings=settings, queries=None if checked is None else checked.used,
        slices=() if checked is None else checked.slices,
        weighted=checked is not None and checked.weighted, surveyed=surveyed)
    if checked is not None and (checked.slices or checked.weighted):
        rows = [r.asDict() for r in found.collect()]  # rows made on the driver
        for message in sign_disagreements(rows, slice_weights(checked)):
            warnings.warn(message, SignDisagreementWarning, stacklevel=2)
    return found


def changes(
    per_query: DataFrame,
    *,
    baseline: Side,
    candidates: Side | Sequence[Side],
    measures: Sequence[str] | None = None,
    slices: Sequence[str] | None = None,
    missing_queries: str = "zero",
    queries: DataFrame | None = None,
    queries_columns: Mapping[str, str] | None = None,
) -> DataFrame:
    """The queries that moved: one row per (candidate, measure, query), ranked.

    Runs in the executors when the frame is used: nothing is collected here but the slices
    the rows carry and the first rejected queries row, if any (take the rows you print:
    ``.where("loss_rank <= 10")``).

    Args:
        per_query, baseline, candidates, measures, missing_queries: as :func:`compare`.
        slices: the slice columns to carry; None: the slices the per-query rows carry
            (none with ``queries``).
        queries, queries_columns: as :func:`compare`.

    Returns:
        ``candidate``, ``measure_key``, ``query_id``, ``baseline_value``,
        ``candidate_value``, ``diff`` (candidate - baseline), ``loss_rank`` (1 = lost most;
        null where the query did not lose; equal losses ranked by query id), ``gain_rank``
        (the same for gains), the query's slice values, ``weight`` and ``share_of_diff``:
        the query's part of the weighted (``w * diff / sum(w)``, null for an unlisted
        query), else unweighted (``diff / n``), mean difference.

    Example:
        >>> run = spark.createDataFrame([(s, q, d, float(x)) for s, q, d, x in [
        ...     ("bm25", "q1", "a", 2), ("bm25", "q1", "b", 1), ("bm25", "q2", "c", 1),
        ...     ("dense", "q1", "b", 2), ("dense", "q1", "a", 1), ("dense", "q2", "c", 1)]],
        ...     "system string, query_id string, doc_id string, score double")
        >>> qrels = spark.createDataFrame([("q1", "b", 1), ("q2", "c", 1)],
        ...     "query_id string, doc_id string, relevance int")
        >>> result = evaluate(run, qrels, measures=["RR"], partition_by=["system"])
        >>> moved = changes(result.per_query, baseline="system=bm25",
        ...                 candidates="system=dense", measures=["RR"])
        >>> [(r.query_id, r.diff, r.gain_rank, r.share_of_diff)
        ...  for r in moved.orderBy("query_id").collect()]  # RR: q1 1/2 -> 1, q2 1 -> 1
        [('q1', 0.5, 1, 0.25), ('q2', 0.0, None, 0.0)]
    """
    base, labels = sides(per_query, baseline, candidates)
    if missing_queries not in ("zero", "skip"):
        raise ConfigError(f"missing_queries must be 'zero' or 'skip', got {missing_queries!r}")
    checked = attributes(per_query, baseline=base, candidates=list(labels.values()),
                         queries=queries, queries_columns=queries_columns, slices=slices)
    return query_changes.changes(
        per_query, baseline=base, candidates=labels, missing_queries=missing_queries,
        measures=measure_keys(measures), queries=None if checked is None else checked.used,
        slices=() if checked is None else checked.slices,
        weighted=checked is not None and checked.weighted)


def measures() -> list[dict[str, Any]]:
    """The measures releval computes: name, aliases, cutoff rule, parameters (name -> default,
    None if required), formula, averagings, bounds (the range of a query's value, or None).

    Example:
        >>> next(m for m in measures() if m["name"] == "P")["cutoff"]
        'required'
    """
    return [
        {"name": s.name, "aliases": list(s.aliases), "cutoff": s.cutoff,
         "parameters": dict(s.params), "formula": s.description,
         "averaging": list(s.averaging), "bounds": s.bounds}
        for s in REGISTRY.values()
    ]


__all__ = ["Gate", "Result", "changes", "compare", "evaluate", "gate", "measures", "queries_input"]
