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

Large sizes are generated and written in chunks of ``CHUNK_QUERIES`` queries
(Parquet row groups appended by one ``ParquetWriter``, TREC text appended by one
``CSVWriter``), so memory is bounded by one chunk whatever the size. Chunk ``i``
covers queries ``i * CHUNK_QUERIES ...`` and draws from its own generator:
``default_rng(seed)`` for chunk 0 and ``default_rng([seed, i])`` after it. Sizes
of at most one chunk (tiny, quick, full) are therefore one stream, written with the
same bytes as one ``pq.write_table`` / ``pacsv.write_csv`` per file, and the first
100k queries of ``30m``/``100m`` are exactly ``full``.

    python -m bench.generate --size quick --out bench/data/quick
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

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
    "30m": 300_000,
    "100m": 1_000_000,
}
#: Other names of the large sizes (by number of queries), accepted too.
ALIASES: dict[str, str] = {"300k": "30m", "1m": "100m"}
#: Queries generated and written at a time: one chunk is what the generator holds
#: in memory (about 1.6 GB of peak RSS for 100k queries = 10M run rows).
CHUNK_QUERIES = 100_000


@dataclass(frozen=True)
class DataInfo:
    """What was generated (written to ``info.json`` beside the data)."""

    size: str
    queries: int
    run_rows: int
    qrels_rows: int
    seed: int
    seconds: float
    #: Queries per chunk of the random stream (0: one chunk of all queries).
    chunk_queries: int = 0
    #: Peak resident memory of the generating process (MiB), when psutil is installed.
    peak_rss_mib: float | None = None

    def same_stream(self, queries: int, seed: int, chunk_queries: int) -> bool:
        """Whether this data is what ``queries``/``seed``/``chunk_queries`` would generate."""
        chunks = self.chunk_queries or self.queries  # 0: one chunk of all queries
        return (
            self.queries == queries
            and self.seed == seed
            and min(chunks, queries) == min(chunk_queries, queries)
        )


def _ids(prefix: str, numbers: np.ndarray) -> pa.Array:
    """``prefix`` + decimal number, as an Arrow string array (vectorized)."""
    digits = pc.cast(pa.array(numbers, type=pa.int64()), pa.string())
    return pc.binary_join_element_wise(prefix, digits, "")


def chunk_rng(seed: int, index: int) -> np.random.Generator:
    """The random generator of chunk ``index``: chunk 0 is ``default_rng(seed)``."""
    return np.random.default_rng(seed if index == 0 else [seed, index])


def generate_arrays(
    queries: int, seed: int = SEED, *, first_query: int = 0, rng: np.random.Generator | None = None
) -> tuple[pa.Table, pa.Table]:
    """The run and qrels tables for ``queries`` queries.

    Args:
        queries: number of queries.
        seed: seed of the random generator (when ``rng`` is not given).
        first_query: number of the first query (``q<first_query>``), for chunks.
        rng: the random generator to draw from (default ``default_rng(seed)``).

    Returns:
        ``run`` (query_id, doc_id, score, rank) sorted by query then rank, and
        ``qrels`` (query_id, doc_id, relevance) sorted by query then doc.
    """
    rng = rng if rng is not None else np.random.default_rng(seed)
    q = np.arange(first_query, first_query + queries, dtype=np.int64)

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


TREC_WRITE_OPTIONS = pacsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
PARQUET_ROW_GROUP = 1 << 20


def _trec_run(run: pa.Table) -> pa.Table:
    """``qid Q0 docno rank score tag`` columns of ``run``."""
    n = run.num_rows
    return pa.table(
        {
            "qid": run["query_id"],
            "q0": pa.array(np.full(n, "Q0", dtype=object), type=pa.string()),
            "docno": run["doc_id"],
            "rank": run["rank"],
            "score": pc.cast(run["score"], pa.string()),
            "tag": pa.array(np.full(n, RUN_TAG, dtype=object), type=pa.string()),
        }
    )


def _trec_qrels(qrels: pa.Table) -> pa.Table:
    """``qid 0 docno rel`` columns of ``qrels``."""
    return pa.table(
        {
            "qid": qrels["query_id"],
            "iter": pa.array(np.zeros(qrels.num_rows, dtype=np.int32)),
            "docno": qrels["doc_id"],
            "rel": qrels["relevance"],
        }
    )


