"""Wide views over the long output tables: one row per run partition (and query), one column
per measure key, named so SQL needs no quoting (``nDCG@10`` -> ``ndcg_at_10``).

Every job refreshes the views of catalog tables; ``releval views`` prints the SQL for path
tables, for Spark or DuckDB. See docs/warehouse.md.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pyspark.sql import SparkSession

from releval.config import Config
from releval.core import columns as S
from releval.core.measures import parse_measure
from releval.errors import ConfigError, InputError, MeasureError
from releval.io.atomic import read_table, table_exists, table_name
from releval.io.writers import absolute
from releval.runtime.profile import Phases

DIALECTS = ("spark", "duckdb")
#: A view's name: its table's name (catalog) or folder name (path) with this suffix.
VIEW_SUFFIX = "_wide"
#: View property listing the measure keys the view has columns for (a JSON list).
KEYS_PROPERTY = "releval.measure_keys"
CI_LOW_SUFFIX = "_ci_low"
CI_HIGH_SUFFIX = "_ci_high"
WEIGHTED_SUFFIX = "_weighted"
#: The aggregate view's ``ci_method`` when the run partition's intervals differ in method.
MIXED = "mixed"

_KEY = re.compile(
    r"(?P<name>[A-Za-z][A-Za-z0-9_]*)(?:\((?P<args>[^)]*)\))?(?:@(?P<cutoff>\d+|window))?"
    r"(?P<judged>\[judged\])?(?P<best>\[best\])?(?P<ties>\[ties\])?"
)
_ARG = re.compile(r"\s*(?P<name>[a-z]+)=(?P<value>-?\d+(?:\.\d+)?)\s*")


def _key_parts(
    measure_key: str,
) -> tuple[str, list[tuple[str, str]], int | str | None, tuple[str, ...]]:
    """(name, [(parameter, value as written)...], cutoff (k, ``window`` or None), suffixes)
    of a measure key; the suffixes are ``judged``, ``best`` and ``ties``, in key order."""
    match = _KEY.fullmatch(measure_key)
    args = [_ARG.fullmatch(a) for a in match["args"].split(",")] if match and match["args"] else []
    if not match or not all(args):
        raise MeasureError(
            f"measure_key {measure_key!r} has no column name: expected "
            "NAME[(rel=N, param=x...)][@k][[judged] or [best]][[ties]]"
        )
    cut = match["cutoff"]
    cutoff = None if cut is None else cut if cut == "window" else int(cut)
    pairs = [(a["name"], a["value"]) for a in args if a is not None]
    suffixes = tuple(s for s in ("judged", "best", "ties") if match[s] is not None)
    return match["name"], pairs, cutoff, suffixes


def column_name(measure_key: str) -> str:
    """The view column of a measure key: lower case, letters, digits and underscores.

    ``NAME[(rel=N, p=x)][@k][[judged]][[ties]]`` becomes
    ``name[_rel_N][_p_x][_at_k][_judged][_ties]`` (``[best]``: ``_best``; ``@window``:
    ``_at_window``)
    (``-`` as ``minus_``, ``.`` as ``_``); distinct keys get distinct names.

    Raises:
        MeasureError: the key does not follow the measure syntax.
    """
    name, args, cutoff, suffixes = _key_parts(measure_key)
    parts = [name.lower()]
    for arg, value in args:
        parts.append(f"{arg}_{value.replace('-', 'minus_').replace('.', '_')}")
    if cutoff is not None:
        parts.append(f"at_{cutoff}")
    parts.extend(suffixes)
    return "_".join(parts)


def sort_keys(measure_keys: Iterable[str]) -> list[str]:
    """Distinct measure keys in reading order: by name, level, cutoff (as a number), suffixes."""

    def order(key: str) -> tuple:
        name, args, cutoff, suffixes = _key_parts(key)
        values = [(arg, float(value)) for arg, value in args]
        k = cutoff if isinstance(cutoff, int) else 0  # k ascending, then the window
        return (name.lower(), values, cutoff is not None, isinstance(cutoff, str), k, suffixes)

    return sorted(set(measure_keys), key=order)


def _has_interval(measure_key: str) -> bool:
    """Whether the aggregate has a macro row (with an interval) for this key."""
    try:
        return "macro" in parse_measure(measure_key).spec.averaging
    except MeasureError:  # a measure this release does not know: keep the columns (nulls)
        return True


def quote(identifier: str, dialect: str) -> str:
    """An identifier quoted for the dialect (back-quotes in Spark, double quotes in DuckDB)."""
    mark = "`" if dialect == "spark" else '"'
    return mark + identifier.replace(mark, mark * 2) + mark


def _literal(text: str, dialect: str = "spark") -> str:
    """A string literal: Spark escapes with backslashes, DuckDB (standard SQL) doubles quotes."""
    if dialect == "spark":
        return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return "'" + text.replace("'", "''") + "'"


def table_source(*, path: str | None, table: str | None, dialect: str) -> str:
    """How a query names a Delta table: the catalog name, delta.`path` or delta_scan('path').
    Spark gets the absolute path (Delta refuses a relative one)."""
    if dialect not in DIALECTS:
        raise ConfigError(f"unknown SQL dialect {dialect!r}; expected one of {list(DIALECTS)}")
    if table:
        return ".".join(quote(part, dialect) for part in table.split("."))
    if dialect == "spark":
        return "delta." + quote(absolute(path or ""), "spark")
    return f"delta_scan({_literal(path or '', 'duckdb')})"


def _check_columns(columns: Sequence[str], keys_by_column: dict[str, str], view: str) -> None:
    """Refuse a view whose columns collide (SQL compares names without case)."""
    seen: dict[str, str] = {}
    for column in columns:
        what = keys_by_column.get(column)
        label = f"measure {what!r}" if what else f"column {column!r}"
        other = seen.get(column.lower())
        if other is not None:
            raise ConfigError(
                f"view {view}: {label} and {other} both make the column {column.lower()!r}; "
                "rename the partition column or drop one measure"
            )
        seen[column.lower()] = label


@dataclass(frozen=True)
class ViewSpec:
    """What a wide view is built from; ``source`` is the long table as :func:`table_source`
    names it."""

    source: str
    measure_keys: tuple[str, ...]
    partition_columns: tuple[str, ...]
    dialect: str = "spark"


def per_query_view_sql(spec: ViewSpec) -> str:
    """The per-query view: one row per run partition and query, one column per measure, and
    the query's ``weight`` and ``slices`` (the same on each of its rows)."""
    keys = sort_keys(spec.measure_keys)
    group = [quote(c, spec.dialect) for c in spec.partition_columns] + [S.QUERY_ID]
    measures = [
        f"MAX(CASE WHEN {S.MEASURE_KEY} = {_literal(k, spec.dialect)} THEN {S.VALUE} END) "
        f"AS {column_name(k)}"
        for k in keys
    ]
    fixed = [S.JOB_RUN_ID, S.NEGATIVE_LABELS, S.DEPTH, S.ANSWER_SCORE, S.WINDOW_SIZE, S.WEIGHT]
    columns = [*spec.partition_columns, S.QUERY_ID, *(column_name(k) for k in keys), *fixed,
               S.SLICES]
    _check_columns(columns, {column_name(k): k for k in keys}, "per-query view")
    # a map has no order (no MAX): any row's, as every row of the query holds the same
    select = [*group, *measures, *(f"MAX({c}) AS {c}" for c in fixed),
              f"ANY_VALUE({S.SLICES}) AS {S.SLICES}"]
    return _render(select, spec.source, group)


