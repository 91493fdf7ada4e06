"""One benchmark runner per peer; the harness starts each in its own process.

    python -m bench.runners NAME --data bench/data/quick --result out.json [--work DIR]

Every runner writes a JSON result: ``phases`` (seconds per phase, measured in
the process), ``startup_s`` (SparkSession start, Spark runners only), ``work_s``
(the time after start-up: reading, computing, writing), ``means`` (the mean over
queries of P@10, R@100, nDCG@10, AP, RR, where the tool computes them) and
``notes``. Wall time and peak memory are measured from outside by the harness.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

#: The five measures every peer is compared on (releval's names).
MEASURES = ("P@10", "R@100", "nDCG@10", "AP", "RR")
#: What releval computes in the end-to-end run.
RELEVAL_MEASURES = (
    "P@5", "P@10", "P@20", "P@100", "R@5", "R@10", "R@20", "R@100",
    "nDCG@5", "nDCG@10", "nDCG@20", "nDCG@100", "AP", "AP@100", "RR", "Hit@10",
)
#: Phases that are not counted in ``work_s`` (the "after start-up" time): start-up,
#: stopping, and releval's read-back of its aggregate table for the agreement check.
NOT_WORK = frozenset({"import", "startup", "stop", "verify: read aggregate"})
SPARK_MASTER = "local[2]"
#: Default driver heap (``spark.driver.memory``); the harness passes one per size
#: (``bench.harness.SIZE_SETTINGS``: 4g at 30m and 100m).
SPARK_DRIVER_MEMORY = "8g"


class Result:
    """Collects a runner's phases, means and notes."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.phases: dict[str, float] = {}
        self.means: dict[str, float] = {}
        self.notes: list[str] = []
        self.extra: dict[str, Any] = {}
        self.startup_s: float | None = None
        self.driver_memory = SPARK_DRIVER_MEMORY

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time the enclosed block as phase ``name``."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.phases[name] = round(time.perf_counter() - start, 3)

    def to_json(self, ok: bool, error: str | None) -> dict[str, Any]:
        work = sum(v for k, v in self.phases.items() if k not in NOT_WORK)
        return {
            "runner": self.name,
            "ok": ok,
            "error": error,
            "phases": self.phases,
            "startup_s": self.startup_s,
            "work_s": round(work, 3),
            "means": self.means,
            "notes": self.notes,
            **self.extra,
        }


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


# --- pyarrow: the I/O floor ---------------------------------------------------------


def run_pyarrow_read(data: Path, res: Result, work: Path) -> None:
    """Read both Parquet files into memory (and touch every column)."""
    import pyarrow.parquet as pq

    with res.phase("read"):
        run = pq.read_table(data / "run.parquet")
        qrels = pq.read_table(data / "qrels.parquet")
    res.extra["rows"] = {"run": run.num_rows, "qrels": qrels.num_rows}
    res.extra["versions"] = {"pyarrow": _version("pyarrow")}


# --- NumPy: the single-process floor --------------------------------------------------