class ChunkWriter:
    """Appends chunks of run and qrels to the four files of a data folder.

    Space-separated text without header or quoting for the TREC formats; Parquet
    row groups of at most ``PARQUET_ROW_GROUP`` rows. Writing one table in one
    chunk gives the same bytes as ``pq.write_table`` and ``pacsv.write_csv``.
    """

    def __init__(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.out = out
        self._writers: dict[str, Any] = {}

    def _writer(self, name: str, schema: pa.Schema, kind: str) -> Any:
        if name not in self._writers:
            path = str(self.out / name)
            self._writers[name] = (
                pq.ParquetWriter(path, schema) if kind == "parquet"
                else pacsv.CSVWriter(path, schema, write_options=TREC_WRITE_OPTIONS)
            )
        return self._writers[name]

    def write(self, run: pa.Table, qrels: pa.Table) -> None:
        """Append one chunk to ``run.parquet``, ``qrels.parquet``, ``run.trec``, ``qrels.trec``."""
        self._writer("run.parquet", run.schema, "parquet").write_table(run, row_group_size=PARQUET_ROW_GROUP)
        self._writer("qrels.parquet", qrels.schema, "parquet").write_table(
            qrels, row_group_size=PARQUET_ROW_GROUP)
        trec_run = _trec_run(run)
        self._writer("run.trec", trec_run.schema, "csv").write_table(trec_run)
        trec_qrels = _trec_qrels(qrels)
        self._writer("qrels.trec", trec_qrels.schema, "csv").write_table(trec_qrels)

    def close(self) -> None:
        """Close every file (writes the Parquet footers)."""
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()


def write(out: Path, run: pa.Table, qrels: pa.Table) -> None:
    """Write Parquet and TREC text copies of ``run`` and ``qrels`` into ``out`` (one chunk)."""
    writer = ChunkWriter(out)
    try:
        writer.write(run, qrels)
    finally:
        writer.close()


def _peak_rss_mib() -> float | None:
    """This process's peak resident memory so far (MiB; Linux ``ru_maxrss`` is in KiB)."""
    try:
        import resource
    except ImportError:  # not on Windows
        return None
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def generate(
    size: str, out: Path, seed: int = SEED, *, queries: int | None = None,
    chunk_queries: int = CHUNK_QUERIES,
) -> DataInfo:
    """Generate the ``size`` data set into ``out`` (skipped when ``info.json`` matches).

    Args:
        size: a name of ``SIZES`` (or ``ALIASES``).
        out: the data folder.
        seed: the seed of the random stream.
        queries: number of queries (default: the size's); for tests.
        chunk_queries: queries generated and written at a time (memory bound).
    """
    size = ALIASES.get(size, size)
    queries = SIZES[size] if queries is None else queries
    info_path = out / "info.json"
    if info_path.is_file():
        info = DataInfo(**json.loads(info_path.read_text()))
        if info.same_stream(queries, seed, chunk_queries):
            return info
        info_path.unlink()  # the files below are rewritten; never leave a stale info.json
    start = time.perf_counter()
    run_rows = qrels_rows = 0
    writer = ChunkWriter(out)
    try:
        for index, first in enumerate(range(0, queries, chunk_queries)):
            n = min(chunk_queries, queries - first)
            run, qrels = generate_arrays(n, seed, first_query=first, rng=chunk_rng(seed, index))
            writer.write(run, qrels)
            run_rows += run.num_rows
            qrels_rows += qrels.num_rows
            del run, qrels
    finally:
        writer.close()
    info = DataInfo(
        size=size,
        queries=queries,
        run_rows=run_rows,
        qrels_rows=qrels_rows,
        seed=seed,
        seconds=round(time.perf_counter() - start, 3),
        chunk_queries=chunk_queries,
        peak_rss_mib=_peak_rss_mib(),
    )
    info_path.write_text(json.dumps(asdict(info), indent=2) + "\n")
    return info


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted([*SIZES, *ALIASES]), default="quick")
    parser.add_argument("--out", type=Path, help="folder (default bench/data/<size>)")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    info = generate(args.size, args.out or Path("bench/data") / args.size, args.seed)
    print(json.dumps(asdict(info)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
