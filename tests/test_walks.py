"""The walked statistics (trec_eval's loop-defined measures) on one hand-made ranking, with
the arithmetic written out; no Spark: the kernel's NumPy function is called directly."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest

from releval.core.kernel import partition_stats
from releval.core.measures.stats import RunStat

# one query, five documents by score: d1 (label 2), d2 (not in the qrels), d3 (label 0),
# d4 (label 1), d5 (a negative label: in the pool, not judged); d6 (label 1) not retrieved.
# At level 1: R = 3 (d1, d4, d6); the relevant retrieved are at ranks 1 and 4.
RUN = [("d1", 5.0), ("d2", 4.0), ("d3", 3.0), ("d4", 2.0), ("d5", 1.0)]
QRELS = [("d1", 2), ("d3", 0), ("d4", 1), ("d6", 1), ("d5", None)]


def walked(walker: str, param: float | None = None, judged: bool = False) -> float:
    n, m = len(RUN), len(QRELS)
    table = pa.table({
        "query_id": pa.array(["q"] * (n + m), pa.string()),
        "doc_id": pa.array([d for d, _ in RUN] + [d for d, _ in QRELS], pa.string()),
        "_order": pa.array([s for _, s in RUN] + [None] * m, pa.float64()),
        "relevance": pa.array([None] * n + [r for _, r in QRELS], pa.int32()),
        "_is_run": pa.array([True] * n + [False] * m),
    })
    spec = RunStat("walk", judged=judged, level=1, walker=walker, param=param)
    rows = partition_stats(table, specs={"v": spec}, partition_columns=[], rank_by="score")
    return next(r["v"] for r in rows.to_pylist() if r["_in_run"])


@pytest.mark.parametrize(("recall", "expected"), [
    (0.0, 1.0),   # round(0 * 3) = 0: the best precision anywhere, 1/1 at rank 1
    (0.3, 1.0),   # round(0.9) = 1: best precision from the 1st relevant on: max(1/1, 2/4)
    (0.5, 0.5),   # round(1.5) = 2: from the 2nd relevant on: 2/4
    (0.7, 0.5),   # round(2.1) = 2
    (0.9, 0.0),   # round(2.7) = 3: only 2 relevant retrieved
])
def test_interpolated_precision(recall, expected):
    assert walked("iprec", recall) == pytest.approx(expected)


def test_inf_ap():
    # rank 1 (d1, relevant): 1; rank 4 (d4, relevant; above it 1 relevant, 1 judged
    # non-relevant, d2 outside the pool): 1/4 + (3/4) * ((1 + 1 + 0) / 3) * ((1 + e) / (2 + 2e))
    e = 0.00001
    at_4 = 1 / 4 + (3 / 4) * (2 / 3) * ((1 + e) / (1 + 1 + 2 * e))
    assert walked("infAP") == pytest.approx((1 + at_4) / 3, abs=1e-12)


def test_rbp_scales_gains_by_the_highest_label():
    # gains label / 2: d1 1.0 at rank 1, d4 0.5 at rank 4; p = 0.9
    assert walked("rbp", 0.9) == pytest.approx(0.1 * (1.0 + 0.5 * 0.9**3), abs=1e-12)
    assert walked("rbp", 0.5) == pytest.approx(0.5 * (1.0 + 0.5 * 0.5**3), abs=1e-12)


def test_rbp_residual():
    # unjudged at ranks 2 (d2) and 5 (d5): p^5 + (1 - p) * (p^1 + p^4)
    assert walked("rbp_resid") == pytest.approx(0.9**5 + 0.1 * (0.9 + 0.9**4), abs=1e-12)
    assert walked("rbp_resid", judged=True) == 0.0  # judged documents only: none unjudged


def test_bin_g():
    # d1: nothing above, 1 / log2(2); d4: 2 non-relevant above (d2, d3), 1 / log2(4); / R
    assert walked("binG") == pytest.approx((1 / math.log2(2) + 1 / math.log2(4)) / 3)


def test_g():
    # gains 2 0 0 1 0, ideal 2 1 1: cost so far 2, 3, 4, 5 (past the ideal: 1 a rank);
    # d1: 2 / log2(2 + 2 - 2) = 2; d4: 1 / log2(2 + 5 - 3) = 0.5; over the ideal's 2 + 1 + 1
    assert walked("G") == pytest.approx((2 + 0.5) / 4)


def test_ndcg_rel():
    # nDCG at d1 (rank 1) = 2 / 2; at d4 (rank 4) = dcg4 / idcg; d6, not retrieved, counts
    # the nDCG at the end of the ranking (also dcg4 / idcg); averaged over the 3 relevant
    dcg4 = 2 + 1 / math.log2(5)
    idcg = 2 + 1 / math.log2(3) + 1 / math.log2(4)
    assert walked("ndcg_rel") == pytest.approx((1 + 2 * dcg4 / idcg) / 3)


def test_rndcg():
    # the ideal gain changes 2 -> 1 at rank 2 and 1 -> 0 at rank 4: nDCG there (before the
    # rank's own gain), and at the end of the ranking
    idcg = 2 + 1 / math.log2(3) + 1 / math.log2(4)
    at_2, at_4, end = 2 / 2, 2 / idcg, (2 + 1 / math.log2(5)) / idcg
    assert walked("Rndcg") == pytest.approx((at_2 + at_4 + end) / 3)
