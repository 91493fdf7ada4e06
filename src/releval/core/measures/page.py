"""docs/measures.md, generated from the registry: ``python -m releval.core.measures.page``."""

from __future__ import annotations

from releval.core.measures.registry import REGISTRY, Measure, MetricSpec

INTRO = """\
# Measures

Generated from the measure registry (`python -m releval.core.measures.page > docs/measures.md`;
a test keeps this page and the registry the same). `releval measures` prints the same list,
`releval.measures()` returns it.

A measure is written `NAME[(rel=N)][@k][[judged]]`: `P@10`, `P(rel=2)@5`, `AP`, `nDCG@10[judged]`.
Names are case-insensitive and trec_eval's names are accepted too (`P_5`, `ndcg_cut_10`, `map`).

- **Relevant**: a document whose label is at least the relevance level (default 1;
  `(rel=N)` per measure, `--relevance-level` for all). Gains of nDCG use the label itself.
- **Unjudged**: a document without a label counts as not relevant (gain 0), as in trec_eval.
  `Judged@k` is added for every cutoff k so each top k says how much of it was judged;
  `[judged]` evaluates on the judged documents only (trec_eval `-J`). See
  [incomplete-judgments.md](incomplete-judgments.md).
- **Negative labels**: by default in the pool but not judged (trec_eval); with
  `negative_labels = "judged"` a judged non-relevant document.
- **Query set**: the queries of the qrels. A judged query a run did not retrieve scores 0 and
  counts in the means (trec_eval `-c`; `missing_queries = "skip"` leaves it out); a run query
  without judgments is not scored.
- **Averaging**: `macro` is the mean over queries (trec_eval's `all`), with a confidence
  interval; `micro` pools the counts over queries; `sum` totals a count.
"""

_CUTOFF = {"required": "`@k` required", "optional": "`@k` optional", "none": "no cutoff"}


def _trec_names(spec: MetricSpec) -> str:
    """trec_eval's names of the family, ``k`` standing for the cutoff."""
    if spec.trec_name is None:
        return "-"
    names = []
    if spec.cutoff != "required":
        names.append(spec.trec_name(Measure(name=spec.name, cutoff=None, rel_level=1)))
    if spec.cutoff != "none":
        cut = spec.trec_name(Measure(name=spec.name, cutoff=1000003, rel_level=1))
        names.append(cut.replace("1000003", "k") if cut else None)
    return ", ".join(f"`{n}`" for n in names if n) or "-"


def render() -> str:
    """The measures page: the conventions, then one row per registered family."""
    rows = [
        "| measure | aliases | cutoff | averaging | trec_eval | formula |",
        "|---|---|---|---|---|---|",
    ]
    for spec in REGISTRY.values():
        aliases = ", ".join(f"`{a}`" for a in spec.aliases) or "-"
        formula = spec.description.replace("|", "\\|")
        rows.append(
            f"| `{spec.name}` | {aliases} | {_CUTOFF[spec.cutoff]} | {', '.join(spec.averaging)} "
            f"| {_trec_names(spec)} | {formula} |"
        )
    return INTRO + "\n" + "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(render(), end="")
