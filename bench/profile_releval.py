"""Where releval spends its time: stage by stage, on the benchmark data.

    python -m bench.profile_releval --data bench/data/quick [--explain plan.txt]

Each stage of :func:`releval.pipeline.evaluate` is executed alone with Spark's
``noop`` sink (the whole plan runs, nothing is written), then ``pipeline.run``
end to end, so the difference shows what writing both Delta tables adds. The
physical plan of the per-query table is summarized (exchanges, sorts, windows,
joins). Diagnostic only: a single run, nothing here is asserted.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.runners import RELEVAL_MEASURES, SPARK_DRIVER_MEMORY, SPARK_MASTER

PLAN_NODES = ("Exchange", "Sort", "Window", "SortMergeJoin", "BroadcastHashJoin",
              "HashAggregate", "Generate", "Scan parquet")


def _noop(df: Any) -> float:
    """Seconds to execute ``df`` completely without writing it."""
    start = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return round(time.perf_counter() - start, 2)


def _instrument(pipeline: Any) -> dict[str, float]:
    """Wrap releval's Delta writer functions (in this process only) to sum their seconds."""
    from releval.io import writers

    timers = {"write_delta": 0.0, "ensure_table": 0.0}

    def timed(name: str, fn: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                timers[name] = round(timers[name] + time.perf_counter() - start, 2)
        return wrapper

    pipeline.write_delta = timed("write_delta", pipeline.write_delta)
    writers.ensure_table = timed("ensure_table", writers.ensure_table)
    return timers


def ranking_variants(run: Any) -> dict[str, float]:
    """``rank_run`` as it is, against the position window alone and a one-shuffle dedup."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from releval.ranking import rank_run, ranking_order

    order = ranking_order("score")
    by_query = Window.partitionBy("query_id").orderBy(*order)
    position_only = run.select("query_id", "doc_id", F.row_number().over(by_query).alias("position"))
    dedup = (
        run.repartition("query_id")
        .withColumn("_o", F.row_number().over(Window.partitionBy("query_id", "doc_id").orderBy(*order)))
        .where("_o = 1")
    )
    one_shuffle = dedup.select("query_id", "doc_id", F.row_number().over(by_query).alias("position"))
    return {
        "rank_run as is": _noop(rank_run(run, rank_by="score", partition_columns=[])),
        "position window only (no dedup)": _noop(position_only),
        "dedup + position, one shuffle on query_id": _noop(one_shuffle),
        "rank_run as is (again)": _noop(rank_run(run, rank_by="score", partition_columns=[])),
    }


def plan_summary(df: Any) -> tuple[dict[str, int], str]:
    """Node counts of the formatted physical plan, and the plan text."""
    plan = df._sc._jvm.PythonSQLUtils.explainString(df._jdf.queryExecution(), "formatted")
    tree = plan.split("\n\n")[0]
    counts = {n: len(re.findall(rf"[-+*] {re.escape(n)}\b", tree)) for n in PLAN_NODES}
    return counts, plan


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--shuffle-partitions", type=int, default=4)
    parser.add_argument("--explain", type=Path, help="write the formatted plan here")
    parser.add_argument("--driver-memory", default=SPARK_DRIVER_MEMORY,
                        help=f"spark.driver.memory (default {SPARK_DRIVER_MEMORY}; the bench uses 4g at 30m/100m)")
    parser.add_argument("--ranking-variants", action="store_true",
                        help="only time rank_run against ranking without its dedup window")
    args = parser.parse_args(argv)

    from releval import pipeline
    from releval.config import (
        Config,
        EvaluationSettings,
        OutputSettings,
        QrelsSource,
        RunSource,
        SparkSettings,
    )
    from releval.io.readers import read_qrels, read_run
    from releval.metrics import parse_measures
    from releval.metrics.compute import judge, prepare_qrels
    from releval.ranking import rank_run
    from releval.session import build_session

    spark = build_session(SparkSettings(
        master=SPARK_MASTER, app_name="bench-profile", shuffle_partitions=args.shuffle_partitions,
        conf={"spark.driver.memory": args.driver_memory, "spark.ui.enabled": "false"},
    ))
    data = args.data.resolve()
    out = Path(tempfile.mkdtemp(prefix="releval-profile-"))
    config = Config(
        run=RunSource(path=str(data / "run.parquet"), format="parquet"),
        qrels=QrelsSource(path=str(data / "qrels.parquet"), format="parquet"),
        evaluation=EvaluationSettings(measures=RELEVAL_MEASURES),
        output=OutputSettings(per_query_path=str(out / "pq"), aggregate_path=str(out / "agg")),
    )
    measures = parse_measures(RELEVAL_MEASURES, relevance_level=1)
    run_df, qrels_df = read_run(spark, config.run), read_qrels(spark, config.qrels)
    _noop(run_df)  # warm up: JIT, file listing
    if args.ranking_variants:
        print(json.dumps({"ranking_s": ranking_variants(run_df)}, indent=2))
        spark.stop()
        return 0
    ev = pipeline.evaluate(run_df, qrels_df, measures=measures)
    ranked = rank_run(run_df, rank_by="score", partition_columns=[])
    stages = {
        "read run + qrels": _noop(run_df) + _noop(qrels_df),
        "rank_run (dedup window + position window)": _noop(ranked),
        "judge (rank + join qrels)": _noop(judge(ranked, prepare_qrels(qrels_df))),
        "queries (wide table, all statistics)": _noop(ev.queries),
        "per_query (long format)": _noop(ev.per_query),
        "aggregate (from scratch)": _noop(ev.aggregate),
    }
    timers = _instrument(pipeline)
    start = time.perf_counter()
    pipeline.run(spark, config)
    total = time.perf_counter() - start
    stages["pipeline.run (both Delta tables)"] = round(total, 2)
    inside = {
        "create tables if missing (ensure_table)": timers["ensure_table"],
        "write both Delta tables (write_delta, incl. ensure_table)": timers["write_delta"],
        "rest: persisted query table + accounting counts": round(total - timers["write_delta"], 2),
    }
    counts, plan = plan_summary(ev.per_query)
    if args.explain:
        args.explain.write_text(plan)
    print(json.dumps(
        {"stages_s": stages, "pipeline_run_s": inside, "per_query_plan_nodes": counts}, indent=2
    ))
    spark.stop()
    shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
