"""The benchmark's data generator and NumPy floor (no timings are tested)."""

from __future__ import annotations

import importlib.util
import json
import math
import signal
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyarrow")
#: The harness measures memory with psutil (a ``bench`` extra, not a ``test`` one).
needs_psutil = pytest.mark.skipif(
    importlib.util.find_spec("psutil") is None, reason="psutil is not installed (pip install -e '.[bench]')"
)

import pyarrow as pa  # noqa: E402
import pyarrow.csv as pacsv  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from bench import harness  # noqa: E402
from bench.generate import (  # noqa: E402
    CHUNK_QUERIES,
    DOCS_PER_QUERY,
    JUDGED,
    SIZES,
    DataInfo,
    _trec_qrels,
    _trec_run,
    chunk_rng,
    generate,
    generate_arrays,
)
from bench.harness import (  # noqa: E402
    EXTRA_SIZES,
    NOTEBOOK_RATIO,
    SIZE_SETTINGS,
    across_sizes,
    measure,
    results_name,
    shuffle_partitions,
    status,
)
from bench.runners import RELEVAL_MEASURES, TABLES_SQL, Result, notebook_session, numpy_measures  # noqa: E402


def reference(run: dict[str, list[tuple[float, str]]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    """Plain-Python trec_eval definitions of the five measures, averaged over judged queries."""
    sums: dict[str, float] = defaultdict(float)
    queries = [q for q, labels in qrels.items() if any(v >= 1 for v in labels.values())]
    for q in queries:
        labels = qrels[q]
        ranked = [d for _, d in sorted(run.get(q, []), key=lambda t: (-t[0], t[1]))]
        gains = [labels.get(d, 0) for d in ranked]
        num_rel = sum(1 for v in labels.values() if v >= 1)
        sums["P@10"] += sum(g >= 1 for g in gains[:10]) / 10
        sums["R@100"] += sum(g >= 1 for g in gains[:100]) / num_rel
        dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains[:10]))
        ideal = sorted(labels.values(), reverse=True)[:10]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        sums["nDCG@10"] += dcg / idcg if idcg else 0.0
        hits, ap, rr = 0, 0.0, 0.0
        for i, g in enumerate(gains):
            if g >= 1:
                hits += 1
                ap += hits / (i + 1)
                rr = rr or 1 / (i + 1)
        sums["AP"] += ap / num_rel
        sums["RR"] += rr
    return {m: v / len(queries) for m, v in sums.items()}


def _as_dicts(run: pa.Table, qrels: pa.Table) -> tuple[dict[str, list[tuple[float, str]]], dict[str, dict[str, int]]]:
    """The run as ``{query: [(score, doc)]}``, the qrels as ``{query: {doc: label}}``."""
    run_d: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for q, d, s in zip(*(run[c].to_pylist() for c in ("query_id", "doc_id", "score")), strict=True):
        run_d[q].append((s, d))
    qrels_d: dict[str, dict[str, int]] = defaultdict(dict)
    for q, d, r in zip(*(qrels[c].to_pylist() for c in ("query_id", "doc_id", "relevance")), strict=True):
        qrels_d[q][d] = r
    return run_d, qrels_d


def test_generator_is_seeded_and_untied() -> None:
    run, qrels = generate_arrays(50, seed=7)
    again, _ = generate_arrays(50, seed=7)
    assert run.equals(again)
    assert run.num_rows == 50 * DOCS_PER_QUERY and qrels.num_rows == 50 * JUDGED
    scores = run["score"].to_numpy().reshape(50, DOCS_PER_QUERY)
    assert (np.diff(scores, axis=1) < 0).all()  # strictly decreasing: no ties
    assert set(qrels["relevance"].to_pylist()) <= {0, 1, 2, 3}
    assert len(set(zip(run["query_id"].to_pylist(), run["doc_id"].to_pylist(), strict=True))) == run.num_rows


def test_numpy_floor_matches_plain_python() -> None:
    run, qrels = generate_arrays(200, seed=11)
    per_query = numpy_measures(run, qrels)
    expected = reference(*_as_dicts(run, qrels))
    for name, values in per_query.items():
        assert values.mean() == pytest.approx(expected[name], abs=1e-12), name


