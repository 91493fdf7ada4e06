"""The report's gate verdict, first on the page when the gate table exists: the latest gate
run's decision and each run partition that did not pass, with its failing rules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from releval.config import Config
from releval.report.data import open_output
from releval.report.html import esc

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_ORDER = ("fail", "inconclusive", "no_baseline", "pass")


def gate_verdict(config: Config, spark: SparkSession | None = None) -> str:
    """HTML: the latest job run's gate (``gated_at``) as a verdict and its non-passing run
    partitions; "" when there is no gate table or it is empty."""
    opened = open_output(config, "gate", spark)
    if opened is None:
        return ""
    rows = opened.read(None, ())
    if rows.empty:
        return ""
    latest = rows[rows["gated_at"] == rows["gated_at"].max()]
    parts = [c for c in config.run.partition_columns if c in latest.columns]
    by_partition = latest.groupby(parts, dropna=False, sort=True)
    decisions = {key: g["decision"].iloc[0] for key, g in by_partition}
    found = set(decisions.values())
    verdict = next((d for d in _ORDER if d in found), "pass")
    if verdict == "no_baseline":
        verdict = "pass" if "pass" in found else "no_baseline"
    items = []
    for key, g in by_partition:
        decision = g["decision"].iloc[0]
        if decision == "pass":
            continue
        key = key if isinstance(key, tuple) else (key,)
        label = "/".join(f"{c}={v}" for c, v in zip(parts, key, strict=True))
        failing = sorted(set(g.loc[g["outcome"] == "fail", "rule"]))
        why = f": {esc('; '.join(failing))}" if failing else ""
        items.append(f"<li>{esc(label)} against {esc(g['baseline'].iloc[0] or 'no baseline')}"
                     f": <b>{esc(decision)}</b>{why}</li>")
    counts = ", ".join(f"{sum(d == o for d in decisions.values())} {o}" for o in _ORDER
                       if o in found)
    return (f'<section class="headline" id="gate"><h2>Gate: {esc(verdict.upper())}</h2>'
            f"<p>{esc(counts)} of {len(decisions)} gated run partitions (gate table "
            f"{esc(opened.where)} v{opened.version}; docs/statistics.md).</p>"
            + (f"<ul>{''.join(items)}</ul>" if items else "") + "</section>")
