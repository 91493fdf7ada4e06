"""Readers: Delta (path or catalog table), Parquet, and TREC text.

Every reader returns the canonical columns of ``releval.schemas`` (plus the
run's partition columns), so nothing downstream knows where the data came from.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from releval import schemas as S
from releval.config import QrelsSource, RunSource
from releval.errors import InputError

#: The partition column a TREC run file provides: its tag (6th field).
TREC_RUN_ID = "run_id"


def source_name(src: RunSource | QrelsSource) -> str:
    """How a source is named in messages: its path or its table name."""
    return f"{src.format} {'table ' + src.table if src.table else src.path}"


def _load(spark: SparkSession, src: RunSource | QrelsSource, version: int | None = None) -> DataFrame:
    """Load a Delta/Parquet path or a catalog table (a Delta ``version``: time travel).

    ``version`` defaults to the source's configured ``version``.
    """
    version = src.version if version is None else version
    try:
        reader = spark.read.format(src.format)
        if version is not None:
            reader = reader.option("versionAsOf", version)
        if src.table:
            return reader.table(src.table) if version is not None else spark.table(src.table)
        return reader.load(src.path)
    except Exception as exc:  # Spark raises AnalysisException subclasses here
        message = str(exc).splitlines()[0]
        raise InputError(f"cannot read {source_name(src)}: {message}") from None


def _require_columns(
    df: DataFrame, mapping: dict[str, str | None], src: RunSource | QrelsSource, section: str
) -> None:
    """Fail with the expected and found columns when a mapped column is missing."""
    missing = {key: col for key, col in mapping.items() if col and col not in df.columns}
    if missing:
        keys = ", ".join(f"{section}.{key} = {col!r}" for key, col in missing.items())
        raise InputError(
            f"{source_name(src)}: missing column(s) {sorted(missing.values())} "
            f"(mapped by {keys}); found columns {df.columns}"
        )


def _trec_fields(spark: SparkSession, path: str, src: RunSource | QrelsSource) -> DataFrame:
    """Lines of a TREC text file split on white space; blank and '#' lines skipped."""
    try:
        lines = spark.read.text(path)
    except Exception as exc:
        raise InputError(f"cannot read {source_name(src)}: {str(exc).splitlines()[0]}") from None
    trimmed = F.trim(F.col("value"))
    return lines.where((trimmed != "") & ~trimmed.startswith("#")).select(
        F.split(trimmed, r"\s+").alias("f")
    )


def _run_table(
    spark: SparkSession, src: RunSource, *, version: int | None, check_types: bool
) -> DataFrame:
    """A Delta/Parquet run with its mapped and partition columns checked, filtered."""
    df = _load(spark, src, version)
    mapping = {"query_id": src.query_id, "doc_id": src.doc_id, "score": src.score, "rank": src.rank}
    needed = {k: v for k, v in mapping.items() if k in ("query_id", "doc_id", src.rank_by)}
    _require_columns(df, needed, src, "run")
    if check_types:
        _require_types(df, mapping, src, "run")
    missing_parts = [c for c in src.partition_columns if c not in df.columns]
    if missing_parts:
        raise InputError(
            f"{source_name(src)}: missing partition column(s) {missing_parts} "
            f"(run.partition_columns); found columns {df.columns}"
        )
    return _apply_filter(df, src, "run", src.partition_columns)


def read_run(spark: SparkSession, src: RunSource, *, version: int | None = None) -> DataFrame:
    """Read a run into ``partition columns + query_id, doc_id, score, rank``.

    TREC run text is ``qid Q0 docno rank score tag [anything]``; its tag becomes
    the ``run_id`` partition column. ``version`` pins a Delta input (``versionAsOf``).
    """
    if src.format == "trec":
        f = F.col("f")
        df = _trec_fields(spark, src.path or "", src).select(
            f[5].alias(TREC_RUN_ID),
            f[0].alias(S.QUERY_ID),
            f[2].alias(S.DOC_ID),
            f[4].cast("double").alias(S.SCORE),
            f[3].cast("int").alias(S.RANK),
        )
        partitions = [c for c in src.partition_columns if c != TREC_RUN_ID]
        if partitions:
            raise InputError(
                f"{source_name(src)}: a TREC run has only the partition column "
                f"'{TREC_RUN_ID}' (its tag); run.partition_columns names {partitions}"
            )
        return df.select(*src.partition_columns, S.QUERY_ID, S.DOC_ID, S.SCORE, S.RANK)
    df = _run_table(spark, src, version=version, check_types=False)

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
    """Read qrels into ``query_id, doc_id, relevance``.

    TREC qrels text is ``qid iteration docno rel``. ``version`` pins a Delta input.
    """
    if src.format == "trec":
        f = F.col("f")
        return _trec_fields(spark, src.path or "", src).select(
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


# --- raw readers (the job's path): values kept as read, validated by releval.validate ---------
#
# The raw readers do not cast: a non-numeric score stays the string it was, so
# ``releval.validate`` can quarantine it with its raw value instead of turning it into a
# silent null. They add ``_source`` (file or table) and, for TREC text, ``_line`` (the
# 1-based physical line number in its file).
#
# TREC line numbers: each file is read whole (``spark.read.text(wholetext=True)``, one row per
# file) and split into lines with ``posexplode``. This scales with the number of files (files
# are read in parallel) and gives exact per-file line numbers with no ordering assumption; one
# file must fit in an executor's memory (under 2 GB), which holds for TREC run and qrels files.
# Large production inputs are Delta/Parquet tables, which are read in parallel as usual.

from releval.validate import RAW_LINE, RAW_SOURCE  # noqa: E402  (where a row came from)

_ATOMIC = (T.StringType, T.NumericType, T.BooleanType, T.DateType, T.TimestampType)
_NUMERIC_OR_STRING = (T.StringType, T.NumericType)


def _require_types(
    df: DataFrame, mapping: dict[str, str | None], src: RunSource | QrelsSource, section: str
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


def _apply_filter(df: DataFrame, src: RunSource | QrelsSource, section: str, parts: Sequence[str]) -> DataFrame:
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


def _trec_lines(spark: SparkSession, src: RunSource | QrelsSource) -> DataFrame:
    """Non-blank, non-comment lines of TREC text: ``_source``, ``_line``, fields ``f``, ``text``."""
    try:
        files = spark.read.text(src.path or "", wholetext=True)
    except Exception as exc:
        raise InputError(f"cannot read {source_name(src)}: {str(exc).splitlines()[0]}") from None
    lines = files.select(
        F.input_file_name().alias(RAW_SOURCE),
        F.posexplode(F.split(F.col("value"), r"\r?\n")).alias("pos", "text"),
    )
    text = F.trim(F.col("text"))
    return lines.where((text != "") & ~text.startswith("#")).select(
        RAW_SOURCE,
        (F.col("pos") + 1).cast("long").alias(RAW_LINE),
        text.alias("text"),
        F.split(text, r"\s+").alias("f"),
    )


def _fail_on_malformed(lines: DataFrame, bad: Column, expected: str, src: RunSource | QrelsSource) -> None:
    """Raise an InputError naming the file and line of the first malformed TREC line."""
    first = lines.where(bad).orderBy(RAW_SOURCE, RAW_LINE).select(RAW_SOURCE, RAW_LINE, "text").first()
    if first is not None:
        raise InputError(
            f"{first[RAW_SOURCE]}:{first[RAW_LINE]}: malformed TREC line {first['text'][:200]!r}; "
            f"expected {expected}"
        )


def read_run_raw(spark: SparkSession, src: RunSource) -> DataFrame:
    """Read a run keeping raw values: partition columns, ``_source``, ``_line``,
    ``query_id``, ``doc_id``, ``score``, ``rank`` (the source's types; strings for TREC).

    Raises:
        InputError: missing path/table/column, a column of a type that cannot be cast, a
            filter that does not match the table, a malformed TREC line (file:line).
    """
    if src.format == "trec":
        partitions = [c for c in src.partition_columns if c != TREC_RUN_ID]
        if partitions:
            raise InputError(
                f"{source_name(src)}: a TREC run has only the partition column "
                f"'{TREC_RUN_ID}' (its tag); run.partition_columns names {partitions}"
            )
        lines = _trec_lines(spark, src)
        f = F.col("f")
        _fail_on_malformed(
            lines,
            (F.size(f) < 6) | f[4].try_cast("double").isNull(),
            "at least 6 fields 'qid Q0 docno rank score tag' with a numeric score",
            src,
        )
        return lines.select(
            f[5].alias(TREC_RUN_ID),
            RAW_SOURCE,
            RAW_LINE,
            f[0].alias(S.QUERY_ID),
            f[2].alias(S.DOC_ID),
            f[4].alias(S.SCORE),
            f[3].alias(S.RANK),
        ).select(*src.partition_columns, RAW_SOURCE, RAW_LINE, S.QUERY_ID, S.DOC_ID, S.SCORE, S.RANK)
    df = _run_table(spark, src, version=None, check_types=True)

    def col_or_null(name: str | None) -> Column:
        return F.col(name) if name and name in df.columns else F.lit(None).cast("string")

    return df.select(
        *src.partition_columns,
        F.lit(source_name(src)).alias(RAW_SOURCE),
        F.lit(None).cast("long").alias(RAW_LINE),
        F.col(src.query_id).alias(S.QUERY_ID),
        F.col(src.doc_id).alias(S.DOC_ID),
        col_or_null(src.score).alias(S.SCORE),
        col_or_null(src.rank).alias(S.RANK),
    )


def read_qrels_raw(spark: SparkSession, src: QrelsSource) -> DataFrame:
    """Read qrels keeping raw values: ``_source``, ``_line``, ``query_id``, ``doc_id``,
    ``relevance`` (the source's types; strings for TREC).

    Raises:
        InputError: as :func:`read_run_raw`; a TREC qrels line must have 4 fields.
    """
    if src.format == "trec":
        lines = _trec_lines(spark, src)
        f = F.col("f")
        _fail_on_malformed(lines, F.size(f) != 4, "4 fields 'qid iteration docno relevance'", src)
        return lines.select(
            RAW_SOURCE,
            RAW_LINE,
            f[0].alias(S.QUERY_ID),
            f[2].alias(S.DOC_ID),
            f[3].alias(S.RELEVANCE),
        )
    df = _load(spark, src)
    mapping = {"query_id": src.query_id, "doc_id": src.doc_id, "relevance": src.relevance}
    _require_columns(df, dict(mapping), src, "qrels")
    _require_types(df, dict(mapping), src, "qrels")
    df = _apply_filter(df, src, "qrels", ())
    return df.select(
        F.lit(source_name(src)).alias(RAW_SOURCE),
        F.lit(None).cast("long").alias(RAW_LINE),
        F.col(src.query_id).alias(S.QUERY_ID),
        F.col(src.doc_id).alias(S.DOC_ID),
        F.col(src.relevance).alias(S.RELEVANCE),
    )


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
