"""Label agreement and system-ordering agreement (releval.stats.agreement): Cohen's kappa
against statsmodels, tau-b against scipy, tau_AP against its formula, the bootstrap over
queries, and the sample's noisier qrels version."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession
from scipy import stats
from statsmodels.stats.inter_rater import cohens_kappa
from support.batch_support import D28, ROOT, SHAPE, write_inputs

from releval.cli import main
from releval.config import load_config
from releval.io.agreement import agreement_schema
from releval.job import agree as agree_job
from releval.job.sample import SampleShape, generate, noisy_qrels
from releval.report.agreement import agreement_section, latest_agreement
from releval.stats.agreement import (
    NO_PAIRS,
    ONE_LABEL,
    binary_agreement,
    confusion,
    kappa,
    kappa_interval,
    kendall_tau_b,
    ordering,
    tau_ap,
)

# ten pairs, labels 0, 1, 3 (not consecutive: the linear weights are |a - b| of the values)
REF = np.array([0, 0, 0, 1, 1, 1, 3, 3, 0, 1])
OTHER = np.array([0, 0, 1, 1, 1, 3, 3, 1, 0, 0])
LABELS = np.array([0, 1, 3])


def test_confusion_kappa_and_binary_agreement_by_hand() -> None:
    table = confusion(REF, OTHER, LABELS)
    # reference 0: other 0,0,1,0 -> [3, 1, 0]; reference 1: 1,1,3,0 -> [1, 2, 1];
    # reference 3: 3,1 -> [0, 1, 1]
    assert table.tolist() == [[3, 1, 0], [1, 2, 1], [0, 1, 1]]
    # p_o = 6/10; rows .4 .4 .2, cols .4 .4 .2: p_e = .16 + .16 + .04 = .36
    # kappa = (.6 - .36) / (1 - .36) = .24 / .64 = 0.375
    found = kappa(table, LABELS)
    assert found.plain == pytest.approx(0.375, abs=1e-12) and found.reason is None
    # weighted disagreement: observed (1*1 + 1*1 + 2*1 + 2*1) / 10 = 0.6
    # expected: sum r_i c_j |v_i - v_j| = 2*(.4*.4*1 + .4*.2*3 + .4*.2*2) = 2*(.16+.24+.16) = 1.12
    # kappa_linear = 1 - 0.6 / 1.12 = 0.4642857...
    assert found.linear == pytest.approx(1 - 0.6 / 1.12, abs=1e-12)
    # relevance at level 1: disagreeing pairs (0,1), (1,0): 8 of 10 agree
    assert binary_agreement(table, LABELS, 1) == pytest.approx(0.8)
    # at level 3: disagreeing (1,3), (3,1): 8 of 10 again
    assert binary_agreement(table, LABELS, 3) == pytest.approx(0.8)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kappa_against_statsmodels(seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = np.array([-1, 0, 1, 2, 4])
    ref = rng.choice(values, size=200)
    other = np.where(rng.random(200) < 0.6, ref, rng.choice(values, size=200))
    labels = np.unique(np.concatenate([ref, other]))
    table = confusion(ref, other, labels)
    found = kappa(table, labels)
    assert found.plain == pytest.approx(cohens_kappa(table, return_results=False), abs=1e-12)
    # statsmodels' linear weights on a 1-D weights array are |w_i - w_j|: the label values
    linear = cohens_kappa(table, weights=labels.astype(float), wt="linear", return_results=False)
    assert found.linear == pytest.approx(linear, abs=1e-12)
    # the positions 0..k-1 would give another value: the weights are the values
    by_position = cohens_kappa(table, wt="linear", return_results=False)
    assert found.linear != pytest.approx(by_position, abs=1e-6)


def test_identical_labels_give_kappa_one() -> None:
    table = confusion(REF, REF, LABELS)
    found = kappa(table, LABELS)
    assert (found.plain, found.linear, found.reason) == (1.0, 1.0, None)
    assert binary_agreement(table, LABELS, 1) == 1.0


def test_kappa_is_null_with_its_reason_when_undefined() -> None:
    one = np.array([2, 2, 2])
    found = kappa(confusion(one, one, np.array([2])), np.array([2]))
    assert (found.plain, found.linear) == (None, None)
    assert found.reason == f"{ONE_LABEL} (label 2)"
    empty = kappa(np.zeros((0, 0), dtype=np.int64), np.array([], dtype=np.int64))
    assert (empty.plain, empty.reason) == (None, NO_PAIRS)
    # two labels, each side constant but different: p_o = 0, p_e = 0, kappa = 0 (defined)
    apart = kappa(confusion(np.array([0, 0]), np.array([1, 1]), np.array([0, 1])),
                  np.array([0, 1]))
    assert (apart.plain, apart.linear) == (0.0, 0.0)


def test_bootstrap_interval_over_queries() -> None:
    labels = np.array([0, 1])
    # query A agrees on all 4 pairs; query B disagrees on all 4
    a = confusion(np.array([0, 0, 1, 1]), np.array([0, 0, 1, 1]), labels)
    b = confusion(np.array([0, 0, 1, 1]), np.array([1, 1, 0, 0]), labels)
    tables = np.stack([a, b])
    low, high = kappa_interval(tables, labels, resamples=500, seed=7, level=0.95)
    # resamples: A twice (kappa 1), B twice (kappa -1), one each (p_o = .5, p_e = .5: 0)
    assert (low, high) == (-1.0, 1.0)
    assert kappa_interval(tables, labels, resamples=500, seed=7, level=0.95) == (low, high)
    assert kappa_interval(tables[:1], labels, resamples=500, seed=7, level=0.95) == (None, None)
    same = np.stack([a, a, a])
    assert kappa_interval(same, labels, resamples=100, seed=1, level=0.9) == (1.0, 1.0)


def tau_ap_by_formula(truth: list[str], estimate: list[str]) -> float:
    """tau_AP = 2/(N-1) sum_{i=2..N} C(i)/(i-1) - 1, written out from the paper's definition."""
    n = len(estimate)
    total = 0.0
    for i in range(1, n):  # 0-based position i is rank i + 1
        above = estimate[:i]
        correct = sum(1 for s in above if truth.index(s) < truth.index(estimate[i]))
        total += correct / i
    return 2.0 / (n - 1) * total - 1.0


