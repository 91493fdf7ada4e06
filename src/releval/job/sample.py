"""A synthetic search log and graded qrels, generated with a fixed seed: several systems over
several days, log-style columns (``item_id``), graded labels 0-3, many unjudged documents.

``make sample`` writes them where ``conf/local.toml`` points: the search log to
``warehouse/sample/search_log`` (not ``run_log``: that is the name of the job's own run log,
releval.job.lineage) and the qrels to ``warehouse/sample/qrels``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

#: system name -> noise of its scores (smaller is better)
SYSTEMS = {"bm25": 1.2, "dense": 0.8, "hybrid": 0.5}
#: eight days, Sunday to Sunday: a week-over-week change (docs/warehouse.md)
DATES = tuple(f"2026-11-{day}" for day in range(22, 30))


@dataclass(frozen=True)
class SampleShape:
    """Size of the sample: ``queries`` judged queries, served each of ``dates`` by each system."""

    queries: int = 100
    docs_per_query: int = 50
    judged_per_query: int = 20
    corpus: int = 20_000
    seed: int = 20261130
    dates: tuple[str, ...] = DATES


def generate(shape: SampleShape = SampleShape()) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Generate (search log, qrels) as pandas frames; same seed, same data."""
    rng = np.random.default_rng(shape.seed)
    qrels_rows = []
    pools: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for q in range(shape.queries):
        qid = f"q{q:05d}"
        pool = rng.choice(shape.corpus, size=shape.judged_per_query, replace=False)
        labels = rng.choice([0, 1, 2, 3], size=shape.judged_per_query, p=[0.45, 0.3, 0.15, 0.1])
        pools[qid] = (pool, labels)
        qrels_rows.extend((qid, f"d{d:06d}", int(label)) for d, label in zip(pool, labels, strict=True))
    qrels = pd.DataFrame(qrels_rows, columns=["query_id", "doc_id", "relevance"])
    qrels["qrels_version"] = "v1"

    run_rows = []
    for date in shape.dates:
        for system, noise in SYSTEMS.items():
            # a few queries are not served on a given day; a few served queries are unjudged
            served = [q for q in pools if rng.random() > 0.03]
            extra = [f"x{date[-2:]}{i:04d}" for i in range(max(1, shape.queries // 50))]
            for qid in served + extra:
                pool, labels = pools.get(qid, (np.empty(0, dtype=int), np.empty(0, dtype=int)))
                others = rng.choice(shape.corpus, size=shape.docs_per_query, replace=False)
                docs = np.concatenate([pool, others[~np.isin(others, pool)]])
                latent = np.concatenate([labels, np.zeros(len(docs) - len(pool))]).astype(float)
                scores = latent + rng.normal(0.0, noise * 1.5, size=len(docs))
                top = np.argsort(-scores, kind="stable")[: shape.docs_per_query]
                for position, i in enumerate(top, start=1):
                    run_rows.append(
                        (qid, f"d{int(docs[i]):06d}", round(float(scores[i]), 6), position, system, date)
                    )
    run = pd.DataFrame(
        run_rows, columns=["query_id", "item_id", "score", "position", "system", "date"]
    )
    return run, qrels


def write_sample(spark: SparkSession, *, run_path: str, qrels_path: str,
                 shape: SampleShape = SampleShape()) -> tuple[int, int]:
    """Generate the sample and write it as Delta tables (replacing what was there).

    Returns:
        (run rows, qrels rows) written.
    """
    run, qrels = generate(shape)
    # through Arrow: the rows go to the JVM as they are, with no Python task
    run_df: DataFrame = spark.createDataFrame(pa.Table.from_pandas(run, preserve_index=False))
    qrels_df: DataFrame = spark.createDataFrame(pa.Table.from_pandas(qrels, preserve_index=False))
    (run_df.write.format("delta").mode("overwrite").option("overwriteSchema", "true")
     .partitionBy("system", "date").save(run_path))
    (qrels_df.write.format("delta").mode("overwrite").option("overwriteSchema", "true")
     .partitionBy("qrels_version").save(qrels_path))
    return len(run), len(qrels)
