"""releval.changes (the queries that moved, ranked, with slices and shares) and
releval.compare's queries input, on DataFrames in the suite's session."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from support.slices_data import SCHEMA, pairs_frame, per_query_rows, queries_rows

import releval
from releval.core import columns as S
from releval.errors import InputError

QUERIES_SCHEMA = "qid string, segment string, locale string, hits double"


@pytest.fixture(scope="module")
def per_query(spark):
    return spark.createDataFrame(per_query_rows(), SCHEMA).cache()


@pytest.fixture(scope="module")
def queries(spark):
    return spark.createDataFrame(queries_rows(), QUERIES_SCHEMA)


def expected_ranks(pairs: pd.DataFrame) -> pd.DataFrame:
    """pandas' ranking: within (candidate, measure), losses by diff ascending and gains by
    diff descending, equal diffs by query id (``method="first"`` after sorting by id)."""
    out = pairs.assign(diff=pairs.c - pairs.b).sort_values("query_id")
    by = out.groupby(["candidate", "measure_key"])
    loss = out["diff"].where(out["diff"] < 0)
    gain = (-out["diff"]).where(out["diff"] > 0)
    out["loss_rank"] = loss.groupby([out.candidate, out.measure_key]).rank(method="first")
    out["gain_rank"] = gain.groupby([out.candidate, out.measure_key]).rank(method="first")
    out["n"] = by["diff"].transform("size")
    return out


def test_loss_ranks_shares_and_slices_equal_pandas(per_query, queries):
    moved = releval.changes(per_query, baseline="system=bm25",
                            candidates=["system=dense", "system=hybrid"], queries=queries,
                            queries_columns={"query_id": "qid", "weight": "hits"},
                            slices=["segment", "locale"])
    assert moved.columns == ["candidate", "measure_key", "query_id", "baseline_value",
                             "candidate_value", "diff", "loss_rank", "gain_rank", "segment",
                             "locale", "weight", "share_of_diff"]
    got = moved.toPandas()
    got["candidate"] = got["candidate"].str.removeprefix("system=")
    want = expected_ranks(pairs_frame("zero"))
    both = want.merge(got, on=["candidate", "measure_key", "query_id"], suffixes=("", "_got"))
    assert len(both) == len(want) == len(got) == 2 * 3 * 48
    assert np.allclose(both["diff_got"], both["diff"], rtol=0, atol=1e-12)
    for rank in ("loss_rank", "gain_rank"):
        assert both[rank].isna().equals(both[f"{rank}_got"].isna()), rank
        listed = both[rank].notna()
        assert (both.loc[listed, rank] == both.loc[listed, f"{rank}_got"]).all(), rank
    assert (both.segment == both.segment_got).all() and (both.locale == both.locale_got).all()
    # weighted share: w * d / sum(w) over the listed queries; it adds up to the weighted mean
    listed = both[both.weight.notna()]
    total = listed.groupby(["candidate", "measure_key"]).weight.transform("sum")
    assert np.allclose(listed.share_of_diff, listed.weight * listed["diff"] / total,
                       rtol=1e-12, atol=1e-15)
    assert both[both.weight.isna()].share_of_diff.isna().all()  # q46, q47: unlisted
    sums = listed.groupby(["candidate", "measure_key"]).share_of_diff.sum()
    rows = releval.compare(per_query, baseline="system=bm25",
                           candidates=["system=dense", "system=hybrid"], test="t",
                           queries=queries, queries_columns={"query_id": "qid", "weight": "hits"}
                           ).where("averaging = 'weighted' AND slice IS NULL").collect()
    assert len(rows) == len(sums) == 6
    for r in rows:
        key = (r[S.CANDIDATE].removeprefix("system="), r[S.MEASURE_KEY])
        assert sums[key] == pytest.approx(r[S.MEAN_DIFF], rel=1e-9)


def test_unweighted_shares_and_no_queries(per_query):
    moved = releval.changes(per_query, baseline={"system": "bm25"},
                            candidates=[{"system": "dense"}], measures=["P@5"]).toPandas()
    assert moved.columns.tolist()[-2:] == ["weight", "share_of_diff"]
    assert moved.weight.isna().all() and set(moved.measure_key) == {"P@5"}
    # d / n: 48 pairs (zero-filled), adding up to the mean difference
    assert np.allclose(moved.share_of_diff, moved["diff"] / 48, rtol=1e-12, atol=1e-15)
    row = releval.compare(per_query, baseline="system=bm25", candidates=["system=dense"],
                          test="t").where("measure_key = 'P@5'").first()
    assert moved.share_of_diff.sum() == pytest.approx(row[S.MEAN_DIFF], rel=1e-12)
    # the worst query: the most negative diff
    worst = moved[moved.loss_rank == 1].iloc[0]
    assert worst["diff"] == moved["diff"].min()


def test_per_slice_macro_means_equal_a_pandas_group_by(per_query, queries):
    rows = releval.compare(per_query, baseline="system=bm25", candidates=["system=dense"],
                           test="t", queries=queries, slices=["segment"],
                           queries_columns={"query_id": "qid"}).collect()
    assert {r[S.AVERAGING] for r in rows} == {"macro"}  # no weight: no weighted rows
    pairs = pairs_frame("zero")
    pairs = pairs[pairs.candidate == "dense"]
    want = pairs.groupby(["measure_key", "segment"]).agg(b=("b", "mean"), c=("c", "mean"))
    sliced = [r for r in rows if r[S.SLICE] == "segment"]
    assert len(sliced) == len(want)
    for r in sliced:
        b, c = want.loc[(r[S.MEASURE_KEY], r[S.SLICE_VALUE])]
        assert (r[S.BASELINE_MEAN], r[S.CANDIDATE_MEAN]) == pytest.approx((b, c), rel=1e-12)


@pytest.mark.parametrize("bad, column, reason", [
    (("q01", "head", "en", -2.0), "hits", "invalid_weight"),
    (("q00", "tail", "de", 1.0), "qid", "duplicate_query_id"),
])
def test_a_rejected_queries_row_is_an_error(spark, per_query, bad, column, reason):
    rows = [r for r in queries_rows() if r[0] != "q01"] + [bad]
    frame = spark.createDataFrame(rows, QUERIES_SCHEMA)
    for call in (releval.compare, releval.changes):
        with pytest.raises(InputError, match=rf"queries DataFrame: column '{column}': {reason}"):
            call(per_query, baseline="system=bm25", candidates=["system=dense"], queries=frame,
                 queries_columns={"query_id": "qid", "weight": "hits"})
