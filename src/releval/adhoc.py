"""``releval compare --qrels Q --run A --run B``: every run file evaluated in one job, then
each run compared with the baseline query by query, printed as one table."""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import reduce
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from releval import api
from releval.checks.accounts import QualityReport
from releval.config import (
    AnswersSource,
    ComparisonSettings,
    QrelsSource,
    QueriesSource,
    RunSource,
)
from releval.core import columns as S
from releval.core.columns import RAW_MALFORMED
from releval.core.frames import local_frame
from releval.core.measures import parse_measures
from releval.core.measures.judged import with_judged_measures
from releval.core.overall import MACRO, overall
from releval.errors import ComparisonError, InputError, SignDisagreementWarning
from releval.evaluation.answer_moves import AnswerMoves, side_cells
from releval.evaluation.compare_slices import (
    render_slices,
    render_worst,
    sign_warnings,
    slice_weights,
    worst_queries,
)
from releval.evaluation.partitions import partition_label
from releval.frames.intervals import FEW_QUERIES
from releval.io import comparison_table
from releval.io.atomic import read_table
from releval.io.readers import (
    TREC_RUN_ID,
    raw_run_input,
    read_qrels_raw,
    read_queries,
    read_run_raw,
    source_name,
)
from releval.io.writers import absolute
from releval.stats.moves import moves


def file_tag(path: str) -> str:
    """A run's name when its rows carry no tag: its file or folder name, less ``.parquet`` or
    ``.jsonl``."""
    name = Path(path.rstrip("/")).name
    return name.removesuffix(".parquet").removesuffix(".jsonl") or name


def read_runs(spark: SparkSession, paths: Sequence[str], *, run_format: str) -> tuple[DataFrame, list[str]]:
    """Every run's rows with its tag as ``run_id``, as one DataFrame (raw values, for the row
    rules), and the tags in the order of ``paths``.

    A run's tag is its rows' tag (TREC: the 6th field; Parquet, Delta: the ``run_id``
    column), else :func:`file_tag`. One pass over the runs finds the tags.

    Raises:
        InputError: a run has no rows, a malformed TREC line or several tags; two runs have
            the same tag.
    """



    raws = []
    for path in paths:
        if run_format == "trec":
            src = RunSource(path=path, format="trec", partition_columns=(TREC_RUN_ID,))
            raws.append(read_run_raw(spark, src))
            continue
        try:
            loaded = (spark.read.json(absolute(path)) if run_format == "jsonl"  # JSON Lines
                      else spark.read.format(run_format).load(absolute(path)))
        except Exception as exc:  # Spark's AnalysisException: not a table of this format
            raise InputError(f"cannot read {run_format} {path}: {str(exc).splitlines()[0]}") from None
        tagged = (TREC_RUN_ID,) if TREC_RUN_ID in loaded.columns else ()
        raws.append(raw_run_input(loaded, RunSource(path=path, format=run_format,
                                                    partition_columns=tagged)))

    def probe(i: int, rows: DataFrame) -> DataFrame:
        def column(name: str, otherwise: object, dtype: str) -> Column:
            return (F.col(name) if name in rows.columns else F.lit(otherwise)).cast(dtype)

        return rows.select(F.lit(i).alias("_run"), column(TREC_RUN_ID, None, "string").alias("tag"),
                           column(RAW_MALFORMED, False, "boolean").alias("bad"))

    found = {r["_run"]: r for r in reduce(
        DataFrame.unionByName, [probe(i, raw.rows) for i, raw in enumerate(raws)]
    ).groupBy("_run").agg(F.min("tag").alias("first"), F.max("tag").alias("last"),
                          F.count_if("bad").alias("malformed")).collect()}
    tags: list[str] = []
    for i, (path, raw) in enumerate(zip(paths, raws, strict=True)):
        row = found.get(i)
        if row is None:
            raise InputError(f"run {path} has no rows: nothing to evaluate")
        if row["malformed"]:
            raw.fail_on_malformed()
        if row["first"] != row["last"]:
            raise InputError(f"run {path} holds several run tags ({row['first']!r} ... "
                             f"{row['last']!r}): compare one run per file")
        tag = row["first"] if row["first"] is not None else file_tag(path)
        if tag in tags:
            raise InputError(f"runs {paths[tags.index(tag)]} and {path} have the same run tag "
                             f"{tag!r}: give each run its own tag")
        tags.append(tag)
    run = reduce(DataFrame.unionByName, [
        raw.rows.select(F.lit(tag).alias(TREC_RUN_ID), S.QUERY_ID, S.DOC_ID, S.SCORE, S.RANK)
        for raw, tag in zip(raws, tags, strict=True)
    ])
    return run, tags


