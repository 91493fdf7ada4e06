"""What a :class:`releval.result.Result` shows in a notebook and at the prompt: the inputs,
the measures, the run partitions and the macro means with their intervals."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from releval import display
from releval.core import columns as S
from releval.core.overall import MACRO, overall

if TYPE_CHECKING:
    from releval.result import Result


def summary(result: Result) -> tuple[list[str], list[str], list[list[Any]], str]:
    """What a :class:`~releval.result.Result` shows: the header lines, the macro table's
    columns and rows (a row per measure) and the footer line; reads the aggregate's rows
    once (:attr:`Result.aggregate` reuses them)."""
    parts = list(result.inputs.partition_columns)
    asked = [m for m in str(result.settings.get("measures") or "").split(",") if m] or [
        m.key for m in result.evaluation.measures]
    head = [f"releval.Result: {result.run_name} against {result.qrels_name}",
            f"  measures ({len(asked)}): {_listed(asked, 12)}"]
    answered = result.inputs.answers is not None and result.thresholds is not None
    footer = ("tables (DataFrames, planned and not collected): result.per_query, "
              "result.quarantine" + (", result.attribution" if answered else "")
              + "; result.aggregate has every averaging; result.accounts")
    try:
        found = result._aggregate_rows
    except Exception as error:  # noqa: BLE001 - shown, as reading the table would raise it
        head.append(f"  not computed: the aggregate raised {type(error).__name__}: {error}")
        return head, [], [], footer
    report = result.accounts
    head.append("  rows used (quarantined): " + "; ".join(
        f"{a.name.split(';')[0]} {a.used:,} ({a.quarantined_total:,})"
        for a in report.inputs))
    macro = overall(found, MACRO)
    labels = sorted({", ".join(str(r[c]) for c in parts) for r in macro})
    if parts:
        head.append(f"  run partitions by {', '.join(parts)} ({len(labels)}): "
                    f"{_listed(labels, result.SHOWN_PARTITIONS)}")
    methods = sorted({r[S.CI_METHOD] for r in macro if r.get(S.CI_METHOD)})
    levels = sorted({r[S.CI_LEVEL] for r in macro if r.get(S.CI_LEVEL) is not None})
    interval = " ".join([*(f"{v:.0%}" for v in levels), "interval",
                         *([f"({', '.join(methods)})"] if methods else [])])
    head.append(f"macro means [{interval}]" + (", a column per run partition" if parts
                                               else "") + ":")
    keys = list(dict.fromkeys(r[S.MEASURE_KEY] for r in macro))
    cells = {(", ".join(str(r[c]) for c in parts), r[S.MEASURE_KEY]): _mean(r)
             for r in macro}
    columns = [S.MEASURE_KEY, *(labels if parts else ["mean"])]
    rows = [[k, *(cells.get((label, k)) for label in (labels if parts else [""]))]
            for k in keys]
    return head, columns, rows, footer


def _listed(names: list[str], most: int) -> str:
    """The first ``most`` names, then how many more."""
    shown = ", ".join(names[:most])
    return shown + (f", ... {len(names) - most} more" if len(names) > most else "")


def _mean(row: dict[str, Any]) -> str:
    """A macro mean and its interval: ``0.4123 [0.401, 0.423]``."""
    return (f"{display.cell(row[S.VALUE])} [{display.cell(row.get(S.CI_LOW), digits=3)}, "
            f"{display.cell(row.get(S.CI_HIGH), digits=3)}]")
