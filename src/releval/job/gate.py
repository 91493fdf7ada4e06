"""The batch job's release gate (``[gate]``): each evaluated run partition against its
baseline, from the per-query rows the job just wrote, in one small collect; the gate table
replaced as the job's other tables are. See docs/usage.md ("Release gates")."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import reduce
from operator import or_
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from releval.config import Config, GateSettings
from releval.config.gate import gate_order_by
from releval.core import columns as S
from releval.core.frames import local_frame
from releval.errors import ConfigError
from releval.evaluation.partitions import partition_label, partition_sort_key
from releval.frames import gate as gate_frames
from releval.frames.comparison import side_condition
from releval.io import gate_table
from releval.io.atomic import read_table, table_exists
from releval.stats import gate as G

#: The job's exit code of each decision (a job with no gate, or no baseline anywhere: 0).
#: The decisions that make a night the baseline of a later one under ``last_pass``: a pass,
#: or ``no_baseline`` (a series' first gated night, with no earlier reference: it becomes
#: the first reference).
REFERENCE = (G.PASS, G.NO_BASELINE)

Partition = dict[str, str | None]


def gate_location(config: Config) -> tuple[str | None, str | None]:
    """(path, table) of the gate table: ``output.gate_path/_table``, else ``gate`` next to
    the per-query table."""
    return config.located("gate")


def check(config: Config, evaluated: Sequence[str]) -> list[G.Rule]:
    """The ``[gate]`` rules parsed and checked against the job's measures, before anything runs.

    Raises:
        ConfigError: an invalid rule, or one on a measure the job does not evaluate (naming
            those it does), or one per slice or weighted that ``[queries]`` cannot serve.
    """
    settings = config.gate
    assert settings is not None
    rules = [G.parse_rule(r) for r in settings.rules]
    missing = sorted({r.measure_key for r in rules} - set(evaluated))
    if missing:
        raise ConfigError(f"gate.rules name measure(s) {missing} that the job does not "
                          f"evaluate; the evaluated measures are {sorted(evaluated)}")
    queries = config.queries
    gate_frames.check_rules(rules, slices=carried_slices(config),
                            weighted=bool(queries and queries.weight))
    return rules


def carried_slices(config: Config) -> tuple[str, ...]:
    """The slices the job's per-query rows carry: the run's, then the queries input's."""
    return (*config.run.slices, *(config.queries.slices if config.queries else ()))


@dataclass(frozen=True, eq=False)
class PartitionGate:
    """One run partition's gate: its baseline (None: none) and its rows."""

    partition: Partition
    baseline: Partition | None
    decision: str
    rows: pd.DataFrame
    shares_no_query: bool = False


@dataclass(frozen=True, eq=False)
class GateRun:
    """What the job's gate decided, and the gate table's commit."""

    gates: tuple[PartitionGate, ...]
    settings: GateSettings
    columns: tuple[str, ...]
    version: int | None = None

    @property
    def decision(self) -> str:
        """fail when a run partition fails, pass when every one with a baseline passes."""
        return G.decide([g.decision for g in self.gates])

    def exit_code(self) -> int:
        """0 pass (or nothing to gate), 1 fail, 3 inconclusive unless ``on_inconclusive``."""
        return G.exit_code(self.decision, self.settings.on_inconclusive)

    def render(self) -> list[str]:
        """The summary's gate lines: the verdict, then each partition that did not pass."""
        label = lambda p: partition_label(p, list(self.columns))  # noqa: E731
        counts = pd.Series([g.decision for g in self.gates]).value_counts()
        lines = [f"  gate: {self.decision.upper()} ("
                 + ", ".join(f"{n} {d}" for d, n in counts.items())
                 + f"; baseline {self.settings.baseline}, alpha {self.settings.alpha:g}; "
                 f"gate table v{self.version})"]
        for g in self.gates:
            if g.decision == G.PASS:
                continue
            against = label(g.baseline) if g.baseline else "no baseline"
            failed = sorted(set(g.rows.loc[g.rows[G.OUTCOME] == G.FAIL, G.RULE]))
            why = f": {'; '.join(failed)}" if failed else ""
            none = " (shares no query with its baseline)" if g.shares_no_query else ""
            if g.decision == G.NO_BASELINE and self.settings.baseline == "last_pass":
                none = " (the first reference: later nights are gated against it)"
            lines.append(f"    {label(g.partition)} against {against}: {g.decision}{why}{none}")
        return lines


