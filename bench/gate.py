"""Release gates side by side with what they gate, in one process per scenario.

``notebook``: a default classic session (``SparkSession.builder.master("local[2]")``), two
shapes (1,000 and 2,000 queries x 2 systems x 10 measures): ``releval.gate`` with three rules
on the ``Result``'s ``per_query`` against the ``releval.evaluate(...).aggregate.collect()``
it gates, alternated, medians; the change rule's p-value checked against the pure path.

``job``: the sample at two shapes (100 and 300 queries, 8 dates x 3 systems; a shape over
10,000 queries is drawn by ``write_large``, 2 dates x 1 system): the batch job
(``run_job``, every partition) without ``[gate]`` and with it (``baseline = "previous"``,
three rules), alternated in one session, medians; and, within each gated job, its ``gate``
phase against the rest of the job (the same run: insensitive to the machine's load drifting).
The gate runs beside the job's writes: its phase is the wait for it once they are done, the
wall time it adds to the job.

    .venv/bin/python -m bench.gate notebook      # -> bench/results/gate-notebook.md
    .venv/bin/python -m bench.gate job           # -> bench/results/gate-job.md
    .venv/bin/python -m bench.gate job --shapes 1000000 --runs 1   # -> gate-job-1000000.md
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from bench.compare import RESULTS, _alternated, _session, save
from releval.frames.comparison import CONSTRAINTS

RULES = ["nDCG@10 change >= -0.02", "RR change >= -5%", "Hit@10 >= 0.8"]


def notebook(runs: int, shapes: tuple[int, ...] = (1000, 2000)) -> dict[str, Any]:
    """The notebook scenario: gate / evaluate per shape."""
    spark = _session()
    return {"scenario": "notebook", "systems": 2, "measures": 10, "rules": RULES,
            "shapes": [_notebook_shape(spark, queries, runs) for queries in shapes]}


def _notebook_shape(spark: Any, queries: int, runs: int) -> dict[str, Any]:
    import pandas as pd

    import releval
    from releval.stats import gate as G

    rng = np.random.default_rng(48)
    docs = 20
    q = np.repeat(np.arange(queries), docs)
    d = np.tile(np.arange(docs), queries)
    grades = rng.choice([0, 1, 2], size=len(q), p=[0.7, 0.2, 0.1])
    qrels = pd.DataFrame({"qid": [f"q{i:05d}" for i in q], "item_id": [f"d{j}" for j in d],
                          "grade": grades.astype(np.int32)})
    run = pd.concat([
        pd.DataFrame({"system": f"s{s}", "qid": qrels["qid"], "item_id": qrels["item_id"],
                      "sim": grades * (0.3 + 0.05 * s) + rng.normal(0, 1, len(q))})
        for s in range(2)])
    run_df, qrels_df = spark.createDataFrame(run).cache(), spark.createDataFrame(qrels).cache()
    run_df.count(), qrels_df.count()
    measures = ["P@5", "P@10", "R@10", "R@20", "nDCG@5", "nDCG@10", "Hit@10", "RR", "AP",
                "P@1"]
    held: dict[str, Any] = {}

    def evaluate() -> None:
        if "result" in held:
            held["result"].unpersist()
        held["result"] = releval.evaluate(
            run_df, qrels_df, measures=measures, partition_by=["system"],
            columns={"query_id": "qid", "doc_id": "item_id", "score": "sim"},
            qrels_columns={"query_id": "qid", "doc_id": "item_id", "relevance": "grade"})
        held["aggregate"] = held["result"].aggregate.collect()

    def gate() -> None:
        held["gate"] = releval.gate(held["result"].per_query, baseline="system=s0",
                                    candidates="system=s1", rules=RULES)
        held["decision"] = held["gate"].decision

    evaluate(), gate()  # warm-up
    t_eval, t_gate = _alternated(evaluate, gate, runs)
    gate()
    spark.conf.set(CONSTRAINTS, "false")  # as compare and gate plan the per-query rows
    pq = held["result"].per_query.where("measure_key = 'nDCG@10'").toPandas()
    spark.conf.set(CONSTRAINTS, "true")
    sides = pq.pivot(index="query_id", columns="system", values="value").dropna()
    want = G.bounded_test((sides["s1"] - sides["s0"]).to_numpy(), -0.02, support=(-1.0, 1.0),
                          greater=True, alpha=0.05).p_pass
    got = held["gate"].rows.iloc[0]["p_pass"]
    held["result"].unpersist()
    run_df.unpersist(), qrels_df.unpersist()
    return {"queries": queries, "evaluate_s": t_eval, "gate_s": t_gate,
            "ratio": statistics.median(t_gate) / statistics.median(t_eval),
            "decision": held["decision"],
            "p_pass_relative_error_vs_pure": abs(got - want) / max(want, 1e-300)}


def job(runs: int, shapes: tuple[int, ...] = (100, 300)) -> dict[str, Any]:
    """The batch-job scenario: the job with [gate] / without, per shape."""
    from releval.config import SparkSettings
    from releval.runtime.session import build_session

    large = max(shapes) > SAMPLE_QUERIES  # a 6 GB heap for the rows of 1M queries
    spark = build_session(SparkSettings(
        master="local[2]", shuffle_partitions=16 if large else 4,
        conf={"spark.driver.memory": "6g"} if large else {}))
    with tempfile.TemporaryDirectory(prefix="releval-bench-gate-") as tmp:
        out = [_job_shape(spark, Path(tmp) / f"q{queries}", queries, runs) for queries in shapes]
    return {"scenario": "job", "rules": RULES, "shapes": out}


def _job_shape(spark: Any, folder: Path, queries: int, runs: int) -> dict[str, Any]:
    from releval.config import GateSettings, OutputSettings, QrelsSource, RunSource, validate
    from releval.config.settings import Config, EvaluationSettings, SparkSettings
    from releval.job.batch import run_job
    from releval.job.sample import SampleShape, write_sample
    from releval.runtime.profile import Phases

    run, qrels = str(folder / "log"), str(folder / "qrels")
    if queries <= SAMPLE_QUERIES:
        write_sample(spark, run_path=run, qrels_path=qrels, shape=SampleShape(queries=queries))
    else:
        write_large(spark, folder, run_path=run, qrels_path=qrels, queries=queries)
    evaluation = EvaluationSettings(measures=("P@5", "P@10", "R@10", "Hit@10", "RR",
                                              "nDCG@10", "AP"))

    def config(name: str, gate: GateSettings | None) -> Config:
        base = folder / name
        return validate(Config(
            run=RunSource(path=run, doc_id="item_id", rank="position",
                          partition_columns=("system", "date")),
            qrels=QrelsSource(path=qrels, filter="qrels_version = 'v1'"),
            evaluation=evaluation, spark=SparkSettings(master="local[2]"),
            output=OutputSettings(per_query_path=str(base / "per_query"),
                                  aggregate_path=str(base / "aggregate"),
                                  partition_columns=("date",)),
            gate=gate))

    plain = config("plain", None)
    gated = config("gated", GateSettings(rules=tuple(RULES), order_by="date"))
    held: dict[str, Any] = {"phase": []}

    def without() -> None:
        run_job(spark, plain)

    def with_gate() -> None:
        phases = Phases(spark, announce=False)
        held["result"] = run_job(spark, gated, phases=phases)
        gate_s = sum(p.seconds for p in phases.done if p.name == "gate")
        held["phase"].append((gate_s, sum(p.seconds for p in phases.done) - gate_s))

    if queries <= SAMPLE_QUERIES:
        without(), with_gate()  # warm-up
    held["phase"] = []
    t_plain, t_gated = _alternated(without, with_gate, runs)
    gates = held["result"].gate.gates
    gate_s = [g for g, _ in held["phase"]]
    rest_s = [r for _, r in held["phase"]]
    design = ("the sample: 8 dates x 3 systems, 50 documents a query"
              if queries <= SAMPLE_QUERIES else
              f"write_large: {len(LARGE_DATES)} dates x {len(LARGE_SYSTEMS)} system, "
              f"{LARGE_DOCS} documents a query, no warm-up")
    return {"queries": queries, "design": design, "partitions": len(gates),
            "without_s": t_plain, "with_gate_s": t_gated,
            "gate_phase_s": gate_s, "rest_of_job_s": rest_s,
            "gate_share": statistics.median(gate_s) / statistics.median(rest_s),
            "added": statistics.median(t_gated) / statistics.median(t_plain) - 1,
            "decision": held["result"].gate.decision,
            "decisions": dict(statistics_counts([g.decision for g in gates]))}


#: the largest shape drawn by the sample's generator; larger ones by :func:`write_large`
SAMPLE_QUERIES = 10_000
#: :func:`write_large`'s shape: documents a query, judged of them, systems, dates
LARGE_DOCS, LARGE_JUDGED, LARGE_SYSTEMS = 10, 5, ("bm25",)
LARGE_DATES = ("2026-11-27", "2026-11-28")
LARGE_CHUNK = 250_000


def write_large(spark: Any, folder: Path, *, run_path: str, qrels_path: str,
                queries: int) -> None:
    """A run and qrels in the sample's columns at any number of queries, drawn in NumPy a
    chunk of queries at a time: ``LARGE_DOCS`` documents a query per system and date (the
    first ``LARGE_JUDGED`` judged 0-3), each date's scores drawn anew; written as Delta."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(20261207)
    staged = {"run": folder / "run.parquet", "qrels": folder / "qrels.parquet"}
    folder.mkdir(parents=True, exist_ok=True)
    writers: dict[str, Any] = {}
    for first in range(0, queries, LARGE_CHUNK):
        n = min(LARGE_CHUNK, queries - first)
        qid = np.char.add("q", (np.arange(first, first + n)).astype(str))
        doc = np.char.add(np.repeat(qid, LARGE_DOCS), np.char.add(
            "-d", np.tile(np.arange(LARGE_DOCS).astype(str), n)))
        label = rng.choice(4, size=(n, LARGE_DOCS), p=[0.45, 0.3, 0.15, 0.1])
        label[:, LARGE_JUDGED:] = 0
        judged = np.tile(np.arange(LARGE_DOCS) < LARGE_JUDGED, n)
        tables = {"qrels": pa.table({
            "query_id": np.repeat(qid, LARGE_DOCS)[judged], "doc_id": doc[judged],
            "relevance": label.ravel()[judged].astype(np.int32),
            "qrels_version": np.full(int(judged.sum()), "v1")})}
        runs = []
        for system in LARGE_SYSTEMS:
            for date in LARGE_DATES:
                score = label + rng.normal(0, 1.2, size=label.shape)
                order = np.argsort(-score, axis=1)
                rank = np.empty_like(order)
                np.put_along_axis(rank, order, np.arange(1, LARGE_DOCS + 1), axis=1)
                runs.append(pa.table({
                    "query_id": np.repeat(qid, LARGE_DOCS), "item_id": doc,
                    "score": score.ravel(), "position": rank.ravel().astype(np.int32),
                    "system": np.full(n * LARGE_DOCS, system),
                    "date": np.full(n * LARGE_DOCS, date)}))
        tables["run"] = pa.concat_tables(runs)
        for name, table in tables.items():
            if name not in writers:
                writers[name] = pq.ParquetWriter(staged[name], table.schema)
            writers[name].write_table(table)
    for w in writers.values():
        w.close()
    for name, path, parts in (("run", run_path, ("system", "date")),
                              ("qrels", qrels_path, ("qrels_version",))):
        (spark.read.parquet(str(staged[name])).write.format("delta").mode("overwrite")
         .partitionBy(*parts).save(path))


