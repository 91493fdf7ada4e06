"""Inputs, configs and process helpers of the batch-job tests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession

from releval.config import Config, load_config
from releval.core import columns as S
from releval.job.sample import SampleShape, write_sample

ROOT = Path(__file__).resolve().parents[2]
D27, D28, D29 = "2026-11-27", "2026-11-28", "2026-11-29"
#: 20 judged queries, 3 systems x 3 dates (releval.job.sample.SYSTEMS; three of its DATES).
SHAPE = SampleShape(queries=20, docs_per_query=10, judged_per_query=5, corpus=500,
                    dates=(D27, D28, D29))
MEASURES = ("P@5", "AP", "nDCG@10")
#: per date: 3 systems x 20 qrels queries x (3 measures + Judged@5 and Judged@10, which the
#: job adds for every cutoff it evaluates) (missing queries score 0) = 300
PER_QUERY_ROWS_PER_DATE = 3 * 20 * 5
#: per date: 3 systems x (P@5 macro + P@5 micro + AP macro + nDCG@10 macro
#: + Judged@5 macro + Judged@10 macro) = 18
AGGREGATE_ROWS_PER_DATE = 3 * 6


def write_inputs(spark: SparkSession, folder: Path) -> tuple[str, str]:
    """The small sample as Delta tables under ``folder``: (run path, qrels path)."""
    run, qrels = str(folder / "search_log"), str(folder / "qrels")
    write_sample(spark, run_path=run, qrels_path=qrels, shape=SHAPE)
    return run, qrels


def write_config(folder: Path, run: str, qrels: str, run_filter: str | None = None,
                 answers: str | None = None) -> Path:
    """A job config reading the sample and writing under ``folder/out`` (``run.filter``
    when given; ``answers``: the TOML lines of an ``[answers]`` section)."""
    out = folder / "out"
    measures = ", ".join(f'"{m}"' for m in MEASURES)
    filter_line = f"filter = {run_filter!r}" if run_filter else ""
    answers_section = f"[answers]\n{answers}\n" if answers else ""
    text = f"""
[spark]
master = "local[1]"
shuffle_partitions = 2
conf = {{ "spark.ui.enabled" = "false", "spark.default.parallelism" = "2" }}

[run]
path = "{run}"
doc_id = "item_id"
rank = "position"
partition_columns = ["system", "date"]
{filter_line}

[qrels]
path = "{qrels}"
filter = "qrels_version = 'v1'"

[evaluation]
measures = [{measures}]

{answers_section}
[output]
per_query_path = "{out / 'per_query'}"
aggregate_path = "{out / 'aggregate'}"
partition_columns = ["date"]
"""
    path = folder / "job.toml"
    path.write_text(text, encoding="utf-8")
    return path


def config_at(path: Path) -> Config:
    return load_config(path)


def read(spark: SparkSession, path: str, version: int | None = None) -> DataFrame:
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return reader.load(path)


def version(spark: SparkSession, path: str) -> int:
    return int(DeltaTable.forPath(spark, path).history(1).first()["version"])


def history(spark: SparkSession, path: str) -> list[tuple[int, str, str | None]]:
    """(version, operation, userMetadata) of every commit, oldest first."""
    rows = DeltaTable.forPath(spark, path).history().orderBy("version").collect()
    return [(r["version"], r["operation"], r["userMetadata"]) for r in rows]


def sorted_rows(df: DataFrame, drop: Sequence[str] = (S.JOB_RUN_ID,)) -> list[tuple]:
    """All rows without ``drop`` columns, sorted: for row-by-row comparison."""
    cols = [c for c in df.columns if c not in drop]
    return sorted(tuple(r) for r in df.select(*cols).collect())


def start_job(
    config: Path, *args: str, pause_at: tuple[str, Path] | None = None
) -> subprocess.Popen[str]:
    """``python jobs/evaluate.py --config ...`` in its own process group (its own JVM).

    ``pause_at=(stage, marker)`` runs it through ``tests/support/paused_job.py``, which injects a
    pause at that stage (the marker file appears when the job gets there).
    """
    entry = [str(ROOT / "jobs" / "evaluate.py")]
    if pause_at:
        entry = [str(ROOT / "tests" / "support" / "paused_job.py"), pause_at[0], str(pause_at[1])]
    return subprocess.Popen(
        [sys.executable, *entry, "--config", str(config), "--show", "0", *args],
        cwd=ROOT,
        env=dict(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def finish(proc: subprocess.Popen[str], timeout: float = 600) -> str:
    """Wait for a job; its output (asserting exit code 0)."""
    out, _ = proc.communicate(timeout=timeout)
    if proc.returncode != 0:
        # the first lines that name an error, then the end: a JVM stack hides the cause otherwise
        causes = [line for line in out.splitlines() if "Error" in line or "Exception" in line][:10]
        raise AssertionError(f"job failed ({proc.returncode}):\n" + "\n".join(causes)
                             + f"\n...\n{out[-3000:]}")
    return out