@pytest.mark.parametrize("estimate", [
    ["a", "b", "c", "d"], ["d", "c", "b", "a"], ["b", "a", "c", "d"], ["a", "b", "d", "c"],
    ["c", "a", "d", "b"],
])
def test_tau_ap_against_its_formula(estimate: list[str]) -> None:
    names = ["a", "b", "c", "d"]
    truth = np.array([4.0, 3.0, 2.0, 1.0])  # a > b > c > d
    scores = np.array([float(4 - estimate.index(s)) for s in names])
    assert tau_ap(truth, scores, names) == pytest.approx(
        tau_ap_by_formula(["a", "b", "c", "d"], estimate), abs=1e-12)


def test_tau_ap_by_hand_and_its_top_weighting() -> None:
    names = ["a", "b", "c", "d"]
    truth = np.array([4.0, 3.0, 2.0, 1.0])
    # swapping the top two: C(2) = 0, C(3) = 2, C(4) = 3: 2/3 * (0 + 1 + 1) - 1 = 1/3
    assert tau_ap(truth, np.array([3.0, 4.0, 2.0, 1.0]), names) == pytest.approx(1 / 3)
    # swapping the bottom two: C(2) = 1, C(3) = 2, C(4) = 2: 2/3 * (1 + 1 + 2/3) - 1 = 7/9
    assert tau_ap(truth, np.array([4.0, 3.0, 1.0, 2.0]), names) == pytest.approx(7 / 9)
    # Kendall's tau weighs both swaps alike: (5 concordant - 1 discordant) / 6 = 2/3
    assert kendall_tau_b(truth, np.array([3.0, 4.0, 2.0, 1.0])) == pytest.approx(2 / 3)
    assert tau_ap(truth, truth, names) == 1.0 and tau_ap(truth[:1], truth[:1], ["a"]) is None


