"""Peak resident memory of a benchmark: this Python process and the JVMs it started.

Read from ``/proc`` (Linux): ``VmHWM`` is a process's peak resident set since it started,
so a figure covers every step the session ran until then.

    >>> sorted(peak_rss_mib())
    ['jvm_mib', 'python_mib']
"""

from __future__ import annotations

import os
from pathlib import Path


def _hwm_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def _is_java(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() == "java"
    except OSError:
        return False


def peak_rss_mib() -> dict[str, float]:
    """Peak resident MiB of this process and of the java processes it started (the Spark
    driver JVM of a local session; 0 where ``/proc`` does not tell)."""
    jvms = [pid for pid in _children(os.getpid()) if _is_java(pid)]
    return {"python_mib": _hwm_kib(os.getpid()) / 1024,
            "jvm_mib": sum(_hwm_kib(pid) for pid in jvms) / 1024}