def numpy_measures(run: Any, qrels: Any) -> dict[str, Any]:
    """The five measures per query with NumPy, from Arrow tables; trec_eval semantics.

    Queries are those of the qrels with at least one relevant document (label >= 1);
    a run order is score descending. Ties are broken by doc code, not by trec_eval's
    doc id descending (the benchmark data has no ties).

    Returns:
        ``{measure: per-query numpy array}`` over the evaluated queries.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    # Shared dictionaries for query and doc ids, so both tables use the same codes.
    def codes(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray, int]:
        both = pa.chunked_array(a.chunks + b.chunks).combine_chunks()
        enc = pc.dictionary_encode(both)
        idx = enc.indices.to_numpy()
        return idx[: len(a)], idx[len(a):], len(enc.dictionary)

    rq, qq, nq = codes(run["query_id"], qrels["query_id"])
    rd, qd, nd = codes(run["doc_id"], qrels["doc_id"])
    score = run["score"].to_numpy()
    label = qrels["relevance"].to_numpy().astype(np.int64)

    # Label of each run row: look up (query, doc) keys in the sorted qrels keys.
    qkey = qq.astype(np.int64) * nd + qd
    korder = np.argsort(qkey, kind="stable")
    qkey_sorted, label_sorted = qkey[korder], label[korder]
    rkey = rq.astype(np.int64) * nd + rd
    at = np.searchsorted(qkey_sorted, rkey)
    at_c = np.minimum(at, len(qkey_sorted) - 1)
    hit = qkey_sorted[at_c] == rkey
    rel_label = np.where(hit, label_sorted[at_c], 0)

    # Rank within each query: sort by query, then score descending.
    order = np.lexsort((-score, rq))
    q_s = rq[order]
    lab_s = rel_label[order]
    starts = np.flatnonzero(np.r_[True, q_s[1:] != q_s[:-1]])
    group_start = np.repeat(starts, np.diff(np.r_[starts, len(q_s)]))
    pos = np.arange(len(q_s)) - group_start  # 0-based
    rel = lab_s >= 1

    num_rel = np.bincount(qq, weights=(label >= 1), minlength=nq)
    p10 = np.bincount(q_s, weights=rel & (pos < 10), minlength=nq) / 10.0
    r100_num = np.bincount(q_s, weights=rel & (pos < 100), minlength=nq)
    # nDCG@10 with trec_eval's linear gain and log2(rank + 1) discount.
    disc = 1.0 / np.log2(pos + 2.0)
    dcg = np.bincount(q_s, weights=np.where(pos < 10, lab_s * disc, 0.0), minlength=nq)
    iorder = np.lexsort((-label, qq))
    iq, il = qq[iorder], label[iorder]
    istarts = np.flatnonzero(np.r_[True, iq[1:] != iq[:-1]])
    ipos = np.arange(len(iq)) - np.repeat(istarts, np.diff(np.r_[istarts, len(iq)]))
    idcg = np.bincount(iq, weights=np.where(ipos < 10, il / np.log2(ipos + 2.0), 0.0), minlength=nq)
    # AP: precision at each relevant position, summed, over num_rel.
    cum = np.cumsum(rel)
    cum_in_query = cum - (cum[group_start] - rel[group_start])
    ap_num = np.bincount(q_s, weights=np.where(rel, cum_in_query / (pos + 1.0), 0.0), minlength=nq)
    # RR: the first relevant position of each query.
    rr = np.zeros(nq)
    rel_q, first = np.unique(q_s[rel], return_index=True)
    rr[rel_q] = 1.0 / (pos[rel][first] + 1.0)

    judged = num_rel > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        return {
            "P@10": p10[judged],
            "R@100": (r100_num / num_rel)[judged],
            "nDCG@10": np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1), 0.0)[judged],
            "AP": (ap_num / num_rel)[judged],
            "RR": rr[judged],
        }


def run_numpy(data: Path, res: Result, work: Path) -> None:
    """Read Parquet with pyarrow, compute the five measures with NumPy."""
    import pyarrow.parquet as pq

    with res.phase("read"):
        run = pq.read_table(data / "run.parquet")
        qrels = pq.read_table(data / "qrels.parquet")
    with res.phase("compute"):
        per_query = numpy_measures(run, qrels)
    res.means = {m: float(v.mean()) for m, v in per_query.items()}
    res.extra["versions"] = {"numpy": _version("numpy"), "pyarrow": _version("pyarrow")}


# --- pytrec_eval, ir_measures, ranx ---------------------------------------------------


PYTREC_NAMES = {"P_10": "P@10", "recall_100": "R@100", "ndcg_cut_10": "nDCG@10",
                "map": "AP", "recip_rank": "RR"}


def run_pytrec_eval(data: Path, res: Result, work: Path) -> None:
    """pytrec_eval as its README shows it: parse the TREC files, evaluate, average."""
    with res.phase("import"):
        import pytrec_eval

    with res.phase("read"):
        with open(data / "qrels.trec") as f:
            qrel = pytrec_eval.parse_qrel(f)
        with open(data / "run.trec") as f:
            run = pytrec_eval.parse_run(f)
    with res.phase("compute"):
        evaluator = pytrec_eval.RelevanceEvaluator(
            qrel, {"P.10", "recall.100", "ndcg_cut.10", "map", "recip_rank"}
        )
        per_query = evaluator.evaluate(run)
        n = len(per_query)
        sums = dict.fromkeys(PYTREC_NAMES, 0.0)
        for values in per_query.values():
            for name in PYTREC_NAMES:
                sums[name] += values[name]
    res.means = {PYTREC_NAMES[k]: v / n for k, v in sums.items()}
    res.extra["versions"] = {
        "pytrec_eval": _version("pytrec_eval") or _version("pytrec_eval-terrier"),
        "distribution": "pytrec_eval" if _version("pytrec_eval") else "pytrec_eval-terrier",
    }


def run_ir_measures(data: Path, res: Result, work: Path) -> None:
    """ir_measures.calc_aggregate on pandas frames read from Parquet."""
    with res.phase("import"):
        import ir_measures
        import pandas as pd
        from ir_measures import AP, RR, P, R, nDCG

    with res.phase("read"):
        run = pd.read_parquet(data / "run.parquet", columns=["query_id", "doc_id", "score"])
        qrels = pd.read_parquet(data / "qrels.parquet")
    measures = {P @ 10: "P@10", R @ 100: "R@100", nDCG @ 10: "nDCG@10", AP: "AP", RR: "RR"}
    with res.phase("compute"):
        agg = ir_measures.calc_aggregate(list(measures), qrels, run)
    res.means = {measures[m]: float(v) for m, v in agg.items()}
    res.notes.append("ir_measures picks the first installed provider per measure (pytrec_eval here)")
    res.extra["versions"] = {"ir_measures": _version("ir_measures")}


def run_ranx(data: Path, res: Result, work: Path) -> None:
    """ranx.evaluate on Qrels/Run built from the Parquet frames (numba JIT in 'compute')."""
    with res.phase("import"):
        import pandas as pd
        from ranx import Qrels, Run, evaluate

    with res.phase("read"):
        run_df = pd.read_parquet(data / "run.parquet", columns=["query_id", "doc_id", "score"])
        qrels_df = pd.read_parquet(data / "qrels.parquet")
    with res.phase("convert"):
        for df in (run_df, qrels_df):  # ranx asserts object dtype for the ids
            df["query_id"] = df["query_id"].astype(object)
            df["doc_id"] = df["doc_id"].astype(object)
        qrels_df["relevance"] = qrels_df["relevance"].astype("int64")  # and int64 labels
        qrels = Qrels.from_df(qrels_df, q_id_col="query_id", doc_id_col="doc_id", score_col="relevance")
        run = Run.from_df(run_df, q_id_col="query_id", doc_id_col="doc_id", score_col="score")
    names = {"precision@10": "P@10", "recall@100": "R@100", "ndcg@10": "nDCG@10",
             "map": "AP", "mrr": "RR"}
    with res.phase("compute"):
        scores = evaluate(qrels, run, list(names), make_comparable=True)
    res.means = {names[k]: float(v) for k, v in scores.items()}
    res.notes.append(
        "ranx's 'ndcg' is trec_eval's linear-gain nDCG; numba's JIT is cached on disk, "
        "so the first run on a machine is slower than the one reported when it was warm"
    )
    res.extra["versions"] = {"ranx": _version("ranx"), "numba": _version("numba")}


# --- Spark: RankingEvaluator, plain Spark SQL, releval ----------------------------------


def _spark(res: Result, shuffle_partitions: int) -> Any:
    """releval's SparkSession (Delta configured), timed as the 'startup' phase.

    The driver heap is ``res.driver_memory`` (``--driver-memory``).
    """
    from releval.config import SparkSettings
    from releval.runtime.session import build_session

    with res.phase("startup"):
        spark = build_session(
            SparkSettings(
                master=SPARK_MASTER,
                app_name=f"bench-{res.name}",
                shuffle_partitions=shuffle_partitions,
                conf={"spark.driver.memory": res.driver_memory, "spark.ui.enabled": "false"},
            )
        )
    res.startup_s = res.phases["startup"]
    res.extra["versions"] = {"pyspark": _version("pyspark"), "delta-spark": _version("delta-spark")}
    res.extra["spark"] = {"master": SPARK_MASTER, "shuffle_partitions": shuffle_partitions,
                          "driver_memory": res.driver_memory}
    return spark


def ranking_arrays(run: Any, qrels: Any) -> Any:
    """RankingEvaluator's input: per query, the run's doc numbers in score order
    (``prediction``) and the relevant ones, label >= 1 (``label``); queries in both only.

    Doc ids are ``D<number>``; the evaluator takes numeric arrays, so the number is cast to
    a double.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    def doc_num(c: str) -> Any:
        return F.substring(F.col(c), 2, 20).cast("double")

    w = Window.partitionBy("query_id").orderBy(F.col("score").desc())
    predicted = (
        run.withColumn("_pos", F.row_number().over(w))
        .groupBy("query_id")
        .agg(F.sort_array(F.collect_list(F.struct("_pos", doc_num("doc_id").alias("d")))).alias("s"))
        .select("query_id", F.col("s.d").alias("prediction"))
    )
    labels = (
        qrels.where(F.col("relevance") >= 1)
        .groupBy("query_id")
        .agg(F.collect_list(doc_num("doc_id")).alias("label"))
    )
    return predicted.join(labels, "query_id")


