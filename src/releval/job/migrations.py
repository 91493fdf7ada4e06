"""Output-schema migrations: :func:`migrate_table` brings a table to the current version.

The version is the table property ``releval.schema_version``; each step changes a table in
place in Delta commits. See docs/migrations.md."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from releval.config import Config
from releval.core import columns as S
from releval.errors import SchemaVersionError
from releval.evaluation.inputs import qrels_key
from releval.evaluation.partitions import quote_identifier, quote_literal
from releval.io import comparison_table, tables
from releval.io.atomic import read_table, sql_name, table_exists, table_schema_version
from releval.io.readers import run_partition_fields
from releval.io.writers import SCHEMA_VERSION, SCHEMA_VERSION_PROPERTY, absolute

#: The kinds of table a config writes.
KINDS = ("per_query", "aggregate", "quarantine", "run_log", "comparison", "attribution",
         "agreement", "gate", "click_labels", "position_bias")

#: A step: (session, kind, path, table, config) -> None; changes one table in place.
Step = Callable[[SparkSession, str, str | None, str | None, Config], None]


def _add_job_run_id(
    spark: SparkSession, kind: str, path: str | None, table: str | None, config: Config
) -> None:
    """0 -> 1, per-query and aggregate: add the nullable ``job_run_id`` column (lineage)."""
    comment = quote_literal(tables.PER_QUERY_COMMENTS[S.JOB_RUN_ID])
    spark.sql(
        f"ALTER TABLE {sql_name(path, table)} ADD COLUMNS "
        f"({quote_identifier(S.JOB_RUN_ID)} STRING COMMENT {comment})"
    )


def _quarantine_by_run_partition(
    spark: SparkSession, kind: str, path: str | None, table: str | None, config: Config
) -> None:
    """1 -> 2, quarantine: keyed by run partition and qrels key instead of ``job_partition``.

    One overwrite commit: partition columns come from each row's ``partition`` map, qrels rows
    get the config's qrels key, ``job_run_id`` is null."""
    fields = run_partition_fields(spark, config.run)
    schema = tables.quarantine_table_schema(fields)
    comments = {**tables.QUARANTINE_COMMENTS,
                **{f.name: tables.QUARANTINE_PARTITION_COMMENT for f in fields}}
    old = read_table(spark, path=path, table=table)
    derived = {
        **{f.name: F.col(S.PARTITION)[f.name] for f in fields},
        S.QRELS_KEY: F.when(F.col(S.INPUT) == "qrels", F.lit(qrels_key(config))),
        S.JOB_RUN_ID: F.lit(None),
    }
    rows = old.select(*[
        (derived[f.name] if f.name in derived else F.col(f.name))
        .cast(f.dataType).alias(f.name, metadata={"comment": comments[f.name]})
        for f in schema.fields
    ])
    writer = (
        rows.write.format("delta").mode("overwrite")
        .option("overwriteSchema", "true")
        .option("userMetadata", "releval migration 1 -> 2")
        .partitionBy(S.INPUT, *config.output_partition_columns)
    )
    if table:
        writer.saveAsTable(table)
    else:
        writer.save(absolute(path or ""))


def _add_negative_labels(
    spark: SparkSession, kind: str, path: str | None, table: str | None, config: Config
) -> None:
    """1 -> 2, per-query and aggregate: add ``negative_labels`` (the last column).

    Existing rows read a negative label as a judgment, so they get ``'judged'``; the column is
    nullable (Delta cannot add a NOT NULL column), the job writes it on every row."""
    name = sql_name(path, table)
    column = quote_identifier(S.NEGATIVE_LABELS)
    comment = quote_literal(tables.PER_QUERY_COMMENTS[S.NEGATIVE_LABELS])
    spark.sql(f"ALTER TABLE {name} ADD COLUMNS ({column} STRING COMMENT {comment})")
    spark.sql(f"UPDATE {name} SET {column} = 'judged' WHERE {column} IS NULL")


def _add_intervals(
    spark: SparkSession, kind: str, path: str | None, table: str | None, config: Config
) -> None:
    """1 -> 2, aggregate: ``negative_labels``, then the ``ci_*`` interval columns (nullable)."""
    _add_negative_labels(spark, kind, path, table, config)
    types = {S.CI_LOW: "DOUBLE", S.CI_HIGH: "DOUBLE", S.CI_METHOD: "STRING", S.CI_LEVEL: "DOUBLE"}
    columns = ", ".join(
        f"{quote_identifier(c)} {t} COMMENT {quote_literal(tables.AGGREGATE_COMMENTS[c])}"
        for c, t in types.items()
    )
    spark.sql(f"ALTER TABLE {sql_name(path, table)} ADD COLUMNS ({columns})")


