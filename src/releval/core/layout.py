"""How rows are laid out across Spark partitions: by query id.

Each query's rows land in one partition. Adaptive execution may merge small partitions
(a merge keeps whole partitions, so a query never splits): each partition becomes a
Python task with a fixed start-up cost. See docs/design/engine.md.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from releval.core import columns as S


def by_query(df: DataFrame) -> DataFrame:
    """``df`` hash-partitioned by query id into ``spark.sql.shuffle.partitions`` partitions,
    which adaptive execution may merge."""
    return df.repartition(S.QUERY_ID)
