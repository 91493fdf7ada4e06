"""docs/measures.md, generated from the registry: ``python -m releval.core.measures.page``."""

from __future__ import annotations

from releval.core.measures.registry import REGISTRY, Measure, MetricSpec

INTRO = """\
# Measures

Generated from the measure registry (`python -m releval.core.measures.page > docs/measures.md`;
a test keeps this page and the registry the same). `releval measures` prints the same list,
`releval.measures()` returns it.

A measure is written `NAME[(rel=N, param=x)][@k][[judged]][[ties]]`: `P@10`, `P(rel=2)@5`,
`AP`, `nDCG@10[judged]`, `AP[ties]`, `rbp(p=0.8)`; `@window` in place of `@k` cuts each query
at its own k_q; `P@k`, `Hit@k` and `RR` also take `[best]` (every unjudged document counted
relevant: the value's upper bound). Names are
case-insensitive and trec_eval's names are accepted too (`P_5`, `ndcg_cut_10`, `map`,
`iprec_at_recall_0.10`, `11pt_avg`). Two names stand for trec_eval's sets: `trec_eval` (its
default measures) and `all_trec` (every measure it has; of its text output only `runid` and
`relstring` are not measures, and `relstring` is left out).

- **Relevant**: a document whose label is at least the relevance level (default 1;
  `(rel=N)` per measure, `--relevance-level` for all). Gains of nDCG use the label itself.
- **Unjudged**: a document without a label counts as not relevant (gain 0), as in trec_eval.
  `Judged@k` is added for every cutoff k so each top k says how much of it was judged;
  `[judged]` evaluates on the judged documents only (trec_eval `-J`); `[best]` counts them
  relevant instead, so `P@k`, `Hit@k` and `RR` each have a range judging cannot leave. See
  [incomplete-judgments.md](incomplete-judgments.md).
- **Negative labels**: by default in the pool but not judged (trec_eval); with
  `negative_labels = "judged"` a judged non-relevant document.
- **Query set**: the queries of the qrels. A judged query a run did not retrieve scores 0 and
  counts in the means (trec_eval `-c`; `missing_queries = "skip"` leaves it out); a run query
  without judgments is not scored.
- **Averaging**: `macro` is the mean over queries (trec_eval's `all`), with a confidence
  interval; `micro` pools the counts over queries; `sum` totals a count; `geometric` is the
  geometric mean, each value floored at 0.00001 (trec_eval's `gm_map`, `gm_bpref`: they have
  only an `all` line in trec_eval's output).
- **Window**: every measure that takes `@k` also takes `@window` (`P@window`, `R@window`,
  `Hit@window`, `nDCG@window`, `AP@window`, `RR@window`, `Judged@window`): the cutoff is each
  query's k_q, the top documents its consumer used, from the run column `run.window`
  (`--window`, `window=`); `P@window` divides by k_q, `nDCG@window` cuts the ideal ranking at
  k_q. The cut counts documents after the tie-break and a depth (so at min(depth, k_q)),
  before a judged-only condensation. `P@window` has no micro average (no one k to pool
  over). Without a window the measure is an error ([inputs.md](inputs.md#the-window)).
- **Range**: the values a query can get; a macro value's confidence interval stays inside it
  (Wilson's interval when every per-query value is 0 or 1, else the t interval clipped to
  it: [statistics.md](statistics.md)). `-`: a count or an unbounded measure.
- **Tied scores**: documents of equal score are ordered by doc id descending (trec_eval);
  `[ties]` gives instead the expected value over every order of each group of tied documents
  (McSherry and Najork, ECIR 2008), for
  {ties}; its only averaging is `macro`; not with a depth;
  `[judged][ties]` combines both. See [which-measure.md](which-measure.md#tied-scores).
"""

_CUTOFF = {"required": "`@k` required", "optional": "`@k` optional", "none": "no cutoff"}


#: a parameter's value in a sample measure: shown as ``x`` in trec_eval's name
_SAMPLE = 7.77


def _trec_names(spec: MetricSpec) -> str:
    """trec_eval's names of the family, ``k`` standing for the cutoff, ``x`` a parameter."""
    if spec.trec_name is None:
        return "-"
    params = tuple((k, _SAMPLE if v is None else v) for k, v in spec.params)

    def name(cutoff: int | None) -> str | None:
        found = spec.trec_name(Measure(name=spec.name, cutoff=cutoff, rel_level=1, params=params))
        return found.replace(f"{_SAMPLE:.2f}", "x") if found else None

    names = []
    if spec.cutoff != "required":
        names.append(name(None))
    if spec.cutoff != "none":
        cut = name(1000003)
        names.append(cut.replace("1000003", "k") if cut else None)
    return ", ".join(f"`{n}`" for n in names if n) or "-"


def _range(spec: MetricSpec) -> str:
    return "-" if spec.bounds is None else f"[{spec.bounds[0]:g}, {spec.bounds[1]:g}]"


def _parameters(spec: MetricSpec) -> str:
    return ", ".join(f"`{k}`" + (" (required)" if v is None else f" = {v:g}")
                     for k, v in spec.params) or "-"


def render() -> str:
    """The measures page: the conventions, then one row per registered family."""
    rows = [
        "| measure | aliases | cutoff | parameters | averaging | range | trec_eval | formula |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for spec in REGISTRY.values():
        aliases = ", ".join(f"`{a}`" for a in spec.aliases) or "-"
        formula = spec.description.replace("|", "\\|")
        rows.append(
            f"| `{spec.name}` | {aliases} | {_CUTOFF[spec.cutoff]} | {_parameters(spec)} "
            f"| {', '.join(spec.averaging)} | {_range(spec)} "
            f"| {_trec_names(spec)} | {formula} |"
        )
    ties = ", ".join(f"`{n}`" for n, spec in REGISTRY.items() if spec.ties is not None)
    return INTRO.format(ties=ties) + "\n" + "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(render(), end="")
