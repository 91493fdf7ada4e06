"""Where a job's time goes: named phases, their wall time and their Spark jobs.

A phase's start is printed at once (``releval: <phase> ...``); ``--profile`` prints
:meth:`Phases.render`, each phase's Spark jobs counted as one Spark job group (a classic
session; a Spark Connect session has no job groups to count, so its phases show time only)."""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TextIO

from pyspark.sql import SparkSession

from releval.runtime.mode import CONNECT_NOTE, counts_jobs


@dataclass
class PhaseTime:
    """One finished phase."""

    name: str
    seconds: float
    #: None where the session cannot count them (Spark Connect)
    spark_jobs: int | None


@dataclass
class Phases:
    """The phases of one job run; ``spark`` None counts no jobs (pure tests), and the start
    lines go to ``out``, stdout (stderr is for the one-line errors)."""

    spark: SparkSession | None = None
    announce: bool = True
    out: TextIO = field(default_factory=lambda: sys.stdout)
    done: list[PhaseTime] = field(default_factory=list)
    _started: float = field(default_factory=time.perf_counter)
    _id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Run the body as phase ``name``: its Spark jobs form the job group ``releval:name``."""
        group = f"releval:{self._id}:{len(self.done)}:{name}"
        counted = self.spark is not None and counts_jobs(self.spark)
        sc = self.spark.sparkContext if counted and self.spark is not None else None
        if self.announce:
            print(f"releval: {name} ...", file=self.out, flush=True)
        if sc is not None:
            sc.setJobGroup(group, f"releval {name}", interruptOnCancel=False)
        start = time.perf_counter()
        try:
            yield
        finally:
            seconds = time.perf_counter() - start
            jobs: int | None = 0 if self.spark is None or counted else None
            if sc is not None:
                jobs = len(sc.statusTracker().getJobIdsForGroup(group))
                sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
                sc.setLocalProperty("spark.job.description", None)  # type: ignore[arg-type]
            self.done.append(PhaseTime(name, seconds, jobs))

    @property
    def spark_jobs(self) -> int | None:
        """The Spark jobs of all finished phases; None when they were not counted."""
        counts = [p.spark_jobs for p in self.done]
        return None if None in counts else sum(c for c in counts if c is not None)

    def render(self) -> str:
        """A table of the phases: wall seconds and Spark jobs, then the total (wall seconds
        only, and a note, where the session cannot count jobs)."""
        total = time.perf_counter() - self._started
        width = max([len(p.name) for p in self.done] + [5])
        if self.spark_jobs is None:
            lines = ["releval profile (wall seconds)"]
            lines += [f"  {p.name:<{width}}  {p.seconds:8.2f} s" for p in self.done]
            lines.append(f"  {'total':<{width}}  {total:8.2f} s")
            lines.append(CONNECT_NOTE.format(what="the count of Spark jobs"))
            return "\n".join(lines)
        lines = ["releval profile (wall seconds, Spark jobs)"]
        lines += [f"  {p.name:<{width}}  {p.seconds:8.2f} s  {p.spark_jobs:4d} jobs" for p in self.done]
        lines.append(f"  {'total':<{width}}  {total:8.2f} s  {self.spark_jobs:4d} jobs")
        return "\n".join(lines)
