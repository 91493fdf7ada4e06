"""The benchmark's data generator and NumPy floor (no timings are tested)."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest

pytest.importorskip("pyarrow")

from bench.generate import DOCS_PER_QUERY, JUDGED, generate_arrays  # noqa: E402
from bench.runners import numpy_measures  # noqa: E402


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


def test_generator_is_seeded_and_untied() -> None:
    run, qrels = generate_arrays(50, seed=7)
    again, _ = generate_arrays(50, seed=7)
    assert run.equals(again)
    assert run.num_rows == 50 * DOCS_PER_QUERY and qrels.num_rows == 50 * JUDGED
    scores = run["score"].to_numpy().reshape(50, DOCS_PER_QUERY)
    assert (np.diff(scores, axis=1) < 0).all()  # strictly decreasing: no ties
    assert set(qrels["relevance"].to_pylist()) <= {0, 1, 2, 3}
    assert len(set(zip(run["query_id"].to_pylist(), run["doc_id"].to_pylist()))) == run.num_rows


def test_numpy_floor_matches_plain_python() -> None:
    run, qrels = generate_arrays(200, seed=11)
    per_query = numpy_measures(run, qrels)
    run_d: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for q, d, s in zip(*(run[c].to_pylist() for c in ("query_id", "doc_id", "score"))):
        run_d[q].append((s, d))
    qrels_d: dict[str, dict[str, int]] = defaultdict(dict)
    for q, d, r in zip(*(qrels[c].to_pylist() for c in ("query_id", "doc_id", "relevance"))):
        qrels_d[q][d] = r
    expected = reference(run_d, qrels_d)
    for measure, values in per_query.items():
        assert values.mean() == pytest.approx(expected[measure], abs=1e-12), measure
