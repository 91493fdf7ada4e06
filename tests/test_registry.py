"""Measure names parse to registered specs; bad names fail with the valid ones listed."""

from __future__ import annotations

import pytest

from releval.core.measures import REGISTRY, parse_measure, parse_measures
from releval.errors import MeasureError


@pytest.mark.parametrize(
    "text, key, trec",
    [
        ("P@10", "P@10", "P_10"),
        ("p@10", "P@10", "P_10"),
        ("P_10", "P@10", "P_10"),
        ("recall_100", "R@100", "recall_100"),
        ("Success@10", "Hit@10", "success_10"),
        ("ndcg_cut_10", "nDCG@10", "ndcg_cut_10"),
        ("MAP", "AP", "map"),
        ("map_cut_100", "AP@100", "map_cut_100"),
        ("MRR", "RR", "recip_rank"),
        ("RR@10", "RR@10", None),
        ("P(rel=2)@5", "P(rel=2)@5", "P_5"),
        ("iprec_at_recall_0.10", "iprec(recall=0.1)", "iprec_at_recall_0.10"),
        ("iprec(recall=1)", "iprec(recall=1)", "iprec_at_recall_1.00"),
        ("11pt_avg", "iprec_avg", "11pt_avg"),
        ("Rprec_mult_0.20", "Rprec_mult(mult=0.2)", "Rprec_mult_0.20"),
        ("rbp", "rbp(p=0.9)", "rbp"),
        ("rbp(p=0.8)", "rbp(p=0.8)", "rbp"),
        ("rbp(rel=2, p=0.8)", "rbp(rel=2, p=0.8)", "rbp"),
        ("set_F", "set_F(beta=1)", "set_F"),
        ("utility(b=-2)", "utility(a=1, b=-2, c=0, d=0)", "utility"),
        ("gm_map", "GMAP", "gm_map"),
        ("gm_bpref", "GM_bpref", "gm_bpref"),
        ("unj_5", "unj@5", "unj_5"),
        ("relative_P_10", "relative_P@10", "relative_P_10"),
    ],
)
def test_names_parse_to_canonical_keys(text, key, trec):
    measure = parse_measure(text)
    assert measure.key == key
    assert measure.trec_name == trec


def test_unknown_name_lists_close_and_valid_names():
    with pytest.raises(MeasureError) as info:
        parse_measure("nDGC@10")
    message = str(info.value)
    assert "did you mean nDCG" in message
    assert str(sorted(REGISTRY))[1:-1].split(",")[0] in message


@pytest.mark.parametrize("text", ["P@0", "P@-1", "P@ten", "P", "AP(rel=x)", "num_ret@5",
                                  "iprec", "rbp(q=0.5)", "rbp(p=x)", "rbp(p)", "set_F(beta=1"])
def test_bad_parameters(text):
    with pytest.raises(MeasureError):
        parse_measure(text)


def test_comma_separated_list_keeps_order_and_drops_repeats():
    measures = parse_measures(["P@5, nDCG@10", "P@5", "AP"])
    assert [m.key for m in measures] == ["P@5", "nDCG@10", "AP"]


def test_trec_eval_sets_by_name():
    official = parse_measures(["trec_eval"])
    assert [m.trec_name for m in official][:9] == [
        "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
        "iprec_at_recall_0.00",
    ]
    assert len(official) == 3 + 5 + 11 + 9  # counts, map..recip_rank, 11 points, 9 cutoffs
    everything = parse_measures(["ALL_TREC"])
    assert len(everything) == 97
    assert len({m.trec_name for m in everything}) == 97
    # a set and a measure with parameters in one comma-separated list
    assert [m.key for m in parse_measures(["trec_eval, rbp(p=0.5), set_F(beta=2)"])][-2:] == [
        "rbp(p=0.5)", "set_F(beta=2)"]


def test_every_spec_documents_its_formula():
    assert all(spec.description for spec in REGISTRY.values())


def test_the_measures_page_is_the_registrys():
    from pathlib import Path

    from releval.core.measures import page

    written = (Path(__file__).resolve().parents[1] / "docs" / "measures.md").read_text()
    assert written == page.render(), "regenerate: python -m releval.core.measures.page > docs/measures.md"
    assert "| `P` | `Precision` | `@k` required | - | macro, micro | [0, 1] | `P_k` |" in written
    assert "| `utility` | - | no cutoff | `a` = 1, `b` = -1, `c` = 0, `d` = 0 | macro | - |" in written