#: RankingEvaluator's metrics, by releval's name: (metricName, k). k is ignored by
#: meanAveragePrecision, which ranks the whole prediction array (trec_eval's AP).
RANKING_EVALUATOR_METRICS = {
    "P@10": ("precisionAtK", 10), "R@100": ("recallAtK", 100),
    "nDCG@10": ("ndcgAtK", 10), "AP": ("meanAveragePrecision", 10),
}


def ranking_evaluator_means(table: Any, names: Sequence[str]) -> dict[str, float]:
    """RankingEvaluator's value of each metric ``names`` (keys of RANKING_EVALUATOR_METRICS)."""
    from pyspark.ml.evaluation import RankingEvaluator

    means = {}
    for name in names:
        metric, k = RANKING_EVALUATOR_METRICS[name]
        ev = RankingEvaluator(predictionCol="prediction", labelCol="label", metricName=metric, k=k)
        means[name] = float(ev.evaluate(table))
    return means


def run_spark_ranking_evaluator(data: Path, res: Result, work: Path, partitions: int) -> None:
    """pyspark.ml.evaluation.RankingEvaluator: four aggregate metrics, binary relevance."""
    spark = _spark(res, partitions)
    with res.phase("compute"):
        run = spark.read.parquet(str(data / "run.parquet"))
        qrels = spark.read.parquet(str(data / "qrels.parquet"))
        table = ranking_arrays(run, qrels).cache()
        table.count()
        res.means = ranking_evaluator_means(table, list(RANKING_EVALUATOR_METRICS))
    with res.phase("stop"):
        spark.stop()
    res.notes.append("no reciprocal rank in RankingEvaluator; nDCG is binary (no graded labels)")