def test_ties_are_broken_by_the_partition_label() -> None:
    names = ["system=b", "system=a", "system=c"]
    assert ordering(np.array([1.0, 1.0, 0.5]), names).tolist() == [1, 0, 2]
    # the other ordering ties a and b: broken as a, b, which the truth (b > a) contradicts
    # estimate a, b, c against truth b, a, c: C(2) = 0, C(3) = 2: 2/2 * (0 + 1) - 1 = 0
    assert tau_ap(np.array([2.0, 1.0, 0.5]), np.array([1.0, 1.0, 0.5]), names) == 0.0


@pytest.mark.parametrize("seed", [4, 5, 6])
def test_kendall_tau_b_against_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 5, size=12).astype(float)  # ties on purpose
    y = x + rng.integers(-2, 3, size=12)
    expected = stats.kendalltau(x, y, variant="b").statistic
    assert kendall_tau_b(x, y) == pytest.approx(expected, abs=1e-12)
    assert kendall_tau_b(x, x) == pytest.approx(1.0)
    assert kendall_tau_b(np.ones(3), x[:3]) is None


def sample_pairs(shape: SampleShape) -> tuple:
    _, qrels = generate(shape)
    return qrels, noisy_qrels(qrels, shape)


def per_query_tables(ref, other, labels) -> np.ndarray:  # noqa: ANN001
    merged = ref.merge(other, on=["query_id", "doc_id"], suffixes=("_r", "_o"))
    return np.stack([confusion(g["relevance_r"].to_numpy(), g["relevance_o"].to_numpy(), labels)
                     for _, g in merged.groupby("query_id")])


def test_labels_shuffled_within_each_query_give_kappa_near_zero() -> None:
    shape = SampleShape()
    qrels, _ = sample_pairs(shape)
    rng = np.random.default_rng(11)
    shuffled = qrels.copy()
    shuffled["relevance"] = shuffled.groupby("query_id")["relevance"].transform(
        lambda s: rng.permutation(s.to_numpy()))
    labels = np.unique(qrels["relevance"])
    table = per_query_tables(qrels, shuffled, labels).sum(axis=0)
    found = kappa(table, labels)
    assert abs(found.plain) < 0.1 and abs(found.linear) < 0.1


def test_the_samples_noisier_version_agrees_partly() -> None:
    shape = SampleShape()
    qrels, noisy = sample_pairs(shape)
    assert set(noisy["qrels_version"]) == {"llm"} and len(noisy) == len(qrels)
    labels = np.unique(np.concatenate([qrels["relevance"], noisy["relevance"]]))
    tables = per_query_tables(qrels, noisy, labels)
    found = kappa(tables.sum(axis=0), labels)
    assert 0.3 < found.plain < 0.9 and found.linear > found.plain
    low, high = kappa_interval(tables, labels, resamples=200, seed=1, level=0.95)
    assert low < found.plain < high


# --- the job: both qrels versions read, checked and compared with Spark ---------------------

