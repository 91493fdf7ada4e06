"""TREC text: fields as trec_eval splits them, and each row's position in its file.

A file is read in parallel blocks (``spark.read.text``); each row keeps its file, block
offset and row id, and its line number is resolved only where one is shown
(:meth:`RawInput.number_lines`: an error path). A malformed line is flagged, counted by
the engine's ledger and then named by :meth:`RawInput.fail_on_malformed`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from releval.core.columns import RAW_BLOCK, RAW_LINE, RAW_MALFORMED, RAW_ROW, RAW_SOURCE
from releval.errors import InputError


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


def trec_rows(lines: DataFrame, *keep: str) -> DataFrame:
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


def trec_fields(spark: SparkSession, path: str, name: str) -> DataFrame:
    """The rows of a TREC text file as their fields ``f`` (:func:`trec_rows`)."""
    try:
        lines = spark.read.text(path)
    except Exception as exc:
        raise InputError(f"cannot read {name}: {str(exc).splitlines()[0]}") from None
    return trec_rows(lines).select("f")


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


def _trec_text(spark: SparkSession, path: str, name: str) -> DataFrame:
    """Every physical line of TREC text, split by Spark: ``_source``, ``_block``, ``_row``, ``value``.

    The position columns are taken in the scan's first projection, before any filter, so
    that ``_row`` numbers every line (``monotonically_increasing_id`` is nondeterministic:
    Spark pushes no filter below it).
    """
    try:
        text = spark.read.text(path)
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
        spark: the session.
        path: the text file(s).
        name: the source's name, for messages.
        malformed: over the fields ``f``: true when the line is malformed.
        expected: what a well-formed line looks like (for the error message).
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