# --- one warm session, as a notebook: releval.evaluate against RankingEvaluator --------

#: Timed runs of each side in the notebook runner, after one untimed warm-up of each.
NOTEBOOK_REPEATS = 3
#: What RankingEvaluator computes in the notebook runner (releval computes RELEVAL_MEASURES).
NOTEBOOK_METRICS = ("nDCG@10", "AP")
#: |releval - RankingEvaluator| below which a mean of the notebook runner agrees.
NOTEBOOK_TOLERANCE = 1e-9


def _count_batches(batches: Iterator[Any]) -> Iterator[Any]:
    import pyarrow as pa

    yield pa.RecordBatch.from_pydict({"rows": [sum(b.num_rows for b in batches)]})


def engine_floor(run: Any, qrels: Any) -> int:
    """The cheapest plan that moves releval's engine input: run and qrels rows with the
    five columns the engine sends to Python (query id, doc id, the score or label as
    ``_order``, ``_is_run``, ``_reason``), hash-partitioned by query id as the engine lays
    them out (adaptive execution merging small partitions), through a Python function that
    only counts them. Returns the rows counted (run + qrels).
    """
    from pyspark.sql import functions as F

    rows = run.select(
        "query_id", "doc_id", F.col("score").cast("double").alias("_order"),
        F.lit(True).alias("_is_run"), F.lit(None).cast("string").alias("_reason"),
    )
    judgments = qrels.select(
        "query_id", "doc_id", F.col("relevance").cast("double").alias("_order"),
        F.lit(False).alias("_is_run"), F.lit(None).cast("string").alias("_reason"),
    )
    both = rows.unionByName(judgments).repartition("query_id")
    counted = both.mapInArrow(_count_batches, "rows long").agg(F.sum("rows")).first()
    return int(counted[0] or 0)


