"""DataFrames made on the driver from a few rows, without a Python task."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T


def local_frame(spark: SparkSession, rows: Sequence[Sequence[Any]], schema: T.StructType) -> DataFrame:
    """A DataFrame of rows made on the driver (tuples in ``schema``'s order), with no Python task.

    ``createDataFrame`` of a list would start a second Python worker daemon; through Arrow
    the rows become a JVM ``LocalRelation``. A naive ``datetime`` is local time; a null in a
    non-nullable column raises ``ValueError``.
    """
    from pyspark.sql.pandas.types import to_arrow_schema

    stamps = [i for i, f in enumerate(schema.fields) if isinstance(f.dataType, T.TimestampType)]

    def aware(value: Any) -> Any:
        if isinstance(value, datetime) and value.tzinfo is None:
            return value.astimezone(UTC)  # a naive datetime is local time
        return value

    columns = [
        [aware(r[i]) for r in rows] if i in stamps else [r[i] for r in rows]
        for i in range(len(schema.fields))
    ]
    for field, values in zip(schema.fields, columns, strict=True):
        if not field.nullable and None in values:
            row = rows[values.index(None)]
            raise ValueError(f"column {field.name!r} cannot be null; row {tuple(row)!r}")
    arrow_schema = to_arrow_schema(schema)
    table = pa.Table.from_arrays(
        [pa.array(c, type=f.type) for c, f in zip(columns, arrow_schema, strict=True)],
        schema=arrow_schema,
    )
    return spark.createDataFrame(table, schema)
