"""Readers: Delta (path or catalog table), Parquet, and TREC text.

Every reader returns the canonical columns of ``releval.schemas`` (plus the
run's partition columns), so nothing downstream knows where the data came from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from releval import schemas as S
from releval.config import QrelsSource, RunSource
from releval.errors import InputError

#: Columns a raw reader adds; optional for the row rules (``releval.quality``).
RAW_SOURCE = "_source"
RAW_LINE = "_line"
#: A TREC line's position before it is numbered: its file block's start and its row id;
#: with ``_source`` they order a file's lines as ``_line`` would.
RAW_BLOCK = "_block"
RAW_ROW = "_row"
#: True on a TREC line without the fields its format needs.
RAW_MALFORMED = "_malformed"

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


def trec_line_fields(line: Column) -> Column:
    """The fields of a TREC line, as trec_eval reads them: the runs of characters other
    than white space (C's ``isspace``, Java's ``\\s``: space, tab, vertical tab, form
    feed; a line read by ``spark.read.text`` holds no carriage return or line feed).
    White space before the first field, after the last, and several white space
    characters between two fields make no empty field.

    A line with only spaces between its fields (nearly every line) is split on the one
    character ``" "``, where Java's ``String.split`` takes its fast path; a regular
    expression such as ``\\s+`` is compiled again for every row (measured on the 10M-line
    run, its fields taken into Spark's ``noop`` sink in a warm session: 4.9-6.6 s against
    9.0-11.7 s). A line with another white space character takes the regular expression.
    """
    def split(pattern: str) -> Column:
        return F.array_remove(F.split(line, pattern), "")

    other = line.contains("\t") | line.contains("\x0b") | line.contains("\f")
    return F.when(other, split(r"\s+")).otherwise(split(" "))


def _trec_rows(lines: DataFrame, *keep: str) -> DataFrame:
    """The lines (``keep`` and ``value``) that hold a row, with their fields ``f``
    (:func:`trec_line_fields`): a line with no field (blank) or whose first field starts
    with '#' (a comment) is left out, as trec_eval skips them in a run.

    The fields come out of a generator (explode of a one-element array): a filter on them
    (this one, and the rules' ``reason is null`` after) cannot be pushed below it, so Spark
    does not inline the split into the filter once per field it reads (measured: the
    evaluation's scan of a 10M-line run many times slower with the split inlined).
    """
    f = F.col("f")
    return lines.select(
        *keep, "value", F.explode(F.array(trec_line_fields(F.col("value")))).alias("f")
    ).where((F.size(f) > 0) & ~F.get(f, 0).startswith("#"))


def _trec_fields(spark: SparkSession, path: str, src: RunSource | QrelsSource) -> DataFrame:
    """The rows of a TREC text file as their fields ``f`` (:func:`_trec_rows`)."""
    try:
        lines = spark.read.text(path)
    except Exception as exc:
        raise InputError(f"cannot read {source_name(src)}: {str(exc).splitlines()[0]}") from None
    return _trec_rows(lines).select("f")


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
        def f(i: int) -> Column:  # null, not an ANSI error, on a short (malformed) line
            return F.get(F.col("f"), i)

        df = _trec_fields(spark, src.path or "", src).select(
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


# --- raw readers (the job's path): values kept as read, validated by releval.quality ---------
#
# The raw readers do not cast: a non-numeric score stays the string it was, so
# ``releval.quality`` can quarantine it with its raw value instead of turning it into a
# silent null. They add ``_source`` (file or table) and ``_line`` (the 1-based physical line
# number in a TREC file; null for tables, and null for TREC rows until numbered, see below).
#
# TREC text is read like any text file (``spark.read.text``, no ``wholetext``): Spark splits
# each file into blocks of at most ``spark.sql.files.maxPartitionBytes`` and reads them in
# parallel; Hadoop's LineRecordReader gives each line to exactly one block, so no task holds
# a whole file. A line's number is not known inside its block, so the scan's first projection,
# before any filter, keeps where each physical line (blank and '#' lines included) came from:
# ``_source`` (the file), ``_block`` (``_metadata.file_block_start``, the block's byte offset)
# and ``_row`` (``monotonically_increasing_id()``: consecutive within one block, in line
# order). (``_source``, ``_block``, ``_row``) orders a file's lines as their numbers would;
# ``releval.quality`` breaks ties with it. The exact number is resolved only where one is
# shown, by :meth:`RawInput.number_lines`:
#
#     _line = (lines of the file in blocks that start earlier) + (_row - first _row of its block) + 1
#
# from one small aggregation of every line per (file, block), broadcast into a join. That
# aggregation scans the text again, which happens only on an error path: the malformed-line
# error (:meth:`RawInput.fail_on_malformed`, when the accounting counted a malformed
# line) and the quarantine rows (written only when a row was rejected). The ids of the two
# scans agree because both plan the same relation (the file listing is fixed when the
# DataFrame is made) with the same session settings, so the same blocks land in the same
# Spark partitions in the same order. The normal path reads each file once per pass and
# never numbers a line. A malformed line is not raised while reading (that would be a scan of
# its own): it is flagged ``_malformed`` and counted by the accounting (the pseudo-reason
# ``releval.quality.MALFORMED``), which then fails the job with the line's ``file:line``.
# Large production inputs are Delta/Parquet tables, read in parallel as usual.

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


_FIRST_ROW = "_first_row"  # the first _row of a (file, block)
_LINES_BEFORE = "_lines_before"  # the lines of the file in blocks that start earlier


@dataclass(frozen=True)
class RawInput:
    """A source read raw: its rows and, for TREC text, how to number and check its lines.

    Attributes:
        rows: the rows (see :func:`read_run_raw` / :func:`read_qrels_raw`).
        lines: TREC text: every physical line's ``_source``, ``_block``, ``_row``; None for
            tables.
        malformed: TREC text: the malformed lines' ``_source``, ``_block``, ``_row``,
            ``text``; None for tables.
        expected: what a well-formed TREC line looks like (for the error message).
    """

    rows: DataFrame
    lines: DataFrame | None = None
    malformed: DataFrame | None = None
    expected: str = ""

    def number_lines(self, rows: DataFrame) -> DataFrame:
        """``rows`` (some of :attr:`rows`, e.g. the rejected ones) with the exact ``_line``.

        The position columns ``_block`` and ``_row`` are replaced by ``_line``, the 1-based
        physical line in its file (see the raw readers' comment block above); a table's rows are
        returned as they are. This scans the text once more: call it on an error path only.
        """
        if self.lines is None:
            return rows
        per_block = self.lines.groupBy(RAW_SOURCE, RAW_BLOCK).agg(
            F.min(RAW_ROW).alias(_FIRST_ROW), F.count(F.lit(1)).alias("_n")
        )
        earlier = (Window.partitionBy(RAW_SOURCE).orderBy(RAW_BLOCK)
                   .rowsBetween(Window.unboundedPreceding, -1))
        blocks = per_block.select(
            RAW_SOURCE, RAW_BLOCK, _FIRST_ROW,
            F.coalesce(F.sum("_n").over(earlier), F.lit(0)).alias(_LINES_BEFORE),
        )
        line = F.col(_LINES_BEFORE) + F.col(RAW_ROW) - F.col(_FIRST_ROW) + 1
        joined = rows.join(F.broadcast(blocks), [RAW_SOURCE, RAW_BLOCK], "left")
        return joined.select(
            *[line.cast("long").alias(RAW_LINE) if c == RAW_LINE else F.col(c)
              for c in rows.columns if c not in (RAW_BLOCK, RAW_ROW)]
        )

    def fail_on_malformed(self) -> None:
        """Raise an InputError naming the file and line of the first malformed TREC line.

        Called when the accounting counted a malformed line: finds the first one (in
        file order) and numbers its line, two more scans on the way to the error.
        """
        if self.malformed is None:
            return
        first = self.malformed.orderBy(RAW_SOURCE, RAW_BLOCK, RAW_ROW).limit(1)
        row = self.number_lines(first.withColumn(RAW_LINE, F.lit(None).cast("long"))).first()
        if row is not None:
            raise InputError(
                f"{row[RAW_SOURCE]}:{row[RAW_LINE]}: malformed TREC line {row['text'][:200]!r}; "
                f"expected {self.expected}"
            )


def _trec_text(spark: SparkSession, src: RunSource | QrelsSource) -> DataFrame:
    """Every physical line of TREC text, split by Spark: ``_source``, ``_block``, ``_row``, ``value``.

    The position columns are taken in the scan's first projection, before any filter, so
    that ``_row`` numbers every line (``monotonically_increasing_id`` is nondeterministic:
    Spark pushes no filter below it).
    """
    try:
        text = spark.read.text(src.path or "")
    except Exception as exc:
        raise InputError(f"cannot read {source_name(src)}: {str(exc).splitlines()[0]}") from None
    return text.select(
        F.input_file_name().alias(RAW_SOURCE),
        F.col("_metadata.file_block_start").alias(RAW_BLOCK),
        F.monotonically_increasing_id().alias(RAW_ROW),
        F.col("value"),
    )


def _trec_input(
    spark: SparkSession,
    src: RunSource | QrelsSource,
    *,
    malformed: Column,
    expected: str,
    fields: Sequence[Column],
) -> RawInput:
    """The :class:`RawInput` of TREC text: the lines that hold a row, split into fields.

    Args:
        spark: the session.
        src: the source.
        malformed: over the fields ``f``: true when the line is malformed.
        expected: what a well-formed line looks like (for the error message).
        fields: over the fields ``f``: the row's columns after ``_malformed``.
    """
    lines = _trec_text(spark, src)
    data = _trec_rows(lines, RAW_SOURCE, RAW_BLOCK, RAW_ROW)
    rows = data.select(
        RAW_SOURCE,
        F.lit(None).cast("long").alias(RAW_LINE),
        RAW_BLOCK,
        RAW_ROW,
        malformed.alias(RAW_MALFORMED),
        *fields,
    )
    return RawInput(
        rows,
        lines=lines.select(RAW_SOURCE, RAW_BLOCK, RAW_ROW),
        malformed=data.where(malformed).select(
            RAW_SOURCE, RAW_BLOCK, RAW_ROW, F.trim(F.col("value")).alias("text")
        ),
        expected=expected,
    )


_TREC_POSITION = (RAW_SOURCE, RAW_LINE, RAW_BLOCK, RAW_ROW, RAW_MALFORMED)


def read_run_raw(spark: SparkSession, src: RunSource) -> RawInput:
    """Read a run keeping raw values: partition columns, ``_source``, ``_line``,
    ``query_id``, ``doc_id``, ``score``, ``rank`` (the source's types; strings for TREC).

    TREC rows also have ``_block``, ``_row`` (their position; ``_line`` is null until
    :meth:`RawInput.number_lines`) and ``_malformed`` (fewer than 6 fields or a non-numeric
    score: :meth:`RawInput.fail_on_malformed` names the first one).

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
        f = F.col("f")  # F.get: null past the end of a short (malformed) line, not an error
        raw = _trec_input(
            spark, src,
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
    df = _run_table(spark, src, version=None, check_types=True)

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
    ))


def read_qrels_raw(spark: SparkSession, src: QrelsSource) -> RawInput:
    """Read qrels keeping raw values: ``_source``, ``_line``, ``query_id``, ``doc_id``,
    ``relevance`` (the source's types; strings for TREC).

    TREC rows also have ``_block``, ``_row`` and ``_malformed`` (as :func:`read_run_raw`;
    a TREC qrels line must have 4 fields).

    Raises:
        InputError: as :func:`read_run_raw`.
    """
    if src.format == "trec":
        f = F.col("f")  # F.get: as in read_run_raw
        return _trec_input(
            spark, src,
            malformed=F.size(f) != 4,
            expected="4 fields 'qid iteration docno relevance'",
            fields=[F.get(f, 0).alias(S.QUERY_ID), F.get(f, 2).alias(S.DOC_ID),
                    F.get(f, 3).alias(S.RELEVANCE)],
        )
    df = _load(spark, src)
    mapping = {"query_id": src.query_id, "doc_id": src.doc_id, "relevance": src.relevance}
    _require_columns(df, dict(mapping), src, "qrels")
    _require_types(df, dict(mapping), src, "qrels")
    df = _apply_filter(df, src, "qrels", ())
    return RawInput(df.select(
        F.lit(source_name(src)).alias(RAW_SOURCE),
        F.lit(None).cast("long").alias(RAW_LINE),
        F.col(src.query_id).alias(S.QUERY_ID),
        F.col(src.doc_id).alias(S.DOC_ID),
        F.col(src.relevance).alias(S.RELEVANCE),
    ))


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