def _headline(measure_key: str) -> str:
    """The averagings a view column reads: the geometric mean of GMAP and GM_bpref, else the
    macro mean (the sum for the counts)."""
    averaging = parse_measure(measure_key).spec.averaging
    return "('geometric')" if "geometric" in averaging else "('macro', 'sum')"


def aggregate_view_sql(spec: ViewSpec) -> str:
    """The aggregate view: one row per run partition and slice value (``slice`` and
    ``slice_value`` null: over all queries), each measure's macro value (the sum for the
    counts), interval and, with a queries input's weight, weighted mean (``<column>_weighted``)."""
    keys = sort_keys(spec.measure_keys)
    group = [*(quote(c, spec.dialect) for c in spec.partition_columns), S.SLICE, S.SLICE_VALUE]
    values = [
        f"MAX(CASE WHEN {S.MEASURE_KEY} = {_literal(k, spec.dialect)} AND {S.AVERAGING} IN {_headline(k)} "
        f"THEN {S.VALUE} END) AS {column_name(k)}"
        for k in keys
    ]
    with_ci = [k for k in keys if _has_interval(k)]
    intervals = [
        f"MAX(CASE WHEN {S.MEASURE_KEY} = {_literal(k, spec.dialect)} AND {S.AVERAGING} = 'macro' "
        f"THEN {bound} END) AS {column_name(k)}{suffix}"
        for k in with_ci
        for bound, suffix in ((S.CI_LOW, CI_LOW_SUFFIX), (S.CI_HIGH, CI_HIGH_SUFFIX))
    ]
    weighted = [
        f"MAX(CASE WHEN {S.MEASURE_KEY} = {_literal(k, spec.dialect)} AND {S.AVERAGING} = "
        f"'weighted' THEN {S.VALUE} END) AS {column_name(k)}{WEIGHTED_SUFFIX}"
        for k in with_ci
    ]
    fixed = [S.CI_METHOD, S.CI_LEVEL, S.JOB_RUN_ID, S.NEGATIVE_LABELS, S.DEPTH]
    columns = [
        *spec.partition_columns, S.SLICE, S.SLICE_VALUE, S.NUM_QUERIES,
        *(column_name(k) for k in keys),
        *(column_name(k) + s for k in with_ci for s in (CI_LOW_SUFFIX, CI_HIGH_SUFFIX)),
        *(column_name(k) + WEIGHTED_SUFFIX for k in with_ci), *fixed,
    ]
    _check_columns(columns, {column_name(k): k for k in keys}, "aggregate view")
    # a measure's method can differ from another's (wilson for 0/1 values, t-clipped)
    # (the weighted rows' linearized method is not the macro values')
    macro_method = f"CASE WHEN {S.AVERAGING} <> 'weighted' THEN {S.CI_METHOD} END"
    method = (f"CASE WHEN COUNT(DISTINCT {macro_method}) > 1 THEN {_literal(MIXED, spec.dialect)} "
              f"ELSE MAX({macro_method}) END AS {S.CI_METHOD}")
    count = (f"MAX(CASE WHEN {S.AVERAGING} <> 'weighted' THEN {S.NUM_QUERIES} END) "
             f"AS {S.NUM_QUERIES}")
    select = [*group, count, *values, *intervals, *weighted,
              *(method if c == S.CI_METHOD else f"MAX({c}) AS {c}" for c in fixed)]
    return _render(select, spec.source, group)


