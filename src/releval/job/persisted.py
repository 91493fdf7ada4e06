"""What the job keeps in Spark's cache while it reads the engine's result more than once."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyspark import StorageLevel
from pyspark.sql import DataFrame


def keeper(kept: list[DataFrame]) -> Callable[[DataFrame], DataFrame]:
    """The ``keep`` of :func:`evaluate`: persist the engine's result, which the steps after it
    read more than once, and read it as one partition per core (it holds a row or two per
    query, and a task per shuffle partition would cost more than its rows). Each persisted
    DataFrame is appended to ``kept``, to be unpersisted when done."""

    def keep(df: DataFrame) -> DataFrame:
        kept.append(df.persist(StorageLevel.MEMORY_AND_DISK))
        return kept[-1].coalesce(df.sparkSession.sparkContext.defaultParallelism)

    return keep


def materialize(kept: Sequence[DataFrame]) -> None:
    """Build the engine's persisted result (the first of ``kept``) in one pass of its own.

    The first plan that reads it reads it twice (the queries' rows and, for the missing
    queries, the run partitions), and adaptive execution would compute a cache that is not
    built yet once for each read, the engine's work twice over."""
    if kept:
        kept[0].count()