def test_the_hand_written_floor_computes_releval_numbers(spark) -> None:
    """The ``spark-sql-tables`` runner is the floor of releval's work only if it does the
    same work: its SQL gives releval's 16 values on every query with a relevant document
    (and scores exactly those). Odd queries keep only their top 30: P@100 still divides by
    100, and some relevant documents are never retrieved."""
    import pyarrow.compute as pc
    from support import helpers

    from releval.core import columns as S
    from releval.core.measures import parse_measures
    from releval.evaluation.evaluate import evaluate

    run, qrels = generate_arrays(40, seed=11)
    number = pc.cast(pc.utf8_slice_codeunits(run["query_id"], 1), pa.int64())
    run = run.filter(pc.or_(pc.equal(pc.bit_wise_and(number, 1), 0), pc.less_equal(run["rank"], 30)))
    run_df = helpers.run_df(spark, list(zip(*(run[c].to_pylist() for c in ("query_id", "doc_id", "score")), strict=True)))
    qrels_df = helpers.qrels_df(spark, list(zip(*(qrels[c].to_pylist() for c in ("query_id", "doc_id", "relevance")), strict=True)))
    run_df.createOrReplaceTempView("run")
    qrels_df.createOrReplaceTempView("qrels")
    try:
        wide = spark.sql(TABLES_SQL).toPandas().set_index("query_id")
    finally:
        spark.catalog.dropTempView("run")
        spark.catalog.dropTempView("qrels")
    ev = evaluate(run_df, qrels_df, measures=parse_measures(list(RELEVAL_MEASURES)))
    rows = ev.per_query.select(S.QUERY_ID, S.MEASURE_KEY, S.VALUE, S.NUM_REL).collect()
    releval = {(r[S.QUERY_ID], r[S.MEASURE_KEY]): r[S.VALUE] for r in rows}
    assert set(wide.index) == {r[S.QUERY_ID] for r in rows if r[S.NUM_REL] > 0}
    assert len(wide) > 30 and (wide["P@100"] < wide["P@20"]).any()  # the cut runs are there
    mismatches = [
        (q, m, wide.at[q, m], releval[(q, m)])
        for q in wide.index for m in RELEVAL_MEASURES
        if abs(wide.at[q, m] - releval[(q, m)]) > 1e-12
    ]
    assert not mismatches, mismatches[:5]


# --- bench.generate: chunked writing ----------------------------------------------------


def test_chunks_are_written_one_after_the_other(tmp_path: Path) -> None:
    # 50 queries in chunks of 20: chunks of 20, 20 and 10 queries, each from its own generator.
    info = generate("tiny", tmp_path, seed=7, queries=50, chunk_queries=20)
    chunks = [
        generate_arrays(n, 7, first_query=first, rng=chunk_rng(7, i))
        for i, (first, n) in enumerate([(0, 20), (20, 20), (40, 10)])
    ]
    run = pq.read_table(tmp_path / "run.parquet")
    qrels = pq.read_table(tmp_path / "qrels.parquet")
    assert run.equals(pa.concat_tables([c[0] for c in chunks]))
    assert qrels.equals(pa.concat_tables([c[1] for c in chunks]))
    assert pq.ParquetFile(tmp_path / "run.parquet").metadata.num_row_groups == 3  # one per chunk
    assert (info.run_rows, info.qrels_rows, info.chunk_queries) == (5000, 1000, 20)
    lines = (tmp_path / "run.trec").read_text().splitlines()
    assert len(lines) == 5000 and lines[2000].startswith("q20 Q0 D20")  # chunk 2 starts at q20
    assert len((tmp_path / "qrels.trec").read_text().splitlines()) == 1000
    # Chunk 0 is the unchunked stream: the first queries of a big size are the small size.
    assert chunks[0][0].equals(generate_arrays(20, 7)[0])
    assert len(set(run["doc_id"].to_pylist())) == run.num_rows  # doc ids unique across chunks


