"""Judgment coverage in the job: Judged@k for every cutoff, the unjudged share, the warning."""

from __future__ import annotations

import pytest

from releval.config import config_from_dict
from releval.core import columns as S
from releval.core.measures import parse_measures
from releval.core.measures.judged import with_judged_measures
from releval.errors import ConfigError
from releval.evaluation.summary import UnjudgedRate, render_lines
from releval.job import pipeline


def test_judged_measures_are_added_for_every_cutoff():
    measures = parse_measures(["P@10,nDCG@5,AP,Judged@10,R(rel=2)@20"])
    keys = [m.key for m in with_judged_measures(measures, relevance_level=1)]
    # Judged@10 is already there; AP has no cutoff
    assert keys == ["P@10", "nDCG@5", "AP", "Judged@10", "R(rel=2)@20", "Judged@5", "Judged@20"]


def test_render_warns_above_the_share_and_notes_binary_labels():
    rates = [
        UnjudgedRate(partition=(("run_id", "a"),), cutoff=10, share=0.35, queries=4),
        UnjudgedRate(partition=(("run_id", "a"),), cutoff=5, share=0.1, queries=4),
    ]
    lines = render_lines(
        rates, warning_share=0.2, binary_labels=True, measures=parse_measures(["nDCG@10"])
    )
    text = "\n".join(lines)
    assert "range over 1 run partition(s)): top 5 10.0%, top 10 35.0%" in text
    assert "WARNING: top 10 more than 20% unjudged in 1 of 1 run partition(s) " \
        "(worst: run_id=a, 35.0%)" in text
    assert "top 5 more" not in text
    assert "nDCG adds little over Recall and AP" in text
    quiet = render_lines(
        rates, warning_share=0.5, binary_labels=True, measures=parse_measures(["P@10"])
    )
    assert not any("WARNING" in line or "note:" in line for line in quiet)
    assert len(quiet) == 1


def test_render_collapses_many_partitions_to_one_warning_per_cutoff():
    # 8 dates x 3 systems x k in (5, 10, 50): 72 (partition, k) pairs; the share is
    # 0.1 * system + 0.011 * day + 0.05 * (k index). k = 5: s2 all 8 days (0.2 + 0.011 d),
    # s1 at most 0.188: 8 of 24, worst s2 day 8 0.288; lowest s0 day 1 0.011.
    rates = [
        UnjudgedRate(partition=(("system", f"s{s}"), ("date", f"2026-12-0{d}")), cutoff=k,
                     share=0.1 * s + 0.011 * d + 0.05 * i, queries=100)
        for s in range(3) for d in range(1, 9) for i, k in enumerate((5, 10, 50))
    ]
    lines = render_lines(rates, warning_share=0.2, binary_labels=False, measures=())
    warnings = [line for line in lines if "WARNING" in line]
    assert len(lines) == 5 and len(warnings) == 3
    assert "top 5 1.1%-28.8%" in lines[0] and "range over 24 run partition(s)" in lines[0]
    assert warnings[0].endswith(
        "top 5 more than 20% unjudged in 8 of 24 run partition(s) "
        "(worst: system=s2, date=2026-12-08, 28.8%)")
    # k = 10: s2 all 8 days; s1 0.15 + 0.011 d > 0.2 for d >= 5 (4 days): 12
    assert "top 10 more than 20% unjudged in 12 of 24" in warnings[1]
    # k = 50: s2 and s1 (0.2 + 0.011 d) all 8 days, s0 at most 0.288 - 0.1: 16; worst 0.388
    assert "top 50 more than 20% unjudged in 16 of 24" in warnings[2]
    assert "(worst: system=s2, date=2026-12-08, 38.8%)" in warnings[2]


def test_config_keys():
    base = {"run": {"path": "r", "format": "trec"}, "qrels": {"path": "q", "format": "trec"}}
    config = config_from_dict(
        {**base, "evaluation": {"judged_only": True, "unjudged_warning_share": 0.5}}
    )
    assert config.evaluation.judged_only is True
    assert config.evaluation.unjudged_warning_share == 0.5
    assert config_from_dict(base).evaluation.unjudged_warning_share == 0.2
    with pytest.raises(ConfigError, match="unjudged_warning_share"):
        config_from_dict({**base, "evaluation": {"unjudged_warning_share": 1.5}})
    with pytest.raises(ConfigError, match="judged_only must be true or false"):
        config_from_dict({**base, "evaluation": {"judged_only": "yes"}})
    assert config_from_dict(base).evaluation.negative_labels == "unjudged"
    judged = config_from_dict({**base, "evaluation": {"negative_labels": "judged"}})
    assert judged.evaluation.negative_labels == "judged"
    with pytest.raises(
        ConfigError, match=r"evaluation.negative_labels = 'ignore'; expected one of "
        r"\['unjudged', 'judged'\]"
    ):
        config_from_dict({**base, "evaluation": {"negative_labels": "ignore"}})


def test_job_summary_reports_the_unjudged_share(spark, tmp_path):
    # q1 ranks A X Y (X, Y unjudged); q2 ranks B C, C labelled -1: in the pool, not judged
    # (the default rule). Binary labels.
    (tmp_path / "run.txt").write_text(
        "q1 Q0 A 1 3.0 sys\nq1 Q0 X 2 2.0 sys\nq1 Q0 Y 3 1.0 sys\n"
        "q2 Q0 B 1 2.0 sys\nq2 Q0 C 2 1.0 sys\n"
    )
    (tmp_path / "qrels.txt").write_text("q1 0 A 1\nq2 0 B 1\nq2 0 C -1\n")
    config = config_from_dict(
        {
            "run": {"path": str(tmp_path / "run.txt"), "format": "trec",
                    "partition_columns": ["run_id"]},
            "qrels": {"path": str(tmp_path / "qrels.txt"), "format": "trec"},
            "evaluation": {"measures": ["P@1", "nDCG@2[judged]"]},
            "output": {"per_query_path": str(tmp_path / "pq"),
                       "aggregate_path": str(tmp_path / "agg")},
        }
    )
    summary = pipeline.run(spark, config)
    shares = {r.cutoff: (r.share, r.queries) for r in summary.unjudged}
    # Judged@1: q1 1/1, q2 1/1 -> unjudged 0; Judged@2: q1 1/2 (A, X), q2 1/2 (B, C) -> 1 - 0.5
    assert shares == {1: (0.0, 2), 2: (pytest.approx(0.5), 2)}
    text = summary.render()
    assert "range over 1 run partition(s)): top 1 0.0%, top 2 50.0%" in text
    assert "WARNING: top 2 more than 20% unjudged in 1 of 1 run partition(s) " \
        "(worst: run_id=sys, 50.0%)" in text
    assert "WARNING: top 1" not in text
    assert "all qrels labels are binary" in text
    aggregate = {
        (r[S.MEASURE_KEY], r[S.JUDGED_ONLY]): r[S.VALUE]
        for r in pipeline.read_aggregate(spark, config).where(f"{S.AVERAGING} = 'macro'").collect()
    }
    assert aggregate[("Judged@2", False)] == pytest.approx(0.5)
    # nDCG@2[judged]: q1 condensed list is A alone -> 1; q2 B alone (C dropped) -> 1
    assert aggregate[("nDCG@2[judged]", True)] == pytest.approx(1.0)
    # both tables record the rule on every row
    for table in (pipeline.read_per_query(spark, config), pipeline.read_aggregate(spark, config)):
        assert {r[0] for r in table.select(S.NEGATIVE_LABELS).distinct().collect()} == {"unjudged"}