def _render(select: Sequence[str], source: str, group: Sequence[str]) -> str:
    lines = ",\n  ".join(select)
    return f"SELECT\n  {lines}\nFROM {source}\nGROUP BY {', '.join(group)}"


def view_name(*, path: str | None, table: str | None) -> str:
    """The view of a table: ``<table>_wide`` in the catalog, ``<folder name>_wide`` for a path."""
    if table:
        return table + VIEW_SUFFIX
    folder = os.path.basename((path or "").rstrip("/")) or "table"
    return re.sub(r"[^A-Za-z0-9_]", "_", folder) + VIEW_SUFFIX


def view_statements(
    config: Config, *, measure_keys: Iterable[str], dialect: str = "spark"
) -> list[str]:
    """``CREATE OR REPLACE [TEMP] VIEW`` of a config's two views (persistent for catalog tables)."""
    keys = tuple(sort_keys(measure_keys))
    out = config.output
    statements = []
    for path, table, build in (
        (out.per_query_path, out.per_query_table, per_query_view_sql),
        (out.aggregate_path, out.aggregate_table, aggregate_view_sql),
    ):
        spec = ViewSpec(
            source=table_source(path=path, table=table, dialect=dialect),
            measure_keys=keys,
            partition_columns=tuple(config.run.partition_columns),
            dialect=dialect,
        )
        name = view_name(path=path, table=table)
        if table and dialect == "spark":
            target = ".".join(quote(p, dialect) for p in name.split("."))
            head = (f"CREATE OR REPLACE VIEW {target}\n"
                    f"TBLPROPERTIES ({_literal(KEYS_PROPERTY)} = {_literal(json.dumps(keys))})")
        elif dialect == "spark":
            head = f"CREATE OR REPLACE TEMP VIEW {quote(name, dialect)}"
        else:
            head = f"CREATE OR REPLACE VIEW {quote(name, dialect)}"
        statements.append(f"{head} AS\n{build(spec)}")
    return statements