def compare_files(
    spark: SparkSession,
    *,
    runs: Sequence[str],
    qrels: str,
    run_format: str,
    qrels_format: str,
    measures: str,
    relevance_level: int,
    baseline: str | None,
    settings: ComparisonSettings,
    folder: str,
    write_comparison: bool,
    answers: AnswersSource | None = None,
    queries: QueriesSource | None = None,
    worst: int = 0,
) -> str:
    """Evaluate every run in one :func:`releval.evaluate` (partitioned by ``run_id``), write
    ``folder``/per_query and aggregate, compare each run with ``baseline`` (default: the
    first run) and, with ``write_comparison``, write ``folder``/comparison. With
    ``answers`` (a ``run_id`` column names each run), also ``folder``/attribution and how
    each run's answered queries moved between the cells against the baseline's. With
    ``queries`` (its query id, slice and weight columns), also
    the rows per slice value and the weighted rows; ``worst``: the queries that lost most.

    Returns:
        The comparison as text (:func:`render_comparison`).

    Raises:
        InputError: as :func:`read_runs`; a malformed TREC qrels line.
        ComparisonError: ``baseline`` is none of the runs' tags.
    """

    run, tags = read_runs(spark, runs, run_format=run_format)
    base = baseline if baseline is not None else tags[0]
    if base not in tags:
        raise ComparisonError(f"--baseline {base!r} is not the tag of a run; the runs' tags "
                              f"are {tags}")
    raw_qrels = read_qrels_raw(spark, QrelsSource(path=qrels, format=qrels_format))
    if raw_qrels.malformed is not None and raw_qrels.malformed.take(1):
        raw_qrels.fail_on_malformed()
    with_answers = {} if answers is None else dict(
        answers=_read_answers(spark, answers), correct_at=answers.correct_at,
        retrieved_by=answers.retrieved_by, retrieved_at=answers.retrieved_at)
    result = api.evaluate(
        run, raw_qrels.rows.select(S.QUERY_ID, S.DOC_ID, S.RELEVANCE), measures=[measures],
        partition_by=[TREC_RUN_ID], relevance_level=relevance_level, **with_answers,
    )
    out = Path(folder)
    result.write(per_query=str(out / "per_query"), aggregate=str(out / "aggregate"),
                 attribution=str(out / "attribution") if answers else None)
    per_query = read_table(spark, path=str(out / "per_query"), table=None)
    candidates = [t for t in tags if t != base]
    frame = None if queries is None else read_queries(spark, queries)
    slices = () if queries is None else queries.slices
    columns = None if queries is None else {
        S.QUERY_ID: queries.query_id, **({S.WEIGHT: queries.weight} if queries.weight else {})}
    checked = None if frame is None else api.queries_input(frame, columns, slices,
                                                           name=source_name(queries))
    with warnings.catch_warnings():  # printed below, with the comparison
        warnings.simplefilter("ignore", SignDisagreementWarning)
        table = api.compare(
            per_query, baseline={TREC_RUN_ID: base},
            candidates=[{TREC_RUN_ID: t} for t in candidates], alpha=settings.alpha,
            correction=settings.correction, test=settings.test,
            permutations=settings.permutations, seed=settings.seed, power=settings.power,
            effect_of_interest=settings.effect_of_interest, queries=frame,
            queries_columns=columns, slices=slices,
        )
    every = [r.asDict() for r in table.collect()]
    rows = overall(every, MACRO)
    if write_comparison:
        _write_comparison(spark, every, baseline=_label(base), settings=settings,
                          path=str(out / "comparison"))
    keys = [m.key for m in with_judged_measures(
        parse_measures([measures], relevance_level=relevance_level),
        relevance_level=relevance_level)]
    text = render_comparison(rows, tags=[base, *candidates], baseline=base, measure_keys=keys,
                             settings=settings, accounts=result.accounts)
    extra = [*render_slices(every, alpha=settings.alpha),
             *sign_warnings(every, None if checked is None else slice_weights(checked))]
    if worst:
        moved = api.changes(per_query, baseline={TREC_RUN_ID: base},
                            candidates=[{TREC_RUN_ID: t} for t in candidates], queries=frame,
                            queries_columns=columns, slices=slices if frame is not None else None)
        extra += render_worst(worst_queries(moved, worst), count=worst, slices=slices)
    text = "\n".join([text, *extra])
    if result.thresholds is None:
        return text
    sides = {_label(t): {TREC_RUN_ID: t} for t in [base, *candidates]}
    cells = side_cells(per_query, sides, result.thresholds)
    found = AnswerMoves(result.thresholds, tuple(
        moves(cells[_label(base)], cells[_label(t)], label=_label(t)) for t in candidates))
    return "\n".join([text, *found.render(_label(base))])


