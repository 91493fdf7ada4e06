"""releval on a real cluster: the packaged job submitted to a Spark standalone master.

Fast tests: the ``[spark]`` cluster keys, the executors' check (``releval.runtime.executors``)
without Spark, paths on other file systems.

Slow tests (``make cluster-test``; part of ``make test``): a master and two 1-core workers on
loopback (``tests/support/cluster_support.py``), the job packaged by ``make dist`` (``--py-files
dist/releval.zip``, ``dist/evaluate.py``, Delta from ``dist/jars``) submitted with
``spark-submit --master spark://127.0.0.1:<port>``:

* executors whose Python lacks NumPy and friends: one ``releval: error:`` line, nothing written;
* a clean run: per-query and aggregate tables identical (values to 1e-12) to a ``local[2]``
  run of the same inputs, tasks on both executors (event log);
* a worker killed while the evaluation stage runs (timed from the driver's REST API): what
  the phase lost with the executor is computed again on the remaining worker, and the job
  completes with the same tables; every table reads as a committed version throughout, and
  the run log says ``succeeded``. A kill that lands after the task seen running finished and
  its output was read costs nothing; the job is then run again with a new fault.

Inputs: ``bench/generate.py``'s ``tiny`` shape as TREC text (1,000 queries x 100 documents),
so the TREC reader splits a file on the executors.
"""

from __future__ import annotations

import math
import os
import sys
import time
import tomllib
import venv
import zipfile
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql import types as T
from support.cluster_support import Standalone, events, free_port, get_json, submit

from bench.generate import generate
from releval.config import SparkSettings, load_config
from releval.core import columns as S
from releval.errors import ConfigError
from releval.job import lineage
from releval.job.batch import run_job
from releval.runtime.executors import (
    EXECUTOR_MODULES,
    ExecutorReport,
    _cause,
    check_executors,
    is_local,
    probe_task,
    shared_paths,
)

ROOT = Path(__file__).resolve().parents[1]
DIST = Path(os.environ.get("RELEVAL_DIST", ROOT / "dist"))
MEASURES = ("P@5", "P@10", "R@100", "RR", "nDCG@10", "AP")
#: 1,000 queries x (6 measures + Judged@5, Judged@10, Judged@100, added for the cutoffs)
PER_QUERY_ROWS = 1000 * 9
TOLERANCE = 1e-12
JOB_TIMEOUT = 900


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "job.toml"
    path.write_text(text, encoding="utf-8")
    return path


MINIMAL = '[run]\npath = "r"\n[qrels]\npath = "q"\n'


# --- fast: config, the executors' check without Spark ----------------------------------------


def test_cluster_keys_become_spark_settings(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, MINIMAL + """
[spark]
shuffle_partitions = 400
executor_memory = "8g"
executor_cores = 4
adaptive = false
warehouse = "s3a://bucket/warehouse"
"""))
    assert config.spark.spark_conf() == {
        "spark.sql.shuffle.partitions": "400",
        "spark.executor.memory": "8g",
        "spark.executor.cores": "4",
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.warehouse.dir": "s3a://bucket/warehouse",
    }
    # unset keys leave Spark's defaults; adaptive execution is on unless turned off
    assert SparkSettings().spark_conf() == {"spark.sql.adaptive.enabled": "true"}


@pytest.mark.parametrize(
    "spark, message",
    [
        ('executor_memory = "4"', "spark.executor_memory = '4'; expected a size with its unit"),
        ('executor_memory = "4 GB"', "spark.executor_memory = '4 GB'"),
        ("executor_memory = 4", "spark.executor_memory must be a string"),
        ("executor_cores = 0", "spark.executor_cores = 0; expected an integer >= 1"),
        ("shuffle_partitions = -1", "spark.shuffle_partitions = -1"),
        ('adaptive = "yes"', "spark.adaptive must be true or false"),
        ("executors = 3", "job.toml:6: unknown key 'executors' in [spark]"),
        ('conf = { "spark.executor.memory" = "2g" }',
         "spark.conf sets 'spark.executor.memory', which the key spark.executor_memory stands "
         "for; set spark.executor_memory instead"),
    ],
)
def test_cluster_keys_are_checked(tmp_path: Path, spark: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, MINIMAL + f"[spark]\n{spark}\n"))
    assert message in str(info.value)