def notebook_session(spark: Any, data: Path, res: Result, repeats: int = NOTEBOOK_REPEATS) -> None:
    """releval.evaluate and RankingEvaluator alternated in one warm session, on the same
    cached DataFrames; records each side's timings, their medians and their means.

    Untimed: reading both Parquet files, ``cache()`` + ``count()``, one warm-up of each.
    Timed, ``repeats`` times each, alternated (releval, RankingEvaluator, releval, ...):
    ``releval.evaluate(run, qrels, measures=RELEVAL_MEASURES).aggregate.collect()``, and
    RankingEvaluator's arrays built (:func:`ranking_arrays`, cached and counted as the
    ``spark-RankingEvaluator`` runner does) then nDCG@10 and MAP evaluated; between them
    :func:`engine_floor`, the shuffle to Python and back that releval's engine cannot do
    without. What each side cached is unpersisted after its clock stops, so the next run
    computes its own.

    The cached inputs are unpersisted at the end; the session is left running.
    """
    from statistics import median

    from pyspark.sql import functions as F

    import releval

    sc = spark.sparkContext
    started = itertools.count()
    seconds: dict[str, float] = {}  # of each side's last run
    jobs: dict[str, int] = {}

    @contextmanager
    def clock(side: str) -> Iterator[None]:
        # the block's Spark jobs form a job group of their own, counted by the status tracker
        group = f"bench-notebook-{side}-{next(started)}"
        sc.setJobGroup(group, f"bench notebook {side}")
        start = time.perf_counter()
        try:
            yield
        finally:
            seconds[side] = time.perf_counter() - start
            jobs[side] = len(sc.statusTracker().getJobIdsForGroup(group))
            sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
            sc.setLocalProperty("spark.job.description", None)  # type: ignore[arg-type]

    def run_releval() -> tuple[float, dict[str, float]]:
        with clock("releval"):
            result = releval.evaluate(run, qrels, measures=list(RELEVAL_MEASURES))
            rows = result.aggregate.collect()
        # what it persisted goes, so the next run computes it again (an identical plan
        # would otherwise be read from Spark's cache)
        result.unpersist(blocking=True)
        means = {r["measure_key"]: float(r["value"]) for r in rows if r["averaging"] == "macro"}
        return seconds["releval"], means

    def run_floor() -> tuple[float, int]:
        with clock("floor"):
            counted = engine_floor(run, qrels)
        return seconds["floor"], counted

    def run_ranking_evaluator() -> tuple[float, dict[str, float]]:
        with clock("RankingEvaluator"):
            table = ranking_arrays(run, qrels).cache()
            table.count()
            means = ranking_evaluator_means(table, NOTEBOOK_METRICS)
        table.unpersist(blocking=True)
        return seconds["RankingEvaluator"], means

    with res.phase("read and cache inputs"):
        run = spark.read.parquet(str(data / "run.parquet")).cache()
        qrels = spark.read.parquet(str(data / "qrels.parquet")).cache()
        rows = {"run": run.count(), "qrels": qrels.count()}
        top_label = qrels.agg(F.max("relevance")).first()[0]
    try:
        with res.phase("warm-up: releval"):
            warm_releval, releval_means = run_releval()
        with res.phase("warm-up: floor"):
            warm_floor, floor_rows = run_floor()
        with res.phase("warm-up: RankingEvaluator"):
            warm_re, re_means = run_ranking_evaluator()
        times: dict[str, list[float]] = {"releval": [], "floor": [], "RankingEvaluator": []}
        drift = 0.0  # the largest change of a mean from the warm-up's, over the timed runs
        load = [os.getloadavg()[0]]  # the machine's other work, beside this one's 2 cores
        with res.phase(f"timed: {repeats} x (releval, floor, RankingEvaluator)"):
            for _ in range(repeats):
                took, means = run_releval()
                times["releval"].append(round(took, 3))
                drift = max([drift, *(abs(means[m] - releval_means[m]) for m in RELEVAL_MEASURES)])
                took, _ = run_floor()
                times["floor"].append(round(took, 3))
                took, means = run_ranking_evaluator()
                times["RankingEvaluator"].append(round(took, 3))
                drift = max([drift, *(abs(means[m] - re_means[m]) for m in NOTEBOOK_METRICS)])
        load.append(os.getloadavg()[0])
    finally:
        run.unpersist()
        qrels.unpersist()
    medians = {side: round(median(t), 3) for side, t in times.items()}
    binary = top_label is not None and top_label <= 1
    agreement = {}
    for m in NOTEBOOK_METRICS:
        diff = releval_means[m] - re_means[m]
        # RankingEvaluator's nDCG has binary gain: it is releval's linear-gain nDCG only
        # when every label is 0 or 1
        comparable = m != "nDCG@10" or binary
        status = ("ok" if abs(diff) <= NOTEBOOK_TOLERANCE else "MISMATCH") if comparable else (
            "differs by definition (binary gain; the labels are graded)")
        agreement[m] = {"releval": releval_means[m], "RankingEvaluator": re_means[m],
                        "diff": diff, "status": status}
    res.means = {m: releval_means[m] for m in RELEVAL_MEASURES}  # all 16 of releval.evaluate
    res.extra["notebook"] = {
        "repeats": repeats,
        "rows": rows,
        "binary_labels": binary,
        "warm_up_s": {"releval": round(warm_releval, 3), "floor": round(warm_floor, 3),
                      "RankingEvaluator": round(warm_re, 3)},
        "floor_rows": floor_rows,
        "times_s": times,
        "median_s": medians,
        "spark_jobs": jobs,  # of the last timed run of each
        "ratio": round(medians["releval"] / medians["RankingEvaluator"], 2)
        if medians["RankingEvaluator"] > 0 else None,
        "floor_ratio": round(medians["floor"] / medians["RankingEvaluator"], 2)
        if medians["RankingEvaluator"] > 0 else None,
        "largest_change_between_runs": drift,
        "load_average_1min": {"before": round(load[0], 2), "after": round(load[1], 2)},
        "agreement": agreement,
    }
    res.notes.append(
        f"one session, inputs cached before the clock; releval.evaluate(16 measures)"
        f".aggregate.collect(), the engine's floor and RankingEvaluator (arrays built, cached, "
        f"nDCG@10 + MAP) alternated {repeats} times each after a warm-up of each; after "
        f"start-up = all of it"
    )


def run_notebook(data: Path, res: Result, work: Path, partitions: int) -> None:
    """releval.evaluate against RankingEvaluator in one warm session (:func:`notebook_session`)."""
    spark = _spark(res, partitions)
    notebook_session(spark, data, res)
    with res.phase("stop"):
        spark.stop()


