"""releval.evaluate, releval.compare and releval.measures, used as a notebook uses them."""

from __future__ import annotations

import doctest
import math
import random
import re
from pathlib import Path

import numpy as np
import pytest
from delta.tables import DeltaTable
from pyspark.sql import functions as F
from scipy import stats
from statsmodels.stats.power import TTestPower

import releval
from releval import api, arguments, gating
from releval import result as result_module
from releval.core import columns as S
from releval.errors import AccountingError, ConfigError, InputError
from releval.evaluation import persisted
from releval.io import tables

pytrec_eval = pytest.importorskip("pytrec_eval")

README = Path(__file__).resolve().parents[1] / "README.md"

# the measures as a user writes them ("map" is AP's trec_eval name)
ASKED = ["P@5", "R@10", "nDCG@10", "map", "RR"]
# releval's measure key -> pytrec_eval's
ORACLE = {"P@5": "P_5", "R@10": "recall_10", "nDCG@10": "ndcg_cut_10", "AP": "map",
          "RR": "recip_rank"}


def random_inputs(seed: int) -> tuple[list[tuple], list[tuple]]:
    """Two systems, 30 queries: ties on scores, unjudged documents, graded labels, a judged
    query neither system retrieved."""
    rnd = random.Random(seed)
    run, qrels = [], []
    for q in range(30):
        docs = [f"d{q}_{d}" for d in range(15)]
        qrels += [(f"q{q}", d, rnd.choice([0, 0, 1, 2])) for d in rnd.sample(docs, 8)]
        for system in ("bm25", "dense"):
            for d in rnd.sample(docs, 12):
                run.append((system, f"q{q}", d, float(rnd.randint(1, 6))))
    qrels.append(("q_unretrieved", "x", 1))
    return run, qrels


def oracle(run: list[tuple], qrels: list[tuple], system: str) -> dict[str, dict[str, float]]:
    judged: dict[str, dict[str, int]] = {}
    for q, d, label in qrels:
        judged.setdefault(q, {})[d] = label
    ranked: dict[str, dict[str, float]] = {}
    for s, q, d, score in run:
        if s == system:
            ranked.setdefault(q, {})[d] = score
    evaluator = pytrec_eval.RelevanceEvaluator(
        judged, {"P.5", "recall.10", "ndcg_cut.10", "map", "recip_rank"})
    return evaluator.evaluate(ranked)


def test_a_notebook_evaluates_its_own_dataframes_with_string_measures(spark):
    run, qrels = random_inputs(7)
    run_df = spark.createDataFrame(run, "engine string, qid string, item string, relevance_score double")
    qrels_df = spark.createDataFrame(qrels, "topic string, item string, grade int")
    result = releval.evaluate(
        run_df, qrels_df, measures=ASKED, partition_by=["engine"],
        columns={"query_id": "qid", "doc_id": "item", "score": "relevance_score"},
        qrels_columns={"query_id": "topic", "doc_id": "item", "relevance": "grade"},
    )
    got = {(r["engine"], r[S.QUERY_ID], r[S.MEASURE_KEY]): r[S.VALUE]
           for r in result.per_query.collect()}
    compared = 0
    for system in ("bm25", "dense"):
        expected = oracle(run, qrels, system)
        for q in {q for q, _, _ in qrels}:
            for name, trec in ORACLE.items():
                # a judged query the system did not retrieve scores 0 (trec_eval -c)
                want = expected[q][trec] if q in expected else 0.0
                assert got[(system, q, name)] == pytest.approx(want, abs=1e-12), (system, q, name)
                compared += 1
    assert compared == 2 * 31 * len(ORACLE)
    assert result.accounts.run.input == len(run) and result.accounts.quarantined == 0
    # the tables' schemas, job_run_id null
    assert result.per_query.schema.names == tables.per_query_schema(
        [run_df.schema["engine"]]).names
    assert result.aggregate.schema.names == tables.aggregate_schema(
        [run_df.schema["engine"]]).names