def _add_depth(
    spark: SparkSession, kind: str, path: str | None, table: str | None, config: Config
) -> None:
    """2 -> 3, per-query and aggregate: add ``depth`` (the last column, nullable).

    Existing rows evaluated every document of each ranking: null, the value for no depth,
    is what they were computed with, so nothing is back-filled (metadata only)."""
    comment = quote_literal(tables.PER_QUERY_COMMENTS[S.DEPTH])
    spark.sql(
        f"ALTER TABLE {sql_name(path, table)} ADD COLUMNS "
        f"({quote_identifier(S.DEPTH)} INT COMMENT {comment})"
    )


def _add_answer_score(
    spark: SparkSession, kind: str, path: str | None, table: str | None, config: Config
) -> None:
    """3 -> 4, per-query: add the nullable ``answer_score`` column (the answers input); old
    rows hold null, as rows of a job without answers do. The attribution table is new."""
    comment = quote_literal(tables.PER_QUERY_COMMENTS[S.ANSWER_SCORE])
    spark.sql(
        f"ALTER TABLE {sql_name(path, table)} ADD COLUMNS "
        f"({quote_identifier(S.ANSWER_SCORE)} DOUBLE COMMENT {comment})"
    )


def _add_power(
    spark: SparkSession, kind: str, path: str | None, table: str | None, config: Config
) -> None:
    """4 -> 5, comparison: add ``min_detectable_diff`` and ``queries_needed`` (nullable)."""
    types = {S.MIN_DETECTABLE_DIFF: "DOUBLE", S.QUERIES_NEEDED: "BIGINT"}
    columns = ", ".join(
        f"{quote_identifier(c)} {t} COMMENT {quote_literal(comparison_table.COMPARISON_COMMENTS[c])}"
        for c, t in types.items()
    )
    spark.sql(f"ALTER TABLE {sql_name(path, table)} ADD COLUMNS ({columns})")


def _add_bounds(
    spark: SparkSession, kind: str, path: str | None, table: str | None, config: Config
) -> None:
    """5 -> 6, comparison: add ``mean_diff_best`` and ``sign_holds`` (nullable)."""
    types = {S.MEAN_DIFF_BEST: "DOUBLE", S.SIGN_HOLDS: "BOOLEAN"}
    columns = ", ".join(
        f"{quote_identifier(c)} {t} COMMENT {quote_literal(comparison_table.COMPARISON_COMMENTS[c])}"
        for c, t in types.items()
    )
    spark.sql(f"ALTER TABLE {sql_name(path, table)} ADD COLUMNS ({columns})")


def _add_window(
    spark: SparkSession, kind: str, path: str | None, table: str | None, config: Config
) -> None:
    """7 -> 8, per-query: add the nullable ``window_size`` column (each query's k_q); old
    rows hold null, as rows of a job without a window do."""
    comment = quote_literal(tables.PER_QUERY_COMMENTS[S.WINDOW_SIZE])
    spark.sql(
        f"ALTER TABLE {sql_name(path, table)} ADD COLUMNS "
        f"({quote_identifier(S.WINDOW_SIZE)} INT COMMENT {comment})"
    )


def _randomization_nullable(
    spark: SparkSession, kind: str, path: str | None, table: str | None, config: Config
) -> None:
    """8 -> 9, comparison: ``randomization_p_value`` and ``randomization_p_adjusted`` may be
    null (a comparison with ``test = "t"`` runs no randomization test); metadata only."""
    for column in (S.RANDOMIZATION_P_VALUE, S.RANDOMIZATION_P_ADJUSTED):
        spark.sql(f"ALTER TABLE {sql_name(path, table)} ALTER COLUMN "
                  f"{quote_identifier(column)} DROP NOT NULL")


def _add_slices(
    spark: SparkSession, kind: str, path: str | None, table: str | None, config: Config
) -> None:
    """9 -> 10, aggregate: add ``slice`` and ``slice_value`` (the last columns, nullable);
    old rows are over all queries, which null in both says (metadata only)."""
    columns = ", ".join(
        f"{quote_identifier(c)} STRING COMMENT {quote_literal(tables.AGGREGATE_COMMENTS[c])}"
        for c in (S.SLICE, S.SLICE_VALUE)
    )
    spark.sql(f"ALTER TABLE {sql_name(path, table)} ADD COLUMNS ({columns})")


