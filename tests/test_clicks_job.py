"""The batch job's ``[clicks]`` section on a small simulated log: the click_labels and
position_bias tables (schema version, lineage, idempotent re-runs, ``--pending``), the
interactions' quarantine and accounts, and ``[qrels] source = "clicks"``."""

from __future__ import annotations

import dataclasses

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from support.batch_support import config_at, read, write_config

from releval.clicks.batch import run_job_with_clicks
from releval.config.clicks import ClicksSettings, qrels_from_clicks
from releval.core import columns as S
from releval.evaluation.partitions import PartitionSelection
from releval.io.atomic import table_schema_version
from releval.job.lineage import run_log_location
from releval.job.sample import SampleShape, write_sample
from releval.job.sample_clicks import true_examination

pytestmark = pytest.mark.slow  # whole batch jobs in this process

SHAPE = SampleShape(queries=30, docs_per_query=20, judged_per_query=10, corpus=2000,
                    dates=("2026-11-22", "2026-11-23"))
#: rows appended to the log, each quarantined: a negative dwell, and two results at one
#: position of one search (both rows are quarantined: which one was shown is unknown)
BAD = [("bad-1", "q00001", "d000001", 1, 1, -3.0, "bm25", "2026-11-22"),
       ("bad-2", "q00001", "d000001", 1, 0, None, "bm25", "2026-11-22"),
       ("bad-2", "q00001", "d000002", 1, 0, None, "bm25", "2026-11-22")]