def _key(p: Mapping[str, Any]) -> tuple:
    return tuple(sorted(p.items()))


def _series(p: Mapping[str, Any], order_by: str) -> tuple:
    """A system's key: every partition value but the ordering one."""
    return tuple(sorted((c, v) for c, v in p.items() if c != order_by))


def _known_partitions(spark: SparkSession, config: Config) -> list[Partition]:
    """Every run partition the aggregate table holds (a small job)."""
    parts = list(config.run.partition_columns)
    out = config.output
    if not table_exists(spark, path=out.aggregate_path, table=out.aggregate_table):
        return []
    aggregate = read_table(spark, path=out.aggregate_path, table=out.aggregate_table)
    rows = aggregate.select(*[F.col(c).cast("string").alias(c) for c in parts]).distinct()
    return [{c: r[c] for c in parts} for r in rows.collect()]


def _decisions(spark: SparkSession, config: Config) -> dict[tuple, str]:
    """Each gated run partition's latest decision in the gate table."""
    path, table = gate_location(config)
    if not table_exists(spark, path=path, table=table):
        return {}
    parts = list(config.run.partition_columns)
    found = read_table(spark, path=path, table=table).select(
        *[F.col(c).cast("string").alias(c) for c in parts], gate_table.DECISION,
        gate_table.GATED_AT).distinct().collect()
    latest: dict[tuple, tuple] = {}
    for r in found:
        key = _key({c: r[c] for c in parts})
        if key not in latest or r[gate_table.GATED_AT] > latest[key][0]:
            latest[key] = (r[gate_table.GATED_AT], r[gate_table.DECISION])
    return {k: v[1] for k, v in latest.items()}


def _fixed(settings: GateSettings, p: Partition) -> Partition:
    pairs = [item.partition("=") for item in settings.baseline.split(",") if item.strip()]
    return {**p, **{k.strip(): v.strip() for k, _, v in pairs}}


def run(spark: SparkSession, config: Config, partitions: Sequence[Partition], *,
        rules: Sequence[G.Rule], job_run_id: str, predicate: str | None,
        rows: DataFrame | None = None) -> GateRun:
    """Gate ``partitions`` (the job's evaluated run partitions) and write the gate table.

    ``rows``: the per-query rows of ``partitions`` the job holds (persisted, as it writes
    them); the per-query table gives the other partitions' (a baseline evaluated earlier),
    and every row when None. One collect reads the rules' values, with each query's weight
    and slice values as the rows carry them.

    ``previous``: the same system's (every other partition column equal) latest partition
    earlier by ``order_by``; ``last_pass``: the latest earlier one whose decision is in
    :data:`REFERENCE` (the gate table's, or this run's for a partition gated before it).
    Pairs are the queries both scored."""
    settings = config.gate
    assert settings is not None
    parts = list(config.run.partition_columns)
    order = gate_order_by(settings, tuple(parts))
    todo = sorted((dict(p) for p in partitions), key=lambda p: partition_sort_key(
        {order: p[order]} if order else p))
    # the whole tables replaced (no predicate): they hold exactly the gated partitions
    # (the aggregate table may not hold this job's partitions yet: it is written beside)
    known = todo if predicate is None else list({
        _key(q): q for q in [*_known_partitions(spark, config), *todo]}.values())
    recorded = _decisions(spark, config) if settings.baseline == "last_pass" else {}
    redone = {_key(p) for p in todo}
    recorded = {k: v for k, v in recorded.items() if k not in redone}

    def earlier(p: Partition, pool: Sequence[Partition]) -> Partition | None:
        same = [q for q in pool if _series(q, order) == _series(p, order)
                and q[order] is not None and p[order] is not None and q[order] < p[order]]
        return max(same, key=lambda q: q[order]) if same else None

    def table() -> DataFrame:
        return read_table(spark, path=config.output.per_query_path,
                          table=config.output.per_query_table)

    # the sides to collect: the gated partitions and every partition a baseline can be
    pool = {_key(p): p for p in todo}
    if settings.baseline == "previous":
        for p in todo:
            b = earlier(p, known)
            if b is not None:
                pool.setdefault(_key(b), b)
    elif settings.baseline == "last_pass":
        ok = [q for q in known if recorded.get(_key(q)) in REFERENCE]
        for p in todo:
            b = earlier(p, ok)
            if b is not None:
                pool.setdefault(_key(b), b)
    else:
        known_keys = {_key(q) for q in known}
        for p in todo:
            b = _fixed(settings, p)
            if _key(b) in known_keys:
                pool.setdefault(_key(b), b)
    sides = list(pool.values())
    index = {_key(p): i for i, p in enumerate(sides)}
    values = gate_frames.side_values(_sources(table, rows, sides, redone), sides, rules,
                                     carried=True)
    gates = []
    decided: dict[tuple, str] = dict(recorded)
    for p in todo:
        if settings.baseline == "previous":
            base = earlier(p, known)
        elif settings.baseline == "last_pass":
            base = earlier(p, [q for q in known if decided.get(_key(q)) in REFERENCE])
        else:
            base = _fixed(settings, p)
            base = base if _key(base) in index and _key(base) != _key(p) else None
        b = index.get(_key(base)) if base is not None else None
        gated = gate_frames.gate_table(values, rules, baseline=b, candidate=index[_key(p)],
                                       alpha=settings.alpha, mode=settings.mode)
        decision = G.decide(gated[G.OUTCOME])
        decided[_key(p)] = decision
        shared = b is not None and _shares_none(values, b, index[_key(p)])
        gates.append(PartitionGate(p, base, decision, gated, shared))
    found = GateRun(tuple(gates), settings, tuple(parts))
    version = _write(spark, config, found, table() if rows is None else rows,
                     job_run_id=job_run_id, predicate=predicate)
    return GateRun(found.gates, settings, tuple(parts), version)


