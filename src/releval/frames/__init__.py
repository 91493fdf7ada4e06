"""The Spark frames that feed the pure statistics of ``releval.stats``: aggregates, comparisons, changes, gates and slices over per-query rows."""