def test_the_engine_merges_small_shuffle_partitions_into_few_python_tasks(spark):
    """A session with many shuffle partitions (a notebook's default is 200; 50 here): the
    engine's shuffle of 30 queries is merged by adaptive execution, so no stage runs 50
    tasks, each a Python worker's start; the values are the same, and the session's own
    setting for persisted plans is back after the evaluation."""
    run, qrels = random_inputs(7)
    run_df = spark.createDataFrame(run, "system string, query_id string, doc_id string, score double")
    qrels_df = spark.createDataFrame(qrels, "query_id string, doc_id string, relevance int")
    asked = {"spark.sql.shuffle.partitions": "50",
             "spark.sql.adaptive.coalescePartitions.initialPartitionNum": "50"}
    before = {key: spark.conf.get(key) for key in [*asked, persisted.MERGE_CACHED_PARTITIONS]}
    sc = spark.sparkContext
    result = None
    try:
        for key, value in asked.items():
            spark.conf.set(key, value)
        sc.setJobGroup("merged-partitions", "the engine's tasks")
        result = releval.evaluate(run_df, qrels_df, measures=["AP"], partition_by=["system"])
        merged = {r[S.MEASURE_KEY]: r[S.VALUE] for r in result.aggregate.collect()
                  if r["averaging"] == "macro" and r["system"] == "bm25"}
        tasks = [sc.statusTracker().getStageInfo(stage).numTasks
                 for job in sc.statusTracker().getJobIdsForGroup("merged-partitions")
                 for stage in sc.statusTracker().getJobInfo(job).stageIds
                 if sc.statusTracker().getStageInfo(stage) is not None]
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        for key, value in before.items():
            spark.conf.set(key, value)
        if result is not None:
            result.unpersist(blocking=True)
    assert tasks and max(tasks) < 50, tasks
    assert spark.conf.get(persisted.MERGE_CACHED_PARTITIONS) == before[persisted.MERGE_CACHED_PARTITIONS]
    expected = oracle(run, qrels, "bm25")
    judged = {q for q, _, _ in qrels}
    # AP's mean over the judged queries, an unretrieved one scoring 0
    mean_ap = sum(expected[q]["map"] if q in expected else 0.0 for q in judged) / len(judged)
    assert merged["AP"] == pytest.approx(mean_ap, abs=1e-12)


def test_compare_agrees_with_scipy_on_the_same_vectors(spark):
    run, qrels = random_inputs(11)
    result = releval.evaluate(
        spark.createDataFrame(run, "system string, query_id string, doc_id string, score double"),
        spark.createDataFrame(qrels, "query_id string, doc_id string, relevance int"),
        measures=["nDCG@10", "AP"], partition_by=["system"],
    )
    table = releval.compare(result.per_query, baseline="system=bm25",
                            candidates=[{"system": "dense"}], permutations=2000, alpha=0.1,
                            power=0.9, effect_of_interest=0.05)
    rows = {r[S.MEASURE_KEY]: r for r in table.collect()}
    per_query = {(r["system"], r[S.QUERY_ID], r[S.MEASURE_KEY]): r[S.VALUE]
                 for r in result.per_query.collect()}
    queries = sorted({q for _, q, _ in per_query})
    for key in ("nDCG@10", "AP"):
        base = [per_query[("bm25", q, key)] for q in queries]
        cand = [per_query[("dense", q, key)] for q in queries]
        test = stats.ttest_rel(cand, base)
        row = rows[key]
        assert row[S.CANDIDATE] == "system=dense" and row[S.NUM_PAIRS] == len(queries)
        assert row[S.MEAN_DIFF] == pytest.approx(sum(cand) / len(cand) - sum(base) / len(base))
        assert row[S.T_P_VALUE] == pytest.approx(test.pvalue, rel=1e-9)
        # the power figures at alpha 0.1 and power 0.9, against statsmodels
        sd = float(np.std(np.subtract(cand, base), ddof=1))
        solve = TTestPower().solve_power
        d_min = solve(effect_size=None, nobs=len(queries), alpha=0.1, power=0.9,
                      alternative="two-sided")
        assert row[S.MIN_DETECTABLE_DIFF] == pytest.approx(float(np.squeeze(d_min)) * sd,
                                                           rel=1e-4)
        needed = solve(effect_size=0.05 / sd, nobs=None, alpha=0.1, power=0.9,
                       alternative="two-sided")
        assert row[S.QUERIES_NEEDED] == math.ceil(float(np.squeeze(needed)))
    for bad, message in [({"power": 1.0}, "comparison.power = 1.0"),
                         ({"effect_of_interest": 0.0}, "comparison.effect_of_interest = 0.0"),
                         ({"correction": "bonferroni"}, "comparison.correction = 'bonferroni'")]:
        with pytest.raises(ConfigError, match=re.escape(f"releval.compare: {message}")):
            releval.compare(result.per_query, baseline="system=bm25",
                            candidates=["system=dense"], **bad)


