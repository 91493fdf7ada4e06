"""Output-schema migrations (see docs/migrations.md).

Each output table records its schema version in the table property
``releval.schema_version``. A release that changes the output schemas bumps
``releval.schemas.SCHEMA_VERSION`` and adds a step here; the batch job refuses to
write a table of another version (``SchemaVersionError``) instead of appending
rows of a different shape. :func:`migrate_table` applies the missing steps in
place, each one a Delta commit (metadata only: no data file is rewritten).
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import SparkSession

from releval import schemas as S
from releval.errors import SchemaVersionError
from releval.io.atomic import sql_name, table_exists, table_schema_version
from releval.partitions import quote_literal


def _v0_to_v1(spark: SparkSession, name: str) -> None:
    """0 -> 1: add the nullable ``job_run_id`` column (lineage) at the end."""
    comment = quote_literal(S.PER_QUERY_COMMENTS[S.JOB_RUN_ID])
    spark.sql(f"ALTER TABLE {name} ADD COLUMNS ({S.JOB_RUN_ID} STRING COMMENT {comment})")


#: version found -> (step to the next version, the next version)
STEPS: dict[str, tuple[Callable[[SparkSession, str], None], str]] = {
    "0": (_v0_to_v1, "1"),
}


def migrate_table(spark: SparkSession, *, path: str | None, table: str | None) -> list[str]:
    """Bring one output table to :data:`releval.schemas.SCHEMA_VERSION`.

    Returns:
        The versions it went through, e.g. ``["0", "1"]``; ``["1"]`` when already current;
        ``[]`` when the table does not exist.

    Raises:
        SchemaVersionError: the table's version is unknown (newer than this release).
    """
    if not table_exists(spark, path=path, table=table):
        return []
    name = sql_name(path, table)
    version = table_schema_version(spark, path=path, table=table)
    steps = [version]
    while version != S.SCHEMA_VERSION:
        if version not in STEPS:
            raise SchemaVersionError(
                f"{name}: {S.SCHEMA_VERSION_PROPERTY} = {version!r} is unknown to this releval "
                f"(it writes {S.SCHEMA_VERSION!r}); was it written by a newer release?"
            )
        step, version = STEPS[version]
        step(spark, name)
        spark.sql(
            f"ALTER TABLE {name} SET TBLPROPERTIES "
            f"('{S.SCHEMA_VERSION_PROPERTY}' = '{version}')"
        )
        steps.append(version)
    return steps
