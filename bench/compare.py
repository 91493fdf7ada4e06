"""``releval.compare`` side by side with what it compares, in one process per scenario.

``notebook``: a default classic session (``SparkSession.builder.master("local[2]")``, a 1 GB
driver), three workloads (:data:`WORKLOADS`): 1,000 queries x 5 systems x 20 measures, dense
and sparse, and 200 queries x 12 systems x 10 measures, one after the other: ``compare`` (its default test) on the ``Result``'s ``per_query`` against the
``releval.evaluate(...).aggregate.collect()`` it compares, alternated, medians; the driver's
share of compare (wall time less the time Spark jobs ran, from the session's UI); the t-test
p-values checked against SciPy.

``scale``: a 2 GB driver, a per-query table of 1M queries x 2 runs x 10 measures in Parquet:
``compare(test="t")`` against a hand-written Spark SQL paired t-test (join, mean and standard
deviation of the differences), alternated, medians, the mean differences checked equal; then
the randomization test's own time, ``compare(test="randomization")`` less ``compare(test="t")``.

    .venv/bin/python -m bench.compare notebook      # -> bench/results/compare-notebook.md
    .venv/bin/python -m bench.compare scale         # -> bench/results/compare-scale.md

``changes``: the same table with a second candidate, 1M queries x 3 runs x 5 measures:
``releval.changes(...)`` with the 10 queries that lost most per candidate and measure
collected, against a hand-written Spark SQL ranking of the same pairs (join, difference,
``row_number`` per candidate and measure, the 10 first collected), alternated, medians; the
collected rows checked equal.

    .venv/bin/python -m bench.compare changes       # -> bench/results/compare-changes.md
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

RESULTS = Path(__file__).parent / "results"
DATA = Path(__file__).parent / "data"
MEASURES = ["P@{}", "R@{}", "nDCG@{}", "Hit@{}", "P(rel=2)@{}"]


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def save(results: Path, name: str, report: dict[str, Any], text: str) -> None:
    """``report`` as ``results/name.json`` and its rendering as ``results/name.md``; prints it."""
    results.mkdir(parents=True, exist_ok=True)
    (results / f"{name}.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    (results / f"{name}.md").write_text(text)
    print(text)


def _alternated(a: Callable[[], Any], b: Callable[[], Any], runs: int) -> tuple[list, list]:
    first, second = [], []
    for _ in range(runs):
        first.append(_timed(a)[0])
        second.append(_timed(b)[0])
    return first, second


def _session(**conf: str):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[2]")
    for k, v in conf.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _ranked_workload(rng: np.random.Generator, queries: int, systems: int, step: float,
                     width: int) -> tuple[Any, Any]:
    """``queries`` x ``systems``: each system ranks all 50 judged documents of a query, system
    ``s`` by grade x (0.2 + ``step`` s) plus N(0, 1) noise; system names ``s`` + ``width``
    digits."""
    import pandas as pd

    docs = 50
    q = np.repeat(np.arange(queries), docs)
    d = np.tile(np.arange(docs), queries)
    grades = rng.choice([0, 1, 2], size=len(q), p=[0.7, 0.2, 0.1])
    qrels = pd.DataFrame({"qid": [f"q{i:04d}" for i in q], "item_id": [f"d{j}" for j in d],
                          "grade": grades.astype(np.int32)})
    run = pd.concat([
        pd.DataFrame({"system": f"s{s:0{width}d}", "qid": qrels["qid"],
                      "item_id": qrels["item_id"],
                      "sim": grades * (0.2 + step * s) + rng.normal(0, 1, len(q))})
        for s in range(systems)])
    return run, qrels


def _dense_workload(rng: np.random.Generator) -> tuple[Any, Any]:
    """1,000 queries x 5 systems: each system ranks all 50 judged documents of a query."""
    return _ranked_workload(rng, 1000, 5, 0.1, 1)


def _sparse_workload(rng: np.random.Generator) -> tuple[Any, Any]:
    """1,000 queries x 5 systems: 120 documents per query, 15 of them judged (labels 0-2);
    each system ranks 50 of the 120 (drawn per query and system), its score correlated with
    the label; the run's rows in random order."""
    import pandas as pd

    queries, systems, docs, judged, ranked = 1000, 5, 120, 15, 50
    labels = np.zeros((queries, docs), dtype=np.int32)
    which = np.argsort(rng.random((queries, docs)), axis=1)[:, :judged]
    np.put_along_axis(labels, which, rng.choice([0, 1, 2], size=(queries, judged),
                                                p=[0.5, 0.3, 0.2]).astype(np.int32), axis=1)
    qids = np.array([f"q{i:04d}" for i in range(queries)])
    dids = np.array([f"d{j:03d}" for j in range(docs)])
    qrels = pd.DataFrame({"qid": np.repeat(qids, judged), "item_id": dids[which].ravel(),
                          "grade": np.take_along_axis(labels, which, axis=1).ravel()})
    parts = []
    for s in range(systems):
        chosen = np.argsort(rng.random((queries, docs)), axis=1)[:, :ranked]
        grade = np.take_along_axis(labels, chosen, axis=1)
        parts.append(pd.DataFrame({
            "system": f"s{s}", "qid": np.repeat(qids, ranked), "item_id": dids[chosen].ravel(),
            "sim": (grade * (0.2 + 0.1 * s) + rng.normal(0, 1, grade.shape)).ravel()}))
    run = pd.concat(parts, ignore_index=True)
    return run.iloc[rng.permutation(len(run))].reset_index(drop=True), qrels