def _sources(table: Callable[[], DataFrame], rows: DataFrame | None,
             sides: Sequence[Partition], held: set[tuple]) -> DataFrame:
    """The per-query rows of ``sides``: the job's ``rows`` for the partitions it holds
    (``held``), the ``table``'s for the others (read only for them)."""
    if rows is None:
        return table()
    outside = [s for s in sides if _key(s) not in held]
    if not outside:
        return rows
    written = table()
    wanted = [c for c in rows.columns if c in written.columns]
    earlier = written.where(reduce(or_, [side_condition(s) for s in outside]))
    return rows.select(*wanted).unionByName(earlier.select(*wanted))


def _shares_none(values: pd.DataFrame, baseline: int, candidate: int) -> bool:
    side = values[gate_frames.SIDE]
    return not (set(values.loc[side == baseline, S.QUERY_ID])
                & set(values.loc[side == candidate, S.QUERY_ID]))


def _write(spark: SparkSession, config: Config, found: GateRun, per_query: DataFrame, *,
           job_run_id: str, predicate: str | None) -> int | None:
    """The gate rows as one replacement of the gate table; its version."""
    parts = list(found.columns)
    settings = found.settings
    now = datetime.now(UTC)
    rows = []
    for g in found.gates:
        label = partition_label(g.baseline, parts) if g.baseline else None
        for r in G.records(g.rows):
            rows.append((*[g.partition[c] for c in parts], *r, label, g.decision,
                         float(settings.alpha), settings.mode, now, job_run_id))
    text = T.StructType([T.StructField(c, T.StringType()) for c in parts])
    fields = [per_query.schema[c] for c in parts]
    schema = gate_table.gate_schema(text.fields)
    frame = local_frame(spark, rows, schema)
    typed = frame.select(*[F.col(f.name).cast(f.dataType).alias(f.name) for f in fields],
                         *[c for c in frame.columns if c not in parts])
    path, table = gate_location(config)
    if not (path or table):
        raise ConfigError("no place for the gate table: set output.gate_path")
    written = gate_table.write_gate(
        typed, path=path, table=table, partition_fields=fields,
        output_partition_columns=list(config.output_partition_columns), predicate=predicate,
        job_run_id=job_run_id)
    return written.version



def log_mlflow(found: GateRun, *, run_id: str) -> None:
    """The job's gate in its MLflow run: the tag ``releval.gate`` (the job's decision) and
    each row's estimate and bounds, under the run partition's prefix."""
    from releval.io.mlflow_log import log_gate, partition_prefix

    records = []
    for g in found.gates:
        prefix = partition_prefix({c: g.partition[c] for c in found.columns})
        records += [{**dict(zip(G.COLUMNS, r, strict=True)), "_prefix": prefix}
                    for r in G.records(g.rows)]
    log_gate(records, found.decision, run_id=run_id)