def test_one_chunk_gives_the_bytes_of_the_single_table_writers(tmp_path: Path) -> None:
    """Sizes of at most one chunk (tiny, quick, full) are written byte for byte as the
    single-table writers write them."""
    generate("tiny", tmp_path / "chunked", seed=3, queries=30, chunk_queries=100)
    run, qrels = generate_arrays(30, 3)
    old = tmp_path / "old"
    old.mkdir()
    # The single-table writers: one write_table / write_csv per file.
    pq.write_table(run, old / "run.parquet", row_group_size=1 << 20)
    pq.write_table(qrels, old / "qrels.parquet", row_group_size=1 << 20)
    options = pacsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
    pacsv.write_csv(_trec_run(run), str(old / "run.trec"), write_options=options)
    pacsv.write_csv(_trec_qrels(qrels), str(old / "qrels.trec"), write_options=options)
    for name in ("run.parquet", "qrels.parquet", "run.trec", "qrels.trec"):
        assert (tmp_path / "chunked" / name).read_bytes() == (old / name).read_bytes(), name


def test_data_is_regenerated_when_the_chunking_changes(tmp_path: Path) -> None:
    first = generate("tiny", tmp_path, seed=5, queries=30, chunk_queries=10)
    before = (tmp_path / "run.parquet").read_bytes()
    assert generate("tiny", tmp_path, seed=5, queries=30, chunk_queries=10) == first  # reused
    again = generate("tiny", tmp_path, seed=5, queries=30, chunk_queries=100)
    assert again.chunk_queries == 100
    assert (tmp_path / "run.parquet").read_bytes() != before  # one chunk: another stream
    # An info.json without chunk_queries describes one chunk of all queries.
    legacy = DataInfo(size="full", queries=100_000, run_rows=0, qrels_rows=0, seed=5, seconds=0.0)
    assert legacy.same_stream(100_000, 5, CHUNK_QUERIES)  # full: one chunk either way
    legacy_big = DataInfo(size="1m", queries=1_000_000, run_rows=0, qrels_rows=0, seed=5, seconds=0.0)
    assert not legacy_big.same_stream(1_000_000, 5, CHUNK_QUERIES)  # 100m: regenerated


# --- bench.harness: memory guard, timeouts, partitions, growth ratio ------------------


