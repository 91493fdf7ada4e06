"""Readers: Delta (path or catalog table), Parquet, and TREC text, all returning the
canonical columns of ``releval.core.columns`` (plus the run's partition columns)."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from releval.config import DATAFRAME, AnswersSource, QrelsSource, QueriesSource, RunSource
from releval.core import columns as S
from releval.core.columns import (
    RAW_BLOCK,
    RAW_LINE,
    RAW_MALFORMED,
    RAW_ROW,
    RAW_SOURCE,
    UNCAST_PARTITION,
)
from releval.errors import InputError
from releval.io import shapes
from releval.io.shapes import GRADED, RANKED, RELEVANT
from releval.io.trec import RawInput, trec_fields, trec_input
from releval.io.writers import absolute

#: The canonical run and qrels rows the casting readers return (without partition columns).
RUN_SCHEMA = T.StructType([
    T.StructField(S.QUERY_ID, T.StringType(), True), T.StructField(S.DOC_ID, T.StringType(), True),
    T.StructField(S.SCORE, T.DoubleType(), True), T.StructField(S.RANK, T.IntegerType(), True),
])
QRELS_SCHEMA = T.StructType([
    T.StructField(S.QUERY_ID, T.StringType(), True), T.StructField(S.DOC_ID, T.StringType(), True),
    T.StructField(S.RELEVANCE, T.IntegerType(), True),
])

#: The partition column a TREC run file provides: its tag (6th field).
TREC_RUN_ID = "run_id"


Source = RunSource | QrelsSource | AnswersSource | QueriesSource


def source_name(src: Source) -> str:
    """How a source is named in messages: its path or table name, or "run DataFrame"."""
    if src.format == DATAFRAME:
        kind = {RunSource: "run", QrelsSource: "qrels", AnswersSource: "answers",
                QueriesSource: "queries"}[type(src)]
        return f"{kind} {DATAFRAME}"
    return f"{src.format} {'table ' + src.table if src.table else src.path}"


def _load(spark: SparkSession, src: Source, version: int | None = None) -> DataFrame:
    """Load a Delta/Parquet path, a CSV file with a header or a catalog table, at ``version``
    (default: the source's)."""
    version = src.version if version is None else version
    try:
        if src.format == "csv":
            return spark.read.option("header", "true").csv(absolute(src.path or ""))
        if src.format == "jsonl":  # JSON Lines: one object per line
            return spark.read.json(absolute(src.path or ""))
        reader = spark.read.format(src.format)
        if version is not None:
            reader = reader.option("versionAsOf", version)
        if src.table:
            return reader.table(src.table) if version is not None else spark.table(src.table)
        return reader.load(absolute(src.path or ""))
    except Exception as exc:  # Spark raises AnalysisException subclasses here
        message = str(exc).splitlines()[0]
        raise InputError(f"cannot read {source_name(src)}: {message}") from None


def _require_columns(
    df: DataFrame, mapping: dict[str, str | None], src: Source, section: str
) -> None:
    """Fail with the expected and found columns when a mapped column is missing."""
    missing = {key: col for key, col in mapping.items() if col and col not in df.columns}
    if missing:
        keys = ", ".join(f"{section}.{key} = {col!r}" for key, col in missing.items())
        raise InputError(
            f"{source_name(src)}: missing column(s) {sorted(missing.values())} "
            f"(mapped by {keys}); found columns {df.columns}"
        )


def _run_table(
    spark: SparkSession, src: RunSource, *, version: int | None, check_types: bool
) -> DataFrame:
    """A Delta/Parquet run with its mapped and partition columns checked, filtered."""
    return _checked_run(_load(spark, src, version), src, check_types=check_types)


def _checked_run(df: DataFrame, src: RunSource, *, check_types: bool, section: str = "run"
                 ) -> DataFrame:
    mapping = {"query_id": src.query_id, "doc_id": src.doc_id, "score": src.score, "rank": src.rank,
               "window": src.window}
    if src.ranked:  # one row per query: the array replaces doc_id, score and rank
        mapping = {"query_id": src.query_id, "window": src.window, RANKED: src.ranked}
    needed = {k: v for k, v in mapping.items()
              if k in ("query_id", "doc_id", "window", RANKED, src.rank_by)}
    _require_columns(df, {**needed, **{f"slices[{c!r}]": c for c in src.slices}}, src, section)
    if src.ranked:
        mapping.pop(RANKED)  # its element type is checked where it is exploded
    if check_types:
        _require_types(df, mapping, src, section)
    missing_parts = [c for c in src.partition_columns if c not in df.columns]
    if missing_parts:
        raise InputError(
            f"{source_name(src)}: missing partition column(s) {missing_parts} "
            f"(run.partition_columns); found columns {df.columns}"
        )
    return _apply_filter(df, src, "run", src.partition_columns)


def read_run(spark: SparkSession, src: RunSource, *, version: int | None = None) -> DataFrame:
    """Read a run into ``partition columns + query_id, doc_id, score, rank``.

    TREC run text is ``qid Q0 docno rank score tag [anything]``; its tag becomes ``run_id``.
    """
    if src.format == "trec":
        def f(i: int) -> Column:  # null, not an ANSI error, on a short (malformed) line
            return F.get(F.col("f"), i)

        df = trec_fields(spark, src.path or "", source_name(src)).select(
            f(5).alias(TREC_RUN_ID),
            f(0).alias(S.QUERY_ID),
            f(2).alias(S.DOC_ID),
            f(4).try_cast("double").alias(S.SCORE),
            f(3).try_cast("int").alias(S.RANK),
        )
        partitions = [c for c in src.partition_columns if c != TREC_RUN_ID]
        if partitions:
            raise InputError(
                f"{source_name(src)}: a TREC run has only the partition column "
                f"'{TREC_RUN_ID}' (its tag); run.partition_columns names {partitions}"
            )
        return df.select(*src.partition_columns, S.QUERY_ID, S.DOC_ID, S.SCORE, S.RANK)
    df = _run_table(spark, src, version=version, check_types=False)
    if src.ranked:  # one row per query: a row per element, ranked by position
        df = shapes.ranked_rows(df, ranked=src.ranked, query_id=src.query_id,
                                partition_columns=src.partition_columns, window=None,
                                name=source_name(src), key=f"run.{RANKED}")
        src = RunSource(partition_columns=src.partition_columns)

    def col_or_null(name: str | None, type_: str) -> Column:
        return F.col(name).cast(type_) if name and name in df.columns else F.lit(None).cast(type_)

    return df.select(
        *src.partition_columns,
        F.col(src.query_id).cast("string").alias(S.QUERY_ID),
        F.col(src.doc_id).cast("string").alias(S.DOC_ID),
        col_or_null(src.score, "double").alias(S.SCORE),
        col_or_null(src.rank, "int").alias(S.RANK),
    )


def read_qrels(spark: SparkSession, src: QrelsSource, *, version: int | None = None) -> DataFrame:
    """Read qrels into ``query_id, doc_id, relevance``; TREC text is ``qid iteration docno rel``."""
    if src.format == "trec":
        f = F.col("f")
        return trec_fields(spark, src.path or "", source_name(src)).select(
            f[0].alias(S.QUERY_ID), f[2].alias(S.DOC_ID), f[3].cast("int").alias(S.RELEVANCE)
        )
    df = _load(spark, src, version)
    mapping = {"query_id": src.query_id, "doc_id": src.doc_id, "relevance": src.relevance}
    _require_columns(df, dict(mapping), src, "qrels")
    df = _apply_filter(df, src, "qrels", ())
    return df.select(
        F.col(src.query_id).cast("string").alias(S.QUERY_ID),
        F.col(src.doc_id).cast("string").alias(S.DOC_ID),
        F.col(src.relevance).cast("int").alias(S.RELEVANCE),
    )


# The raw readers keep values as read, so the row rules can quarantine a bad value as it was.

_ATOMIC = (T.StringType, T.NumericType, T.BooleanType, T.DateType, T.TimestampType)
_NUMERIC_OR_STRING = (T.StringType, T.NumericType)


def _require_types(
    df: DataFrame, mapping: dict[str, str | None], src: Source, section: str
) -> None:
    """Fail when a mapped column has a type that cannot be read as its canonical column."""
    types = {f.name: f.dataType for f in df.schema.fields}
    for key, col in mapping.items():
        if not col or col not in types:
            continue
        allowed = _ATOMIC if key in ("query_id", "doc_id") else _NUMERIC_OR_STRING
        if not isinstance(types[col], allowed):
            wanted = "a string or number" if key in ("query_id", "doc_id") else "a number or string"
            raise InputError(
                f"{source_name(src)}: column {col!r} ({section}.{key}) has type "
                f"{types[col].simpleString()}, which cannot be cast to {key}: expected {wanted}"
            )


def _apply_filter(df: DataFrame, src: Source, section: str, parts: Sequence[str]) -> DataFrame:
    """``df.where(src.filter)``, with an InputError naming the filter and the columns."""
    if not src.filter:
        return df
    try:
        return df.where(src.filter)
    except Exception as exc:  # AnalysisException / ParseException from the user's expression
        raise InputError(
            f"{source_name(src)}: {section}.filter {src.filter!r} does not match the table "
            f"(partition columns {list(parts)}, columns {df.columns}): {str(exc).splitlines()[0]}"
        ) from None


_TREC_POSITION = (RAW_SOURCE, RAW_LINE, RAW_BLOCK, RAW_ROW, RAW_MALFORMED)


def read_run_raw(spark: SparkSession, src: RunSource) -> RawInput:
    """Read a run keeping raw values: partition columns, ``_source``, ``_line``,
    ``query_id``, ``doc_id``, ``score``, ``rank`` (the source's types; strings for TREC).

    TREC rows also have ``_block``, ``_row`` (``_line`` is null: see
    :meth:`RawInput.number_lines`) and ``_malformed`` (under 6 fields, or a non-numeric score).

    Raises:
        InputError: missing path/table/column, a column of a type that cannot be cast, a
            filter that does not match the table.
    """
    if src.format == "trec":
        partitions = [c for c in src.partition_columns if c != TREC_RUN_ID]
        if partitions:
            raise InputError(
                f"{source_name(src)}: a TREC run has only the partition column "
                f"'{TREC_RUN_ID}' (its tag); run.partition_columns names {partitions}"
            )
        if src.window:
            raise InputError(f"{source_name(src)}: a TREC run has no window column (run.window "
                             f"= {src.window!r}); give the run as a Delta or Parquet table")
        f = F.col("f")  # F.get: null past the end of a short (malformed) line, not an error
        raw = trec_input(
            spark, src.path or "", source_name(src),
            malformed=(F.size(f) < 6) | F.get(f, 4).try_cast("double").isNull(),
            expected="at least 6 fields 'qid Q0 docno rank score tag' with a numeric score",
            fields=[F.get(f, 5).alias(TREC_RUN_ID), F.get(f, 0).alias(S.QUERY_ID),
                    F.get(f, 2).alias(S.DOC_ID), F.get(f, 4).alias(S.SCORE),
                    F.get(f, 3).alias(S.RANK)],
        )
        rows = raw.rows.select(
            *src.partition_columns, *_TREC_POSITION, S.QUERY_ID, S.DOC_ID, S.SCORE, S.RANK
        )
        return RawInput(rows, lines=raw.lines, malformed=raw.malformed, expected=raw.expected)
    return raw_run_input(_load(spark, src), src)


def raw_run_input(df: DataFrame, src: RunSource, *, section: str = "run") -> RawInput:
    """:func:`read_run_raw` of a table already loaded (or a caller's DataFrame); a run with
    ``ranked`` (one row per query) gives one row per array element (:mod:`.shapes`)."""
    df = _checked_run(df, src, check_types=True, section=section)
    if src.ranked:
        rows = shapes.ranked_rows(df, ranked=src.ranked, query_id=src.query_id,
                                  partition_columns=src.partition_columns, window=src.window,
                                  name=source_name(src), key=f"{section}.{RANKED}",
                                  slices=src.slices)
        return RawInput(rows, partitions=shapes.run_partitions(df, src.partition_columns))

    def col_or_null(name: str | None) -> Column:
        return F.col(name) if name and name in df.columns else F.lit(None).cast("string")

    return RawInput(df.select(
        *src.partition_columns,
        F.lit(source_name(src)).alias(RAW_SOURCE),
        F.lit(None).cast("long").alias(RAW_LINE),
        F.col(src.query_id).alias(S.QUERY_ID),
        F.col(src.doc_id).alias(S.DOC_ID),
        col_or_null(src.score).alias(S.SCORE),
        col_or_null(src.rank).alias(S.RANK),
        *([F.col(src.window).alias(S.WINDOW)] if src.window else []),
        *src.slices,
    ))


def read_qrels_raw(spark: SparkSession, src: QrelsSource) -> RawInput:
    """Read qrels keeping raw values: ``_source``, ``_line``, ``query_id``, ``doc_id``,
    ``relevance`` (the source's types; strings for TREC).

    TREC rows also have ``_block``, ``_row`` and ``_malformed`` (not 4 fields).

    Raises:
        InputError: as :func:`read_run_raw`.
    """
    if src.format == "trec":
        f = F.col("f")  # F.get: as in read_run_raw
        return trec_input(
            spark, src.path or "", source_name(src),
            malformed=F.size(f) != 4,
            expected="4 fields 'qid iteration docno relevance'",
            fields=[F.get(f, 0).alias(S.QUERY_ID), F.get(f, 2).alias(S.DOC_ID),
                    F.get(f, 3).alias(S.RELEVANCE)],
        )
    return raw_qrels_input(_load(spark, src), src)


def raw_qrels_input(df: DataFrame, src: QrelsSource, *, section: str = "qrels") -> RawInput:
    """:func:`read_qrels_raw` of a table already loaded (or a caller's DataFrame); qrels with
    ``relevant`` or ``graded`` (one row per query) give one row per label (:mod:`.shapes`)."""
    if src.gold:
        key = RELEVANT if src.relevant else GRADED
        mapping = {"query_id": src.query_id, key: src.gold}
        _require_columns(df, dict(mapping), src, section)
        _require_types(df, {"query_id": src.query_id}, src, section)
        df = _apply_filter(df, src, "qrels", ())
        return RawInput(shapes.gold_rows(df, gold=src.gold, graded=not src.relevant,
                                         query_id=src.query_id, name=source_name(src),
                                         key=f"{section}.{key}"))
    mapping = {"query_id": src.query_id, "doc_id": src.doc_id, "relevance": src.relevance}
    _require_columns(df, dict(mapping), src, section)
    _require_types(df, dict(mapping), src, section)
    df = _apply_filter(df, src, "qrels", ())
    return RawInput(df.select(
        F.lit(source_name(src)).alias(RAW_SOURCE),
        F.lit(None).cast("long").alias(RAW_LINE),
        F.col(src.query_id).alias(S.QUERY_ID),
        F.col(src.doc_id).alias(S.DOC_ID),
        F.col(src.relevance).alias(S.RELEVANCE),
    ))


def read_answers_raw(
    spark: SparkSession, src: AnswersSource, *, partition_fields: Sequence[T.StructField],
    run_filter: str | None = None,
) -> RawInput:
    """Read the answers keeping raw values (:func:`raw_answers_input`).

    Raises:
        InputError: as :func:`read_run_raw`.
    """
    return raw_answers_input(_load(spark, src), src, partition_fields=partition_fields,
                             run_filter=run_filter)


def raw_answers_input(
    df: DataFrame, src: AnswersSource, *, partition_fields: Sequence[T.StructField],
    run_filter: str | None = None, section: str = "answers",
) -> RawInput:
    """The answers of a loaded table (or a caller's DataFrame): the run partition columns
    cast to the run's types (``_uncast_partition``: a value that does not cast), ``_source``,
    ``_line``, ``query_id`` and ``answer_score`` as read; ``answers.filter`` applied, then
    ``run_filter`` (the run's, on its partition columns: the job reads the answers of the
    run partitions it evaluates)."""
    mapping = {"query_id": src.query_id, "answer_score": src.answer_score}
    _require_columns(df, dict(mapping), src, section)
    _require_types(df, dict(mapping), src, section)
    parts = [f.name for f in partition_fields]
    missing = [c for c in parts if c not in df.columns]
    if missing:
        raise InputError(
            f"{source_name(src)}: missing run partition column(s) {missing} (the answers "
            f"name each run partition as the run does); found columns {df.columns}"
        )
    df = _apply_filter(df, src, "answers", parts)
    typed = [F.col(f.name).try_cast(f.dataType) for f in partition_fields]
    uncast = [F.col(f.name).isNotNull() & t.isNull() for f, t in zip(partition_fields, typed,
                                                                    strict=True)]
    rows = df.select(
        *[t.alias(c) for t, c in zip(typed, parts, strict=True)],
        F.lit(source_name(src)).alias(RAW_SOURCE),
        F.lit(None).cast("long").alias(RAW_LINE),
        F.col(src.query_id).alias(S.QUERY_ID),
        F.col(src.answer_score).alias(S.ANSWER_SCORE),
        reduce(operator.or_, uncast, F.lit(False)).alias(UNCAST_PARTITION),
    )
    if run_filter:
        try:
            rows = rows.where(run_filter)
        except Exception as exc:  # AnalysisException / ParseException, as in _apply_filter
            raise InputError(
                f"{source_name(src)}: run.filter {run_filter!r} does not match the answers' "
                f"run partition columns {parts}: {str(exc).splitlines()[0]}"
            ) from None
    return RawInput(rows)


def read_queries(spark: SparkSession, src: QueriesSource) -> DataFrame:
    """The queries input as read (``queries.filter`` applied); its columns are checked by
    :func:`releval.checks.queries.check_queries`."""
    return _apply_filter(_load(spark, src), src, "queries", ())


def run_partition_fields(spark: SparkSession, src: RunSource) -> list[T.StructField]:
    """The run's partition columns with their types, from the table's schema (no data read)."""
    if src.format == "trec":
        return [T.StructField(TREC_RUN_ID, T.StringType(), True)]
    df = _load(spark, src)
    missing = [c for c in src.partition_columns if c not in df.columns]
    if missing:
        raise InputError(
            f"{source_name(src)}: missing partition column(s) {missing} "
            f"(run.partition_columns); found columns {df.columns}"
        )
    return [df.schema[c] for c in src.partition_columns]
