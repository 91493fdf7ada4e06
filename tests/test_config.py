"""Strict configuration: every mistake names the file, the section and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from releval.cli import _parser, config_from_args
from releval.config import load_config
from releval.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]

MINIMAL = """
[run]
path = "r"
[qrels]
path = "q"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "job.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", ["local.toml", "production.example.toml"])
def test_shipped_configs_load(name):
    config = load_config(ROOT / "conf" / name)
    assert config.evaluation.measures


def test_defaults(tmp_path):
    config = load_config(write(tmp_path, MINIMAL))
    assert config.run.rank_by == "score"
    assert config.evaluation.relevance_level == 1
    assert config.evaluation.missing_queries == "zero"
    assert (config.comparison.power, config.comparison.effect_of_interest) == (0.8, 0.02)
    chosen = load_config(write(tmp_path, MINIMAL + "[comparison]\npower = 0.9\n"
                                                   "effect_of_interest = 0.05\n"))
    assert (chosen.comparison.power, chosen.comparison.effect_of_interest) == (0.9, 0.05)


@pytest.mark.parametrize(
    "text, message",
    [
        (MINIMAL + "[evaluation]\nmeasure = ['P@5']\n", "job.toml:7: unknown key 'measure' in [evaluation]"),
        (MINIMAL + "[extra]\n", "job.toml:6: unknown section [extra]"),
        ("[run]\npath='r'\n", "missing section [qrels]"),
        (MINIMAL.replace('path = "r"', 'path = "r"\nrank_by = "position"'), "run.rank_by"),
        (MINIMAL + "[evaluation]\nrelevance_level = '2'\n", "evaluation.relevance_level must be an integer"),
        (MINIMAL.replace('path = "q"', 'path = "q"\ntable = "t"'), "exactly one of 'path' or 'table'"),
        (MINIMAL + "[evaluation]\nmissing_queries = 'drop'\n", "evaluation.missing_queries"),
        (MINIMAL + "[evaluation]\nnegative_labels = 'skip'\n",
         "evaluation.negative_labels = 'skip'; expected one of ['unjudged', 'judged']"),
        ("[run\n", "not valid TOML"),
        (MINIMAL + "[comparison]\npower = 1\n",
         "comparison.power = 1.0; expected a probability strictly between 0 and 1"),
        (MINIMAL + "[comparison]\npower = 0.0\n", "comparison.power = 0.0; expected"),
        (MINIMAL + "[comparison]\neffect_of_interest = -0.01\n",
         "comparison.effect_of_interest = -0.01; expected a difference > 0"),
        (MINIMAL + "[comparison]\neffect_of_interest = 0\n",
         "comparison.effect_of_interest = 0.0; expected"),
        (MINIMAL + "[comparison]\npower = '80%'\n", "comparison.power must be a number"),
        # evaluation.engine (it chose the SQL engine) is refused, naming the Arrow engine
        (MINIMAL + "[evaluation]\nengine = 'sql'\n",
         "job.toml:7: evaluation.engine was removed: the Arrow engine"),
    ],
)
def test_invalid_configs_name_the_key(tmp_path, text, message):
    with pytest.raises(ConfigError, match=None) as info:
        load_config(write(tmp_path, text))
    assert message in str(info.value)
    assert "job.toml" in str(info.value)


def test_negative_labels_from_the_command_line(tmp_path):
    base = ["evaluate", "--run", "r.txt", "--qrels", "q.txt"]
    default = config_from_args(_parser().parse_args(base), str(tmp_path))
    assert default.evaluation.negative_labels == "unjudged"
    judged = config_from_args(
        _parser().parse_args([*base, "--negative-labels", "judged"]), str(tmp_path)
    )
    assert judged.evaluation.negative_labels == "judged"
    with pytest.raises(SystemExit):  # argparse: invalid choice, exit 2
        _parser().parse_args([*base, "--negative-labels", "skip"])


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(tmp_path / "nope.toml")


def test_the_corrections_the_config_accepts_are_the_ones_the_kernel_has():
    from releval.config import CORRECTIONS
    from releval.stats import kernel

    assert set(CORRECTIONS) == set(kernel.CORRECTIONS)