@pytest.mark.parametrize("name", ["cluster.example.toml", "standalone.toml"])
def test_shipped_cluster_configs_load(name: str) -> None:
    config = load_config(ROOT / "conf" / name)
    assert config.spark.master is None  # left to spark-submit --master
    assert config.spark.executor_memory and config.spark.executor_cores


def test_tables_next_to_an_object_store_output_stay_there(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, MINIMAL + """
[output]
per_query_path = "s3a://bucket/eval/per_query/"
aggregate_path = "s3a://bucket/eval/aggregate"
"""))
    # not os.path.abspath'd into a local folder named "s3a:"
    assert config.located("run_log") == ("s3a://bucket/eval/run_log", None)
    assert config.located("quarantine") == ("s3a://bucket/eval/quarantine", None)


#: Runtime dependencies that no executor task imports, and why.
DRIVER_ONLY = {
    "pyspark": "Spark gives every executor its own (pyspark.zip on the workers' PYTHONPATH)",
    "delta-spark": "Delta runs in the JVM; its Python API (DeltaTable) on the driver",
    "deltalake": "releval report, which runs without Spark",
    "matplotlib": "releval report, which runs without Spark",
}


def test_executor_modules_are_the_runtime_dependencies() -> None:
    """The check imports releval and every runtime dependency but the driver-only ones: a new
    dependency has to be placed on one side or the other."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = {dep.split("=")[0].split(">")[0].split("<")[0].strip() for dep in project["dependencies"]}
    assert set(DRIVER_ONLY) <= names
    assert set(EXECUTOR_MODULES) == (names - set(DRIVER_ONLY)) | {"releval"}


def test_is_local() -> None:
    assert all(is_local(m) for m in ("local", "local[2]", "local[*]", "local[2,3]"))
    assert not any(is_local(m) for m in ("spark://127.0.0.1:7077", "yarn", "local-cluster[2,1,1024]",
                                         "k8s://https://host:443"))


def test_probe_task_names_missing_modules_and_unseen_paths(tmp_path: Path) -> None:
    seen = tmp_path / "runs.trec"
    seen.write_text("q1 Q0 d1 1 1.0 r\n", encoding="utf-8")
    task = probe_task(["json", "releval", "releval_no_such_module"], [str(seen), str(tmp_path / "x")])
    (record,) = list(task(iter([0])))
    assert record["python"] == sys.executable
    assert record["version"] == ".".join(map(str, sys.version_info[:3]))
    assert record["missing"] == {
        "releval_no_such_module": "ModuleNotFoundError: No module named 'releval_no_such_module'"
    }
    assert record["releval"].endswith(os.path.join("releval", "__init__.py"))
    assert record["unseen"] == [str(tmp_path / "x")]


def test_report_names_each_problem_once_per_python() -> None:
    ok = {"host": "h1", "python": "/p", "version": "3.11.7", "missing": {}, "releval": "/z",
          "unseen": []}
    bad = {"host": "h2", "python": "/usr/bin/python3", "version": "3.11.2",
           "missing": {"numpy": "ModuleNotFoundError: No module named 'numpy'"}, "releval": "/z",
           "unseen": ["/data/run.trec"]}
    report = ExecutorReport((ok, bad, dict(bad, missing={}), ok))
    assert report.problems() == [
        "on h2 (Python 3.11.2 /usr/bin/python3): cannot import numpy (ModuleNotFoundError: No "
        "module named 'numpy'), cannot see /data/run.trec"
    ]
    assert ExecutorReport((ok, ok)).problems() == []
    assert ExecutorReport((ok,)).render() == (
        "releval: executors checked (1 tasks): h1 (Python 3.11.7 /p); releval from /z"
    )


def test_cause_of_a_failed_probe_job() -> None:
    # the shape of Py4JJavaError's text when spark.pyspark.python does not exist (seen on
    # the standalone cluster), and when the worker raised a Python error
    missing = (
        "An error occurred while calling z:org.apache.spark.api.python.PythonRDD.collectAndServe.\n"
        ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 1 in stage 0.0 "
        "failed 4 times, most recent failure: Lost task 1.3 in stage 0.0 (TID 7) (127.0.0.1 "
        'executor 0): java.io.IOException: Cannot run program "/opt/py/bin/python": error=2, '
        "No such file or directory\n\tat java.base/java.lang.ProcessBuilder.start(ProcessBuilder"
        ".java:1143)\nCaused by: java.io.IOException: error=2, No such file or directory\n"
    )
    assert _cause(Exception(missing)) == (
        'java.io.IOException: Cannot run program "/opt/py/bin/python": error=2, No such file or '
        "directory"
    )
    version = (
        "Job aborted due to stage failure: most recent failure: Lost task 0.3 in stage 0.0 (TID 3)"
        " (127.0.0.1 executor 1): org.apache.spark.api.python.PythonException: Traceback (most "
        'recent call last):\n  File "worker.py", line 1, in main\n'
        "pyspark.errors.exceptions.base.PySparkRuntimeError: [PYTHON_VERSION_MISMATCH] Python in "
        "worker has different version (3, 10) than that in driver 3.11\n\tat org.apache.spark.X\n"
    )
    assert _cause(Exception(version)).startswith(
        "pyspark.errors.exceptions.base.PySparkRuntimeError: [PYTHON_VERSION_MISMATCH]"
    )


def test_shared_paths(tmp_path: Path) -> None:
    run = tmp_path / "run.trec"
    run.write_text("", encoding="utf-8")
    (tmp_path / "out").mkdir()
    config = load_config(write(tmp_path, f"""