def agree_config(folder: Path, run: str, qrels: str, other_filter: str) -> Path:
    """A config on the small sample: reference v1, the other version by ``other_filter``."""
    path = folder / "agree.toml"
    path.write_text(f"""
[spark]
master = "local[1]"

[run]
path = "{run}"
doc_id = "item_id"
rank = "position"
partition_columns = ["system", "date"]

[qrels]
path = "{qrels}"
filter = "qrels_version = 'v1'"

[evaluation]
measures = ["P@5", "AP", "nDCG@10"]

[comparison]
permutations = 200

[agree]
filter = "{other_filter}"
resamples = 200

[output]
per_query_path = "{folder / 'out' / 'per_query'}"
aggregate_path = "{folder / 'out' / 'aggregate'}"
partition_columns = ["date"]
""", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def small_sample(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
                 ) -> tuple[Path, str, str]:
    folder = tmp_path_factory.mktemp("agree_sample")
    run, qrels = write_inputs(spark, folder)
    return folder, run, qrels


@pytest.mark.slow  # the agree job over the sample, in this process
def test_identical_qrels_give_kappa_one_tau_one_and_no_flipped_decision(
    spark: SparkSession, small_sample: tuple[Path, str, str], tmp_path: Path
) -> None:
    _, run, qrels = small_sample
    config = agree_job.with_partitions(
        load_config(agree_config(tmp_path, run, qrels, "qrels_version = 'v1'")), {"date": D28})
    report = agree_job.run(spark, config, with_run=True,
                           baseline={"system": "bm25", "date": D28}, agreement_id="same")
    labels = report.labels
    # 20 queries x 5 judged documents, each judged alike by both
    assert (labels.pairs, labels.queries, labels.reference_only, labels.other_only) == (
        100, 20, 0, 0)
    assert (labels.kappa.plain, labels.kappa.linear, labels.binary) == (1.0, 1.0, 1.0)
    assert labels.interval == (1.0, 1.0)
    systems = report.systems
    assert systems is not None and systems.baseline == "system=bm25/date=2026-11-28"
    keys = {m.measure_key for m in systems.measures}
    assert {"P@5", "AP", "nDCG@10", "Judged@5", "Judged@10"} <= keys
    for m in systems.measures:
        assert len(m.labels) == 3 and m.reference == m.other
        assert m.tau_ap == 1.0 and m.tau_b in (1.0, None)  # None only for a constant measure
        assert (m.decisions, m.flips) == (2, ())
    assert any(m.tau_b == 1.0 for m in systems.measures)
    # the table: one row per measure, the label statistics on each
    table = spark.read.format("delta").load(str(tmp_path / "out" / "agreement"))
    rows = table.where("agreement_id = 'same'").collect()
    assert len(rows) == len(systems.measures)
    assert {(r["kappa"], r["pairs"], r["flipped_decisions"], r["partitions"]) for r in rows} == {
        (1.0, 100, 0, 3)}
    assert table.schema == agreement_schema() or [f.name for f in table.schema.fields] == [
        f.name for f in agreement_schema().fields]
    text = report.render()
    assert "kappa 1.000  [1.000, 1.000]" in text and "that differ between the qrels (0)" in text
    # the report's section: the latest agreement of the table
    html = agreement_section(latest_agreement(config))
    assert "kappa 1.000 [1.000, 1.000], linear-weighted 1.000" in html
    assert '<td title="1.0">1.000</td>' in html and "<td>0 of 2</td>" in html


@pytest.mark.slow  # the agree job over the sample, in this process
def test_the_samples_llm_version_and_the_accounting_of_bad_rows(
    spark: SparkSession, small_sample: tuple[Path, str, str], tmp_path: Path
) -> None:
    _, _, qrels = small_sample
    frame = spark.read.format("delta").load(qrels)
    first = frame.where("qrels_version = 'v1'").orderBy("query_id", "doc_id").first()
    bad = spark.createDataFrame(
        [(first["query_id"], first["doc_id"], -1, "v1"),   # repeated judgment, lower label
         (first["query_id"], first["doc_id"], first["relevance"], "v1"),  # exact duplicate
         (first["query_id"], None, 2, "llm"),              # missing_doc_id
         (first["query_id"], "d-new", 1, "llm")],          # judged by the other only
        frame.select("query_id", "doc_id", "relevance", "qrels_version").schema)
    copy = str(tmp_path / "qrels")
    frame.unionByName(bad).write.format("delta").save(copy)
    config = load_config(agree_config(tmp_path, "unused", copy, "qrels_version = 'llm'"))
    report = agree_job.run(spark, config, agreement_id="llm")
    ref, other = report.labels.accounts
    # v1: 100 rows + 2 repeats = 100 pairs + 1 exact duplicate (used) + conflicting_label 1
    assert (ref.input, ref.pairs, ref.used, ref.quarantined) == (
        102, 100, 101, {"conflicting_label": 1})
    # llm: 100 rows + 2 = 101 pairs + missing_doc_id 1
    assert (other.input, other.used, other.quarantined) == (102, 101, {"missing_doc_id": 1})
    assert (report.labels.pairs, report.labels.other_only) == (100, 1)
    # the statistics against statsmodels on the generator's frames (no Spark)
    _, v1 = generate(SHAPE)
    llm = noisy_qrels(v1, SHAPE)
    merged = v1.merge(llm, on=["query_id", "doc_id"])
    labels = np.unique(np.concatenate([merged["relevance_x"], merged["relevance_y"]]))
    table = confusion(merged["relevance_x"].to_numpy(), merged["relevance_y"].to_numpy(), labels)
    assert report.labels.table.tolist() == table.tolist()
    assert report.labels.kappa.plain == pytest.approx(
        cohens_kappa(table, return_results=False), abs=1e-12)
    row = spark.read.format("delta").load(str(tmp_path / "out" / "agreement")).first()
    assert row["measure_key"] is None and row["other_only"] == 1
    assert sum(row["confusion"].values()) == 100


@pytest.mark.slow  # the agree job over the sample, in this process
def test_kappa_is_null_with_its_reason_in_the_table(spark: SparkSession, tmp_path: Path) -> None:
    qrels = str(tmp_path / "one_label")
    spark.createDataFrame([("q1", "a", 1, "v1"), ("q1", "b", 1, "v1"), ("q1", "a", 1, "llm"),
                           ("q1", "b", 1, "llm")],
                          "query_id string, doc_id string, relevance int, qrels_version string"
                          ).write.format("delta").save(qrels)
    config = load_config(agree_config(tmp_path, "unused", qrels, "qrels_version = 'llm'"))
    report = agree_job.run(spark, config, agreement_id="one")
    row = spark.read.format("delta").load(str(tmp_path / "out" / "agreement")).first()
    assert (row["kappa"], row["kappa_linear"], row["kappa_null_reason"]) == (
        None, None, "one label on both sides (label 1)")
    assert (row["pairs"], row["binary_agreement"], row["kappa_ci_low"]) == (2, 1.0, None)
    assert "kappa: null (one label on both sides (label 1))" in report.render()


@pytest.mark.slow  # the agree job over the sample, in this process
def test_agree_command(shared_session: SparkSession, small_sample: tuple[Path, str, str],
                       tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, run, qrels = small_sample
    config = agree_config(tmp_path, run, qrels, "qrels_version = 'llm'")
    assert main(["agree", "--config", str(config), "--other-filter", "qrels_version = 'v1'",
                 "--agreement-id", "cli"]) == 0
    out = capsys.readouterr().out
    assert "other:     delta " in out and "filter: qrels_version = 'v1'" in out
    assert "binary agreement (relevant: label >= 1): 100.0%" in out
    assert main(["agree", "--config", str(config), "--baseline", "system=bm25"]) == 2
    assert "--baseline compares run partitions: add --run" in capsys.readouterr().err


@pytest.mark.slow
def test_jobs_agree_in_its_own_process(small_sample: tuple[Path, str, str], tmp_path: Path
                                       ) -> None:
    _, run, qrels = small_sample
    config = agree_config(tmp_path, run, qrels, "qrels_version = 'llm'")
    done = subprocess.run(
        [sys.executable, str(ROOT / "jobs" / "agree.py"), "--config", str(config), "--run",
         "--partition", f"date={D28}", "--baseline", "system=bm25"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "releval agreement" in done.stdout
    assert "decisions against the baseline system=bm25/date=2026-11-28" in done.stdout
    rows = DeltaTable(str(tmp_path / "out" / "agreement")).to_pandas()
    # P@5, AP, nDCG@10 and Judged@5, Judged@10 (the job adds Judged@k per cutoff)
    assert sorted(rows["measure_key"]) == ["AP", "Judged@10", "Judged@5", "P@5", "nDCG@10"]
