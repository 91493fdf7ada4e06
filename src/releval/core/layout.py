"""How rows are laid out across Spark partitions: by query id, once.

The run and the qrels are shuffled once, with a fixed partition count so adaptive
execution cannot coalesce the two sides differently; every later per-query step runs
inside that layout. See docs/design/engine.md.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from releval.core import columns as S


def by_query(df: DataFrame) -> DataFrame:
    """``df`` hash-partitioned by query id into ``spark.sql.shuffle.partitions`` partitions."""
    partitions = int(df.sparkSession.conf.get("spark.sql.shuffle.partitions") or "200")
    return df.repartition(partitions, S.QUERY_ID)