def _comparison_slices(
    spark: SparkSession, kind: str, path: str | None, table: str | None, config: Config
) -> None:
    """9 -> 10, comparison: add ``slice``, ``slice_value`` and ``averaging`` (the last
    columns, nullable), ``averaging = 'macro'`` on the old rows (they are the rows over all
    queries), and ``significant`` may be null (a weighted row is no test)."""
    name = sql_name(path, table)
    columns = ", ".join(
        f"{quote_identifier(c)} STRING COMMENT {quote_literal(comparison_table.COMPARISON_COMMENTS[c])}"
        for c in (S.SLICE, S.SLICE_VALUE, S.AVERAGING)
    )
    spark.sql(f"ALTER TABLE {name} ADD COLUMNS ({columns})")
    averaging = quote_identifier(S.AVERAGING)
    spark.sql(f"UPDATE {name} SET {averaging} = 'macro' WHERE {averaging} IS NULL")
    spark.sql(f"ALTER TABLE {name} ALTER COLUMN {quote_identifier(S.SIGNIFICANT)} DROP NOT NULL")


def _add_attributes(
    spark: SparkSession, kind: str, path: str | None, table: str | None, config: Config
) -> None:
    """10 -> 11, per-query: add ``weight`` and ``slices`` (the last columns, nullable); old
    rows hold null in both, as rows of an evaluation without slices or a weight do
    (metadata only)."""
    types = {S.WEIGHT: "DOUBLE", S.SLICES: "MAP<STRING, STRING>"}
    columns = ", ".join(
        f"{quote_identifier(c)} {t} COMMENT {quote_literal(tables.PER_QUERY_COMMENTS[c])}"
        for c, t in types.items()
    )
    spark.sql(f"ALTER TABLE {sql_name(path, table)} ADD COLUMNS ({columns})")


#: version found -> ({kind: step}, next version); a kind without a step only moves its version.
STEPS: dict[str, tuple[Mapping[str, Step], str]] = {
    "0": ({"per_query": _add_job_run_id, "aggregate": _add_job_run_id}, "1"),
    "1": ({"per_query": _add_negative_labels, "aggregate": _add_intervals,
           "quarantine": _quarantine_by_run_partition}, "2"),
    "2": ({"per_query": _add_depth, "aggregate": _add_depth}, "3"),
    "3": ({"per_query": _add_answer_score}, "4"),
    "4": ({"comparison": _add_power}, "5"),
    "5": ({"comparison": _add_bounds}, "6"),
    # the agreement table is new: the existing tables only move their version
    "6": ({}, "7"),
    "7": ({"per_query": _add_window}, "8"),
    "8": ({"comparison": _randomization_nullable}, "9"),
    # the aggregate and the comparison gain the slices; the gate table is new (created here)
    "9": ({"aggregate": _add_slices, "comparison": _comparison_slices}, "10"),
    # the per-query rows carry each query's weight and slice values
    "10": ({"per_query": _add_attributes}, "11"),
    # the click-labels and position-bias tables are new (created here); the quarantine takes
    # input = 'interactions' rows: the existing tables only move their version
    "11": ({}, "12"),
}


def migrate_table(
    spark: SparkSession, *, kind: str, path: str | None, table: str | None, config: Config
) -> list[str]:
    """Bring one table to :data:`releval.io.writers.SCHEMA_VERSION`.

    Args:
        kind: one of :data:`KINDS`.
        path, table: the table's folder or catalog name (the other is None).
        config: the config that writes the table (partition columns, qrels).

    Returns:
        The versions it went through, e.g. ``["1", "2"]``; ``[]`` when there is no table.

    Raises:
        SchemaVersionError: the table's version is unknown (newer than this release).
    """
    if kind not in KINDS:
        raise ValueError(f"unknown table kind {kind!r}; expected one of {KINDS}")
    if not table_exists(spark, path=path, table=table):
        return []
    name = sql_name(path, table)
    version = table_schema_version(spark, path=path, table=table)
    steps = [version]
    while version != SCHEMA_VERSION:
        if version not in STEPS:
            raise SchemaVersionError(
                f"{name}: {SCHEMA_VERSION_PROPERTY} = {version!r} is unknown to this releval "
                f"(it writes {SCHEMA_VERSION!r}); was it written by a newer release?"
            )
        by_kind, version = STEPS[version]
        if kind in by_kind:
            by_kind[kind](spark, kind, path, table, config)
        spark.sql(
            f"ALTER TABLE {name} SET TBLPROPERTIES "
            f"({quote_literal(SCHEMA_VERSION_PROPERTY)} = {quote_literal(version)})"
        )
        steps.append(version)
    return steps