def table_measure_keys(spark: SparkSession, config: Config) -> list[str]:
    """The aggregate table's distinct measure keys, deduplicated on the driver: ``distinct()``
    would add a shuffle, and the table has a few rows per run partition."""
    out = config.output
    table = read_table(spark, path=out.aggregate_path, table=out.aggregate_table)
    return sort_keys(r[0] for r in table.select(S.MEASURE_KEY).collect())


def stored_keys(spark: SparkSession, view: str) -> list[str] | None:
    """The measure keys a releval view was built with (its property); None without one."""
    if not spark.catalog.tableExists(view):
        return None
    quoted = ".".join(quote(p, "spark") for p in view.split("."))
    # filtered on the driver: SHOW needs no Spark job, a .where over it would run one
    rows = [r for r in spark.sql(f"SHOW TBLPROPERTIES {quoted}").collect()
            if r["key"] == KEYS_PROPERTY]
    return list(json.loads(rows[0]["value"])) if rows else None


def refresh_views(
    spark: SparkSession,
    config: Config,
    *,
    measure_keys: Iterable[str],
    replaced_all: bool,
    phases: Phases | None = None,
) -> list[str]:
    """Create or replace the wide views of catalog output tables; path tables run nothing.

    Args:
        measure_keys: the keys the job wrote.
        replaced_all: the job replaced the whole tables, so its keys are all the keys.
        phases: the job's phases (the work is the phase ``views``).

    Returns:
        The names of the views created or replaced.
    """
    out = config.output
    if not (out.per_query_table or out.aggregate_table):
        return []
    phases = phases if phases is not None else Phases(spark, announce=False)
    with phases.phase("views"):
        keys = set(measure_keys)
        if not replaced_all:
            view = view_name(path=None, table=out.aggregate_table or out.per_query_table)
            known = stored_keys(spark, view)
            keys |= set(known if known is not None else table_measure_keys(spark, config))
        statements = view_statements(config, measure_keys=keys, dialect="spark")
        names = []
        for statement, (path, table) in zip(
            statements,
            ((out.per_query_path, out.per_query_table), (out.aggregate_path, out.aggregate_table)),
            strict=True,
        ):
            if table:
                spark.sql(statement)
                names.append(view_name(path=path, table=table))
        return names


def views_command(spark: SparkSession, config: Config, *, dialect: str = "spark") -> str:
    """``releval views``: the views' SQL over the aggregate table's keys; makes catalog views too.

    Raises:
        InputError: the aggregate table does not exist yet.
        ConfigError: DuckDB asked for catalog tables (it reads Delta tables by path).
    """
    out = config.output
    if dialect == "duckdb" and (out.per_query_table or out.aggregate_table):
        raise ConfigError(
            "DuckDB reads Delta tables by path (delta_scan('<folder>')), not from Spark's "
            "catalog: use --dialect spark, or a config with per_query_path / aggregate_path"
        )
    if not table_exists(spark, path=out.aggregate_path, table=out.aggregate_table):
        raise _not_evaluated(table_name(out.aggregate_path, out.aggregate_table))
    keys = table_measure_keys(spark, config)
    statements = view_statements(config, measure_keys=keys, dialect=dialect)
    if dialect == "spark":
        refresh_views(spark, config, measure_keys=keys, replaced_all=True)
    return ";\n\n".join(statements) + ";"


def path_views_sql(config: Config, *, dialect: str) -> str:
    """The views' SQL over path tables, from the aggregate table's measure keys read with
    deltalake: no Spark.

    Raises:
        InputError: the aggregate table does not exist yet.
    """
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    path = config.output.aggregate_path or ""
    try:
        table = DeltaTable(path)
    except TableNotFoundError:
        raise _not_evaluated(table_name(path, None)) from None
    keys = set(table.to_pyarrow_table(columns=[S.MEASURE_KEY])[S.MEASURE_KEY].to_pylist())
    statements = view_statements(config, measure_keys=sort_keys(keys), dialect=dialect)
    return ";\n\n".join(statements) + ";"


def _not_evaluated(name: str) -> InputError:
    return InputError(f"{name} does not exist: run the evaluation job first (its measure keys "
                      "are the views' columns)")
