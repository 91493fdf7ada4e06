"""Statistical inference over queries: confidence intervals, paired tests, effect sizes.

* :mod:`releval.inference.kernel`: pure NumPy functions over one group of per-query
  values (hash-derived resampling weights and signs, the bootstrap interval, the paired
  statistics, the randomization test, Holm and Benjamini-Hochberg); tested without Spark.
* :mod:`releval.inference.intervals`: the interval columns of the aggregate table.
* :mod:`releval.inference.comparison`: a baseline run partition against candidates over
  the same queries (the comparison table).
"""