#: A fake runner: starts a child (like Spark's JVM) that writes its pid, then allocates
#: and touches 300 MiB and holds it; the parent also holds 50 MiB. Neither ends alone.
FAKE_RUNNER = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", '''
import os, sys, time
open(sys.argv[1], "w").write(str(os.getpid()))
block = b"\\\\x01" * (300 << 20)
time.sleep(600)
''', sys.argv[1]])
block = b"\\x01" * (50 << 20)
time.sleep(600)
"""


def _gone(pid: int) -> bool:
    """The process has ended (or is a zombie waiting to be reaped)."""
    import psutil

    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@needs_psutil
def test_memory_guard_kills_the_process_tree_above_the_cap(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    cmd = [sys.executable, "-c", FAKE_RUNNER, str(pid_file)]
    out = measure(cmd, tmp_path / "fake.log", timeout_s=300, memory_cap_mib=100)
    assert out["stopped"] == f"stopped: peak RSS > {100 / 1024:g} GiB cap"
    assert out["peak_rss_mib"] > 100  # the peak seen is recorded
    assert out["exit_code"] == -signal.SIGKILL and not out["timed_out"]
    child_pid = int(pid_file.read_text())  # the child is what went above the cap
    assert child_pid in out["killed_pids"]
    assert _gone(child_pid) and all(_gone(p) for p in out["killed_pids"])
    row = {"runner": "fake", "ok": False, "error": out["stopped"], **out}
    assert status(row) == out["stopped"]


@needs_psutil
def test_timeout_kills_the_process_tree(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    cmd = [sys.executable, "-c", FAKE_RUNNER, str(pid_file)]
    out = measure(cmd, tmp_path / "fake.log", timeout_s=0, memory_cap_mib=None)
    assert out["stopped"] == "stopped: timed out after 0 s" and out["timed_out"]
    assert out["exit_code"] == -signal.SIGKILL
    assert all(_gone(p) for p in out["killed_pids"])


@needs_psutil
def test_harness_reports_a_runner_stopped_by_the_memory_cap(tmp_path: Path) -> None:
    # A cap of 1 MiB: the numpy runner's interpreter alone is above it.
    argv = ["--size", "tiny", "--runners", "numpy", "--data-root", str(tmp_path / "data"),
            "--results", str(tmp_path / "results"), "--memory-cap-gib", str(1 / 1024)]
    assert harness.main(argv) == 0
    report = json.loads((tmp_path / "results" / "tiny.json").read_text())
    row = report["runners"]["numpy"]
    assert row["status"] == "stopped: peak RSS > 0.000976562 GiB cap"
    assert row["finished"] is False and row["ok"] is False and row["exit_code"] == -signal.SIGKILL
    assert _gone(row["killed_pids"][0])
    assert report["spark"]["driver_memory"] == "8g"  # tiny keeps the 8g of the small sizes
    md = (tmp_path / "results" / "tiny.md").read_text()
    assert "| numpy | vectorized NumPy, 5 measures |" in md
    assert "stopped: peak RSS > 0.000976562 GiB cap |" in md


def test_status_names_a_kill_from_outside() -> None:
    row = {"ok": False, "error": "no result written", "exit_code": -9, "stopped": None}
    assert status(row) == "killed by signal 9 (out of memory?)"
    assert status({"ok": False, "error": "MemoryError: ", "exit_code": 1}) == "failed: MemoryError: "
    assert status({"ok": True, "exit_code": 0}) == "ok"


def test_shuffle_partitions_keep_about_250k_rows_each() -> None:
    # quick 1M rows -> 4 (the minimum), full 10M -> 40, 30m -> 120, 100m -> 400 (the maximum).
    assert [shuffle_partitions(n) for n in (100_000, 1_000_000, 10_000_000, 30_000_000, 100_000_000)] == [
        4, 4, 40, 120, 400]


def test_large_sizes_run_spark_with_a_4g_driver() -> None:
    assert {s: SIZE_SETTINGS[s]["driver_memory"] for s in ("full", "30m", "100m")} == {
        "full": "8g", "30m": "4g", "100m": "4g"}
    assert set(SIZE_SETTINGS) == set(SIZES) | set(EXTRA_SIZES)


def _report(size: str, run_rows: int, rows: dict[str, dict[str, object]]) -> dict[str, object]:
    return {"size": size, "generated_at": "then", "data": {"run_rows": run_rows}, "runners": rows}


def test_growth_ratio_and_across_sizes_table(tmp_path: Path) -> None:
    full = _report("full", 10_000_000, {
        "releval": {"ok": True, "wall_s": 136.0, "peak_rss_mib": 6578.0, "status": "ok"},
        "ranx": {"ok": True, "wall_s": 72.0, "peak_rss_mib": 5629.0, "status": "ok"},
    })
    (tmp_path / "full.json").write_text(json.dumps(full))
    big = _report("100m", 100_000_000, {
        "releval": {"ok": True, "wall_s": 1088.0, "peak_rss_mib": 5000.0, "status": "ok"},
        "ranx": {"ok": False, "wall_s": 300.0, "peak_rss_mib": 20481.0,
                 "status": "stopped: peak RSS > 20 GiB cap"},
    })
    out = across_sizes(big, tmp_path)
    # 1088 / 136 = 8.0 for 100M / 10M = 10x the rows: at most linear.
    assert out["growth"]["wall_ratio"] == 8.0 and out["growth"]["rows_ratio"] == 10
    assert out["growth"]["linear"] is True
    assert out["sizes"] == ["full", "100m"]
    assert out["runners"]["ranx"]["full"]["peak_rss_mib"] == 5629.0
    assert out["runners"]["ranx"]["100m"]["status"] == "stopped: peak RSS > 20 GiB cap"
    assert "growth" not in across_sizes(full, tmp_path)  # full against itself: no ratio
    quick = _report("quick", 1_000_000, {"releval": {"ok": True, "wall_s": 40.0, "status": "ok"}})
    assert across_sizes(quick, tmp_path)["sizes"] == ["quick"]  # small sizes: no cross-size table
    md = "\n".join(harness._render_across_sizes(out))
    assert "**releval wall at 100m / releval wall at full: 8.00** for 10x the run rows (at most linear" in md
    assert "| ranx | 72 s / 5629 MiB / ok | 300 s / 20481 MiB / stopped: peak RSS > 20 GiB cap |" in md


# --- bench.runners: the notebook runner (one warm session) ------------------------------


def binary_ndcg10(run: dict[str, list[tuple[float, str]]], qrels: dict[str, dict[str, int]]) -> float:
    """nDCG@10 with gain 1 for every document labelled >= 1 (RankingEvaluator's), averaged
    over the queries with a relevant document."""
    values = []
    for q, labels in qrels.items():
        relevant = {d for d, v in labels.items() if v >= 1}
        if not relevant:
            continue
        ranked = [d for _, d in sorted(run[q], reverse=True)][:10]
        dcg = sum(1 / math.log2(i + 2) for i, d in enumerate(ranked) if d in relevant)
        idcg = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), 10)))
        values.append(dcg / idcg)
    return sum(values) / len(values)


def _notebook(spark, tmp_path: Path, run: pa.Table, qrels: pa.Table, repeats: int) -> dict[str, object]:
    pq.write_table(run, tmp_path / "run.parquet")
    pq.write_table(qrels, tmp_path / "qrels.parquet")
    res = Result("notebook")
    notebook_session(spark, tmp_path, res, repeats=repeats)
    assert set(res.means) == set(RELEVAL_MEASURES)
    for name in ("run.parquet", "qrels.parquet"):  # the cached inputs are released
        level = spark.read.parquet(str(tmp_path / name)).storageLevel
        assert not (level.useMemory or level.useDisk), name
    return res.extra["notebook"]


def test_notebook_runner_times_both_and_their_ap_agrees(spark, tmp_path: Path) -> None:
    """30 generated queries, labels 0-3: both sides timed 2 times after a warm-up; AP is
    the same measure in both tools; nDCG@10 is not (RankingEvaluator's gain is binary),
    and each tool's value is its own definition's, computed here in plain Python."""
    run, qrels = generate_arrays(30, seed=7)
    nb = _notebook(spark, tmp_path, run, qrels, repeats=2)
    assert nb["rows"] == {"run": 3000, "qrels": 600}
    assert nb["floor_rows"] == 3000 + 600  # every run and qrels row reached Python
    for side in ("releval", "floor", "RankingEvaluator"):
        assert len(nb["times_s"][side]) == 2 and all(t > 0 for t in nb["times_s"][side])
        assert nb["median_s"][side] == pytest.approx(sum(nb["times_s"][side]) / 2, abs=1e-3)
        assert nb["warm_up_s"][side] > 0
    assert nb["ratio"] == pytest.approx(nb["median_s"]["releval"] / nb["median_s"]["RankingEvaluator"], abs=0.01)
    assert nb["floor_ratio"] == pytest.approx(nb["median_s"]["floor"] / nb["median_s"]["RankingEvaluator"], abs=0.01)
    assert nb["largest_change_between_runs"] < 1e-12
    assert all(nb["spark_jobs"][side] > 0 for side in ("releval", "floor", "RankingEvaluator"))
    assert not nb["binary_labels"]
    ap, ndcg = nb["agreement"]["AP"], nb["agreement"]["nDCG@10"]
    run_d, qrels_d = _as_dicts(run, qrels)
    expected = reference(run_d, qrels_d)  # trec_eval's definitions
    assert ap["status"] == "ok"
    assert ap["releval"] == pytest.approx(expected["AP"], abs=1e-12)
    assert ap["RankingEvaluator"] == pytest.approx(expected["AP"], abs=1e-12)
    assert ndcg["status"].startswith("differs by definition")
    assert ndcg["releval"] == pytest.approx(expected["nDCG@10"], abs=1e-12)  # linear gain
    assert ndcg["RankingEvaluator"] == pytest.approx(binary_ndcg10(run_d, qrels_d), abs=1e-12)
    assert abs(ndcg["releval"] - ndcg["RankingEvaluator"]) > 1e-3


def test_notebook_runner_ndcg_agrees_when_the_labels_are_binary(spark, tmp_path: Path) -> None:
    """Labels 2 and 3 made 1: linear gain is binary gain, so both means agree."""
    import pyarrow.compute as pc

    run, qrels = generate_arrays(30, seed=7)
    qrels = qrels.set_column(2, "relevance", pc.min_element_wise(qrels["relevance"], pa.scalar(1, pa.int32())))
    nb = _notebook(spark, tmp_path, run, qrels, repeats=1)
    assert nb["binary_labels"]
    for m in ("nDCG@10", "AP"):
        a = nb["agreement"][m]
        assert a["status"] == "ok" and abs(a["diff"]) <= 1e-12, (m, a)
    run_d, qrels_d = _as_dicts(run, qrels)
    assert nb["agreement"]["nDCG@10"]["releval"] == pytest.approx(binary_ndcg10(run_d, qrels_d), abs=1e-12)


def test_a_notebook_run_has_its_own_results_files(tmp_path: Path) -> None:
    """--runners notebook writes <size>-notebook.md/.json with the ratio of the medians;
    the size's own report and the other sizes' files are not touched or read."""
    assert results_name("full", ["notebook"]) == "full-notebook"
    assert results_name("full", ["releval", "notebook"]) == results_name("full", []) == "full"
    (tmp_path / "full.md").write_text("the other runners")
    (tmp_path / "30m.json").write_text("not read")
    nb = {
        "repeats": 3, "rows": {"run": 10, "qrels": 2}, "binary_labels": False,
        "warm_up_s": {"releval": 9.0, "floor": 4.0, "RankingEvaluator": 5.0},
        "times_s": {"releval": [4.0, 3.0, 3.5], "floor": [2.5, 2.25, 2.75],
                    "RankingEvaluator": [2.0, 2.5, 1.5]},
        "median_s": {"releval": 3.5, "floor": 2.5, "RankingEvaluator": 2.0}, "ratio": 1.75,
        "floor_ratio": 1.25,  # 2.5 / 2.0
        "largest_change_between_runs": 0.0,
        "agreement": {"AP": {"releval": 0.4, "RankingEvaluator": 0.4, "diff": 0.0, "status": "ok"}},
    }
    report = {
        "size": "full", "results_name": "full-notebook", "generated_at": "now",
        "data": {"queries": 1, "run_rows": 10, "qrels_rows": 2, "seed": 1},
        "machine": {"cpus": 2, "memory_gib": 1, "python": "3", "platform": "x"},
        "spark": {"master": "local[2]", "shuffle_partitions": 4, "driver_memory": "8g"},
        "install": {},
        "runners": {"notebook": {"runner": "notebook", "ok": True, "phases": {"startup": 1.0},
                                 "means": {"AP": 0.4}, "notebook": nb}},
    }
    harness.finish(report, tmp_path, 1e-6)
    assert (tmp_path / "full.md").read_text() == "the other runners"
    md = (tmp_path / "full-notebook.md").read_text()
    assert json.loads((tmp_path / "full-notebook.json").read_text())["ratios"][NOTEBOOK_RATIO] == 1.75
    assert f"| {NOTEBOOK_RATIO} | 1.75 |" in md
    assert "| 9.00 | 4.00 | 3.00 | 3.50 | 3.50 |" in md  # warm-up, runs 1-3, median
    assert "| 4.00 | 2.50 | 2.25 | 2.75 | 2.50 |" in md  # the floor's
    assert "The floor / RankingEvaluator: 1.25." in md
    assert "**releval / RankingEvaluator, medians: 1.75** (target: <= 1.5)." in md
    assert "Across sizes" not in md and "## Agreement with releval" not in md


@pytest.mark.slow  # a subprocess with its own JVM, eight evaluations
def test_notebook_runner_as_the_harness_starts_it(tmp_path: Path) -> None:
    import subprocess

    generate("tiny", tmp_path / "data", seed=7, queries=20)
    result = tmp_path / "notebook.json"
    subprocess.run(
        [sys.executable, "-m", "bench.runners", "notebook", "--data", str(tmp_path / "data"),
         "--result", str(result), "--work", str(tmp_path / "work"), "--shuffle-partitions", "2"],
        check=True, cwd=Path(__file__).resolve().parents[1],
    )
    row = json.loads(result.read_text())
    assert row["ok"], row["error"]
    nb = row["notebook"]
    assert [len(nb["times_s"][s]) for s in ("releval", "floor", "RankingEvaluator")] == [3, 3, 3]
    assert nb["ratio"] > 0 and nb["agreement"]["AP"]["status"] == "ok"
    assert row["startup_s"] > 0 and "stop" in row["phases"]