SQL_JOB = """
WITH ranked AS (
  SELECT r.query_id, r.doc_id, COALESCE(q.relevance, 0) AS rel,
         ROW_NUMBER() OVER (PARTITION BY r.query_id ORDER BY r.score DESC, r.doc_id DESC) AS pos
  FROM run r LEFT JOIN qrels q ON r.query_id = q.query_id AND r.doc_id = q.doc_id
),
marked AS (
  SELECT *, SUM(CASE WHEN rel >= 1 THEN 1 ELSE 0 END)
              OVER (PARTITION BY query_id ORDER BY pos ROWS UNBOUNDED PRECEDING) AS rel_so_far
  FROM ranked
),
per_run AS (
  SELECT query_id,
         SUM(CASE WHEN rel >= 1 AND pos <= 10 THEN 1 ELSE 0 END) / 10.0 AS p10,
         SUM(CASE WHEN rel >= 1 AND pos <= 100 THEN 1 ELSE 0 END) AS rel_ret100,
         SUM(CASE WHEN pos <= 10 THEN rel / LOG2(pos + 1) ELSE 0 END) AS dcg10,
         SUM(CASE WHEN rel >= 1 THEN rel_so_far / pos ELSE 0 END) AS ap_sum,
         MIN(CASE WHEN rel >= 1 THEN pos END) AS first_rel
  FROM marked GROUP BY query_id
),
ideal AS (
  SELECT query_id, relevance,
         ROW_NUMBER() OVER (PARTITION BY query_id ORDER BY relevance DESC) AS ipos
  FROM qrels
),
per_qrels AS (
  SELECT query_id,
         SUM(CASE WHEN relevance >= 1 THEN 1 ELSE 0 END) AS num_rel,
         SUM(CASE WHEN ipos <= 10 THEN relevance / LOG2(ipos + 1) ELSE 0 END) AS idcg10
  FROM ideal GROUP BY query_id
)
SELECT AVG(COALESCE(p10, 0)) AS `P@10`,
       AVG(COALESCE(rel_ret100, 0) / num_rel) AS `R@100`,
       AVG(CASE WHEN idcg10 > 0 THEN COALESCE(dcg10, 0) / idcg10 ELSE 0 END) AS `nDCG@10`,
       AVG(COALESCE(ap_sum, 0) / num_rel) AS AP,
       AVG(COALESCE(1.0 / first_rel, 0)) AS RR
FROM per_qrels LEFT JOIN per_run USING (query_id)
WHERE num_rel > 0
"""


def run_spark_sql(data: Path, res: Result, work: Path, partitions: int) -> None:
    """A straightforward Spark SQL job: join, row_number, groupBy; means collected."""
    spark = _spark(res, partitions)
    with res.phase("compute"):
        spark.read.parquet(str(data / "run.parquet")).createOrReplaceTempView("run")
        spark.read.parquet(str(data / "qrels.parquet")).createOrReplaceTempView("qrels")
        row = spark.sql(SQL_JOB).collect()[0]
        res.means = {m: float(row[m]) for m in MEASURES}
    with res.phase("stop"):
        spark.stop()


#: The cutoffs of releval's 16 measures (RELEVAL_MEASURES).
_CUTOFFS = (5, 10, 20, 100)


