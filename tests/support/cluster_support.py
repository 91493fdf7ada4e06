"""A Spark standalone cluster on loopback for the cluster tests, and what they read of it.

One master and workers of 1 core each, started from the installed PySpark
(``spark-class org.apache.spark.deploy.master.Master`` / ``...deploy.worker.Worker``), each
in its own process group on free ports, with its logs and work folder under one root
folder; :meth:`Standalone.stop` ends them all (a worker's group holds its executors and
their Python workers) and removes the work folders. Also: the REST/JSON endpoints the
tests watch (the master's ``/json/``, a worker's ``/json/``, the driver's ``/api/v1``) and
the event log a job writes.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyspark

SPARK_HOME = Path(pyspark.__file__).resolve().parent
SPARK_CLASS = SPARK_HOME / "bin" / "spark-class"
#: Each worker offers this much memory to executors (the job asks for less, see the test).
WORKER_MEMORY = "1g"


def _resolve_prctl() -> Any:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None  # not Linux: the fixtures' finally blocks still stop everything


#: libc's ``prctl``, resolved here in the parent: the child between fork and exec only calls it
#: (resolving a symbol there could wait on a loader lock another thread held at the fork).
_PRCTL = _resolve_prctl()


def _dies_with_us() -> None:
    """In the child before exec: SIGTERM when the test process dies, even by SIGKILL, so that
    a killed test run leaves no daemon behind on a shared machine (Linux
    ``PR_SET_PDEATHSIG``). Its own process group comes from ``start_new_session``."""
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGTERM)  # PR_SET_PDEATHSIG = 1


def free_port() -> int:
    """A TCP port nobody listens on now (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get_json(url: str, timeout: float = 5.0) -> Any:
    """GET a JSON document; None when nothing answers (yet, or any more)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return json.load(response)
    except (urllib.error.URLError, ConnectionError, TimeoutError, json.JSONDecodeError):
        return None


def daemon_env(root: Path) -> dict[str, str]:
    """The environment of the master and workers: SPARK_HOME at the installed PySpark, logs
    and scratch folders under ``root``, small daemon heaps."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(
        SPARK_HOME=str(SPARK_HOME),
        SPARK_LOG_DIR=str(root / "logs"),
        SPARK_LOCAL_DIRS=str(root / "local"),
        SPARK_DAEMON_MEMORY="256m",
        SPARK_LOCAL_IP="127.0.0.1",
    )
    return env