def test_rejected_rows_are_quarantined_and_accounted(spark):
    # q1: a, b ranked; a row without a doc id and a NaN score are rejected
    run = spark.createDataFrame(
        [("q1", "a", 2.0), ("q1", "b", 1.0), ("q1", None, 3.0), ("q1", "c", float("nan"))],
        "query_id string, doc_id string, score double")
    qrels = spark.createDataFrame([("q1", "b", 1)], "query_id string, doc_id string, relevance int")
    result = releval.evaluate(run, qrels, measures=["RR"])
    reasons = sorted(r[S.REASON_CODE] for r in result.quarantine.collect())
    assert reasons == ["invalid_score", "missing_doc_id"]
    assert (result.accounts.run.input, result.accounts.run.used) == (4, 2)
    # ranking a, b with b relevant: RR = 1/2
    rr = [r for r in result.aggregate.collect()
          if r[S.MEASURE_KEY] == "RR" and r[S.AVERAGING] == "macro"]
    assert rr[0][S.VALUE] == 0.5


def test_an_unknown_key_or_a_missing_column_names_what_is_there(spark):
    run = spark.createDataFrame([("q1", "a", 1.0)], "qid string, item string, s double")
    qrels = spark.createDataFrame([("q1", "a", 1)], "qid string, item string, label int")
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['docid'\].*'doc_id'.*\['qid', 'item', 's'\]"):
        releval.evaluate(run, qrels, measures=["P@1"], columns={"docid": "item"})
    with pytest.raises(InputError, match=r"missing column\(s\) \['itemx'.*found columns \['qid', 'item', 's'\]"):
        releval.evaluate(run, qrels, measures=["P@1"],
                         columns={"query_id": "qid", "doc_id": "itemx", "score": "s"})


def test_nothing_runs_until_a_table_is_used(spark, monkeypatch):
    def fail(*args, **kwargs):
        raise AccountingError("the counts ran")

    monkeypatch.setattr(result_module, "query_counts", fail)
    run = spark.createDataFrame([("q1", "a", 1.0)], "query_id string, doc_id string, score double")
    qrels = spark.createDataFrame([("q1", "a", 1)], "query_id string, doc_id string, relevance int")
    result = releval.evaluate(run, qrels, measures=["P@1"])  # no Spark job, no counts
    assert result.per_query.where(F.col(S.MEASURE_KEY) == "P@1").first()[S.VALUE] == 1.0
    with pytest.raises(AccountingError, match="the counts ran"):
        result.accounts  # noqa: B018


def test_write_gives_delta_tables_with_the_tables_schemas(spark, tmp_path):
    run = spark.createDataFrame([("q1", "a", 1.0), ("q1", None, 1.0)],
                                "query_id string, doc_id string, score double")
    qrels = spark.createDataFrame([("q1", "a", 1)], "query_id string, doc_id string, relevance int")
    result = releval.evaluate(run, qrels, measures=["P@1"])
    paths = {name: str(tmp_path / name) for name in ("per_query", "aggregate", "quarantine")}
    result.write(**paths)
    assert DeltaTable.isDeltaTable(spark, paths["per_query"])
    got = spark.read.format("delta").load(paths["per_query"])
    assert {(r[S.MEASURE_KEY], r[S.VALUE]) for r in got.collect()} == {("P@1", 1.0), ("Judged@1", 1.0)}
    assert spark.read.format("delta").load(paths["quarantine"]).count() == 1
    assert spark.read.format("delta").load(paths["aggregate"]).count() == 3  # P macro, micro; Judged


def test_measures_lists_every_registered_measure_with_its_formula():
    listed = releval.measures()
    names = {m["name"] for m in listed}
    assert {"P", "R", "nDCG", "AP", "RR", "Hit", "bpref", "Judged"} <= names
    assert all(m["formula"] for m in listed)


def test_the_public_docstrings_examples_run(spark, tmp_path):
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    globs = {**vars(arguments), **vars(api), "spark": spark, "tmp": tmp_path}
    found = [t for module in (api, result_module, gating, arguments) for t in finder.find(module, globs=globs)
             if t.examples]
    assert {t.name.rsplit(".", 1)[-1] for t in found} >= {"evaluate", "compare", "measures",
                                                          "write", "gate"}
    for test in found:
        runner.run(test)
    assert runner.failures == 0


def test_the_readmes_python_example_runs_as_written(spark, tmp_path, monkeypatch):
    text = README.read_text()
    block = re.search(r"```python\n(.*?)```", text, re.S)
    assert block, "README has no ```python block"
    monkeypatch.chdir(tmp_path)
    code = block.group(1)
    exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