def _tables_sql() -> str:
    """The hand-written floor of releval's work: per-query rows of RELEVAL_MEASURES, by the
    same plan as SQL_JOB (left join, ROW_NUMBER, running sum, GROUP BY), one row per judged
    query with a relevant document."""
    ks = _CUTOFFS
    per_run = ",\n".join(
        [f"    SUM(CASE WHEN rel >= 1 AND pos <= {k} THEN 1 ELSE 0 END) AS rel_ret{k}" for k in ks]
        + [f"    SUM(CASE WHEN pos <= {k} THEN rel / LOG2(pos + 1) ELSE 0 END) AS dcg{k}" for k in ks]
        + ["    SUM(CASE WHEN rel >= 1 THEN rel_so_far / pos ELSE 0 END) AS ap_sum",
           "    SUM(CASE WHEN rel >= 1 AND pos <= 100 THEN rel_so_far / pos ELSE 0 END) AS ap100_sum",
           "    MIN(CASE WHEN rel >= 1 THEN pos END) AS first_rel"]
    )
    per_qrels = ",\n".join(
        ["    SUM(CASE WHEN relevance >= 1 THEN 1 ELSE 0 END) AS num_rel"]
        + [f"    SUM(CASE WHEN ipos <= {k} THEN relevance / LOG2(ipos + 1) ELSE 0 END) AS idcg{k}"
           for k in ks]
    )
    select = ",\n".join(
        [f"  CAST(COALESCE(rel_ret{k}, 0) AS DOUBLE) / {k} AS `P@{k}`" for k in ks]
        + [f"  CAST(COALESCE(rel_ret{k}, 0) AS DOUBLE) / num_rel AS `R@{k}`" for k in ks]
        + [f"  CASE WHEN idcg{k} > 0 THEN COALESCE(dcg{k}, 0) / idcg{k} ELSE 0D END AS `nDCG@{k}`"
           for k in ks]
        + ["  COALESCE(ap_sum, 0) / num_rel AS AP",
           "  COALESCE(ap100_sum, 0) / num_rel AS `AP@100`",
           "  COALESCE(1D / first_rel, 0D) AS RR",
           "  CASE WHEN first_rel <= 10 THEN 1D ELSE 0D END AS `Hit@10`"]
    )
    # SQL_JOB's own ranking, running sum and ideal ranking, word for word
    ranked_and_marked = SQL_JOB[: SQL_JOB.index("per_run AS (")]
    ideal = SQL_JOB[SQL_JOB.index("ideal AS ("): SQL_JOB.index("per_qrels AS (")]
    return f"""{ranked_and_marked}per_run AS (
  SELECT query_id,
{per_run}
  FROM marked GROUP BY query_id
),
{ideal}per_qrels AS (
  SELECT query_id,
{per_qrels}
  FROM ideal GROUP BY query_id
)
SELECT query_id,
{select}
FROM per_qrels LEFT JOIN per_run USING (query_id)
WHERE num_rel > 0
"""


TABLES_SQL = _tables_sql()


