"""The click tables' schemas: documented in docs/warehouse.md column by column, with comments."""

from __future__ import annotations

import re
from pathlib import Path

from releval.io import click_tables as K
from releval.job.migrations import KINDS, STEPS

DOC = Path(__file__).resolve().parents[1] / "docs" / "warehouse.md"


def documented(heading: str) -> dict[str, tuple[str, str]]:
    """column -> (type, meaning) of the table after ``heading`` in docs/warehouse.md."""
    text = DOC.read_text().split(heading, 1)[1].split("\n\n|", 1)[1]
    rows = re.findall(r"^ *\| `([^`]+)` \| ([^|]+) \| ([^|]+) \|$", "|" + text.split("\n\n")[0],
                      flags=re.M)
    return {name: (type_.strip(), meaning.strip()) for name, type_, meaning in rows}


def test_every_column_is_documented_with_its_type_and_comment():
    for heading, schema, comments in (
            ("`click_labels`: one row", K.click_labels_schema([]), K.CLICK_LABELS_COMMENTS),
            ("`position_bias`: one row", K.position_bias_schema([]), K.POSITION_BIAS_COMMENTS)):
        docs = documented(heading)
        assert list(docs) == schema.names
        for field in schema.fields:
            assert docs[field.name] == (field.dataType.simpleString(), comments[field.name])


def test_the_click_tables_are_migrated_kinds_and_new_at_version_12():
    assert {"click_labels", "position_bias"} <= set(KINDS)
    assert STEPS["11"] == ({}, "12")
