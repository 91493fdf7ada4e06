"""The interactions input (the search log): one row per shown result of one search, checked.

A row with a ``position`` is an impression (its ``clicked`` is 0, 1 or a count). A row
without one and with ``clicked`` > 0 is a click on a document of its search: its clicks (and
dwell) go to the best-placed impression of that document in the search, or, when the search
did not show it, it is quarantined as ``click_not_shown``. Every row is used or quarantined
with the first reason that applies (:data:`releval.checks.interaction_reasons.INTERACTION_REASONS`
after ``missing_doc_id``/``missing_query_id``); :attr:`CheckedInteractions.accounts` checks
``input = used + quarantined`` per run partition. See docs/clicks.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    DataType,
    DoubleType,
    FloatType,
    IntegralType,
    NumericType,
    StringType,
)

from releval.checks.accounts import InputAccount, account_ledger
from releval.checks.interaction_reasons import (
    CLICK_NOT_SHOWN,
    CONFLICTING_QUERY_ID,
    DUPLICATE_POSITION,
    INTERACTIONS,
    INVALID_CLICK,
    INVALID_DWELL,
    INVALID_POSITION,
    MISSING_POSITION,
    MISSING_SEARCH_ID,
    MISSING_TEAM,
    NEGATIVE_DWELL,
)
from releval.checks.rules import blank, first_reason, meta_columns
from releval.checks.split import quarantined
from releval.core import columns as S
from releval.core.columns import REASON, RECEIVED, USED
from releval.errors import ConfigError

#: The columns every interactions input has; ``dwell`` and ``team`` are optional.
REQUIRED = (S.SEARCH_ID, S.QUERY_ID, S.DOC_ID, S.POSITION, S.CLICKED)
_RAW = "_raw_"
CLICK_ROW = "_click_row"
#: The column of :func:`search_rules`' searches holding a search's used impressions.
IMPRESSIONS = "impressions"
_INT_MAX = 2**31 - 1
SEARCH_KEY = "_search_key"
#: The columns that key a row's query for :mod:`releval.checks.query_means`: an integer
#: query id and 0, or two hashes (xxhash64 and murmur3) of its string (``with_query_ids``
#: maps them back).
QUERY_KEY = ("_qk1", "_qk2")
#: The columns that key a row's query id and doc id as their strings do: the column itself
#: when an integer or a string, else its string (``impression_cells`` groups by them).
ID_KEYS = ("_query_id_key", "_doc_id_key")


@dataclass(frozen=True)
class CheckedInteractions:
    """A checked interactions input; the plans of its used rows, labelled rows and quarantine
    are built on first use (most readers need one of them, or none).

    Attributes:
        partition_columns: the run partition columns.
        name: the input's name in messages and accounts.
        typed: every row, typed, with the per-row reason (the search rules not applied)
            and the keys :mod:`releval.checks.query_means` groups by.
        integer_queries: the query ids are integers (:data:`QUERY_KEY` is the id).
        optional: the optional columns the rows carry (``dwell``, ``team``).
        raw_columns: the input's columns releval reads, as the quarantine keeps them.
    """

    partition_columns: tuple[str, ...]
    name: str
    typed: DataFrame
    integer_queries: bool = False
    optional: tuple[str, ...] = ()
    raw_columns: tuple[str, ...] = ()

    @cached_property
    def labelled(self) -> DataFrame:
        """Every row, typed, with ``_reason`` (null: used); what :meth:`counts` reads."""
        return labelled_rows(self.typed, self.partition_columns)

    @cached_property
    def rows(self) -> DataFrame:
        """The used impressions: the partition columns, ``search_id``, ``query_id``,
        ``doc_id`` (strings), ``position`` (int), ``clicked`` (long: the row's clicks plus
        those of its click rows), and ``dwell`` (double) and ``team`` (string) when given."""
        parts = self.partition_columns
        used = search_rules(self.typed, parts).select(
            *parts, S.SEARCH_ID, F.explode(IMPRESSIONS).alias("_i"))
        return used.select(*parts, S.SEARCH_ID, *[F.col(f"_i.{c}").alias(c) for c in (
            S.QUERY_ID, S.DOC_ID, S.POSITION, S.CLICKED, *self.optional)])

    @cached_property
    def quarantine(self) -> DataFrame:
        """The rejected rows in the quarantine's shape
        (:data:`releval.io.tables.QUARANTINE_SCHEMA`), ``input`` = ``interactions``."""
        return quarantined(self.labelled.withColumn("_source", F.coalesce(
            F.col("_source"), F.lit(self.name))), input_name=INTERACTIONS,
            partition_columns=self.partition_columns, raw_columns=list(self.raw_columns),
            number_lines=None)

    def counts(self) -> dict[tuple[str | None, ...], dict[str, int]]:
        """Per run partition (values as strings): ``received``, ``used`` and the rows per
        reason code (one small job)."""
        parts = [F.col(c).cast("string").alias(c) for c in self.partition_columns]
        out: dict[tuple[str | None, ...], dict[str, int]] = {}
        for r in self.labelled.groupBy(*parts, REASON).count().collect():
            key = tuple(r[c] for c in self.partition_columns)
            tags = out.setdefault(key, {RECEIVED: 0, USED: 0})
            tags[RECEIVED] += int(r["count"])
            tag = r[REASON] or USED
            tags[tag] = tags.get(tag, 0) + int(r["count"])
        return out

    @cached_property
    def accounts(self) -> InputAccount:
        """``input = used + quarantined`` per run partition (raises AccountingError if not)."""
        return account_ledger(INTERACTIONS, self.name, self.counts(),
                              partition_columns=self.partition_columns,
                              used_as=" (impressions and the clicks folded into them)")


def interaction_names(df: DataFrame, columns: Mapping[str, str] | None, *, name: str,
                      partition_by: Sequence[str] = ()) -> dict[str, str]:
    """releval's interaction column -> ``df``'s, for the columns ``df`` has (``dwell`` and
    ``team`` only when present or mapped).

    Raises:
        ConfigError: an unknown key, a required (or mapped) column ``df`` lacks, or a
            partition column that is also an interaction column.
    """
    given = dict(columns or {})
    unknown = sorted(set(given) - set(S.INTERACTION_COLUMNS))
    if unknown:
        raise ConfigError(f"{name}: unknown key(s) {unknown} in columns; releval's interaction "
                          f"columns are {list(S.INTERACTION_COLUMNS)} (map them to the "
                          f"DataFrame's columns {df.columns})")
    names = {c: given.get(c, c) for c in S.INTERACTION_COLUMNS
             if c in REQUIRED or c in given or c in df.columns}
    absent = [c for c in names if names[c] not in df.columns]
    if absent:
        raise ConfigError(f"{name}: no column {names[absent[0]]!r} ({absent[0]}); it has "
                          f"columns {df.columns} (columns= maps releval's names to yours)")
    for p in partition_by:
        if p not in df.columns:
            raise ConfigError(f"{name}: no partition column {p!r}; it has columns {df.columns}")
        if p in names.values() or p in S.INTERACTION_COLUMNS:
            raise ConfigError(f"{name}: partition column {p!r} is an interaction column")
    return names


def _bad_number(value: Column, kind: DataType, *, integer: bool, minimum: float) -> Column:
    if isinstance(kind, IntegralType):
        return value.isNull() | (value < minimum) | (value > _INT_MAX)
    d = value if isinstance(kind, DoubleType | FloatType) else value.try_cast("double")
    bad = d.isNull() | F.isnan(d) | (F.abs(d) == float("inf")) | (d < minimum)
    return bad | (d != F.floor(d)) | (d > _INT_MAX) if integer else bad


def _blank(value: Column, kind: DataType) -> Column:
    if isinstance(kind, NumericType):
        return value.isNull()
    return blank(value if isinstance(kind, StringType) else value.cast("string"))


def _row_reasons(names: dict[str, str], types: Mapping[str, DataType], *,
                 team: bool) -> tuple[Column, Column]:
    """The per-row reason (a projection) and whether the row is a click row; a rule on a
    numeric column is a comparison, not a cast (the same outcome)."""
    col = {c: F.col(n) for c, n in names.items()}
    kind = {c: types[n] for c, n in names.items()}
    no_position = col[S.POSITION].isNull()
    dwell_rules: list[tuple[Column, str]] = []
    if S.DWELL in col:
        dwell = (col[S.DWELL] if isinstance(kind[S.DWELL], DoubleType | FloatType | IntegralType)
                 else col[S.DWELL].try_cast("double"))
        infinite = (F.lit(False) if isinstance(kind[S.DWELL], IntegralType)
                    else dwell.isNull() | F.isnan(dwell) | (F.abs(dwell) == float("inf")))
        dwell_rules = [(col[S.DWELL].isNotNull() & infinite, INVALID_DWELL),
                       (dwell < 0, NEGATIVE_DWELL)]
    clicks = (col[S.CLICKED] if isinstance(kind[S.CLICKED], NumericType)
              else col[S.CLICKED].try_cast("double"))
    team_rule = ([(~no_position & _blank(col[S.TEAM], kind[S.TEAM]), MISSING_TEAM)]
                 if team else [])
    reason = first_reason(
        (_blank(col[S.SEARCH_ID], kind[S.SEARCH_ID]), MISSING_SEARCH_ID),
        (_blank(col[S.DOC_ID], kind[S.DOC_ID]), "missing_doc_id"),
        (_bad_number(col[S.CLICKED], kind[S.CLICKED], integer=True, minimum=0), INVALID_CLICK),
        *dwell_rules,
        (no_position & (clicks == 0), MISSING_POSITION),
        (~no_position & _bad_number(col[S.POSITION], kind[S.POSITION], integer=True,
                                    minimum=1), INVALID_POSITION),
        (~no_position & _blank(col[S.QUERY_ID], kind[S.QUERY_ID]), "missing_query_id"),
        *team_rule,
    )
    return reason, no_position


def _key(value: Column, kind: DataType) -> Column:
    """A column that groups rows as ``value`` cast to a string does: ``value`` itself when
    the cast is one to one (a string or an integer), else the cast."""
    return value if isinstance(kind, StringType | IntegralType) else value.cast("string")


def _query_key(value: Column, kind: DataType) -> list[Column]:
    """:data:`QUERY_KEY` of a query id: an integer id and 0, else two hashes (xxhash64 and
    murmur3) of its string."""
    if isinstance(kind, IntegralType):
        return [value.cast("long"), F.lit(0)]
    return text_query_key(value.cast("string"))


def text_query_key(text: Column) -> list[Column]:
    """:data:`QUERY_KEY` of a query id given as a string: its xxhash64 and murmur3 hashes."""
    return [F.xxhash64(text), F.hash(text)]


def check_interactions(
    df: DataFrame,
    columns: Mapping[str, str] | None = None,
    *,
    name: str = INTERACTIONS,
    partition_by: Sequence[str] | str = (),
    team: bool = False,
) -> CheckedInteractions:
    """The interactions input's rows checked: used (clicks folded into impressions) or
    quarantined with a reason.

    Args:
        df: one row per shown result (and, optionally, click rows without a position).
        columns: releval's column -> ``df``'s (``search_id``, ``query_id``, ``doc_id``,
            ``position``, ``clicked``, ``dwell``, ``team``); unnamed ones are read as named.
        name: names the input in errors, accounts and the quarantine's ``source``.
        partition_by: the run partition columns (system, date, an A/B bucket).
        team: the rows must carry a team (interleaving): a blank one is ``missing_team``.

    Returns:
        The clean rows, the quarantine and the accounts (:class:`CheckedInteractions`).

    Raises:
        ConfigError: an unknown ``columns`` key or a missing column (naming ``name``).

    Example:
        >>> log = spark.createDataFrame([("s1", "q", "a", 1, 1), ("s1", "q", "b", 1, 0)],
        ...     "sid string, query_id string, doc_id string, position int, clicked int")
        >>> checked = check_interactions(log, {"search_id": "sid"})
        >>> checked.rows.count(), checked.accounts.quarantined
        (0, {'duplicate_position': 2})
    """
    parts = (partition_by,) if isinstance(partition_by, str) else tuple(partition_by)
    names = interaction_names(df, columns, name=name, partition_by=parts)
    if team and S.TEAM not in names:
        raise ConfigError(f"{name}: no column 'team' (which ranker contributed each result); "
                          f"it has columns {df.columns}")
    types = {f.name: f.dataType for f in df.schema.fields}
    reason, click_row = _row_reasons(names, types, team=team)
    col = {c: F.col(n) for c, n in names.items()}
    kind = {c: types[n] for c, n in names.items()}
    numeric = {c: isinstance(kind[c], NumericType) for c in (S.POSITION, S.CLICKED)}
    optional = [c for c in (S.DWELL, S.TEAM) if c in names]
    typed = df.select(
        *[F.col(p) for p in parts],
        *meta_columns(df),
        col[S.SEARCH_ID].cast("string").alias(S.SEARCH_ID),
        col[S.QUERY_ID].cast("string").alias(S.QUERY_ID),
        col[S.DOC_ID].cast("string").alias(S.DOC_ID),
        (col[S.POSITION] if numeric[S.POSITION] else col[S.POSITION].try_cast("double"))
        .try_cast("int").alias(S.POSITION),
        (col[S.CLICKED] if numeric[S.CLICKED] else col[S.CLICKED].try_cast("double"))
        .try_cast("long").alias(S.CLICKED),
        *([col[S.DWELL].try_cast("double").alias(S.DWELL)] if S.DWELL in names else []),
        *([col[S.TEAM].cast("string").alias(S.TEAM)] if S.TEAM in names else []),
        *[col[c].cast("string").alias(_RAW + c) for c in names],
        click_row.alias(CLICK_ROW),
        reason.alias(REASON),
        _key(col[S.SEARCH_ID], kind[S.SEARCH_ID]).alias(SEARCH_KEY),
        *[c.alias(q) for c, q in zip(_query_key(col[S.QUERY_ID], kind[S.QUERY_ID]), QUERY_KEY,
                                     strict=True)],
        *[_key(col[c], kind[c]).alias(k) for c, k in zip((S.QUERY_ID, S.DOC_ID), ID_KEYS,
                                                          strict=True)],
    )
    return CheckedInteractions(partition_columns=parts, name=name, typed=typed,
                               integer_queries=isinstance(kind[S.QUERY_ID], IntegralType),
                               optional=tuple(optional), raw_columns=tuple(names))


def _shown_at(position: Column) -> Column:
    return F.size(F.filter("_positions", lambda p: p == position))


def _grouped(typed: DataFrame, key: Sequence[str], fields: Sequence[str]) -> DataFrame:
    """Per search (``key``): its clean rows (``fields``), whether they conflict, their
    positions, the impressions kept (at a position shown once: all, when no position
    repeats)."""
    impressions = F.filter("_rows", lambda r: ~r[CLICK_ROW])
    step = typed.where(F.col(REASON).isNull()).groupBy(*key).agg(
        F.collect_list(F.struct(*fields)).alias("_rows")
    ).select(
        *key, "_rows",
        (F.size(F.array_distinct(F.transform(impressions, lambda r: r[S.QUERY_ID]))) > 1)
        .alias("_conflict"),
        F.transform(impressions, lambda r: r[S.POSITION]).alias("_positions"),
    )
    unique = F.size(F.array_distinct("_positions")) == F.size("_positions")
    return step.withColumn("_kept", F.when(unique, impressions).otherwise(F.filter(
        "_rows", lambda r: ~r[CLICK_ROW] & (_shown_at(r[S.POSITION]) == 1))))


def labelled_rows(typed: DataFrame, parts: tuple[str, ...]) -> DataFrame:
    """Every row of ``typed`` with ``_reason`` set by the per-row rules and then by the
    search rules (:func:`search_rules`): its rows disagree on the query id, two impressions
    share a position, a click on a document it did not show. One aggregation per search of
    its clean rows, every column kept."""
    key = [*parts, S.SEARCH_ID]
    step = _grouped(typed, key, [c for c in typed.columns if c not in key])

    def reason(r: Column) -> Column:
        return (F.when(F.col("_conflict"), F.lit(CONFLICTING_QUERY_ID))
                .when(~r[CLICK_ROW] & (_shown_at(r[S.POSITION]) > 1), F.lit(DUPLICATE_POSITION))
                .when(r[CLICK_ROW] & ~F.exists("_kept", lambda k: k[S.DOC_ID] == r[S.DOC_ID]),
                      F.lit(CLICK_NOT_SHOWN)))

    ruled = step.select(*key, F.explode(F.transform(
        "_rows", lambda r: r.withField(REASON, reason(r)))).alias("_r"))
    return typed.where(F.col(REASON).isNotNull()).unionByName(ruled.select(*key, "_r.*"))


def search_rules(typed: DataFrame, parts: tuple[str, ...], *,
                 every: bool = False) -> DataFrame:
    """The used impressions of each search, among the rows the per-row rules passed: none
    when its rows disagree on the query id, none at a position two impressions share; each
    click row's clicks and dwell folded into the document's best impression (a click on a
    document it did not show goes nowhere: :func:`labelled_rows` gives its reason).

    One aggregation per search (its clean rows as an array, each rule an array expression
    evaluated once per search), no window and no join.

    Returns:
        One row per search with a used impression (``every``: per search with a clean row):
        the partition columns, ``search_id`` and :data:`IMPRESSIONS` (the used impressions,
        clicks folded in).
    """
    key = [*parts, S.SEARCH_ID]
    narrow = [c for c in (S.QUERY_ID, S.DOC_ID, S.POSITION, S.CLICKED, S.DWELL, S.TEAM,
                          CLICK_ROW, *QUERY_KEY) if c in typed.columns]
    step = _grouped(typed, key, narrow).withColumn("_clicks", F.filter(
        "_rows", lambda r: r[CLICK_ROW] & F.exists("_kept", lambda k: k[S.DOC_ID] == r[S.DOC_ID])))

    def folded(k: Column) -> Column:
        first = F.array_min(F.transform(F.filter("_kept", lambda o: o[S.DOC_ID] == k[S.DOC_ID]),
                                        lambda o: o[S.POSITION]))
        mine = F.filter("_clicks", lambda c: c[S.DOC_ID] == k[S.DOC_ID])
        best = k[S.POSITION] == first
        total = F.aggregate(mine, F.lit(0).cast("long"), lambda a, c: a + c[S.CLICKED])
        out = k.withField(S.CLICKED, k[S.CLICKED] + F.when(best, total).otherwise(F.lit(0)))
        if S.DWELL in typed.columns:
            dwell = F.array_max(F.transform(mine, lambda c: c[S.DWELL]))
            out = out.withField(S.DWELL, F.when(best, F.greatest(k[S.DWELL], dwell))
                                .otherwise(k[S.DWELL]))
        return out

    # click rows are folded in (their searches only: most logs have none)
    used = F.when(F.col("_conflict"), F.filter("_kept", lambda k: F.lit(False))).when(
        F.size("_clicks") == 0, F.col("_kept")).otherwise(F.transform("_kept", folded))
    searches = step.select(*key, used.alias(IMPRESSIONS))
    return searches if every else searches.where(F.size(IMPRESSIONS) > 0)
