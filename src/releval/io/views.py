"""Wide views over the long output tables, for the people who query the warehouse.

The per-query and aggregate tables are long: one row per measure. The views pivot them
to one row per run partition (and query, for the per-query view) with one column per
measure key, named so that SQL users can type it without quoting (:func:`column_name`:
``nDCG@10`` -> ``ndcg_at_10``). The aggregate view holds the macro value of each measure
(the sum for the counts ``num_ret``, ``num_rel``, ``num_rel_ret``) and its confidence
interval (``<column>_ci_low``, ``<column>_ci_high``). See docs/warehouse.md.

* Catalog tables (``output.per_query_table`` / ``output.aggregate_table``): every job
  creates or replaces the views ``<table>_wide`` (:func:`refresh_views`), over the union of
  the measure keys in the table: exactly the job's own keys when it replaced the whole
  table, else the job's keys and those the view already had (kept in the view's
  ``releval.measure_keys`` property), and one small scan of the aggregate table's keys
  when the view does not exist yet (once; 2 to 5 Spark jobs, all but one Delta's reading
  of the table's log). No data is materialized.
* Path tables (the default): the job runs nothing more; ``releval views`` prints the views'
  SQL for Spark (over ``delta.`path```) or DuckDB (over ``delta_scan('path')``).

The views are plain conditional aggregations (``MAX(CASE WHEN measure_key = ...)``), so the
same statement runs on Spark SQL and on DuckDB.
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
from releval.io.writers import absolute
from releval.runtime.profile import Phases

DIALECTS = ("spark", "duckdb")
#: A view's name: its table's name (catalog) or folder name (path) with this suffix.
VIEW_SUFFIX = "_wide"
#: View property listing the measure keys the view has columns for (a JSON list).
KEYS_PROPERTY = "releval.measure_keys"
CI_LOW_SUFFIX = "_ci_low"
CI_HIGH_SUFFIX = "_ci_high"

_KEY = re.compile(
    r"(?P<name>[A-Za-z][A-Za-z0-9_]*)(?:\(rel=(?P<rel>-?\d+)\))?(?:@(?P<cutoff>\d+))?"
    r"(?P<judged>\[judged\])?"
)


def _key_parts(measure_key: str) -> tuple[str, int | None, int | None, bool]:
    match = _KEY.fullmatch(measure_key)
    if not match:
        raise MeasureError(
            f"measure_key {measure_key!r} has no column name: expected NAME[(rel=N)][@k][[judged]]"
        )
    rel = int(match["rel"]) if match["rel"] is not None else None
    cutoff = int(match["cutoff"]) if match["cutoff"] is not None else None
    return match["name"], rel, cutoff, match["judged"] is not None


def column_name(measure_key: str) -> str:
    """The view column of a measure key: lower case, letters, digits and underscores.

    ``NAME[(rel=N)][@k][[judged]]`` becomes ``name[_rel_N][_at_k][_judged]`` (a negative
    level ``N`` is written ``minus_N``): ``nDCG@10`` -> ``ndcg_at_10``, ``P@5`` -> ``p_at_5``,
    ``P(rel=2)@5`` -> ``p_rel_2_at_5``, ``nDCG@10[judged]`` -> ``ndcg_at_10_judged``,
    ``AP`` -> ``ap``, ``nDCG_exp@10`` -> ``ndcg_exp_at_10``, ``num_rel_ret`` -> ``num_rel_ret``.

    No measure name ends in ``_rel_N``, ``_at_k`` or ``_judged`` and no two differ only in
    case (tests/test_warehouse.py checks the registry), so distinct keys get distinct names.

    Raises:
        MeasureError: the key does not follow the measure syntax.
    """
    name, rel, cutoff, judged = _key_parts(measure_key)
    parts = [name.lower()]
    if rel is not None:
        parts.append(f"rel_{rel}" if rel >= 0 else f"rel_minus_{-rel}")
    if cutoff is not None:
        parts.append(f"at_{cutoff}")
    if judged:
        parts.append("judged")
    return "_".join(parts)


def sort_keys(measure_keys: Iterable[str]) -> list[str]:
    """Distinct measure keys in reading order: by name, level, cutoff (as a number), judged."""

    def order(key: str) -> tuple:
        name, rel, cutoff, judged = _key_parts(key)
        return (name.lower(), rel is not None, rel or 0, cutoff is not None, cutoff or 0, judged)

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

    Spark gets the absolute path (Delta 4.0 refuses a relative one in ``delta.`...```);
    DuckDB the path as configured (a relative path resolves against the working folder).
    """
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
    """What a wide view is built from.

    Attributes:
        source: the long table as the dialect names it (:func:`table_source`).
        measure_keys: the measure keys to make columns of (any order; sorted in the view).
        partition_columns: the run's partition columns (the tables hold all of them).
        dialect: ``spark`` or ``duckdb``.
    """

    source: str
    measure_keys: tuple[str, ...]
    partition_columns: tuple[str, ...]
    dialect: str = "spark"


def per_query_view_sql(spec: ViewSpec) -> str:
    """The per-query view: one row per run partition and query, one column per measure.

    Columns: the partition columns, ``query_id``, one per measure key (its per-query value),
    ``job_run_id`` and ``negative_labels``.
    """
    keys = sort_keys(spec.measure_keys)
    group = [quote(c, spec.dialect) for c in spec.partition_columns] + [S.QUERY_ID]
    measures = [
        f"MAX(CASE WHEN {S.MEASURE_KEY} = {_literal(k, spec.dialect)} THEN {S.VALUE} END) "
        f"AS {column_name(k)}"
        for k in keys
    ]
    columns = [*spec.partition_columns, S.QUERY_ID, *(column_name(k) for k in keys),
               S.JOB_RUN_ID, S.NEGATIVE_LABELS]
    _check_columns(columns, {column_name(k): k for k in keys}, "per-query view")
    select = [*group, *measures, f"MAX({S.JOB_RUN_ID}) AS {S.JOB_RUN_ID}",
              f"MAX({S.NEGATIVE_LABELS}) AS {S.NEGATIVE_LABELS}"]
    return _render(select, spec.source, group)


