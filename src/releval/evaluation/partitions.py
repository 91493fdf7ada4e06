"""Which run partitions a batch job evaluates, and the SQL predicates that select them.

A selection's predicate filters the run read and is the outputs' ``replaceWhere`` (so a
selected partition left without rows is cleared). Pure Python. See docs/batch_jobs.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from releval.core.columns import quote_identifier, quote_literal
from releval.errors import ComparisonError, ConfigError, InputError

#: The column ``--from`` / ``--to`` apply to unless ``--date-column`` says otherwise.
DEFAULT_DATE_COLUMN = "date"
#: A null partition value on the command line, in labels and the run log (Hive's spelling).
NULL_VALUE = "__HIVE_DEFAULT_PARTITION__"


def value_label(value: str | None) -> str:
    """A partition value as the command line spells it (:data:`NULL_VALUE` for null)."""
    return NULL_VALUE if value is None else value


def partition_sort_key(partition: Mapping[str, str | None]) -> list[tuple[str, bool, str]]:
    """A total order over partitions whose values may be null (nulls last per column)."""
    return [(k, v is None, v or "") for k, v in sorted(partition.items())]


@dataclass(frozen=True)
class KeyFilter:
    """One key's condition: a set of values, or an inclusive range (string order)."""

    key: str
    values: tuple[str | None, ...] = ()
    low: str | None = None
    high: str | None = None

    def predicate(self) -> str:
        """The SQL condition on this key (a ``None`` value: ``IS NULL``)."""
        col = quote_identifier(self.key)
        if self.values:
            present = sorted({v for v in self.values if v is not None})
            terms = []
            if len(present) == 1:
                terms.append(f"{col} = {quote_literal(present[0])}")
            elif present:
                terms.append(f"{col} IN ({', '.join(quote_literal(v) for v in present)})")
            if None in self.values:
                terms.append(f"{col} IS NULL")
            return terms[0] if len(terms) == 1 else "(" + " OR ".join(terms) + ")"
        parts = []
        if self.low is not None:
            parts.append(f"{col} >= {quote_literal(self.low)}")
        if self.high is not None:
            parts.append(f"{col} <= {quote_literal(self.high)}")
        return " AND ".join(parts)


@dataclass(frozen=True)
class PartitionSelection:
    """The run partitions to evaluate: all ``filters`` hold; ``pending``: the outputs lack them."""

    filters: tuple[KeyFilter, ...] = ()
    pending: bool = False

    @property
    def is_all(self) -> bool:
        """No restriction at all: the job evaluates (and replaces) everything."""
        return not self.filters and not self.pending

    def describe(self) -> str:
        """A one-line description, for the run log and messages."""
        text = " AND ".join(f.predicate() for f in self.filters) or "all partitions"
        return f"pending of {text}" if self.pending else text


def parse_partition_arg(arg: str) -> KeyFilter:
    """Parse ``KEY=VALUE``, ``KEY=V1,V2`` or ``KEY=LOW..HIGH``; ConfigError if malformed."""
    key, sep, value = arg.partition("=")
    key, value = key.strip(), value.strip()
    if not sep or not key or not value:
        raise ConfigError(
            f"--partition {arg!r}: expected KEY=VALUE, KEY=V1,V2 or KEY=LOW..HIGH "
            "(e.g. date=2026-11-29)"
        )
    if ".." in value:
        low, _, high = value.partition("..")
        if NULL_VALUE in (low.strip(), high.strip()):
            raise ConfigError(
                f"--partition {arg!r}: a range cannot end at the null value {NULL_VALUE}"
            )
        if not low.strip() or not high.strip():
            raise ConfigError(f"--partition {arg!r}: a range needs both ends, e.g. date=2026-11-27..2026-11-29")
        if low.strip() > high.strip():
            raise ConfigError(f"--partition {arg!r}: the range is empty ({low!r} > {high!r})")
        return KeyFilter(key=key, low=low.strip(), high=high.strip())
    values = tuple(
        None if v.strip() == NULL_VALUE else v.strip() for v in value.split(",") if v.strip()
    )
    return KeyFilter(key=key, values=values)


