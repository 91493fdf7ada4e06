"""Partition selection and replaceWhere predicates (pure Python, no Spark)."""

from __future__ import annotations

import pytest

from releval.errors import ConfigError
from releval.evaluation.partitions import (
    KeyFilter,
    PartitionSelection,
    parse_partition_arg,
    parse_selection,
    partitions_predicate,
    pending_partitions,
    selection_predicate,
)

RUN_PARTS = ("system", "date")


def test_partition_arg_forms() -> None:
    assert parse_partition_arg("date=2026-11-29") == KeyFilter("date", values=("2026-11-29",))
    assert parse_partition_arg("system=bm25,dense") == KeyFilter("system", values=("bm25", "dense"))
    assert parse_partition_arg("date=2026-11-27..2026-11-29") == KeyFilter(
        "date", low="2026-11-27", high="2026-11-29"
    )


@pytest.mark.parametrize("bad", ["date", "=x", "date=", "date=..2026-11-29", "date=2026-11-29..2026-11-27"])
def test_malformed_partition_args_are_errors(bad: str) -> None:
    with pytest.raises(ConfigError, match="--partition"):
        parse_partition_arg(bad)


def test_selection_predicate_combines_keys_with_and() -> None:
    selection = parse_selection(
        ["system=bm25,dense"], date_from="2026-11-27", date_to="2026-11-28",
        run_partition_columns=RUN_PARTS,
    )
    assert selection_predicate(selection) == (
        "(`system` IN ('bm25', 'dense')) AND (`date` >= '2026-11-27' AND `date` <= '2026-11-28')"
    )
    assert not selection.is_all


def test_no_option_selects_everything() -> None:
    selection = parse_selection([], run_partition_columns=RUN_PARTS)
    assert selection == PartitionSelection()
    assert selection.is_all and selection_predicate(selection) is None


def test_unknown_key_names_the_run_partition_columns() -> None:
    with pytest.raises(ConfigError, match=r"\['day'\] are not run partition columns.*'system', 'date'"):
        parse_selection(["day=2026-11-29"], run_partition_columns=RUN_PARTS)


def test_quotes_in_values_are_escaped() -> None:
    assert KeyFilter("system", values=("o'brien",)).predicate() == "`system` = 'o\\'brien'"


def test_partitions_predicate_leads_with_output_partition_columns() -> None:
    # two run partitions on one date: the output (partitioned by date) conjunct lists the date
    # once, then the exact (system, date) pairs follow.
    parts = [{"system": "dense", "date": "2026-11-28"}, {"system": "bm25", "date": "2026-11-28"}]
    assert partitions_predicate(parts, output_partition_columns=["date"]) == (
        "(`date` = '2026-11-28') AND "
        "((`date` = '2026-11-28' AND `system` = 'bm25') OR (`date` = '2026-11-28' AND `system` = 'dense'))"
    )
    with pytest.raises(ValueError):
        partitions_predicate([], output_partition_columns=["date"])


def test_pending_is_available_minus_done() -> None:
    available = [{"system": "a", "date": "1"}, {"system": "b", "date": "1"}, {"system": "a", "date": "2"}]
    done = [{"date": "1", "system": "a"}]
    # sorted by (date, system): b on date 1 before a on date 2
    assert pending_partitions(available, done) == [
        {"system": "b", "date": "1"},
        {"system": "a", "date": "2"},
    ]


def test_partitions_of_files_come_from_their_hive_folders():
    from releval.job.batch import partitions_of_files

    root = "file:/data/date=2020-01-01/run_log"  # a folder named like a partition above the table
    files = [
        f"{root}/system=bm25/date=2026-11-27/part-0.parquet",
        f"{root}/system=bm25/date=2026-11-27/part-1.parquet",
        f"{root}/system=a%3Ab%2Fc/date=__HIVE_DEFAULT_PARTITION__/part-0.parquet",
        f"{root}/system=dense/date=2026-11-28/part-0.parquet",
    ]
    # distinct, unescaped (%3A is ':', %2F is '/'), the null folder as None, sorted by the
    # columns' names (date, then system), nulls last
    assert partitions_of_files(files, ["system", "date"]) == [
        {"system": "bm25", "date": "2026-11-27"},
        {"system": "dense", "date": "2026-11-28"},
        {"system": "a:b/c", "date": None},
    ]
    # a file not under one folder per partition column (column mapping's random prefixes):
    # unknown, the caller reads the partition columns instead
    assert partitions_of_files([f"{root}/Ab/part-0.parquet"], ["system", "date"]) is None
