"""The ``[clicks]`` section and ``[qrels] source = "clicks"``: strict, every mistake named."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from releval.config import load_config
from releval.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]

BASE = """
[run]
path = "r"
partition_columns = ["system", "date"]
[qrels]
path = "q"
[output]
per_query_path = "out/per_query"
"""
CLICKS = """
[clicks]
path = "log"
doc_id = "item_id"
"""


def load(tmp_path: Path, text: str):
    path = tmp_path / "job.toml"
    path.write_text(text)
    return load_config(path)


def test_the_sample_config_reads_the_sample_interactions():
    config = load_config(ROOT / "conf" / "local.toml")
    assert config.clicks is not None
    assert config.clicks.columns()["doc_id"] == "item_id"
    assert config.clicks.model == "pbm"
    assert config.qrels.source == "table"
    assert config.located("click_labels") == ("warehouse/releval/click_labels", None)


def test_defaults_and_the_column_mapping(tmp_path):
    config = load(tmp_path, BASE + CLICKS)
    clicks = config.clicks
    assert (clicks.model, clicks.min_impressions, clicks.grades, clicks.partition_by) == (
        "pbm", 10, None, ())
    # dwell and team are optional: unset, they are not mapped
    assert clicks.columns() == {"search_id": "search_id", "query_id": "query_id",
                                "doc_id": "item_id", "position": "position",
                                "clicked": "clicked"}
    # the click tables sit next to the per-query table unless placed
    assert config.located("position_bias")[0] == os.path.abspath("out/position_bias")


def test_grades_become_a_tuple_of_floats(tmp_path):
    config = load(tmp_path, BASE + CLICKS + "grades = [0.1, 0.3, 0.6]\n")
    assert config.clicks.grades == (0.1, 0.3, 0.6)


def test_qrels_from_clicks_read_the_click_labels_table(tmp_path):
    text = BASE.replace('path = "q"', 'source = "clicks"') + CLICKS
    config = load(tmp_path, text)
    assert config.qrels.source == "clicks"
    assert config.qrels.path == os.path.abspath("out/click_labels")
    assert (config.qrels.format, config.qrels.query_id, config.qrels.doc_id,
            config.qrels.relevance) == ("delta", "query_id", "doc_id", "relevance")


@pytest.mark.parametrize(
    "text, message",
    [
        (BASE + CLICKS + "model = 'ubm'\n",
         "clicks.model = 'ubm'; expected one of ['pbm', 'sdbn', 'dbn']"),
        (BASE + CLICKS + "min_impressions = 0\n", "clicks.min_impressions = 0; expected an integer >= 1"),
        (BASE + CLICKS + "min_impressions = '10'\n", "clicks.min_impressions must be an integer"),
        (BASE + CLICKS + "grades = [0.5, 0.3]\n", "strictly increasing"),
        (BASE + CLICKS + "grades = [0.2, 1.5]\n", "each above 0 and at most 1"),
        (BASE + CLICKS + "grades = [0.0, 0.5]\n", "each above 0 and at most 1"),
        (BASE + CLICKS + "grades = 'high'\n", "expected a list of attractiveness cut points"),
        (BASE + CLICKS + "measures = ['CTR@0']\n", "clicks.measures has ['CTR@0']"),
        (BASE + CLICKS + "measures = ['nDCG@10']\n", "expected online measures"),
        (BASE + CLICKS + "format = 'trec'\n", "clicks.format = 'trec'"),
        (BASE + CLICKS + "table = 't'\n", "[clicks] needs exactly one of 'path' or 'table'"),
        (BASE + "[clicks]\nquery_id = 'q'\n", "[clicks] needs exactly one of 'path' or 'table'"),
        (BASE + CLICKS + "search_id = 'item_id'\n", "[clicks] maps ['item_id'] to two keys"),
        (BASE + CLICKS + "partition_by = ['date', 'date']\n", "names a column twice"),
        (BASE + CLICKS + "partition_by = ['position']\n", "mapped as an interactions column"),
        (BASE + CLICKS + "partition_by = ['a-b']\n", "a partition column must be letters"),
        (BASE + CLICKS + "colour = 'x'\n", "unknown key 'colour' in [clicks]"),
        (BASE.replace('path = "q"', 'source = "clicks"'),
         "qrels.source = 'clicks' needs a [clicks] section"),
        (BASE.replace('path = "q"', 'path = "q"\nsource = "clicks"') + CLICKS,
         "drop ['qrels.path']"),
        (BASE.replace('path = "q"', 'source = "log"'),
         "qrels.source = 'log'; expected one of ['table', 'clicks']"),
        (BASE.replace('path = "q"', 'source = "clicks"') + CLICKS + "partition_by = ['date']\n",
         "needs qrels.filter picking one partition's labels, e.g. \"date = '...'\""),
    ],
)
def test_mistakes_name_the_key(tmp_path, text, message):
    with pytest.raises(ConfigError) as error:
        load(tmp_path, text)
    assert message in str(error.value)
    assert "job.toml" in str(error.value)


def test_a_partitioned_label_set_is_read_with_a_filter(tmp_path):
    text = (BASE.replace('path = "q"', 'source = "clicks"\nfilter = "date = \'2026-11-28\'"')
            + CLICKS + "partition_by = ['date']\n")
    config = load(tmp_path, text)
    assert config.qrels.filter == "date = '2026-11-28'"
    assert config.clicks.partition_by == ("date",)