def parse_selection(
    partitions: Sequence[str] = (),
    *,
    date_from: str | None = None,
    date_to: str | None = None,
    date_column: str = DEFAULT_DATE_COLUMN,
    pending: bool = False,
    run_partition_columns: Sequence[str] = (),
) -> PartitionSelection:
    """Build the selection from the command line; ConfigError on a malformed argument or key.

    Args:
        date_from, date_to: ``--from`` and ``--to`` (inclusive), on ``date_column``.
        run_partition_columns: every key must be one of them.
    """
    filters = [parse_partition_arg(p) for p in partitions]
    if date_from is not None or date_to is not None:
        if date_from and date_to and date_from > date_to:
            raise ConfigError(f"--from {date_from} is after --to {date_to}")
        filters.append(KeyFilter(key=date_column, low=date_from, high=date_to))
    unknown = sorted({f.key for f in filters} - set(run_partition_columns))
    if unknown:
        raise ConfigError(
            f"partition key(s) {unknown} are not run partition columns "
            f"(run.partition_columns = {list(run_partition_columns)})"
        )
    return PartitionSelection(filters=tuple(filters), pending=pending)


def selection_predicate(selection: PartitionSelection) -> str | None:
    """The SQL predicate of the selection's filters, or None when there are none."""
    if not selection.filters:
        return None
    return " AND ".join(f"({f.predicate()})" for f in selection.filters)


def partitions_predicate(
    partitions: Sequence[Mapping[str, str | None]], *, output_partition_columns: Sequence[str]
) -> str:
    """A predicate for exactly the given run partitions (ValueError if there are none).

    ``col IN (...)`` on the output partition columns leads, so that Delta prunes files and
    its conflict checker sees the output partitions the write touches.
    """
    if not partitions:
        raise ValueError("partitions_predicate needs at least one partition")
    conjuncts = []
    for col in output_partition_columns:
        values = {p[col] for p in partitions}
        conjuncts.append(KeyFilter(key=col, values=tuple(values)).predicate())
    exact = " OR ".join(
        "(" + " AND ".join(KeyFilter(key=k, values=(v,)).predicate() for k, v in sorted(p.items())) + ")"
        for p in sorted(partitions, key=partition_sort_key)
    )
    return " AND ".join([*(f"({c})" for c in conjuncts), f"({exact})"])


def partition_label(partition: Mapping[str, str | None], columns: Sequence[str]) -> str:
    """``system=bm25/date=2026-11-29``: a partition as the run log lists it."""
    return "/".join(f"{c}={value_label(partition[c])}" for c in columns)


def pending_partitions(
    available: Sequence[Mapping[str, str | None]], done: Sequence[Mapping[str, str | None]]
) -> list[dict[str, str | None]]:
    """The ``available`` run partitions not in ``done``, sorted (null values last)."""
    seen = {tuple(sorted(p.items())) for p in done}
    result = [dict(p) for p in available if tuple(sorted(p.items())) not in seen]
    return sorted(result, key=partition_sort_key)


def parse_side(value: Mapping[str, str] | str, columns: Sequence[str], *,
               shared: Mapping[str, str] | None = None) -> dict[str, str]:
    """A run partition: a mapping or ``column=value[,column=value]`` over the per-query
    rows' ``columns``; with ``shared`` (the command line's ``--partition`` values, added to
    it) a value for each of ``columns``, in their order.

    Example:
        >>> parse_side("system=bm25", ["system", "date"], shared={"date": "2026-11-29"})
        {'system': 'bm25', 'date': '2026-11-29'}

    Raises:
        ConfigError: a malformed pair.
        InputError: a column the rows do not have.
        ComparisonError: with ``shared``, a column left unset.
    """
    if isinstance(value, str):
        pairs = [p.partition("=") for p in value.split(",") if p.strip()]
        if any(not sep or not k.strip() or not v.strip() for k, sep, v in pairs):
            raise ConfigError(f"{value!r}: expected column=value[,column=value] (e.g. system=bm25)")
        given = {k.strip(): v.strip() for k, _, v in pairs}
    else:
        given = {k: str(v) for k, v in value.items()}
    if shared is None:
        unknown = sorted(set(given) - set(columns))
        if unknown:
            raise InputError(f"{given}: no column(s) {unknown} in the per-query rows {list(columns)}")
        return given
    values = {**shared, **given}
    unknown = sorted(set(values) - set(columns))
    missing = [c for c in columns if c not in values]
    if unknown or missing:
        raise ComparisonError(
            f"{value!r} (with --partition {dict(shared)}) must name one run partition: "
            f"a value for each of {list(columns)}"
            + (f"; unknown {unknown}" if unknown else "")
            + (f"; missing {missing}" if missing else ""))
    return {c: values[c] for c in columns}


def shared_values(items: Sequence[str]) -> dict[str, str]:
    """The command line's ``--partition KEY=VALUE`` values every side shares.

    Example:
        >>> shared_values(["date=2026-11-29"])
        {'date': '2026-11-29'}
    """
    shared: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ComparisonError(f"--partition {item!r}: expected KEY=VALUE")
        shared[key.strip()] = value.strip()
    return shared
