"""One Spark Connect server for the Connect tests: a process of its own (``SparkConnectServer``
through ``spark-submit``), local[2], Delta's jars and settings, this interpreter for its Python
workers. The tests' Connect clients run in subprocesses with ``SPARK_REMOTE`` set: a process is
either a classic or a Connect PySpark process, and this one holds the suite's classic session."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from releval.runtime.delta import CATALOG, EXTENSION
from releval.runtime.session import delta_jars

ROOT = Path(__file__).resolve().parents[2]
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
#: the suite's classic settings (tests/conftest.py), on the server
SERVER_CONF = {
    "spark.sql.extensions": EXTENSION,
    "spark.sql.catalog.spark_catalog": CATALOG,
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.adaptive.coalescePartitions.initialPartitionNum": "2",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="session")
def connect_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``sc://localhost:PORT`` of the suite's Spark Connect server, stopped at the end."""
    import pyspark

    jars = delta_jars()
    assert jars, "Delta's jars are not in .jars/ (or RELEVAL_JARS): run make jars"
    port = _free_port()
    conf = {**SERVER_CONF, "spark.connect.grpc.binding.port": str(port)}
    command = [str(Path(sys.executable).parent / "spark-submit"), "--class", SERVER_CLASS,
               "--master", "local[2]", "--jars", ",".join(str(j) for j in jars),
               "--driver-java-options",
               f"-Dlog4j2.configurationFile={ROOT / 'conf' / 'log4j2.properties'}"]
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    log = tmp_path_factory.mktemp("connect-server") / "server.log"
    env = {**os.environ, "SPARK_HOME": os.path.dirname(pyspark.__file__),
           "PYSPARK_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    env.pop("SPARK_REMOTE", None)
    with log.open("w") as out:
        server = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  cwd=log.parent, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not _listening(port):
            assert server.poll() is None, f"the Connect server ended:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"no Connect server:\n{log.read_text()[-3000:]}"
            time.sleep(0.5)
        yield f"sc://localhost:{port}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
