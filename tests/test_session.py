"""The session's driver JVM: the class archive ``make install`` writes, and its options."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from releval.runtime.session import (
    DATAFRAME_DEBUGGING,
    DRIVER_JAVA_OPTIONS,
    SHORT_JOB_BYTES,
    SHORT_JOB_JIT,
    class_archive,
    driver_options,
    local_bytes,
    short_job,
    with_driver_options,
)

ROOT = Path(__file__).resolve().parents[1]


def test_the_archive_options_come_first_and_the_users_own_win():
    archive = Path("/opt/my jars/releval-classes.jsa")  # a space: the path is quoted
    options = driver_options(archive=archive, short=False)
    conf = with_driver_options({DRIVER_JAVA_OPTIONS: "-Xlog:cds=info -Dx=1", "a": "b"}, options)
    assert conf == {
        "a": "b",
        DRIVER_JAVA_OPTIONS: '"-XX:SharedArchiveFile=/opt/my jars/releval-classes.jsa" '
        "-Xshare:auto -Xlog:cds=off -Xlog:cds+dynamic=off -Xlog:cds=info -Dx=1",
    }
    assert with_driver_options({}, options)[DRIVER_JAVA_OPTIONS].endswith("-Xlog:cds+dynamic=off")
    # a short job: C1 only after the archive's options, and still before the user's (a
    # user's -XX:TieredStopAtLevel=4 wins)
    short = with_driver_options({DRIVER_JAVA_OPTIONS: "-XX:TieredStopAtLevel=4"},
                                driver_options(archive=archive, short=True))
    assert short[DRIVER_JAVA_OPTIONS].endswith(
        "-Xlog:cds+dynamic=off -XX:TieredStopAtLevel=1 -XX:TieredStopAtLevel=4")
    assert driver_options(archive=None, short=True) == SHORT_JOB_JIT == "-XX:TieredStopAtLevel=1"
    # no archive (none written, or a JVM already running) and a long job: the conf as it was
    assert with_driver_options({"a": "b"}, driver_options(archive=None, short=False)) == {"a": "b"}


def _config(run: str | None, qrels: str, master: str | None = "local[2]"):
    from releval.config import Config, QrelsSource, RunSource, SparkSettings

    return Config(
        run=RunSource(path=run, table=None if run else "db.run_log", format="trec"),
        qrels=QrelsSource(path=qrels, format="trec"),
        spark=SparkSettings(master=master),
    )


def test_a_job_is_short_when_its_local_inputs_are_small(tmp_path):
    run, qrels = tmp_path / "run.trec", tmp_path / "qrels"
    run.write_bytes(b"q1 Q0 d1 1 2.0 bm25\n")  # 20 bytes
    qrels.mkdir()
    (qrels / "part-0.trec").write_bytes(b"q1 0 d1 1\n")  # 10 bytes, a folder's files
    (qrels / "deeper").mkdir()
    (qrels / "deeper" / "part-1.trec").write_bytes(b"q2 0 d1 1\n")  # 10, at any depth
    assert local_bytes(str(run)) == 20
    assert local_bytes(str(qrels)) == 20
    assert local_bytes(str(tmp_path / "*.trec")) == 20  # a glob: its matches
    assert local_bytes(str(tmp_path / "none")) == 0  # the job itself says it is missing
    assert local_bytes(f"file://{run}") == local_bytes(f"file:{run}") == 20
    assert local_bytes("s3a://bucket/run") is None  # a URI's size is not known
    assert local_bytes("hdfs:/data/run") is None
    assert short_job(_config(str(run), str(qrels)))
    # run and qrels together above the limit (a sparse file: no disk used)
    big = tmp_path / "big.trec"
    with big.open("wb") as out:
        out.truncate(SHORT_JOB_BYTES - 20)
    assert short_job(_config(str(big), str(qrels)))  # 64 MiB in all: short
    with big.open("r+b") as out:
        out.truncate(SHORT_JOB_BYTES - 19)
    assert not short_job(_config(str(big), str(qrels)))  # 64 MiB + 1
    # unknown sizes, or not a local master: not short
    assert not short_job(_config(str(run), "hdfs://nn/qrels"))
    assert not short_job(_config(None, str(qrels)))  # a catalog table
    assert not short_job(_config(str(run), str(qrels), master=None))  # spark-submit's master
    assert not short_job(_config(str(run), str(qrels), master="spark://host:7077"))


def test_class_archive_is_looked_up_next_to_the_jars(tmp_path, monkeypatch):
    monkeypatch.setenv("RELEVAL_JARS", str(tmp_path))
    assert class_archive() is None
    (tmp_path / "releval-classes.jsa").write_bytes(b"")
    assert class_archive() == tmp_path / "releval-classes.jsa"


def test_spark_submit_gets_the_options_build_session_would_give(tmp_path):
    # the Makefile's spark-submit targets ask `python -m releval.runtime.session --driver-options
    # CONFIG` (a Python process, no JVM): the archive's options when it is written, then
    # C1 only for a short job
    jars = tmp_path / "jars"
    jars.mkdir()
    run = tmp_path / "run.trec"
    run.write_bytes(b"q1 Q0 d1 1 2.0 bm25\n")
    (tmp_path / "qrels.trec").write_bytes(b"q1 0 d1 1\n")

    def printed(master: str) -> str:
        config = tmp_path / f"{master.replace('/', '_')}.toml"
        config.write_text(
            f'[spark]\nmaster = "{master}"\n'
            f'[run]\nformat = "trec"\npath = "{run}"\n'
            f'[qrels]\nformat = "trec"\npath = "{tmp_path / "qrels.trec"}"\n'
            f'[output]\nper_query_path = "{tmp_path / "pq"}"\n'
            f'aggregate_path = "{tmp_path / "agg"}"\n',
            encoding="utf-8",
        )
        done = subprocess.run(
            [sys.executable, "-m", "releval.runtime.session", "--driver-options", str(config)],
            cwd=ROOT, capture_output=True, text=True, timeout=60,
            env={**os.environ, "RELEVAL_JARS": str(jars)},
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert printed("local[2]") == SHORT_JOB_JIT  # no archive yet; 30 bytes of local input
    assert printed("spark://host:7077") == ""  # not a local master: not short
    (jars / "releval-classes.jsa").write_bytes(b"")
    archive = f'"-XX:SharedArchiveFile={jars / "releval-classes.jsa"}" -Xshare:auto'
    assert printed("local[2]") == f"{archive} -Xlog:cds=off -Xlog:cds+dynamic=off {SHORT_JOB_JIT}"
    assert printed("spark://host:7077").startswith(archive)


@pytest.mark.slow  # a subprocess with its own JVM
def test_a_driver_jvm_started_by_build_session_loads_spark_from_the_archive(tmp_path):
    # make install writes the archive (make test installs first); the JVM logs where each
    # class came from: the archive's classes say "shared objects file (top)"
    assert class_archive() is not None, "no class archive: run `make install` (make classes)"
    log = tmp_path / "classes.log"
    script = textwrap.dedent(f"""
        from releval.config import SparkSettings
        from releval.runtime.session import build_session, stop_jvm
        spark = build_session(SparkSettings(master="local[1]", app_name="archive-test", conf={{
            "spark.driver.extraJavaOptions": "-Xlog:class+load=info:file={log}"}}), short=True)
        assert spark.range(100).selectExpr("sum(id)").first()[0] == 4950
        jvm = spark.sparkContext._jvm
        arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
                         .getInputArguments())
        print("JVM-ARGUMENTS", arguments)
        stop_jvm(spark, timeout=120)  # the JVM has exited: its log is complete
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    # a short job's JVM compiles with C1 only, the user's options after releval's
    arguments = next(line for line in done.stdout.splitlines() if line.startswith("JVM-ARGUMENTS"))
    assert arguments.index("-XX:TieredStopAtLevel=1") < arguments.index("-Xlog:class+load")
    assert arguments.index("-XX:SharedArchiveFile=") < arguments.index("-XX:TieredStopAtLevel=1")
    lines = log.read_text().splitlines()
    from_archive = [line for line in lines if line.endswith("source: shared objects file (top)")]
    from_jars = [line for line in lines if "/pyspark/jars/" in line]  # read from Spark's jars
    # the session's own classes come from the archive, not from the jars (without the
    # archive, all of the 10,000 and more would come from the jars); a few hundred (signed
    # jars, and classes the archive's run did not load) still come from the jars
    assert any(" org.apache.spark.SparkContext " in line for line in from_archive)
    assert any(" org.apache.spark.sql.classic.SparkSession " in line for line in from_archive)
    assert len(from_archive) > 5000
    assert len(from_archive) > 9 * len(from_jars), (len(from_archive), len(from_jars))
    # and nothing about the archive reached the user's terminal
    assert "cds" not in done.stderr.lower() and "shared archive" not in done.stderr.lower()


def test_the_session_does_not_record_python_call_sites(spark):
    # releval's session default (build_session); a job's [spark.conf] may set it back on
    assert spark.conf.get(DATAFRAME_DEBUGGING) == "false"


def test_the_tests_run_interpreted_and_the_conformance_switches_code_generation_on(
    spark, production_codegen
):
    # the same query, planned three times: interpreted (the test session), inside
    # production_codegen (whole-stage code generation: the plan's "*(n)" stages), after it
    def plan() -> str:
        df = spark.range(10).selectExpr("id * 2 AS x").groupBy().sum("x")
        assert df.collect()[0][0] == 90  # 2 * (0 + 1 + ... + 9)
        return df._jdf.queryExecution().executedPlan().toString()

    assert "*(" not in plan()
    with production_codegen():
        assert "*(1) HashAggregate" in plan()
        assert spark.conf.get("spark.sql.codegen.factoryMode") == "FALLBACK"
    assert "*(" not in plan()
    assert spark.conf.get("spark.sql.codegen.factoryMode") == "NO_CODEGEN"
