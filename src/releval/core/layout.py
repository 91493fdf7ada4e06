"""How rows are laid out across Spark partitions: by query id, once.

The job shuffles the run and the qrels exactly once, by query id, with an
explicit partition count (``spark.sql.shuffle.partitions``; a fixed count also
keeps adaptive execution from coalescing the two sides differently). Validation
windows, deduplication, the label join (query id is a subset of its keys, see
``spark.sql.requireAllClusterKeysForCoPartition`` in ``releval.runtime.session``), the
ranking window and the per-query aggregation then all run inside that layout.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from releval.core import columns as S


def by_query(df: DataFrame) -> DataFrame:
    """``df`` hash-partitioned by query id into ``spark.sql.shuffle.partitions`` partitions."""
    partitions = int(df.sparkSession.conf.get("spark.sql.shuffle.partitions") or "200")
    return df.repartition(partitions, S.QUERY_ID)
