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
        (["labels"], "give --events PATH, or both --ubi-queries and --ubi-events"),
        (["labels", "--ubi-queries", "q"], "give --events PATH, or both"),
        (["labels", "--events", "e", "--ubi-events", "v"], "give --events PATH, or both"),
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