def statistics_counts(values: list[str]) -> dict[str, int]:
    return {v: values.count(v) for v in sorted(set(values))}


def render(r: dict[str, Any]) -> str:
    def runs(xs: list[float]) -> str:
        return ", ".join(f"{x:.2f}" for x in xs)

    rules = ", ".join(f"`{x}`" for x in r["rules"])
    if r["scenario"] == "notebook":
        lines = ["# a gate in a notebook's default session", "",
                 f"{r['systems']} systems x {r['measures']} measures, rules {rules}; "
                 "`SparkSession.builder.master('local[2]').getOrCreate()`.", "",
                 "| queries | `evaluate(...).aggregate.collect()` (s) | `releval.gate(...)` (s) "
                 "| gate / evaluate | decision |", "|--:|---|---|--:|---|"]
        for s in r["shapes"]:
            lines.append(f"| {s['queries']:,} | {runs(s['evaluate_s'])} | {runs(s['gate_s'])} | "
                         f"**{s['ratio']:.2f}** | {s['decision']} |")
        worst = max(s.get("p_pass_relative_error_vs_pure", float("nan")) for s in r["shapes"])
        lines += ["", f"Target: gate / evaluate at most 1.0. p_pass against the pure path "
                  f"(`releval.stats.gate.bounded_test`): largest relative difference "
                  f"{worst:.1e}.", ""]
        return "\n".join(lines)
    lines = ["# a gate in the batch job", "",
             "The job over every partition, without and with "
             f"`[gate]` (baseline previous, rules {rules}), alternated in one session.", "",
             "| queries | data | partitions | without (s) | with `[gate]` (s) | added "
             "| gate phase (s) | rest of the gated job (s) | gate / rest | decisions |",
             "|--:|---|--:|---|---|--:|---|---|--:|---|"]
    for s in r["shapes"]:
        lines.append(f"| {s['queries']:,} | {s.get('design', 'the sample')} | "
                     f"{s['partitions']} | {runs(s['without_s'])} | "
                     f"{runs(s['with_gate_s'])} | {s['added']:+.1%} | {runs(s['gate_phase_s'])} "
                     f"| {runs(s['rest_of_job_s'])} | **{s['gate_share']:.1%}** | "
                     f"{s['decisions']} |")
    lines += ["", "Target: at most +10% of the job's wall time. `added` compares separate "
              "jobs (drifts with the machine's load); `gate / rest` is measured within each "
              "gated job.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", choices=["notebook", "job"])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--shapes", default=None,
                        help="queries per shape, comma-separated (default: the scenario's)")
    args = parser.parse_args(argv)
    shapes = tuple(int(x) for x in args.shapes.split(",")) if args.shapes else None
    if args.scenario == "notebook":
        report = notebook(args.runs, *([shapes] if shapes else []))
    else:
        report = job(args.runs, *([shapes] if shapes else []))
    suffix = "".join(f"-{q}" for q in shapes) if shapes else ""
    save(args.results, f"gate-{args.scenario}{suffix}", report, render(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
