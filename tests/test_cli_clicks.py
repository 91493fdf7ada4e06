"""``releval clicks``: its arguments checked before Spark starts (exit 2, one line), and the
report's position-bias figure."""

from __future__ import annotations

import pandas as pd
import pytest

from releval.cli import main
from releval.report import figures
from releval.report.clicks import position_bias_figure


@pytest.mark.parametrize(
    "args, message",
    [
        (["labels"], "give --events PATH, both --ubi-queries and --ubi-events, or --config FILE"),
        (["labels", "--ubi-queries", "q"], "give --events PATH, both"),
        (["labels", "--events", "e", "--ubi-events", "v"], "give --events PATH, both"),
        (["labels", "--events", "e", "--config", "c.toml"], "give --events PATH, both"),
        (["labels", "--events", "e", "--column", "doc_id"], "--column 'doc_id': expected KEY=NAME"),
        (["labels", "--events", "e", "--column", "item=x"], "--column ['item']"),
        (["labels", "--events", "e", "--grades", "0.5,0.2"], "strictly increasing"),
        (["labels", "--events", "e", "--grades", "low"], "--grades 'low': expected numbers"),
        (["measures", "--events", "e", "--measures", "CTR@5,nDCG@10"],
         "clicks.measures has ['nDCG@10']"),
        (["labels", "--events", "e", "--partition-by", "position"],
         "mapped as an interactions column"),
    ],
)
def test_a_bad_command_line_is_one_line_and_exit_2(args, message, capsys):
    assert main(["clicks", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("releval: error: ") and message in err
    assert len(err.strip().splitlines()) == 1


def test_an_unknown_model_is_argparses_error(capsys):
    with pytest.raises(SystemExit) as done:
        main(["clicks", "labels", "--events", "e", "--model", "ubm"])
    assert done.value.code == 2
    assert "invalid choice: 'ubm'" in capsys.readouterr().err


def test_the_position_bias_figure_draws_each_method_with_its_interval():
    bias = pd.DataFrame({
        "position": [1, 2, 3, 1, 2, 3],
        "examination": [1.0, 0.6, 0.4, 1.0, 0.55, 0.42],
        "examination_low": [1.0, 0.55, 0.35, 1.0, 0.45, 0.3],
        "examination_high": [1.0, 0.65, 0.45, 1.0, 0.65, 0.5],
        "method": ["pbm_em"] * 3 + ["intervention_harvesting"] * 3,
    })
    fig = position_bias_figure(bias, [])
    (ax,) = fig.axes
    lines = {line.get_label(): list(line.get_ydata()) for line in ax.get_lines()}
    assert lines["PBM (EM, every impression)"] == [1.0, 0.6, 0.4]
    assert len(ax.collections) == 2  # one shaded interval per method
    assert figures.layout_problems(fig) == []
    assert position_bias_figure(bias.iloc[:0], []) is None


#: bucket A: search s1 shows a (no click) then b (clicked), s2 shows a then b, no click
LOG = [("A", "s1", "q", "a", 1, 0, "old"), ("A", "s1", "q", "b", 2, 1, "new"),
       ("A", "s2", "q", "a", 1, 0, "new"), ("A", "s2", "q", "c", 2, 0, "old")]
LOG_SCHEMA = ("bucket string, sid string, query_id string, doc_id string, position int, "
              "clicked int, team string")


@pytest.fixture(scope="module")
def log_file(spark, tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("clicks_cli") / "log.parquet")
    spark.createDataFrame(LOG, LOG_SCHEMA).write.parquet(path)
    return path


def printed(out: str, first: str) -> list[list[str]]:
    """The rows of the table whose header starts with ``first``, split on spaces."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first))
    rows = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        rows.append(line.split())
    return rows


def test_measures_prints_each_macro_mean_with_the_account(shared_session, log_file, capsys):
    args = ["clicks", "measures", "--events", log_file, "--column", "search_id=sid",
            "--partition-by", "bucket", "--measures", "CTR@5,Abandonment,ClickRR,Clicks"]
    assert main(args) == 0
    out = capsys.readouterr().out
    values = {r[1]: float(r[3]) for r in printed(out, "bucket")}
    # s1: a click at position 2, s2: none. CTR@5 = (1 + 0) / 2, Abandonment = (0 + 1) / 2,
    # ClickRR = (1/2 + 0) / 2, Clicks = (1 + 0) / 2
    assert values == {"CTR@5": 0.5, "Abandonment": 0.5, "ClickRR": 0.25, "Clicks": 0.5}
    assert "input 4 = used 4 + quarantined 0" in out


@pytest.mark.slow  # Spark over the log: the measures' test keeps the fast layer's case
def test_interleaving_prints_the_candidates_preference(shared_session, log_file, capsys):
    args = ["clicks", "interleaving", "--events", log_file, "--column", "search_id=sid",
            "--baseline", "old", "--candidate", "new"]
    assert main(args) == 0
    rows = printed(capsys.readouterr().out, "team")
    # s1: the one click is on new's result: a win; s2: no click, a tie: (1 - 0) / 2 searches
    assert {r[0]: float(r[3]) for r in rows} == {"new": 0.5, "old": 0.0}
    assert main(["clicks", "interleaving", "--events", log_file]) == 2
    assert "give --baseline TEAM and --candidate TEAM" in capsys.readouterr().err


@pytest.mark.slow  # Spark over the log: the measures' test keeps the fast layer's case
def test_measures_of_a_configs_clicks_section(shared_session, log_file, tmp_path, capsys):
    config = tmp_path / "job.toml"
    config.write_text(f"""
[run]
path = "r"
[qrels]
path = "q"
[clicks]
format = "parquet"
path = "{log_file}"
search_id = "sid"
partition_by = ["bucket"]
measures = ["ClickRR", "Abandonment"]
""")
    assert main(["clicks", "measures", "--config", str(config)]) == 0
    rows = printed(capsys.readouterr().out, "bucket")
    # [clicks] measures: ClickRR = (1/2 + 0) / 2, Abandonment = (0 + 1) / 2
    assert {r[1]: float(r[3]) for r in rows} == {"ClickRR": 0.25, "Abandonment": 0.5}
    # an option overrides the section's key
    assert main(["clicks", "measures", "--config", str(config), "--measures", "Clicks"]) == 0
    assert [r[1] for r in printed(capsys.readouterr().out, "bucket")] == ["Clicks"]
    config.write_text('[run]\npath = "r"\n[qrels]\npath = "q"\n')
    assert main(["clicks", "labels", "--config", str(config)]) == 2
    assert "no [clicks] section" in capsys.readouterr().err