def aggregate_view_sql(spec: ViewSpec) -> str:
    """The aggregate view: one row per run partition, one column per measure.

    Columns: the partition columns, ``num_queries``, one per measure key (the macro value;
    the sum for the counts), then ``<column>_ci_low`` and ``<column>_ci_high`` for each
    measure with a macro value, ``ci_method``, ``ci_level``, ``job_run_id`` and
    ``negative_labels``.
    """
    keys = sort_keys(spec.measure_keys)
    group = [quote(c, spec.dialect) for c in spec.partition_columns]
    values = [
        f"MAX(CASE WHEN {S.MEASURE_KEY} = {_literal(k, spec.dialect)} AND {S.AVERAGING} IN ('macro', 'sum') "
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
    fixed = [S.CI_METHOD, S.CI_LEVEL, S.JOB_RUN_ID, S.NEGATIVE_LABELS]
    columns = [
        *spec.partition_columns, S.NUM_QUERIES, *(column_name(k) for k in keys),
        *(column_name(k) + s for k in with_ci for s in (CI_LOW_SUFFIX, CI_HIGH_SUFFIX)), *fixed,
    ]
    _check_columns(columns, {column_name(k): k for k in keys}, "aggregate view")
    select = [*group, f"MAX({S.NUM_QUERIES}) AS {S.NUM_QUERIES}", *values, *intervals,
              *(f"MAX({c}) AS {c}" for c in fixed)]
    return _render(select, spec.source, group)


def _render(select: Sequence[str], source: str, group: Sequence[str]) -> str:
    lines = ",\n  ".join(select)
    return f"SELECT\n  {lines}\nFROM {source}\nGROUP BY {', '.join(group)}"


def view_name(*, path: str | None, table: str | None) -> str:
    """The view of a table: ``<table>_wide`` in the catalog, ``<folder name>_wide`` for a path
    (its characters other than letters, digits and underscores made underscores)."""
    if table:
        return table + VIEW_SUFFIX
    folder = os.path.basename((path or "").rstrip("/")) or "table"
    return re.sub(r"[^A-Za-z0-9_]", "_", folder) + VIEW_SUFFIX


def view_statements(
    config: Config, *, measure_keys: Iterable[str], dialect: str = "spark"
) -> list[str]:
    """``CREATE OR REPLACE [TEMP] VIEW`` for the per-query and the aggregate view of a config.

    Catalog tables get persistent views (with the ``releval.measure_keys`` property) named
    ``<table>_wide``; path tables temporary views (Spark) or views (DuckDB) named after
    their folders, ``per_query_wide`` and ``aggregate_wide`` for the default layout.
    """
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
    """The distinct measure keys of the aggregate table: one small scan of its ``measure_key``.

    The column is collected and deduplicated here: a ``distinct()`` would add a shuffle and,
    with adaptive execution, three more Spark jobs (measured on a warm table: 5 against 2,
    one of the 2 being Delta's own snapshot job; a table whose state Delta has not cached
    yet adds up to three of Delta's). The aggregate table has a few rows per run partition.
    """
    from releval.io.atomic import read_table

    out = config.output
    table = read_table(spark, path=out.aggregate_path, table=out.aggregate_table)
    return sort_keys(r[0] for r in table.select(S.MEASURE_KEY).collect())


def stored_keys(spark: SparkSession, view: str) -> list[str] | None:
    """The measure keys a releval view was built with (its property); None without one."""
    if not spark.catalog.tableExists(view):
        return None
    quoted = ".".join(quote(p, "spark") for p in view.split("."))
    # filtered here, not with .where: SHOW's rows come back without a Spark job, a filter
    # over them would run one
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
    """Create or replace the wide views of catalog output tables (the job's hook).

    Path tables: nothing is run (their views are documented; ``releval views`` prints them).

    Args:
        spark: the session.
        config: the job's config.
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
    """``releval views``: the views' statements over the measure keys in the aggregate table.

    Catalog tables (Spark): the views are created or replaced too. Path tables: the
    statements are only returned, to run in a Spark session (temporary views) or DuckDB.

    Raises:
        InputError: the aggregate table does not exist yet.
        ConfigError: DuckDB asked for catalog tables (it reads Delta tables by path).
    """
    from releval.io.atomic import table_exists, table_name

    out = config.output
    if dialect == "duckdb" and (out.per_query_table or out.aggregate_table):
        raise ConfigError(
            "DuckDB reads Delta tables by path (delta_scan('<folder>')), not from Spark's "
            "catalog: use --dialect spark, or a config with per_query_path / aggregate_path"
        )
    if not table_exists(spark, path=out.aggregate_path, table=out.aggregate_table):
        raise InputError(
            f"{table_name(out.aggregate_path, out.aggregate_table)} does not exist: run the "
            "evaluation job first (its measure keys are the views' columns)"
        )
    keys = table_measure_keys(spark, config)
    statements = view_statements(config, measure_keys=keys, dialect=dialect)
    if dialect == "spark":
        refresh_views(spark, config, measure_keys=keys, replaced_all=True)
    return ";\n\n".join(statements) + ";"
