"""The printed agreement: accounts, confusion matrix, kappa, orderings, flipped decisions."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from releval.job.agree import AgreementReport


def _num(value: float | None, fmt: str = ".3f") -> str:
    return "-" if value is None else format(value, fmt)


def render(report: AgreementReport) -> str:
    """The report as text: what ``releval agree`` prints."""
    labels, s = report.labels, report.settings
    version = "" if report.version is None else f" (table version {report.version})"
    lines = [
        "releval agreement",
        f"  agreement_id: {report.agreement_id}{version}",
        f"  reference: {report.reference}",
        f"  other:     {report.other}",
        *(f"  {a.render()}" for a in labels.accounts),
        f"  pairs judged by both: {labels.pairs} over {labels.queries} queries; judged by "
        f"the reference only: {labels.reference_only}, by the other only: {labels.other_only}",
        "",
        "  confusion matrix (rows: reference label, columns: other label)",
        "  " + f"{'':>8}" + "".join(f"{v:>8}" for v in labels.labels),
        *("  " + f"{a:>8}" + "".join(f"{n:>8}" for n in row)
          for a, row in zip(labels.labels, labels.table, strict=True)),
        "",
    ]
    low, high = labels.interval
    if labels.kappa.plain is None:
        lines.append(f"  kappa: null ({labels.kappa.reason})")
    else:
        lines.append(
            f"  kappa {_num(labels.kappa.plain)}  [{_num(low)}, {_num(high)}] "
            f"({s.level:.0%} percentile bootstrap over queries, {s.resamples} resamples, "
            f"seed {s.seed})")
        lines.append(f"  kappa_linear {_num(labels.kappa.linear)} (weights |a - b| on the "
                     "label values)")
    binary = "-" if labels.binary is None else f"{labels.binary:.1%}"
    lines.append(f"  binary agreement (relevant: label >= {report.relevance_level}): {binary}")
    systems = report.systems
    if systems is None:
        return "\n".join(lines)
    lines += ["", "  the run evaluated under both qrels:"]
    for name, account in zip(("reference", "other"), systems.accounts, strict=True):
        lines += [f"   under the {name}:", *account.render().splitlines()[1:-1]]
    lines += ["", "  orderings of the run partitions by macro mean (tau_AP: the reference's "
              "ordering as the truth; ties by partition label)",
              f"  {'measure':<20} {'n':>4} {'tau_b':>7} {'tau_AP':>7}"
              + (f" {'flipped':>9}" if systems.baseline else "")]
    for m in systems.measures:
        lines.append(f"  {m.measure_key:<20} {len(m.labels):>4} {_num(m.tau_b):>7} "
                     f"{_num(m.tau_ap):>7}"
                     + (f" {len(m.flips):>4} of {m.decisions or 0:<2}" if systems.baseline else ""))
    if systems.baseline:
        flips = [f for m in systems.measures for f in m.flips]
        lines += ["", f"  decisions against the baseline {systems.baseline} that differ "
                  f"between the qrels ({len(flips)}):"]
        lines += [f"    {f.candidate} {f.measure_key}: p {_num(f.reference_p, '.3g')} "
                  f"({'significant' if f.reference_significant else 'not significant'}) "
                  f"under the reference, p {_num(f.other_p, '.3g')} "
                  f"({'not significant' if f.reference_significant else 'significant'}) "
                  "under the other" for f in flips] or ["    none"]
    return "\n".join(lines)