[run]
format = "trec"
path = "file://{run}"
[qrels]
path = "hdfs://namenode/qrels"
[output]
per_query_path = "{tmp_path / 'out' / 'per_query'}"
aggregate_path = "{tmp_path / 'elsewhere' / 'aggregate'}"
"""))
    # the run file (file: URI made local), the existing folder of the per-query table and its
    # siblings (quarantine, run log); not HDFS, not a folder the driver does not have either
    assert shared_paths(config) == sorted([str(run), str(tmp_path / "out")])


def test_no_check_on_a_local_master(spark: SparkSession, tmp_path: Path) -> None:
    sc = spark.sparkContext
    sc.setJobGroup("executors-check", "the check on local[2]")
    try:
        assert check_executors(spark, load_config(write(tmp_path, MINIMAL))) is None
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    assert sc.statusTracker().getJobIdsForGroup("executors-check") == []


# --- slow: the standalone cluster ------------------------------------------------------------


def fresh_dist() -> Path:
    """``dist/`` as ``make dist`` builds it, checked against the sources (fails when stale)."""
    problems = []
    zip_path, main, jars = DIST / "releval.zip", DIST / "evaluate.py", sorted(DIST.glob("jars/*.jar"))
    if not zip_path.is_file() or not main.is_file() or len(jars) != 2:
        problems.append("releval.zip, evaluate.py or the two Delta jars are missing")
    else:
        sources = {p.relative_to(ROOT / "src").as_posix(): p.read_bytes()
                   for p in (ROOT / "src" / "releval").rglob("*.py")}
        with zipfile.ZipFile(zip_path) as z:
            shipped = {n: z.read(n) for n in z.namelist() if n.startswith("releval/") and n.endswith(".py")}
        if shipped != sources:
            changed = sorted(set(shipped) ^ set(sources)
                             | {n for n in shipped if n in sources and shipped[n] != sources[n]})
            problems.append(f"releval.zip differs from src/ in {changed[:5]}")
        if main.read_bytes() != (ROOT / "jobs" / "evaluate.py").read_bytes():
            problems.append("evaluate.py differs from jobs/evaluate.py")
    if problems:
        pytest.fail(f"{DIST}: {'; '.join(problems)}: run `make dist` first", pytrace=False)
    return DIST


@pytest.fixture(scope="module")
def dist() -> Path:
    return fresh_dist()


@pytest.fixture(scope="module")
def trec_inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tiny")
    generate("tiny", folder)
    return folder


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, dist: Path) -> Iterator[Standalone]:
    """A master and two 1-core workers; stopped, work folders removed, even on failure."""
    standalone = Standalone(tmp_path_factory.mktemp("standalone"))
    try:
        yield standalone.start(workers=2)
    finally:
        standalone.stop()


def job_config(folder: Path, inputs: Path) -> Path:
    """The job's config: no master (spark-submit gives it), the cluster keys sized for 1-core
    workers, the TREC inputs, outputs under ``folder/out``."""
    folder.mkdir(parents=True, exist_ok=True)
    measures = ", ".join(f'"{m}"' for m in MEASURES)
    out = folder / "out"
    return write(folder, f"""