@dataclass
class Standalone:
    """A standalone master and its workers, started by :meth:`start`."""

    root: Path
    master_port: int = field(default_factory=free_port)
    master_ui: int = field(default_factory=free_port)
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    worker_uis: dict[str, int] = field(default_factory=dict)
    killed: set[str] = field(default_factory=set)
    _started_workers: int = 0

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    def _spawn(self, name: str, *args: str) -> None:
        (self.root / "logs").mkdir(parents=True, exist_ok=True)
        log = open(self.root / "logs" / f"{name}.out", "wb")  # noqa: SIM115 - the child keeps it
        self.processes[name] = subprocess.Popen(
            [str(SPARK_CLASS), *args], env=daemon_env(self.root), stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_dies_with_us,
        )
        log.close()

    def start(self, workers: int = 2, timeout: float = 180) -> Standalone:
        """Start the master and ``workers`` workers; wait until all are ALIVE."""
        self._spawn("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                    "--port", str(self.master_port), "--webui-port", str(self.master_ui))
        self.wait(lambda s: s is not None, timeout, "the master's web UI never answered")
        self.ensure_workers(workers, timeout)
        return self

    def start_worker(self) -> str:
        self._started_workers += 1
        name = f"worker{self._started_workers}"
        work = self.root / name
        work.mkdir(parents=True, exist_ok=True)
        ui = free_port()
        self._spawn(name, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                    "--port", str(free_port()), "--webui-port", str(ui), "--cores", "1",
                    "--memory", WORKER_MEMORY, "--work-dir", str(work), self.url)
        self.worker_uis[name] = ui
        return name

    def alive_workers(self) -> list[str]:
        return [n for n, p in self.processes.items() if n.startswith("worker") and p.poll() is None]

    def ensure_workers(self, count: int, timeout: float = 180) -> None:
        """Start workers until ``count`` run; wait until the master counts them ALIVE."""
        while len(self.alive_workers()) < count:
            self.start_worker()
        self.wait(lambda s: s is not None and s["aliveworkers"] == count, timeout,
                  f"the master never had {count} ALIVE workers")

    def state(self) -> Any:
        """The master's JSON (workers, applications); None when it does not answer."""
        return get_json(f"http://127.0.0.1:{self.master_ui}/json/")

    def wait(self, ready: Any, timeout: float, message: str) -> None:
        deadline = time.monotonic() + timeout
        while not ready(self.state()):
            dead = [n for n, p in self.processes.items()
                    if p.poll() is not None and n not in self.killed]
            assert not dead, f"{dead} exited: see {self.root / 'logs'}"
            assert time.monotonic() < deadline, f"{message} ({timeout} s; {self.root / 'logs'})"
            time.sleep(0.5)

    def worker_of_executor(self, app_id: str, executor_id: str) -> str | None:
        """The worker that runs executor ``executor_id`` of application ``app_id``."""
        for name in self.alive_workers():
            state = get_json(f"http://127.0.0.1:{self.worker_uis[name]}/json/")
            for executor in (state or {}).get("executors", []):
                if executor.get("appid") == app_id and str(executor.get("id")) == executor_id:
                    return name
        return None

    def diagnose(self, job_log: Path | None = None) -> str:
        """Why a job on this cluster may have failed, for an assertion message: the driver
        log's reason lines, what the master and workers logged about executors, and the tail
        of every executor's stderr (an executor that dies at launch says why only there)."""
        parts = []
        if job_log is not None and job_log.is_file():
            text = job_log.read_text(encoding="utf-8", errors="replace").splitlines()
            keys = ("Reason", "killed", "removed", "releval: error", "Exception:", "Error:")
            parts.append("driver: " + "\n  ".join(
                [line for line in text if any(k in line for k in keys)][:15] or ["(no reason line)"]))
        for log in sorted((self.root / "logs").glob("*.out")):
            lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
            keys = ("xecutor", "WARN", "ERROR", "emoving", "FAILED", "exited")
            picked = [line for line in lines if any(k in line for k in keys)][-15:]
            parts.append(f"{log.name}: " + "\n  ".join(picked or ["(nothing about executors)"]))
        for stderr in sorted(self.root.glob("worker*/app-*/*/stderr"))[-6:]:
            tail = stderr.read_text(encoding="utf-8", errors="replace").splitlines()[-12:]
            parts.append(f"{stderr.relative_to(self.root)}: " + "\n  ".join(tail))
        return "\n".join(parts)

    def kill_worker(self, name: str) -> None:
        """SIGKILL a worker's process group: the worker, its executors and their Python
        workers, as when a machine is lost."""
        self.killed.add(name)
        _kill_group(self.processes[name], signal.SIGKILL)

    def stop(self) -> None:
        """End every process started here (workers first) and remove the work folders."""
        for name in sorted(self.processes, key=lambda n: n == "master"):
            _kill_group(self.processes[name], signal.SIGTERM, then_kill_after=20)
        for name in self.worker_uis:
            shutil.rmtree(self.root / name, ignore_errors=True)
        shutil.rmtree(self.root / "local", ignore_errors=True)


def _kill_group(process: subprocess.Popen[bytes], sig: int, then_kill_after: float = 0) -> None:
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        pass
    try:
        process.wait(timeout=then_kill_after or 30)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(timeout=30)
    # the group may outlive its leader (an executor still exiting): end what is left
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


# --- the submitted job -------------------------------------------------------------------


def submit(
    dist: Path, master: str, config: Path, *, conf: dict[str, str], log: Path,
    args: Sequence[str] = ("--show", "0"),
) -> subprocess.Popen[bytes]:
    """``spark-submit`` the packaged job as production does: ``--py-files dist/releval.zip``,
    ``dist/evaluate.py`` as the main file, Delta from the jars folder ``dist/jars``.

    The driver's environment has no PYTHONPATH, so the driver and the executors import
    releval from the zip, not from a source tree.
    """
    jars = ",".join(str(j) for j in sorted((dist / "jars").glob("*.jar")))
    command = [str(SPARK_HOME / "bin" / "spark-submit"), "--master", master, "--jars", jars,
               "--py-files", str(dist / "releval.zip")]
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    command += [str(dist / "evaluate.py"), "--config", str(config), *args]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RELEVAL_JARS")}
    env.update(SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP="127.0.0.1")
    out = open(log, "wb")  # noqa: SIM115 - the child keeps it
    proc = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT,
                            cwd=config.parent, start_new_session=True, preexec_fn=_dies_with_us)
    out.close()
    return proc


def events(event_dir: Path) -> Iterator[dict[str, Any]]:
    """The events of the one application logged in ``event_dir`` (uncompressed, rolling or
    not)."""
    files = sorted(p for p in event_dir.rglob("*") if p.is_file()
                   and not p.name.startswith((".", "appstatus")) and not p.name.endswith(".crc"))
    assert files, f"no event log in {event_dir}"
    for path in files:
        with open(path, encoding="utf-8") as f:
            for line in f:
                yield json.loads(line)
