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
        (MINIMAL + "[answers]\npath = 'a'\nformat = 'json'\n",
         "answers.format = 'json'; expected one of ['delta', 'parquet', 'csv']"),
        (MINIMAL + "[answers]\nformat = 'csv'\n", "[answers] needs exactly one of 'path' or"),
        (MINIMAL + "[answers]\ntable = 't'\nformat = 'csv'\n", "format must be delta"),
        (MINIMAL + "[answers]\npath = 'a'\ncorrect_at = 50\n",
         "answers.correct_at = 50.0; expected an answer score between 0 and 1"),
        (MINIMAL + "[answers]\npath = 'a'\nscore = 's'\n", "job.toml:8: unknown key 'score' in [answers]"),
        (MINIMAL + "[answers]\ntable = 'db.a`b'\n", "answers.table = 'db.a`b' is not a table name"),
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


def test_answers_from_the_file_and_the_command_line(tmp_path):
    config = load_config(write(tmp_path, MINIMAL + "[answers]\npath = 'a.csv'\nformat = 'csv'\n"))
    answers = config.answers
    assert (answers.query_id, answers.answer_score, answers.correct_at, answers.retrieved_by,
            answers.retrieved_at) == ("query_id", "answer_score", 0.5, None, 1.0)
    assert load_config(write(tmp_path, MINIMAL)).answers is None
    base = ["evaluate", "--run", "r.txt", "--qrels", "q.txt"]
    assert config_from_args(_parser().parse_args(base), str(tmp_path)).answers is None
    (tmp_path / "delta" / "_delta_log").mkdir(parents=True)
    for path, expected in [("a.csv", "csv"), ("a.parquet", "parquet"), (str(tmp_path), "parquet"),
                           (str(tmp_path / "delta"), "delta")]:
        cli = config_from_args(_parser().parse_args([*base, "--answers", path]), str(tmp_path))
        assert cli.answers.format == expected, path
    cli = config_from_args(_parser().parse_args(
        [*base, "--answers", "a.csv", "--correct-at", "0.7", "--retrieved-by", "nDCG@10",
         "--retrieved-at", "0.5"]), str(tmp_path))
    assert (cli.answers.correct_at, cli.answers.retrieved_by, cli.answers.retrieved_at) == (
        0.7, "nDCG@10", 0.5)
    assert cli.output.attribution_path == str(tmp_path / "attribution")


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(tmp_path / "nope.toml")


def test_the_corrections_the_config_accepts_are_the_ones_the_kernel_has():
    from releval.config import CORRECTIONS
    from releval.stats import kernel

    assert set(CORRECTIONS) == set(kernel.CORRECTIONS)


def test_spark_remote_is_a_connect_url_and_wins_over_spark_remote_env(tmp_path, monkeypatch):
    from releval.runtime.session import remote_url

    config = load_config(write(tmp_path, MINIMAL + "[spark]\nremote = 'sc://spark-host:15002'\n"))
    assert config.spark.remote == "sc://spark-host:15002"
    monkeypatch.setenv("SPARK_REMOTE", "sc://other:1")
    assert remote_url(config.spark) == "sc://spark-host:15002"
    assert remote_url(load_config(write(tmp_path, MINIMAL)).spark) == "sc://other:1"
    monkeypatch.delenv("SPARK_REMOTE")
    assert remote_url(load_config(write(tmp_path, MINIMAL)).spark) is None
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, MINIMAL + "[spark]\nremote = 'localhost:15002'\n"))
    assert str(info.value).endswith("job.toml: spark.remote = 'localhost:15002'; expected a "
                                    "Spark Connect URL, sc://host:port (e.g. sc://localhost:15002)")
