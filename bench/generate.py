"""Synthetic run + qrels for the benchmark: vectorized, seeded, reproducible.

Each query has ``CANDIDATES`` candidate documents; ``JUDGED`` of them are judged
with graded labels 0-3, and the ``DOCS_PER_QUERY`` best-scored candidates are the
run. The candidates left out of the run keep their judgments, so recall is
below 1. Scores are strictly decreasing within a query (no ties), so every tool
agrees on the order whatever its tie-break rule (trec_eval: doc id descending).

Outputs, in one folder:

* ``run.parquet`` (query_id, doc_id, score, rank) and ``qrels.parquet``
  (query_id, doc_id, relevance);
* ``run.trec`` (``qid Q0 docno rank score tag``) and ``qrels.trec``
  (``qid 0 docno rel``) for trec_eval / pytrec_eval.

    python -m bench.generate --size quick --out bench/data/quick
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

DOCS_PER_QUERY = 100
CANDIDATES = 120
JUDGED = 20
LABEL_PROBS = (0.45, 0.30, 0.15, 0.10)  # labels 0, 1, 2, 3
SEED = 20261130
RUN_TAG = "bench"

#: Named sizes: number of queries (rows = queries x 100).
SIZES: dict[str, int] = {
    "tiny": 1_000,
    "quick": 10_000,
    "full": 100_000,
    "300k": 300_000,
    "1m": 1_000_000,
}


@dataclass(frozen=True)
class DataInfo:
    """What was generated (written to ``info.json`` beside the data)."""

    size: str
    queries: int
    run_rows: int
    qrels_rows: int
    seed: int
    seconds: float


def _ids(prefix: str, numbers: np.ndarray) -> pa.Array:
    """``prefix`` + decimal number, as an Arrow string array (vectorized)."""
    digits = pc.cast(pa.array(numbers, type=pa.int64()), pa.string())
    return pc.binary_join_element_wise(prefix, digits, "")


def generate_arrays(queries: int, seed: int = SEED) -> tuple[pa.Table, pa.Table]:
    """The run and qrels tables for ``queries`` queries.

    Returns:
        ``run`` (query_id, doc_id, score, rank) sorted by query then rank, and
        ``qrels`` (query_id, doc_id, relevance) sorted by query then doc.
    """
    rng = np.random.default_rng(seed)
    q = np.arange(queries, dtype=np.int64)

    # Judged candidates: the first JUDGED of a random permutation of each query's candidates.
    perm = np.argsort(rng.random((queries, CANDIDATES), dtype=np.float32), axis=1)
    judged_local = perm[:, :JUDGED]
    labels = rng.choice(4, size=(queries, JUDGED), p=LABEL_PROBS).astype(np.int8)
    latent = np.zeros((queries, CANDIDATES), dtype=np.float32)
    np.put_along_axis(latent, judged_local, labels.astype(np.float32), axis=1)

    # A system that is better than random: noisy scores correlated with the label.
    noisy = 0.8 * latent + rng.normal(size=(queries, CANDIDATES)).astype(np.float32)
    order = np.argsort(-noisy, axis=1, kind="stable")[:, :DOCS_PER_QUERY]  # best first
    # Strictly decreasing, untied scores: integer part from the rank, jitter in [0, 0.9).
    ranks = np.arange(1, DOCS_PER_QUERY + 1, dtype=np.int32)
    jitter = np.round(rng.random((queries, DOCS_PER_QUERY)) * 0.9, 4)
    scores = (DOCS_PER_QUERY - ranks + 1).astype(np.float64) + jitter

    doc_number = q[:, None] * 1000 + order  # globally unique doc ids
    run = pa.table(
        {
            "query_id": _ids("q", np.repeat(q, DOCS_PER_QUERY)),
            "doc_id": _ids("D", doc_number.ravel()),
            "score": pa.array(scores.ravel()),
            "rank": pa.array(np.tile(ranks, queries)),
        }
    )
    judged_sorted = np.sort(judged_local, axis=1)
    label_sorted = np.take_along_axis(
        labels, np.argsort(judged_local, axis=1), axis=1
    )
    qrels = pa.table(
        {
            "query_id": _ids("q", np.repeat(q, JUDGED)),
            "doc_id": _ids("D", (q[:, None] * 1000 + judged_sorted).ravel()),
            "relevance": pa.array(label_sorted.ravel().astype(np.int32)),
        }
    )
    return run, qrels


def _write_trec(table: pa.Table, path: Path) -> None:
    """Space-separated text without header or quoting (TREC's formats)."""
    options = pacsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
    pacsv.write_csv(table, str(path), write_options=options)


def write(out: Path, run: pa.Table, qrels: pa.Table) -> None:
    """Write Parquet and TREC text copies of ``run`` and ``qrels`` into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(run, out / "run.parquet", row_group_size=1 << 20)
    pq.write_table(qrels, out / "qrels.parquet", row_group_size=1 << 20)
    n = run.num_rows
    trec_run = pa.table(
        {
            "qid": run["query_id"],
            "q0": pa.array(np.full(n, "Q0", dtype=object), type=pa.string()),
            "docno": run["doc_id"],
            "rank": run["rank"],
            "score": pc.cast(run["score"], pa.string()),
            "tag": pa.array(np.full(n, RUN_TAG, dtype=object), type=pa.string()),
        }
    )
    _write_trec(trec_run, out / "run.trec")
    trec_qrels = pa.table(
        {
            "qid": qrels["query_id"],
            "iter": pa.array(np.zeros(qrels.num_rows, dtype=np.int32)),
            "docno": qrels["doc_id"],
            "rel": qrels["relevance"],
        }
    )
    _write_trec(trec_qrels, out / "qrels.trec")


def generate(size: str, out: Path, seed: int = SEED) -> DataInfo:
    """Generate the ``size`` data set into ``out`` (skipped when ``info.json`` matches)."""
    queries = SIZES[size]
    info_path = out / "info.json"
    if info_path.is_file():
        info = DataInfo(**json.loads(info_path.read_text()))
        if info.queries == queries and info.seed == seed:
            return info
    start = time.perf_counter()
    run, qrels = generate_arrays(queries, seed)
    write(out, run, qrels)
    info = DataInfo(
        size=size,
        queries=queries,
        run_rows=run.num_rows,
        qrels_rows=qrels.num_rows,
        seed=seed,
        seconds=round(time.perf_counter() - start, 3),
    )
    info_path.write_text(json.dumps(asdict(info), indent=2) + "\n")
    return info


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="quick")
    parser.add_argument("--out", type=Path, help="folder (default bench/data/<size>)")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    info = generate(args.size, args.out or Path("bench/data") / args.size, args.seed)
    print(json.dumps(asdict(info)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
