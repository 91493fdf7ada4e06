"""What the job keeps in Spark's cache while it reads the engine's result more than once."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyspark import StorageLevel
from pyspark.sql import DataFrame

from releval.core.engine import reads_result_twice
from releval.runtime.mode import default_parallelism

#: Spark's setting that lets adaptive execution merge the shuffle partitions of a plan it
#: persists (off by default, so that a reader can use the persisted partitioning)
MERGE_CACHED_PARTITIONS = "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning"


def keeper(kept: list[DataFrame]) -> Callable[[DataFrame], DataFrame]:
    """The ``keep`` of :func:`evaluate`: persist the engine's result, which the steps after it
    read more than once, and read it as one partition per core (it holds a row or two per
    query, and a task per shuffle partition would cost more than its rows). Each persisted
    DataFrame is appended to ``kept``, to be unpersisted when done.

    The plan is persisted with :data:`MERGE_CACHED_PARTITIONS` on (the session's value is
    restored right after): each of the engine's shuffle partitions is a Python task with a
    fixed start-up cost, and nothing reads the persisted result by its partitioning.
    """

    cores: list[int] = []  # asked once: a Connect session plans a query for it

    def keep(df: DataFrame) -> DataFrame:
        kept.append(persist_merged(df, StorageLevel.MEMORY_AND_DISK))
        if not cores:
            cores.append(default_parallelism(df.sparkSession))
        return kept[-1].coalesce(cores[0])

    return keep


def persist_merged(df: DataFrame, level: StorageLevel) -> DataFrame:
    """``df`` persisted with :data:`MERGE_CACHED_PARTITIONS` on (the session's value is
    restored right after): adaptive execution merges its small shuffle partitions, where a
    persisted plan otherwise keeps every one (200 in a default session)."""
    conf = df.sparkSession.conf
    before = conf.get(MERGE_CACHED_PARTITIONS)
    conf.set(MERGE_CACHED_PARTITIONS, "true")
    try:
        return df.persist(level)
    finally:
        conf.set(MERGE_CACHED_PARTITIONS, before)  # a Spark SQL key: always has a value


def materialize(kept: Sequence[DataFrame], *, partition_columns: Sequence[str],
                missing_queries: str) -> None:
    """Build the engine's persisted result (the first of ``kept``) in one pass of its own,
    when the first plan that reads it reads it twice (:func:`reads_result_twice`): adaptive
    execution would compute a cache that is not built yet once for each read, the engine's
    work twice over."""
    if kept and reads_result_twice(partition_columns, missing_queries):
        kept[0].count()