def run_spark_sql_tables(data: Path, res: Result, work: Path, partitions: int) -> None:
    """The floor of releval's work, written by hand: releval's 16 measures per query in
    Spark SQL (``TABLES_SQL``), the per-query rows persisted and written long to a Delta
    table, their means written to a second one. No input checks, no accounting."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    spark = _spark(res, partitions)
    out = work / "spark-sql-tables-out"
    shutil.rmtree(out, ignore_errors=True)
    pairs = ", ".join(f"'{m}', `{m}`" for m in RELEVAL_MEASURES)
    with res.phase("compute"):
        spark.read.parquet(str(data / "run.parquet")).createOrReplaceTempView("run")
        spark.read.parquet(str(data / "qrels.parquet")).createOrReplaceTempView("qrels")
        wide = spark.sql(TABLES_SQL).persist(StorageLevel.MEMORY_AND_DISK)
        (
            wide.selectExpr("query_id", f"stack({len(RELEVAL_MEASURES)}, {pairs}) AS (measure_key, value)")
            .coalesce(spark.sparkContext.defaultParallelism)
            .write.format("delta").mode("overwrite").save(str(out / "per_query"))
        )
        row = wide.agg(*[F.avg(F.col(f"`{m}`")).alias(m) for m in RELEVAL_MEASURES]).collect()[0]
        means = {m: float(row[m]) for m in RELEVAL_MEASURES}
        (
            spark.createDataFrame(list(means.items()), "measure_key STRING, value DOUBLE")
            .write.format("delta").mode("overwrite").save(str(out / "aggregate"))
        )
        wide.unpersist()
    res.means = means  # all 16: the agreement checks each against releval's
    res.notes.append(
        "spark-sql-tables: after start-up = the query, the per-query rows written long to a "
        "Delta table (2 files) and the means to a second one"
    )
    with res.phase("stop"):
        spark.stop()


def run_releval(
    data: Path, res: Result, work: Path, partitions: int, measures: Sequence[str] = RELEVAL_MEASURES,
) -> None:
    """releval end to end: ``pipeline.run`` on the Parquet inputs, both Delta tables written."""
    from pyspark.sql import functions as F

    from releval.config import (
        Config,
        EvaluationSettings,
        OutputSettings,
        QrelsSource,
        RunSource,
        SparkSettings,
    )
    from releval.job import pipeline

    spark = _spark(res, partitions)
    out = work / "releval-out"
    shutil.rmtree(out, ignore_errors=True)
    config = Config(
        run=RunSource(path=str(data / "run.parquet"), format="parquet", rank_by="score"),
        qrels=QrelsSource(path=str(data / "qrels.parquet"), format="parquet"),
        evaluation=EvaluationSettings(
            measures=tuple(measures), missing_queries="zero"
        ),
        output=OutputSettings(
            per_query_path=str(out / "per_query"), aggregate_path=str(out / "aggregate")
        ),
        spark=SparkSettings(master=SPARK_MASTER, shuffle_partitions=partitions),
    )
    with res.phase("pipeline.run"):
        summary = pipeline.run(spark, config)
    with res.phase("verify: read aggregate"):
        rows = (
            pipeline.read_aggregate(spark, config)
            .where(F.col("averaging") == "macro")
            .select("measure_key", "value")
            .collect()
        )
    values = {r["measure_key"]: float(r["value"]) for r in rows}
    # every measure's macro value: the five compared with all peers, the rest with the
    # peers that compute them too (spark-sql-tables)
    res.means = {m: values[m] for m in measures if m in values}
    res.notes.append(
        "after start-up = pipeline.run (read, compute, both Delta tables written); reading the "
        "aggregate table back for the agreement check is not counted"
    )
    res.extra["measures"] = list(measures)
    res.extra["summary"] = {
        "run_rows": summary.run_rows, "qrels_rows": summary.qrels_rows,
        "queries_scored": summary.queries_scored, "per_query_rows": summary.per_query_rows,
        "aggregate_rows": summary.aggregate_rows,
    }
    with res.phase("stop"):
        spark.stop()


_PROFILE_TOTAL = re.compile(r"^\s*total\s+([0-9.]+) s\s+(\d+) jobs", re.MULTILINE)


def run_releval_cli(data: Path, res: Result, work: Path, fmt: str) -> None:
    """``releval evaluate`` with its defaults, as a user runs it: one command, JVM start
    included, on the TREC text files or their Parquet copies (``--format parquet``).

    The whole command is timed (``work_s`` is its wall time); its ``--profile`` line gives
    the Spark jobs it ran. The command's defaults are measured (its own shuffle
    partitions and driver heap), not the bench's settings.
    """
    out = work / f"releval-cli-{fmt}"
    shutil.rmtree(out, ignore_errors=True)
    suffix = "trec" if fmt == "trec" else "parquet"
    releval = Path(sys.executable).with_name("releval")
    command = [
        str(releval), "evaluate", "--run", str(data / f"run.{suffix}"),
        "--qrels", str(data / f"qrels.{suffix}"), "--format", fmt, "--output", str(out),
        "--profile",
    ]
    with res.phase("releval evaluate"):
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"releval evaluate exited {done.returncode}: {done.stderr[-2000:]}")
    total = _PROFILE_TOTAL.search(done.stdout)
    res.extra["spark_jobs"] = int(total.group(2)) if total else None
    res.extra["command"] = " ".join(command)
    res.notes.append(
        "after start-up = the whole `releval evaluate` command (JVM start, read, checks, "
        "evaluation, both Delta tables, summary); Spark jobs from its --profile"
    )
    shutil.rmtree(out, ignore_errors=True)


RUNNERS: dict[str, Callable[..., None]] = {
    "pyarrow-read": run_pyarrow_read,
    "numpy": run_numpy,
    "pytrec_eval": run_pytrec_eval,
    "ir_measures": run_ir_measures,
    "ranx": run_ranx,
    "spark-RankingEvaluator": run_spark_ranking_evaluator,
    "spark-sql": run_spark_sql,
    "spark-sql-tables": run_spark_sql_tables,
    "releval": run_releval,
    "releval-5": lambda d, r, w, p: run_releval(d, r, w, p, MEASURES),
    "releval-cli-trec": lambda d, r, w: run_releval_cli(d, r, w, "trec"),
    "releval-cli-parquet": lambda d, r, w: run_releval_cli(d, r, w, "parquet"),
    "notebook": run_notebook,
}
SPARK_RUNNERS = {
    "spark-RankingEvaluator", "spark-sql", "spark-sql-tables", "releval", "releval-5", "notebook",
}
#: Runners timed as a whole command, JVM start included (their work_s is their wall time).
COMMAND_RUNNERS = {"releval-cli-trec", "releval-cli-parquet"}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run one benchmark runner.")
    parser.add_argument("runner", choices=sorted(RUNNERS))
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--result", type=Path, required=True)
    parser.add_argument("--work", type=Path, help="scratch folder (default: a temp folder)")
    parser.add_argument("--shuffle-partitions", type=int, default=8)
    parser.add_argument("--driver-memory", default=SPARK_DRIVER_MEMORY,
                        help=f"spark.driver.memory of the Spark runners (default {SPARK_DRIVER_MEMORY})")
    args = parser.parse_args(argv)
    res = Result(args.runner)
    res.driver_memory = args.driver_memory
    work = args.work or Path(tempfile.mkdtemp(prefix="releval-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    ok, error = True, None
    try:
        fn = RUNNERS[args.runner]
        if args.runner in SPARK_RUNNERS:
            fn(args.data.resolve(), res, work.resolve(), args.shuffle_partitions)
        else:
            fn(args.data.resolve(), res, work.resolve())
    except Exception as exc:  # recorded in the result, not raised: the bench goes on
        ok, error = False, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        traceback.print_exc()
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    args.result.write_text(json.dumps(res.to_json(ok, error), indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
