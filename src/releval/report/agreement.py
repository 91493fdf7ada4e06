"""The report's agreement section: the latest ``releval agree`` of the agreement table."""

from __future__ import annotations

import pandas as pd

from releval.config import Config
from releval.report.data import location, open_table
from releval.report.html import esc, folded, name_cell, number, table


def latest_agreement(config: Config) -> pd.DataFrame | None:
    """The rows of the latest agreement (by ``agreed_at``) of a path table; None without one
    (a catalog table is not read here)."""
    path, _ = location(config, "agreement")
    found = open_table(path) if path else None
    if found is None:
        return None
    rows = found.to_pandas()
    if rows.empty:
        return None
    latest = rows.sort_values("agreed_at").iloc[-1]["agreement_id"]
    return rows[rows["agreement_id"] == latest]


def latest_agreements(config: Config) -> list[pd.DataFrame]:
    """The rows of the latest agreement of each second version (``other``: the ``[agree]``
    labels, the click labels of ``releval agree --clicks``), latest first; [] without a
    table."""
    path, _ = location(config, "agreement")
    found = open_table(path) if path else None
    rows = found.to_pandas() if found is not None else pd.DataFrame()
    if rows.empty:
        return []
    ordered = rows.sort_values("agreed_at", ascending=False)
    latest = ordered.drop_duplicates("other")["agreement_id"]
    return [rows[rows["agreement_id"] == a] for a in latest]


def agreement_section(rows: pd.DataFrame) -> str:
    """Kappa and binary agreement in a sentence; per measure tau-b, tau_AP and the flipped
    decisions in a five-column table."""
    first = rows.iloc[0]

    def value(v: object, fmt: str = ".3f") -> str:
        return "-" if v is None or pd.isna(v) else format(float(v), fmt)  # type: ignore[arg-type]

    kappa = (f"kappa {value(first['kappa'])} [{value(first['kappa_ci_low'])}, "
             f"{value(first['kappa_ci_high'])}], linear-weighted {value(first['kappa_linear'])}"
             if not pd.isna(first["kappa"]) else f"kappa null ({esc(first['kappa_null_reason'])})")
    text = (f'<p>Agreement <code>{esc(first["agreement_id"])}</code>: {esc(first["other"])} '
            f"against the reference {esc(first['reference'])}, over {int(first['pairs'])} "
            f"pairs both judge: {kappa}; binary agreement {value(first['binary_agreement'], '.1%')} "
            "(docs/agreement.md).</p>")
    measures = rows[rows["measure_key"].notna()].sort_values("measure_key")
    if measures.empty:
        return text
    cells = []
    for _, r in measures.iterrows():
        flipped = ("" if pd.isna(r["decisions"]) else
                   f"{int(r['flipped_decisions'])} of {int(r['decisions'])}")
        cells.append([name_cell(r["measure_key"]), f"<td>{int(r['partitions'])}</td>",
                      number(r["kendall_tau_b"], digits=3), number(r["tau_ap"], digits=3),
                      f"<td>{flipped}</td>"])
    note = ('<p class="note">The run partitions ordered by each measure under both qrels; '
            "tau_AP takes the reference's ordering as the truth; flipped: decisions against "
            f"the baseline {esc(first['baseline'] or '-')} that differ.</p>")
    body = table(["measure_key", "partitions", "tau_b", "tau_AP", "flipped"], cells,
                 cls="agreement")
    return text + folded(f"All {len(cells)} measures: tau-b, tau_AP and the flipped decisions",
                         body, rows=len(cells)) + note
