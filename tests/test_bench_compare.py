"""bench.compare's notebook scenario: its workloads' shapes and the time inside Spark jobs
that the driver's share is computed from (no Spark)."""

from __future__ import annotations

import numpy as np

from bench import compare


def test_the_sparse_workload_has_the_shape_it_says():
    run, qrels = compare._sparse_workload(np.random.default_rng(47))
    assert run["qid"].nunique() == qrels["qid"].nunique() == 1000
    # 15 judged of 120 per query; each system ranks 50 distinct documents of each query
    assert (qrels.groupby("qid").size() == 15).all()
    assert not qrels.duplicated(["qid", "item_id"]).any()
    per_system = run.groupby(["system", "qid"])["item_id"]
    assert (per_system.size() == 50).all() and (per_system.nunique() == 50).all()
    assert run["item_id"].nunique() == 120 and sorted(run["system"].unique()) == [
        f"s{s}" for s in range(5)]
    # in random order: not grouped by query
    assert (run["qid"] != run["qid"].shift()).mean() > 0.9
    # some ranked documents are judged, most are not
    judged = run.merge(qrels, on=["qid", "item_id"])
    assert 0.05 < len(judged) / len(run) < 0.25


def test_time_inside_jobs_counts_overlaps_once_and_only_in_the_window():
    jobs = [(0.0, 2.0), (1.0, 3.0), (5.0, 6.0), (9.0, 12.0)]
    # [1, 10]: 1-3 (2 s, the overlap once), 5-6 (1 s), 9-10 (1 s)
    assert compare._inside(jobs, 1.0, 10.0) == 4.0
    assert compare._inside(jobs, 3.5, 4.5) == 0.0
    assert compare._inside([], 0.0, 1.0) == 0.0
