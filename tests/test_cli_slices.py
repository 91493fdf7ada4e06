"""``releval evaluate --queries --slices --weight`` as a user runs it (a real process), and
the ``[queries]`` config section."""

from __future__ import annotations

import pytest
from test_cli import run_cli

from releval.config import QueriesSource, config_from_dict
from releval.core import columns as S
from releval.errors import ConfigError

RUN = """q1 Q0 a 1 3.0 sys
q1 Q0 b 2 2.0 sys
q2 Q0 a 1 3.0 sys
q2 Q0 b 2 2.0 sys
q3 Q0 c 1 1.0 sys
"""
QRELS = """q1 0 a 1
q2 0 b 1
q3 0 c 1
"""
# q1 RR 1, q2 RR 1/2, q3 RR 1; q3 listed twice: quarantined, (unlisted)
QUERIES = """qid,segment,hits
q1,head,30
q2,tail,10
q3,tail,1
q3,tail,2
"""


@pytest.mark.slow  # a subprocess with its own JVM
def test_evaluate_with_queries_slices_and_weight(spark, tmp_path):
    for name, text in (("run.txt", RUN), ("qrels.txt", QRELS), ("queries.csv", QUERIES)):
        (tmp_path / name).write_text(text)
    out = tmp_path / "tables"
    result = run_cli("evaluate", "--run", str(tmp_path / "run.txt"),
                     "--qrels", str(tmp_path / "qrels.txt"), "--measures", "RR",
                     "--queries", str(tmp_path / "queries.csv"), "--query-id-column", "qid",
                     "--slices", "segment", "--weight", "hits", "--output", str(out),
                     "--master", "local[2]")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "queries input does not list: 1" in result.stdout
    aggregate = spark.read.format("delta").load(str(out / "aggregate"))
    rows = {(r[S.SLICE_VALUE], r[S.AVERAGING]): r[S.VALUE] for r in aggregate.where(
        "measure_key = 'RR'").collect()}
    assert rows[(None, "macro")] == pytest.approx((1 + 0.5 + 1) / 3, abs=1e-12)
    # q1 (1, w 30) and q2 (1/2, w 10): (30 + 5) / 40
    assert rows[(None, "weighted")] == pytest.approx(35 / 40, abs=1e-12)
    assert rows[("head", "macro")] == 1.0 and rows[("tail", "macro")] == 0.5
    assert rows[("(unlisted)", "macro")] == 1.0
    quarantine = spark.read.format("delta").load(str(out / "quarantine"))
    assert sorted(r[0] for r in quarantine.where("input = 'queries'").select(
        S.REASON_CODE).collect()) == ["duplicate_query_id", "duplicate_query_id"]


def test_slices_without_queries_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "r").write_text(RUN)
    result = run_cli("evaluate", "--run", str(tmp_path / "r"), "--qrels", str(tmp_path / "r"),
                     "--slices", "segment")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "releval: error: --slices and --weight name columns of --queries (one row per query); "
        "give --queries PATH"]


def test_the_queries_section_of_a_config():
    base = {"run": {"path": "r"}, "qrels": {"path": "q"}}
    config = config_from_dict({**base, "queries": {
        "path": "queries", "format": "csv", "query_id": "qid", "weight": "hits",
        "slices": ["segment", "locale"], "filter": "locale <> 'ja'"}})
    assert config.queries == QueriesSource(path="queries", format="csv", query_id="qid",
                                           weight="hits", slices=("segment", "locale"),
                                           filter="locale <> 'ja'")
    with pytest.raises(ConfigError, match=r"\[queries\] needs exactly one of 'path' or 'table'"):
        config_from_dict({**base, "queries": {"weight": "hits"}})
    with pytest.raises(ConfigError, match=r"queries.format = 'trec'"):
        config_from_dict({**base, "queries": {"path": "x", "format": "trec"}})
    with pytest.raises(ConfigError, match=r"queries.slices must be a list of strings"):
        config_from_dict({**base, "queries": {"path": "x", "slices": "segment"}})