def _read_answers(spark: SparkSession, src: AnswersSource) -> DataFrame:
    """The answers file (Delta, Parquet, or CSV with a header) as read."""
    try:
        if src.format == "csv":
            return spark.read.option("header", "true").csv(absolute(src.path or ""))
        return spark.read.format(src.format).load(absolute(src.path or ""))
    except Exception as exc:  # Spark's AnalysisException: not a table of this format
        raise InputError(f"cannot read {src.format} {src.path}: "
                         f"{str(exc).splitlines()[0]}") from None


def _label(tag: str) -> str:
    """The comparison's name of a run: its partition label (``run_id=bm25``)."""

    return partition_label({TREC_RUN_ID: tag}, [TREC_RUN_ID])


def _write_comparison(
    spark: SparkSession, rows: Sequence[dict], *, baseline: str, settings: ComparisonSettings,
    path: str,
) -> None:
    """The comparison rows as the comparison table (``releval compare --config``'s schema)."""


    comparison_id = str(uuid.uuid4())
    fixed = {
        S.COMPARISON_ID: comparison_id, S.COMPARED_AT: datetime.now(UTC), S.BASELINE: baseline,
        S.PAIRING: "zero", S.CORRECTION: settings.correction, S.ALPHA: float(settings.alpha),
        S.TEST: settings.test, S.PERMUTATIONS: settings.permutations, S.SEED: settings.seed,
    }
    schema = comparison_table.comparison_schema([])
    frame = local_frame(spark, [tuple({**r, **fixed}.get(f.name) for f in schema.fields)
                                for r in rows], schema)
    comparison_table.write_comparison(frame, path=path, table=None, partition_fields=[],
                            output_partition_columns=(), predicate="true",
                            comparison_id=comparison_id)


def render_comparison(
    rows: Sequence[dict],
    *,
    tags: Sequence[str],
    baseline: str,
    measure_keys: Sequence[str],
    settings: ComparisonSettings,
    accounts: QualityReport | None = None,
) -> str:
    """The comparison as a table for people: one line per run (the baseline first), one column
    per measure with its mean; ``*`` marks a significant difference from the baseline. The
    inputs' ``accounts`` are shown when rows were quarantined."""

    by_label = {_label(t): t for t in tags}
    cells: dict[tuple[str, str], str] = {}
    pairs: set[int] = set()
    for r in rows:
        tag, key = by_label[r[S.CANDIDATE]], r[S.MEASURE_KEY]
        cells[(baseline, key)] = f"{r[S.BASELINE_MEAN]:.4f}"
        cells[(tag, key)] = f"{r[S.CANDIDATE_MEAN]:.4f}" + ("*" if r[S.SIGNIFICANT] else "")
        pairs.add(int(r[S.NUM_PAIRS]))
    keys = [k for k in measure_keys if any((t, k) in cells for t in tags)]
    header = ["run", *keys]
    table = [[t, *(cells.get((t, k), "-") for k in keys)] for t in tags]
    widths = [max(len(line[i]) for line in [header, *table]) for i in range(len(header))]

    def line(values: Sequence[str]) -> str:
        return "  " + "  ".join(f"{v:<{w}}" for v, w in zip(values, widths, strict=True)).rstrip()

    low, high = (min(pairs), max(pairs)) if pairs else (0, 0)
    n = f"{low}" if low == high else f"{low} to {high}"
    if settings.test == "tukey":
        test = (f"randomized Tukey HSD (all pairs of runs, one family per measure), "
                f"alpha {settings.alpha}")
    else:
        test = (f"{settings.test} test, {settings.correction} correction over {len(rows)} "
                f"comparisons (runs x measures), alpha {settings.alpha}")
    lines = [
        f"releval compare: {len(tags)} runs, {n} queries; baseline {baseline}",
        line(header),
        *(line(values) for values in table),
        f"  * differs from {baseline}: {test}; randomization with {settings.permutations} "
        f"permutations, seed {settings.seed}",
    ]
    if low < FEW_QUERIES:
        lines.append(f"  WARNING: fewer than {FEW_QUERIES} queries: weak comparisons")
    flips = [r for r in rows if r.get(S.SIGN_HOLDS) is False]
    if flips:  # only for measures evaluated with their [best] form too
        listed = ", ".join(f"{by_label[r[S.CANDIDATE]]} {r[S.MEASURE_KEY]} "
                           f"{r[S.MEAN_DIFF]:+.4f} -> {r[S.MEAN_DIFF_BEST]:+.4f}"
                           for r in flips[:3])
        more = f" and {len(flips) - 3} more" if len(flips) > 3 else ""
        lines.append(f"  WARNING: {len(flips)} difference(s) do not keep their sign with every "
                     f"unjudged document relevant: {listed}{more} (docs/incomplete-judgments.md)")
    if accounts is not None and accounts.quarantined:
        lines.append(accounts.render())
    return "\n".join(lines)