@pytest.fixture(scope="module")
def job(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("clicks_job")
    run, qrels, log = (str(folder / n) for n in ("search_log", "qrels", "interactions"))
    write_sample(spark, run_path=run, qrels_path=qrels, interactions_path=log, shape=SHAPE)
    logged = read(spark, log)
    rows = logged.count()
    spark.createDataFrame(BAD, logged.schema).write.format("delta").mode("append").save(log)
    base = config_at(write_config(folder, run, qrels))
    clicks = ClicksSettings(path=log, doc_id="item_id", dwell="dwell", min_impressions=5)
    config = dataclasses.replace(base, clicks=clicks, output=dataclasses.replace(
        base.output, quarantine_path=str(folder / "out" / "quarantine")))
    first = run_job_with_clicks(spark, config, job_run_id="first")
    return config, first, rows


def test_the_tables_are_written_with_their_lineage(spark, job):
    config, (result, clicks), rows = job
    labels_path, _ = config.located("click_labels")
    bias_path, _ = config.located("position_bias")
    labels, bias = read(spark, labels_path), read(spark, bias_path)
    assert table_schema_version(spark, path=labels_path, table=None) == "12"
    assert {r[0] for r in labels.select(S.JOB_RUN_ID).distinct().collect()} == {"first"}
    assert result.record.job_run_id == "first"
    # the interactions at the version the job read, the model, the source of each label
    (lineage,) = labels.select("interactions_source", "interactions_version", "model",
                               "label_source").distinct().collect()
    assert lineage["interactions_source"] == f"delta:{config.clicks.path}"
    assert lineage["interactions_version"] == 1  # the sample's write, then the bad rows
    assert (lineage["model"], lineage["label_source"]) == ("pbm", "clicks:pbm")
    assert labels.where(F.col("impressions") < 5).count() == 0  # min_impressions
    assert clicks.labels.rows == labels.count() > 0
    # the PBM's examination at the top positions, near the true k^-0.8 of the simulation
    pbm = {r["position"]: r["examination"] for r in bias.where("method = 'pbm_em'").collect()}
    assert pbm[1] == pytest.approx(1.0)
    for position in (2, 3, 5):
        assert pbm[position] == pytest.approx(true_examination()[position - 1], abs=0.1)


def test_every_interactions_row_is_accounted_and_the_bad_ones_quarantined(spark, job):
    config, (_, clicks), rows = job
    account = clicks.account
    # the sample's rows plus the 3 appended = used + 3 quarantined
    assert (account.input, account.used, account.quarantined_total) == (rows + 3, rows, 3)
    quarantine = read(spark, config.output.quarantine_path or "").where("input = 'interactions'")
    reasons = sorted((r[S.RAW][S.SEARCH_ID], r[S.REASON_CODE]) for r in quarantine.collect())
    assert reasons == [("bad-1", "negative_dwell"), ("bad-2", "duplicate_position"),
                       ("bad-2", "duplicate_position")]
    assert "interactions: " in "\n".join(clicks.render())


def test_a_rerun_replaces_the_same_rows_and_pending_computes_nothing(spark, job):
    config, (_, first), _ = job
    labels_path, _ = config.located("click_labels")
    before = sorted(tuple(r) for r in read(spark, labels_path).drop(S.JOB_RUN_ID).collect())
    _, again = run_job_with_clicks(spark, config, job_run_id="again")
    after = read(spark, labels_path)
    assert again.labels.version == first.labels.version + 1
    assert sorted(tuple(r) for r in after.drop(S.JOB_RUN_ID).collect()) == before
    assert {r[0] for r in after.select(S.JOB_RUN_ID).distinct().collect()} == {"again"}
    quarantine = read(spark, config.output.quarantine_path or "").where("input = 'interactions'")
    assert quarantine.count() == 3  # replaced, not appended
    _, pending = run_job_with_clicks(spark, config, PartitionSelection(pending=True),
                                     job_run_id="pending")
    assert pending is None  # the click tables hold their one label set


def test_qrels_from_clicks_evaluate_the_run_against_the_labels(spark, job, tmp_path):
    config, _, _ = job
    clicked = qrels_from_clicks(
        dataclasses.replace(config, qrels=dataclasses.replace(config.qrels, source="clicks",
                                                            filter=None)),
        {}, "test")
    labels_path, _ = config.located("click_labels")
    assert clicked.qrels.path == labels_path
    result, _ = run_job_with_clicks(spark, clicked, job_run_id="from-clicks")
    record = result.record
    # the run log names the click labels, at the version this job wrote, as the qrels
    assert record.qrels_source == f"delta:{labels_path}"
    history = spark.sql(f"DESCRIBE HISTORY delta.`{labels_path}`").where(
        "userMetadata = 'releval job_run_id=from-clicks'").collect()
    assert [h["version"] for h in history] == [record.qrels_version]
    log_path, _ = run_log_location(config)
    logged = read(spark, log_path).where("job_run_id = 'from-clicks'").first()
    assert '"source":"clicks"' in logged["config_json"]
    per_query = read(spark, config.output.per_query_path or "").where(
        "job_run_id = 'from-clicks' AND measure_key = 'P@5'")
    labelled = read(spark, labels_path).where("relevance >= 1").select(S.QUERY_ID).distinct()
    # the queries with a relevant click label have relevant documents in the qrels
    with_relevant = per_query.where("num_rel > 0").select(S.QUERY_ID).distinct()
    assert with_relevant.count() == labelled.count() > 0


def test_agree_clicks_compares_the_click_labels_with_the_human_qrels(spark, job):
    from releval.job import agree as agree_job  # noqa: PLC0415

    config, _, _ = job
    labels_path, _ = config.located("click_labels")
    report = agree_job.run(spark, config, clicks=True, with_run=True,
                           baseline={"system": "bm25", "date": "2026-11-22"})
    # the pairs both label: the click labels joined with the reference (v1) qrels
    human = read(spark, config.qrels.path or "").where(config.qrels.filter or "true")
    both = read(spark, labels_path).join(human, [S.QUERY_ID, S.DOC_ID])
    assert report.labels.pairs == both.count() > 0
    assert labels_path in report.other and "click_labels" not in report.reference
    assert report.labels.kappa.plain is not None
    # the run's 6 partitions (3 systems x 2 days) ordered under both label sets
    (ndcg,) = [m for m in report.systems.measures if m.measure_key == "nDCG@10"]
    assert len(ndcg.labels) == 6 and ndcg.tau_b is not None and ndcg.decisions == 5


def test_the_report_shows_the_position_bias_and_the_clicks_agreement(spark, job, tmp_path):
    from releval import report  # noqa: PLC0415
    from releval.job import agree as agree_job  # noqa: PLC0415

    config, _, _ = job
    agree_job.run(spark, config, clicks=True)
    page = report.build(config)
    assert 'id="clicks"' in page and "Position bias" in page
    assert 'alt="examination probability against position, one line per method"' in page
    labels_path, _ = config.located("click_labels")
    assert f"delta {labels_path}" in page  # the clicks agreement, by its second version


def test_releval_sql_reads_the_click_tables(job):
    from releval.sql import query  # noqa: PLC0415

    config, (_, clicks), _ = job
    found = query(config, "SELECT method, COUNT(*) AS n FROM position_bias GROUP BY method "
                          "ORDER BY method")
    # 10 positions per method: the sample's pages show 10 results
    assert found.to_dict("records") == [{"method": "intervention_harvesting", "n": 10},
                                        {"method": "pbm_em", "n": 10}]
    labels = query(config, "SELECT COUNT(*) AS n FROM click_labels")
    assert int(labels["n"].iloc[0]) == clicks.labels.rows
