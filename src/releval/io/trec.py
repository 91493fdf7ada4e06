"""TREC text: fields as trec_eval splits them, and each row's position in its file (a line
number only on error paths). See docs/design/checks.md."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from releval.core.columns import RAW_BLOCK, RAW_LINE, RAW_MALFORMED, RAW_ROW, RAW_SOURCE
from releval.errors import InputError
from releval.io.writers import absolute


def trec_line_fields(line: Column) -> Column:
    """The fields of a TREC line as trec_eval reads them: runs of non-white-space characters.
    Only lines with white space other than ``" "`` take a regex, compiled again for every row."""
    def split(pattern: str) -> Column:
        return F.array_remove(F.split(line, pattern), "")

    other = line.contains("\t") | line.contains("\x0b") | line.contains("\f")
    return F.when(other, split(r"\s+")).otherwise(split(" "))


def trec_rows(lines: DataFrame, *keep: str) -> DataFrame:
    """The lines (``keep``, ``value``) holding a row, with their fields ``f`` from an explode,
    which stops Spark inlining the split into later filters; blank and '#' lines are dropped."""
    f = F.col("f")
    return lines.select(
        *keep, "value", F.explode(F.array(trec_line_fields(F.col("value")))).alias("f")
    ).where((F.size(f) > 0) & ~F.get(f, 0).startswith("#"))


def trec_fields(spark: SparkSession, path: str, name: str) -> DataFrame:
    """The rows of a TREC text file as their fields ``f`` (:func:`trec_rows`)."""
    try:
        lines = spark.read.text(absolute(path))
    except Exception as exc:
        raise InputError(f"cannot read {name}: {str(exc).splitlines()[0]}") from None
    return trec_rows(lines).select("f")


_FIRST_ROW = "_first_row"


_LINES_BEFORE = "_lines_before"


@dataclass(frozen=True)
class RawInput:
    """A source read raw: its rows and, for TREC text, its lines' positions and malformed lines."""

    rows: DataFrame
    lines: DataFrame | None = None
    malformed: DataFrame | None = None
    expected: str = ""
    #: A run given one row per query: its run partitions, those whose arrays are all empty
    #: included (:mod:`releval.io.shapes`); None: the partitions of ``rows``.
    partitions: DataFrame | None = None

    def number_lines(self, rows: DataFrame) -> DataFrame:
        """``rows`` with ``_block`` and ``_row`` replaced by the 1-based ``_line`` in its file;
        scans the text again, so for error paths only."""
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
        """Raise an InputError naming the file and line of the first malformed TREC line."""
        if self.malformed is None:
            return
        first = self.malformed.orderBy(RAW_SOURCE, RAW_BLOCK, RAW_ROW).limit(1)
        row = self.number_lines(first.withColumn(RAW_LINE, F.lit(None).cast("long"))).first()
        if row is not None:
            raise InputError(
                f"{row[RAW_SOURCE]}:{row[RAW_LINE]}: malformed TREC line {row['text'][:200]!r}; "
                f"expected {self.expected}"
            )


def _trec_text(spark: SparkSession, path: str, name: str) -> DataFrame:
    """Every physical line of TREC text with its position, taken before any filter so that
    ``_row`` numbers every line."""
    try:
        text = spark.read.text(absolute(path))
    except Exception as exc:
        raise InputError(f"cannot read {name}: {str(exc).splitlines()[0]}") from None
    return text.select(
        F.input_file_name().alias(RAW_SOURCE),
        F.col("_metadata.file_block_start").alias(RAW_BLOCK),
        F.monotonically_increasing_id().alias(RAW_ROW),
        F.col("value"),
    )


def trec_input(
    spark: SparkSession,
    path: str,
    name: str,
    *,
    malformed: Column,
    expected: str,
    fields: Sequence[Column],
) -> RawInput:
    """The :class:`RawInput` of TREC text: the lines that hold a row, split into fields.

    Args:
        malformed: over the fields ``f``: true when the line is malformed.
        expected: what a well-formed line looks like, for the error message.
        fields: over the fields ``f``: the row's columns after ``_malformed``.
    """
    lines = _trec_text(spark, path, name)
    data = trec_rows(lines, RAW_SOURCE, RAW_BLOCK, RAW_ROW)
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