def _wide_workload(rng: np.random.Generator) -> tuple[Any, Any]:
    """200 queries x 12 systems: each system ranks all 50 judged documents of a query."""
    return _ranked_workload(rng, 200, 12, 0.05, 2)


#: the notebook scenario's workloads: name -> (description, data, measures)
WORKLOADS: dict[str, tuple[str, Callable[[np.random.Generator], tuple[Any, Any]], int]] = {
    "dense": ("50 documents per query, all judged, each system ranks all 50", _dense_workload,
              20),
    "sparse": ("120 documents per query, 15 judged; each system ranks 50 of them, rows in "
               "random order", _sparse_workload, 20),
    "wide": ("50 documents per query, all judged, each system ranks all 50", _wide_workload,
             10),
}


def _job_intervals(spark) -> list[tuple[float, float]]:
    """(start, end) in seconds since the epoch of every finished Spark job, from the
    session's UI (its REST API)."""
    import datetime
    import urllib.request

    sc = spark.sparkContext
    url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/jobs"
    with urllib.request.urlopen(url) as reply:
        jobs = json.load(reply)

    def seconds(stamp: str) -> float:
        return datetime.datetime.strptime(stamp.replace("GMT", "+0000"),
                                          "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()

    return [(seconds(j["submissionTime"]), seconds(j["completionTime"])) for j in jobs
            if j.get("submissionTime") and j.get("completionTime")]


def _inside(jobs: list[tuple[float, float]], start: float, end: float) -> float:
    """Seconds of [start, end] during which at least one Spark job ran."""
    cut = sorted((max(a, start), min(b, end)) for a, b in jobs if b > start and a < end)
    total, reached = 0.0, start
    for a, b in cut:
        if b > reached:
            total += b - max(a, reached)
            reached = b
    return total


def _notebook_workload(spark, name: str, runs: int) -> dict[str, Any]:
    """One workload of the notebook scenario, in the session given."""
    from scipy import stats

    import releval

    description, make, count = WORKLOADS[name]
    run, qrels = make(np.random.default_rng(47))
    run_df = spark.createDataFrame(run).cache()
    qrels_df = spark.createDataFrame(qrels).cache()
    run_df.count(), qrels_df.count()
    names = sorted(run["system"].unique())
    systems = len(names)
    measures = [m.format(k) for k in (1, 3, 5, 10, 20) for m in MEASURES][:count - 2] + [
        "RR", "map"]
    columns = {"query_id": "qid", "doc_id": "item_id", "score": "sim"}
    qcols = {"query_id": "qid", "doc_id": "item_id", "relevance": "grade"}
    held: dict[str, Any] = {"windows": []}

    def evaluate() -> None:
        if "result" in held:
            held["result"].unpersist()
        held["result"] = releval.evaluate(run_df, qrels_df, measures=measures,
                                          partition_by=["system"], columns=columns,
                                          qrels_columns=qcols)
        held["aggregate"] = held["result"].aggregate.collect()

    def compare() -> None:
        start = time.time()
        held["comparison"] = releval.compare(
            held["result"].per_query, baseline=f"system={names[0]}",
            candidates=[f"system={s}" for s in names[1:]]).collect()
        held["windows"].append((start, time.time()))

    evaluate(), compare()  # warm-up
    held["windows"].clear()
    t_eval, t_cmp = _alternated(evaluate, compare, runs)
    time.sleep(1.0)  # the UI's listener has the last job's end
    jobs = _job_intervals(spark)
    in_jobs = [_inside(jobs, a, b) for a, b in held["windows"]]
    driver = [1.0 - j / (b - a) for j, (a, b) in zip(in_jobs, held["windows"], strict=True)]
    per_query = held["result"].per_query.toPandas()
    worst = 0.0
    for row in held["comparison"]:
        sides = per_query[per_query.measure_key == row.measure_key].pivot(
            index="query_id", columns="system", values="value").fillna(0.0)
        expected = stats.ttest_rel(sides[row.candidate.split("=")[1]], sides[names[0]]).pvalue
        if row.t_p_value is not None and not np.isnan(expected):
            worst = max(worst, abs(row.t_p_value - expected) / max(expected, 1e-300))
    held["result"].unpersist()
    run_df.unpersist(), qrels_df.unpersist()
    return {"workload": name, "description": description,
            "queries": int(run["qid"].nunique()), "systems": systems,
            "measures": len(measures), "run_rows": len(run), "qrels_rows": len(qrels),
            "comparison_rows": len(held["comparison"]), "test": "randomization (default)",
            "evaluate_s": t_eval, "compare_s": t_cmp,
            "ratio": statistics.median(t_cmp) / statistics.median(t_eval),
            "compare_in_jobs_s": in_jobs,
            "compare_driver_share": statistics.median(driver),
            "t_p_value_max_relative_error_vs_scipy": worst}


def notebook(runs: int, workloads: Sequence[str] = tuple(WORKLOADS)) -> dict[str, Any]:
    """The notebook scenario: the workloads one after the other in one default session."""
    spark = _session()
    found = [_notebook_workload(spark, name, runs) for name in workloads]
    return {"scenario": "notebook", "runs": runs, "cores": os.cpu_count(),
            "load_average_at_end": os.getloadavg()[0], "workloads": found}


def _scale_data(folder: Path, queries: int, measures: int,
                systems: tuple[tuple[str, float], ...] = (("base", 0.0), ("cand", 0.002))
                ) -> Path:
    """A per-query table (the columns compare reads) for ``systems``: written once."""
    more = "" if len(systems) == 2 else f"_{len(systems)}"
    path = folder / f"per_query_{queries}_{measures}{more}.parquet"
    if path.exists():
        return path
    folder.mkdir(parents=True, exist_ok=True)
    keys = [f"nDCG@{k}" for k in range(1, measures + 1)]
    schema = pa.schema([("system", pa.string()), ("query_id", pa.string()),
                        ("measure", pa.string()), ("cutoff", pa.int32()),
                        ("rel_level", pa.int32()), ("judged_only", pa.bool_()),
                        ("measure_key", pa.string()), ("value", pa.float64())])
    with pq.ParquetWriter(path, schema) as writer:
        chunk = 100_000
        for start in range(0, queries, chunk):
            rng = np.random.default_rng([7, start])
            ids = pa.array([f"q{i:07d}" for i in range(start, min(start + chunk, queries))])
            n = len(ids)
            for k, key in enumerate(keys, 1):
                base = rng.uniform(0, 1, n)
                for system, shift in systems:
                    value = np.clip(base + shift + rng.normal(0, 0.05, n), 0, 1)
                    writer.write_table(pa.table({
                        "system": pa.array([system] * n), "query_id": ids,
                        "measure": pa.array(["nDCG"] * n), "cutoff": pa.array([k] * n, pa.int32()),
                        "rel_level": pa.array([1] * n, pa.int32()),
                        "judged_only": pa.array([False] * n),
                        "measure_key": pa.array([key] * n), "value": value}, schema=schema))
    return path


FLOOR_SQL = """
SELECT c.measure_key, count(*) AS n, avg(c.value - b.value) AS mean_diff,
       stddev_samp(c.value - b.value) AS sd
FROM pq b JOIN pq c ON b.query_id = c.query_id AND b.measure_key = c.measure_key
WHERE b.system = 'base' AND c.system = 'cand'
GROUP BY c.measure_key
"""


def scale(runs: int, queries: int, measures: int, permutations: int) -> dict[str, Any]:
    """The scale scenario (a 2 GB driver)."""
    import releval

    path = _scale_data(DATA / "compare", queries, measures)
    spark = _session(**{"spark.driver.memory": "2g", "spark.sql.shuffle.partitions": "16"})
    df = spark.read.parquet(str(path))
    df.createOrReplaceTempView("pq")
    held: dict[str, Any] = {}

    def floor() -> None:
        held["floor"] = {r.measure_key: r for r in spark.sql(FLOOR_SQL).collect()}

    def compare(test: str = "t", n: int = 10000) -> Callable[[], None]:
        def go() -> None:
            held[test] = {r.measure_key: r for r in releval.compare(
                df, baseline="system=base", candidates=["system=cand"], test=test,
                permutations=n).collect()}
        return go

    floor(), compare()()  # warm-up
    t_floor, t_t = _alternated(floor, compare(), runs)
    diffs = max(abs(held["t"][k].mean_diff - held["floor"][k].mean_diff) for k in held["floor"])
    t_rand, _ = _timed(compare("randomization", permutations))
    return {"scenario": "scale", "queries": queries, "runs_compared": 2, "measures": measures,
            "rows": queries * 2 * measures, "floor_s": t_floor, "compare_t_s": t_t,
            "ratio": statistics.median(t_t) / statistics.median(t_floor),
            "mean_diff_max_abs_difference_vs_floor": diffs,
            "randomization_permutations": permutations,
            "compare_randomization_s": t_rand,
            "randomization_own_s": t_rand - statistics.median(t_t)}


CHANGES_SQL = """
SELECT * FROM (
  SELECT c.system AS candidate, c.measure_key, c.query_id, b.value AS baseline_value,
         c.value AS candidate_value, c.value - b.value AS diff,
         row_number() OVER (PARTITION BY c.system, c.measure_key
                            ORDER BY c.value - b.value, c.query_id) AS loss_rank
  FROM pq b JOIN pq c ON b.query_id = c.query_id AND b.measure_key = c.measure_key
  WHERE b.system = 'base' AND c.system <> 'base')
WHERE diff < 0 AND loss_rank <= {n}
"""


def changes_scenario(runs: int, queries: int, measures: int, worst: int = 10
                     ) -> dict[str, Any]:
    """The changes scenario (a 2 GB driver)."""
    import releval

    path = _scale_data(DATA / "compare", queries, measures,
                       (("base", 0.0), ("cand", 0.002), ("other", -0.001)))
    spark = _session(**{"spark.driver.memory": "2g", "spark.sql.shuffle.partitions": "16"})
    df = spark.read.parquet(str(path))
    df.createOrReplaceTempView("pq")
    held: dict[str, Any] = {}

    def floor() -> None:
        held["floor"] = sorted((r.candidate, r.measure_key, r.loss_rank, r.query_id)
                               for r in spark.sql(CHANGES_SQL.format(n=worst)).collect())

    def changes() -> None:
        moved = releval.changes(df, baseline="system=base",
                                candidates=["system=cand", "system=other"])
        held["changes"] = sorted((r.candidate.removeprefix("system="), r.measure_key,
                                  r.loss_rank, r.query_id)
                                 for r in moved.where(f"loss_rank <= {worst}").collect())

    floor(), changes()  # warm-up
    t_floor, t_changes = _alternated(floor, changes, runs)
    return {"scenario": "changes", "queries": queries, "candidates": 2, "measures": measures,
            "rows": queries * 3 * measures, "worst": worst, "floor_s": t_floor,
            "changes_s": t_changes,
            "ratio": statistics.median(t_changes) / statistics.median(t_floor),
            "collected": len(held["changes"]), "same_rows": held["changes"] == held["floor"]}


def render(r: dict[str, Any]) -> str:
    def runs(xs: list[float]) -> str:
        return ", ".join(f"{x:.2f}" for x in xs)

    if r["scenario"] == "changes":
        return "\n".join([
            "# releval.changes: the queries that lost most", "",
            f"A per-query table of {r['queries']:,} queries x 3 runs (a baseline, "
            f"{r['candidates']} candidates) x {r['measures']} measures ({r['rows']:,} rows) in "
            "Parquet; local[2], a 2 GB driver.", "",
            "| step | runs (s) | median (s) |", "|---|---|--:|",
            f"| floor: Spark SQL join, difference, `row_number` per candidate and measure, "
            f"the {r['worst']} first collected | {runs(r['floor_s'])} | "
            f"{statistics.median(r['floor_s']):.2f} |",
            f"| `releval.changes(...).where('loss_rank <= {r['worst']}').collect()` | "
            f"{runs(r['changes_s'])} | {statistics.median(r['changes_s']):.2f} |", "",
            f"changes / floor: **{r['ratio']:.2f}**; rows collected: {r['collected']} "
            f"(candidates x measures x {r['worst']}); the same rows as the floor's: "
            f"{r['same_rows']}.", ""])
    if r["scenario"] == "notebook":
        lines = [
            "# compare in a notebook's default session", "",
            "`SparkSession.builder.master('local[2]').getOrCreate()`, nothing else set (1 GB "
            "driver, 200 shuffle partitions); the workloads in one session, one after the "
            f"other; each step run {r['runs']} times, alternated, after a warm-up. "
            "`compare` runs its default test (randomization, 10,000 permutations) on the "
            "`Result`'s `per_query`. The driver's share of compare is its wall time less the "
            "time in which a Spark job ran (the session's UI), over its wall time. The "
            f"machine's load average when it ended: {r['load_average_at_end']:.1f} on "
            f"{r['cores']} cores.", "",
            "| workload | evaluate runs (s) | compare runs (s) | compare / evaluate | "
            "compare's driver share | t p-value vs SciPy |", "|---|---|---|--:|--:|--:|"]
        for w in r["workloads"]:
            lines.append(
                f"| {w['workload']}: {w['queries']:,} queries x {w['systems']} systems x "
                f"{w['measures']} measures, {w['description']} ({w['run_rows']:,} run rows, "
                f"{w['comparison_rows']} comparison rows) | {runs(w['evaluate_s'])} | "
                f"{runs(w['compare_s'])} | **{w['ratio']:.2f}** | "
                f"{w['compare_driver_share']:.0%} | "
                f"{w['t_p_value_max_relative_error_vs_scipy']:.0e} |")
        lines += ["", "Target: compare / evaluate at most 1.0 on each (medians). The last "
                  "column is the largest relative difference of the t-test's p-values from "
                  "`scipy.stats.ttest_rel`.", ""]
        return "\n".join(lines)
    return "\n".join([
        "# compare at scale", "",
        f"A per-query table of {r['queries']:,} queries x {r['runs_compared']} runs x "
        f"{r['measures']} measures ({r['rows']:,} rows) in Parquet; local[2], a 2 GB driver.", "",
        "| step | runs (s) | median (s) |", "|---|---|--:|",
        f"| floor: Spark SQL join, mean and standard deviation of the differences | "
        f"{runs(r['floor_s'])} | {statistics.median(r['floor_s']):.2f} |",
        f"| `releval.compare(per_query, ..., test=\"t\")` | {runs(r['compare_t_s'])} | "
        f"{statistics.median(r['compare_t_s']):.2f} |", "",
        f"compare / floor: **{r['ratio']:.2f}** (target at most 2.0); mean differences equal "
        f"the floor's to {r['mean_diff_max_abs_difference_vs_floor']:.1e}.", "",
        f"The randomization test with {r['randomization_permutations']:,} permutations: "
        f"`compare(test=\"randomization\")` took {r['compare_randomization_s']:.1f} s, "
        f"{r['randomization_own_s']:.1f} s of it the test's own "
        f"({r['randomization_own_s'] / r['measures']:.1f} s per measure over 2 cores).", ""])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", choices=["notebook", "scale", "changes"])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--queries", type=int, default=1_000_000)
    parser.add_argument("--measures", type=int, default=10)
    parser.add_argument("--permutations", type=int, default=1000)
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--workloads", default=",".join(WORKLOADS),
                        help="the notebook scenario's workloads, comma-separated")
    args = parser.parse_args(argv)
    if args.scenario == "notebook":
        report = notebook(args.runs, args.workloads.split(","))
    elif args.scenario == "changes":
        report = changes_scenario(args.runs, args.queries, args.measures)
    else:
        report = scale(args.runs, args.queries, args.measures, args.permutations)
    save(args.results, f"compare-{args.scenario}", report, render(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