[spark]
app_name = "releval-cluster-test"
shuffle_partitions = 4
executor_memory = "768m"
executor_cores = 1
# Delta rebuilds a table's snapshot in 50 tasks by default: sized for big clusters
conf = {{ "spark.databricks.delta.snapshotPartitions" = "2" }}

[run]
format = "trec"
path = "{inputs / 'run.trec'}"
partition_columns = ["run_id"]

[qrels]
format = "trec"
path = "{inputs / 'qrels.trec'}"

[evaluation]
measures = [{measures}]

[output]
per_query_path = "{out / 'per_query'}"
aggregate_path = "{out / 'aggregate'}"
""")


def submit_conf(folder: Path, *, python: str = sys.executable, ui_port: int | None = None) -> dict[str, str]:
    """The spark-submit settings of a test job: the executors' and the driver's Python, an
    uncompressed event log, the driver on loopback, and both executors before the first job."""
    events_dir = folder / "events"
    events_dir.mkdir(parents=True, exist_ok=True)
    conf = {
        "spark.pyspark.python": python,
        "spark.pyspark.driver.python": sys.executable,
        "spark.driver.host": "127.0.0.1",
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": str(events_dir),
        "spark.eventLog.compress": "false",
        "spark.eventLog.logBlockUpdates.enabled": "true",
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s",
    }
    if ui_port:
        conf.update({"spark.ui.port": str(ui_port), "spark.port.maxRetries": "0"})
    else:
        conf["spark.ui.enabled"] = "false"
    return conf


def finish(proc: Any, log: Path, cluster: Standalone, timeout: float = JOB_TIMEOUT) -> str:
    """Wait for a submitted job; its output (asserting exit code 0; when it is not, the
    message starts with what the driver, the daemons and the executors said about why)."""
    proc.wait(timeout=timeout)
    out = log.read_text(encoding="utf-8", errors="replace")
    if proc.returncode != 0:
        raise AssertionError(f"job failed ({proc.returncode}):\n{cluster.diagnose(log)}\n...\n{out[-2000:]}")
    return out


def read_rows(spark: SparkSession, path: Path, version: int | None = None) -> tuple[list[str], dict[tuple, tuple]]:
    """A table's rows as {non-float columns: float columns} (job_run_id left out), with the
    float columns' names; fails if the non-float columns do not identify a row."""
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    df = reader.load(str(path)).drop(S.JOB_RUN_ID)
    floats = [f.name for f in df.schema.fields if isinstance(f.dataType, T.DoubleType | T.FloatType)]
    keys = sorted(c for c in df.columns if c not in floats)
    rows = df.select(*keys, *floats).collect()
    table = {tuple(r[: len(keys)]): tuple(r[len(keys):]) for r in rows}
    assert len(table) == len(rows), f"{path}: rows not identified by {keys}"
    return floats, table


