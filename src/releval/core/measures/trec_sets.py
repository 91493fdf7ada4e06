"""trec_eval's measure sets by name, as trec_eval's own names in its order of printing:
``trec_eval`` (its default, ``official``) and ``all_trec`` (every numeric measure)."""

from __future__ import annotations

_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
_RECALL_POINTS = tuple(f"{i / 10:.2f}" for i in range(11))
_MULTIPLES = tuple(f"{i / 10:.2f}" for i in range(2, 21, 2))

OFFICIAL: tuple[str, ...] = (
    "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
    *(f"iprec_at_recall_{r}" for r in _RECALL_POINTS),
    *(f"P_{k}" for k in _CUTOFFS),
)

ALL_TREC: tuple[str, ...] = (
    *OFFICIAL,
    *(f"recall_{k}" for k in _CUTOFFS),
    "infAP", "gm_bpref",
    *(f"Rprec_mult_{m}" for m in _MULTIPLES),
    "utility", "11pt_avg", "binG", "G", "ndcg", "ndcg_rel", "Rndcg",
    *(f"ndcg_cut_{k}" for k in _CUTOFFS),
    *(f"map_cut_{k}" for k in _CUTOFFS),
    *(f"relative_P_{k}" for k in _CUTOFFS),
    "success_1", "success_5", "success_10",
    "set_P", "set_relative_P", "set_recall", "set_map", "set_F",
    "num_nonrel_judged_ret", "rbp", "rbp_resid", "unj_5", "unj_10", "unj_20",
)

#: set name (as ``--measures`` takes it, any case) -> trec_eval names
MEASURE_SETS: dict[str, tuple[str, ...]] = {
    "trec_eval": OFFICIAL, "official": OFFICIAL, "all_trec": ALL_TREC,
}
