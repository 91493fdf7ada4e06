"""A synthetic search log, graded qrels and answer scores, generated with a fixed seed: several
systems over several days, log-style columns (``item_id``), graded labels 0-3, many unjudged
documents, a second noisier qrels version (``llm``) of the same pairs, and for each served
query an answer score whose correctness depends on whether the evidence (a document
labelled 3) was in the top 5, plus noise.

``make sample`` writes them where ``conf/local.toml`` points: the search log to
``warehouse/sample/search_log`` (not ``run_log``: that is the name of the job's own run log,
releval.job.lineage), the qrels to ``warehouse/sample/qrels`` and the answers to
``warehouse/sample/answers``; the queries table (:func:`generate_queries`: a segment, a locale
and traffic per judged query) to ``warehouse/sample/queries``.

The segments are built so that slices and traffic weights matter: ``dense`` ranks the tail
and torso queries better than ``bm25`` (most queries: its mean over queries is higher) and the
head queries worse (most searches: its traffic-weighted mean is lower)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from releval.io.writers import absolute
from releval.job.sample_clicks import generate_interactions

#: system name -> noise of its scores (smaller is better)
SYSTEMS = {"bm25": 1.2, "dense": 0.8, "hybrid": 0.5}
#: eight days, Sunday to Sunday: a week-over-week change (docs/warehouse.md)
DATES = tuple(f"2026-11-{day}" for day in range(22, 30))
#: the share of the judged queries in each traffic segment, most searched first
SEGMENTS = {"head": 0.1, "torso": 0.3, "tail": 0.6}
#: system -> the noise of its scores on the head queries where it differs from :data:`SYSTEMS`
HEAD_NOISE = {"dense": 2.5}
#: the median searches per day of a query of each segment
TRAFFIC = {"head": 20_000, "torso": 400, "tail": 5}
LOCALES = ("en-US", "de-DE", "fr-FR", "ja-JP")


def segment_of(index: int, queries: int) -> str:
    """The traffic segment of the ``index``-th judged query (the first tenth are head)."""
    edge = 0.0
    for name, share in SEGMENTS.items():
        edge += share
        if index < round(edge * queries):
            return name
    return "tail"


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
    head = {f"q{q:05d}" for q in range(shape.queries) if segment_of(q, shape.queries) == "head"}
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
                spread = HEAD_NOISE.get(system, noise) if qid in head else noise
                scores = latent + rng.normal(0.0, spread * 1.5, size=len(docs))
                top = np.argsort(-scores, kind="stable")[: shape.docs_per_query]
                for position, i in enumerate(top, start=1):
                    run_rows.append(
                        (qid, f"d{int(docs[i]):06d}", round(float(scores[i]), 6), position, system, date)
                    )
    run = pd.DataFrame(
        run_rows, columns=["query_id", "item_id", "score", "position", "system", "date"]
    )
    return run, qrels


#: The second qrels version's name, and its labels: the reference label kept with the first
#: probability, moved one grade up or down with the second, else drawn uniformly from 0-3
NOISY_VERSION = "llm"
KEEP_LABEL, OFF_BY_ONE = 0.55, 0.3


def noisy_qrels(qrels: pd.DataFrame, shape: SampleShape = SampleShape()) -> pd.DataFrame:
    """A second, noisier qrels version of the same (query, document) pairs, as an LLM judge
    might give (``qrels_version`` ``llm``); its own seeded generator."""
    rng = np.random.default_rng(shape.seed + 2)
    labels = qrels["relevance"].to_numpy()
    draw = rng.random(len(labels))
    step = np.clip(labels + rng.choice([-1, 1], size=len(labels)), 0, 3)
    noisy = np.where(draw < KEEP_LABEL, labels,
                     np.where(draw < KEEP_LABEL + OFF_BY_ONE, step,
                              rng.integers(0, 4, size=len(labels))))
    return qrels.assign(relevance=noisy.astype(labels.dtype), qrels_version=NOISY_VERSION)


#: The answer's evidence: a document of at least this label within this rank (the measure
#: Hit(rel=3)@5, conf/local.toml's answers.retrieved_by)
EVIDENCE_LABEL, EVIDENCE_DEPTH = 3, 5
#: P(the answer is correct) when the evidence was retrieved, and when not
CORRECT_WITH_EVIDENCE, CORRECT_WITHOUT_EVIDENCE = 0.85, 0.25


def generate_answers(run: pd.DataFrame, qrels: pd.DataFrame, shape: SampleShape = SampleShape()
                     ) -> pd.DataFrame:
    """One answer score in [0, 1] per served (system, date, query): correct with a
    probability that depends on whether the evidence was retrieved, the score
    near 0.85 when correct and near 0.2 when wrong; its own seeded generator, so the search
    log and the qrels are the same with or without answers."""
    rng = np.random.default_rng(shape.seed + 1)
    relevant = qrels.loc[qrels["relevance"] >= EVIDENCE_LABEL, ["query_id", "doc_id"]]
    top = run.loc[run["position"] <= EVIDENCE_DEPTH, ["system", "date", "query_id", "item_id"]]
    hits = top.merge(relevant, left_on=["query_id", "item_id"], right_on=["query_id", "doc_id"])
    keys = ["system", "date", "query_id"]
    answers = run[keys].drop_duplicates().sort_values(keys).reset_index(drop=True)
    hit = answers.merge(hits[keys].drop_duplicates().assign(hit=True), on=keys, how="left")
    retrieved = hit["hit"].notna().to_numpy()
    chance = np.where(retrieved, CORRECT_WITH_EVIDENCE, CORRECT_WITHOUT_EVIDENCE)
    correct = rng.random(len(answers)) < chance
    score = np.where(correct, rng.normal(0.85, 0.1, len(answers)),
                     rng.normal(0.2, 0.15, len(answers)))
    answers["answer_score"] = np.clip(score, 0.0, 1.0).round(3)
    return answers


def generate_queries(shape: SampleShape = SampleShape()) -> pd.DataFrame:
    """One row per judged query: ``segment`` (:func:`segment_of`), ``locale`` and
    ``searches`` (its traffic: log-normal around the segment's :data:`TRAFFIC`); its own
    seeded generator."""
    rng = np.random.default_rng(shape.seed + 3)
    segments = [segment_of(q, shape.queries) for q in range(shape.queries)]
    traffic = np.array([TRAFFIC[s] for s in segments], dtype=float)
    return pd.DataFrame({
        "query_id": [f"q{q:05d}" for q in range(shape.queries)],
        "segment": segments,
        "locale": rng.choice(LOCALES, size=shape.queries, p=[0.55, 0.2, 0.15, 0.1]),
        "searches": np.maximum(1, np.round(traffic * rng.lognormal(0.0, 0.5, shape.queries)))
        .astype(np.int64),
    })


def write_sample(spark: SparkSession, *, run_path: str, qrels_path: str,
                 answers_path: str | None = None, queries_path: str | None = None,
                 interactions_path: str | None = None,
                 shape: SampleShape = SampleShape()) -> tuple[int, int, int]:
    """Generate the sample and write it as Delta tables (replacing what was there): the
    qrels table holds the reference version ``v1`` and the noisier ``llm`` (:func:`noisy_qrels`);
    the answers only with ``answers_path``, the queries (:func:`generate_queries`) only with
    ``queries_path``, the interactions log
    (:func:`releval.job.sample_clicks.generate_interactions`) only with ``interactions_path``.

    Returns:
        (run rows, qrels rows of both versions, answers rows) written.
    """
    run, qrels = generate(shape)
    both = pd.concat([qrels, noisy_qrels(qrels, shape)], ignore_index=True)
    frames = [(run, run_path, ("system", "date")), (both, qrels_path, ("qrels_version",))]
    answers = generate_answers(run, qrels, shape) if answers_path else None
    if answers_path:
        frames.append((answers, answers_path, ("system", "date")))
    if queries_path:
        frames.append((generate_queries(shape), queries_path, ()))
    if interactions_path:
        log = generate_interactions(run, qrels, generate_queries(shape), seed=shape.seed + 4)
        frames.append((log, interactions_path, ("date",)))
    for frame, path, parts in frames:
        # through Arrow: the rows go to the JVM as they are, with no Python task
        df: DataFrame = spark.createDataFrame(pa.Table.from_pandas(frame, preserve_index=False))
        (df.write.format("delta").mode("overwrite").option("overwriteSchema", "true")
         .partitionBy(*parts).save(absolute(path)))
    return len(run), len(both), len(answers) if answers is not None else 0