def assert_same_table(spark: SparkSession, actual: Path, expected: Path, version: int | None = None) -> int:
    """Same rows, same keys, every float within 1e-12 (null = null, NaN = NaN); the row count."""
    floats, want = read_rows(spark, expected)
    got_floats, got = read_rows(spark, actual, version)
    assert got_floats == floats
    assert set(got) == set(want), f"{actual}: keys differ, e.g. {sorted(set(got) ^ set(want))[:3]}"
    for key, values in want.items():
        for name, a, b in zip(floats, got[key], values, strict=True):
            same = (a is None and b is None) or (
                a is not None and b is not None
                and ((math.isnan(a) and math.isnan(b)) or abs(a - b) <= TOLERANCE)
            )
            assert same, f"{actual}: {name} of {key}: {a!r} != {b!r} (local[2])"
    return len(want)


@pytest.fixture(scope="module")
def local_run(spark: SparkSession, trec_inputs: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same job on ``local[2]`` (the test session, in this process): its output folder."""
    folder = tmp_path_factory.mktemp("local")
    config = load_config(job_config(folder, trec_inputs))
    result = run_job(spark, config, job_run_id="local")
    assert result.record.status == lineage.SUCCEEDED
    assert result.record.per_query_rows == PER_QUERY_ROWS
    return folder / "out"


def task_ends(folder: Path) -> list[dict[str, Any]]:
    return [e for e in events(folder / "events") if e["Event"] == "SparkListenerTaskEnd"]


def spark_properties(folder: Path) -> dict[str, str]:
    (env,) = [e for e in events(folder / "events") if e["Event"] == "SparkListenerEnvironmentUpdate"]
    return dict(env["Spark Properties"])


@pytest.mark.slow
def test_executors_without_numpy_stop_the_job_with_one_line(
    cluster: Standalone, dist: Path, trec_inputs: Path, tmp_path: Path
) -> None:
    # a Python of the driver's version with nothing installed: releval comes from --py-files
    bare = tmp_path / "bare"
    venv.create(bare, with_pip=False)
    config = job_config(tmp_path, trec_inputs)
    log = tmp_path / "job.log"
    proc = submit(dist, cluster.url, config, conf=submit_conf(tmp_path, python=str(bare / "bin" / "python")),
                  log=log)
    proc.wait(timeout=JOB_TIMEOUT)
    out = log.read_text(encoding="utf-8", errors="replace")
    errors = [line for line in out.splitlines() if line.startswith("releval: error:")]
    assert proc.returncode == 2, f"{cluster.diagnose(log)}\n...\n{out[-2000:]}"
    assert len(errors) == 1, f"{cluster.diagnose(log)}\n...\n{out[-2000:]}"
    (error,) = errors
    assert error.startswith("releval: error: the executors' Python is not set up for releval: on ")
    assert f"{bare / 'bin' / 'python'}): " in error
    for module in ("numpy", "pandas", "pyarrow", "scipy"):
        assert f"cannot import {module} (ModuleNotFoundError: No module named '{module}')" in error
    assert "cannot import releval" not in error  # shipped with --py-files
    assert not (tmp_path / "out").exists()  # nothing read, nothing written, no run log


@pytest.mark.slow
def test_cluster_run_equals_local_run_and_uses_both_executors(
    spark: SparkSession, cluster: Standalone, dist: Path, trec_inputs: Path, local_run: Path,
    tmp_path: Path,
) -> None:
    config = job_config(tmp_path, trec_inputs)
    log = tmp_path / "job.log"
    started = time.monotonic()
    out = finish(submit(dist, cluster.url, config, conf=submit_conf(tmp_path), log=log), log, cluster)
    print(f"cluster run: {time.monotonic() - started:.1f} s")

    assert PER_QUERY_ROWS == assert_same_table(spark, tmp_path / "out" / "per_query", local_run / "per_query")
    assert assert_same_table(spark, tmp_path / "out" / "aggregate", local_run / "aggregate") > 0

    # the executors imported the shipped package, and the driver ran it too (call sites)
    (checked,) = [line for line in out.splitlines() if line.startswith("releval: executors checked")]
    assert "releval.zip" in checked and str(ROOT / "src") not in checked
    stage_names = [e["Stage Info"]["Stage Name"] for e in events(tmp_path / "events")
                   if e["Event"] == "SparkListenerStageSubmitted"]
    assert any("releval.zip/releval/" in name for name in stage_names)
    # tasks ran on two executors, each of 1 core, sized by the config's cluster keys
    ends = task_ends(tmp_path)
    executors = {e["Task Info"]["Executor ID"] for e in ends if e["Task End Reason"]["Reason"] == "Success"}
    assert len(executors) == 2, executors
    added = [e for e in events(tmp_path / "events") if e["Event"] == "SparkListenerExecutorAdded"]
    assert sorted(e["Executor Info"]["Total Cores"] for e in added) == [1, 1]
    properties = spark_properties(tmp_path)
    assert properties["spark.executor.memory"] == "768m"
    assert properties["spark.executor.cores"] == "1"
    assert properties["spark.master"] == cluster.url
    # Delta came from the jars folder given to spark-submit, which the job kept
    assert properties["spark.jars"].split(",") == [
        f"file://{j}" for j in sorted((dist / "jars").glob("*.jar"))]
    assert "spark.jars.packages" not in properties


def running_evaluation_task(ui_port: int) -> tuple[str, dict[str, Any], dict[str, Any]] | None:
    """(application id, stage, task) of a task running in the job's evaluation phase, from the
    driver's REST API (each phase is a job group ``releval:<id>:<n>:<phase>``); None if none."""
    api = f"http://127.0.0.1:{ui_port}/api/v1/applications"
    apps = get_json(api)
    if not apps:
        return None
    app = apps[0]["id"]
    jobs = get_json(f"{api}/{app}/jobs?status=running") or []
    stage_ids = {s for j in jobs if str(j.get("jobGroup", "")).endswith(":evaluation") for s in j["stageIds"]}
    for stage in get_json(f"{api}/{app}/stages?status=active") or []:
        if stage["stageId"] in stage_ids and stage.get("numActiveTasks", 0) > 0:
            tasks = get_json(f"{api}/{app}/stages/{stage['stageId']}/{stage['attemptId']}/taskList"
                             "?status=running&length=100") or []
            for task in tasks:
                if task.get("status") == "RUNNING":
                    return app, stage, task
    return None


def table_state_at(spark: SparkSession, path: Path, version: int) -> int:
    """The rows of a Delta table at ``version``."""
    return spark.read.format("delta").option("versionAsOf", version).load(str(path)).count()


def table_state(spark: SparkSession, path: Path) -> tuple[int, int] | None:
    """(latest version, its rows) of a Delta table, as a reader sees it now; None before its
    first commit."""
    if not (path / "_delta_log").is_dir() or not any((path / "_delta_log").glob("*.json")):
        return None
    version = int(DeltaTable.forPath(spark, str(path)).history(1).first()["version"])
    return version, table_state_at(spark, path, version)


def job_with_a_fault(
    spark: SparkSession, cluster: Standalone, dist: Path, inputs: Path, folder: Path,
) -> tuple[str, tuple[str, dict[str, Any], dict[str, Any]], dict[str, set[tuple[int, int] | None]]]:
    """Submit the job and SIGKILL the worker of the first task seen running in its evaluation
    phase. Returns the job's output, the (application, stage, task) killed, and each table's
    states a reader saw every 5 s while the job ran on after the kill."""
    cluster.ensure_workers(2)
    config = job_config(folder, inputs)
    out_dir = folder / "out"
    log, ui_port = folder / "job.log", free_port()
    started = time.monotonic()
    proc = submit(dist, cluster.url, config, conf=submit_conf(folder, ui_port=ui_port), log=log)
    killed: tuple[str, dict[str, Any], dict[str, Any]] | None = None
    states: dict[str, set[tuple[int, int] | None]] = defaultdict(set)
    next_look = 0.0
    try:
        while proc.poll() is None:
            assert time.monotonic() - started < JOB_TIMEOUT, "the job did not finish"
            if killed is None:
                found = running_evaluation_task(ui_port)
                worker = found and cluster.worker_of_executor(found[0], str(found[2]["executorId"]))
                if found and worker:
                    cluster.kill_worker(worker)
                    killed = found
                    print(f"killed {worker} (executor {found[2]['executorId']}, stage "
                          f"{found[1]['stageId']}) at {time.monotonic() - started:.1f} s")
            elif time.monotonic() >= next_look:
                # while the job runs on: each table at a committed version (empty or whole)
                for name in ("per_query", "aggregate"):
                    states[name].add(table_state(spark, out_dir / name))
                next_look = time.monotonic() + 5
            time.sleep(0.25)
        out = finish(proc, log, cluster)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
            proc.wait(timeout=60)
    print(f"cluster run with a fault: {time.monotonic() - started:.1f} s")
    assert killed is not None, "no task of the evaluation phase was seen running: nothing killed"
    return out, killed, states


def computed_again(evs: list[dict[str, Any]], stage: dict[str, Any], task: dict[str, Any]) -> list[str]:
    """What the evaluation phase lost with the killed task's executor and computed again on
    the executor left; empty when the fault cost nothing (the task seen running finished
    before its worker died, and nothing read its output again).

    The phase's tasks that failed with the executor must each succeed elsewhere (asserted).
    When none failed: the killed stage's output left there, computed again after the
    executor's removal: shuffle output by a later stage of the phase over the same RDDs,
    persisted blocks stored again on the executor left (the event log's block updates, in
    the log's order).
    """
    lost = str(task["executorId"])
    removed_at, removed_index = next(
        (e["Timestamp"], i) for i, e in enumerate(evs)
        if e["Event"] == "SparkListenerExecutorRemoved" and e["Executor ID"] == lost)
    phase = {s for e in evs if e["Event"] == "SparkListenerJobStart"
             and str(e["Properties"].get("spark.jobGroup.id", "")).endswith(":evaluation")
             for s in e["Stage IDs"]}
    assert stage["stageId"] in phase
    ends = [e for e in evs if e["Event"] == "SparkListenerTaskEnd" and e["Stage ID"] in phase]

    def part(e: dict[str, Any]) -> tuple[int, int]:
        return e["Stage ID"], e["Task Info"].get("Partition ID", e["Task Info"]["Index"])

    failed = [e for e in ends if e["Task End Reason"]["Reason"] in (
        "ExecutorLostFailure", "FetchFailed", "Resubmitted")]
    for e in failed:
        assert any(part(o) == part(e) and o["Task End Reason"]["Reason"] == "Success"
                   and o["Task Info"]["Executor ID"] != lost
                   and o["Task Info"]["Finish Time"] >= e["Task Info"]["Finish Time"] for o in ends), (
            f"stage {part(e)} failed ({e['Task End Reason']['Reason']}) and was not run again")
    if failed:
        return sorted({f"task {part(e)}: {e['Task End Reason']['Reason']}" for e in failed})
    rdds = {e["Stage Info"]["Stage ID"]: {r["RDD ID"] for r in e["Stage Info"]["RDD Info"]}
            for e in evs if e["Event"] == "SparkListenerStageSubmitted"}
    done_there = {part(e)[1] for e in ends if e["Stage ID"] == stage["stageId"]
                  and e["Task Info"]["Executor ID"] == lost
                  and e["Task End Reason"]["Reason"] == "Success"}
    again = {part(e)[1] for e in ends if e["Stage ID"] != stage["stageId"]
             and rdds[e["Stage ID"]] == rdds[stage["stageId"]]
             and e["Task Info"]["Executor ID"] != lost and e["Task Info"]["Launch Time"] >= removed_at
             and e["Task End Reason"]["Reason"] == "Success"}
    stored = [(i, e["Block Updated Info"]) for i, e in enumerate(evs)
              if e["Event"] == "SparkListenerBlockUpdated"
              and e["Block Updated Info"]["Block ID"].startswith("rdd_")
              and int(e["Block Updated Info"]["Block ID"].split("_")[1]) in rdds[stage["stageId"]]
              and e["Block Updated Info"]["Memory Size"] + e["Block Updated Info"]["Disk Size"] > 0]
    blocks_lost = {b["Block ID"] for i, b in stored
                   if i < removed_index and b["Block Manager ID"]["Executor ID"] == lost}
    blocks_again = {b["Block ID"] for i, b in stored
                    if i > removed_index and b["Block Manager ID"]["Executor ID"] != lost}
    # a lost block is stored again when a later job reads it; one a persisted frame built on
    # it has made redundant is not
    return ([f"stage {stage['stageId']} partition {p}: shuffle output" for p in sorted(done_there & again)]
            + [f"{b}: persisted block" for b in sorted(blocks_lost & blocks_again)])


@pytest.mark.slow
def test_worker_killed_mid_evaluation_the_job_completes_with_the_same_tables(
    spark: SparkSession, cluster: Standalone, dist: Path, trec_inputs: Path, local_run: Path,
    tmp_path: Path,
) -> None:
    # the fault hits the evaluation phase: the executor is lost, and what the phase had
    # computed there is computed again on the executor left. A kill can land a moment after
    # the task seen running finished, its output already read: the fault then cost nothing,
    # and the job is run again with a new fault (at most three times)
    for attempt in range(1, 4):
        folder = tmp_path / f"attempt-{attempt}"
        out, (app, stage, task), states = job_with_a_fault(spark, cluster, dist, trec_inputs, folder)
        evs = list(events(folder / "events"))
        assert any(e["Event"] == "SparkListenerExecutorRemoved"
                   and e["Executor ID"] == str(task["executorId"]) for e in evs)
        recovered = computed_again(evs, stage, task)
        if recovered:
            print(f"lost with executor {task['executorId']} and computed again: {recovered}")
            break
        print(f"attempt {attempt}: the killed task finished before its worker died and nothing "
              "read its output again; the job runs again with a new fault")
    else:
        pytest.fail("three faults in a row cost the job nothing: none tested a recovery")
    out_dir = folder / "out"

    # the full, correct result, in one write commit per table, and a succeeded run log row
    log_rows = spark.read.format("delta").load(str(out_dir / "run_log")).collect()
    assert [r["status"] for r in log_rows] == [lineage.SUCCEEDED], out[-2000:]
    (record,) = log_rows
    for name, version in (("per_query", record["per_query_version"]),
                          ("aggregate", record["aggregate_version"])):
        history = DeltaTable.forPath(spark, str(out_dir / name)).history().orderBy("version").collect()
        # one commit of the job, the table's latest (a new table: its creation, or a creation
        # of the empty table before it), holding the whole local[2] result
        writes = [h["version"] for h in history
                  if h["userMetadata"] == f"releval job_run_id={record[S.JOB_RUN_ID]}"]
        assert writes == [version] == [history[-1]["version"]], history
        rows = assert_same_table(spark, out_dir / name, local_run / name, version=version)
        empty = {(v, 0) for v in range(version)}
        assert all(table_state_at(spark, out_dir / name, v) == 0 for v, _ in empty)
        # while the job ran on after the kill, a reader saw the table absent, empty (created)
        # or whole: never part of a write
        assert states[name] <= {None, (version, rows)} | empty, states[name]
    assert record["per_query_rows"] == PER_QUERY_ROWS
