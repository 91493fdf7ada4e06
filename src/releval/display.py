"""Tables for a screen: a notebook object's short ``repr`` and its ``_repr_html_``.

Pure Python (no Spark): rows already computed go in, text or HTML comes out, cut to
``max_rows`` rows (and, as text, to ``max_width`` characters), with a line that names what
was cut. :class:`releval.result.Result` shows itself with them.

Example:
    >>> print(text_table([("P@10", 0.4123, None), ("RR", 0.61, 0.02)],
    ...                  ["measure", "value", "ci"], max_rows=1))
    measure   value  ci
    P@10     0.4123  -
    ... 1 more row
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

#: shown for a null (None or NaN) cell
MISSING = "-"


def cell(value: Any, *, digits: int = 4) -> str:
    """A value as a table shows it: a float with ``digits`` decimals (NaN and None as
    :data:`MISSING`), an integer with thousands separators, anything else as ``str``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _numeric(values: Sequence[Any]) -> bool:
    present = [v for v in values if v is not None]
    return bool(present) and all(isinstance(v, int | float) and not isinstance(v, bool)
                                 for v in present)


def _more(count: int, what: str) -> str:
    return f"{count:,} more {what}{'' if count == 1 else 's'}"


def text_table(rows: Sequence[Sequence[Any]], columns: Sequence[str], *, max_rows: int = 20,
               max_width: int = 100, digits: int = 4, noun: str = "row") -> str:
    """``rows`` under ``columns`` as aligned text: numbers right-aligned, text left.

    Args:
        rows: the rows, each a sequence in the order of ``columns``; cells are shown by
            :func:`cell` unless they are already strings.
        max_rows: rows shown; a last line says how many more there are.
        max_width: the widest line; the columns that do not fit (after the first, which
            is always shown) are left out and the last line names how many.
        digits: decimals of a float.
        noun: what a row is, for the line of what was cut ("... 3 more measures").

    Returns:
        The table's lines joined by newlines (no trailing newline).
    """
    shown = [[cell(v, digits=digits) for v in r] for r in rows[:max_rows]]
    numeric = [_numeric([r[i] for r in rows[:max_rows]]) for i in range(len(columns))]
    widths = [max([len(c), *(len(r[i]) for r in shown)]) for i, c in enumerate(columns)]
    kept, width = [], -2
    for i, w in enumerate(widths):
        if kept and width + 2 + w > max_width:
            break
        kept.append(i)
        width += 2 + w

    def line(values: Sequence[str]) -> str:
        return "  ".join(values[i].rjust(widths[i]) if numeric[i] else values[i].ljust(widths[i])
                         for i in kept).rstrip()

    lines = [line(list(columns)), *(line(r) for r in shown)]
    cut = [_more(len(rows) - max_rows, noun)] if len(rows) > max_rows else []
    if len(kept) < len(columns):
        cut.append(_more(len(columns) - len(kept), "column"))
    if cut:
        lines.append("... " + ", ".join(cut))
    return "\n".join(lines)


def html_table(rows: Sequence[Sequence[Any]], columns: Sequence[str], *, max_rows: int = 20,
               caption: str | None = None, digits: int = 4, noun: str = "row") -> str:
    """``rows`` under ``columns`` as an HTML ``<table>`` (every text escaped), cut to
    ``max_rows`` rows with a last row that says how many more there are (of ``noun``)."""
    numeric = [_numeric([r[i] for r in rows[:max_rows]]) for i in range(len(columns))]

    def td(value: Any, i: int) -> str:
        align = ' style="text-align: right"' if numeric[i] else ""
        return f"<td{align}>{html.escape(cell(value, digits=digits))}</td>"

    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(td(v, i) for i, v in enumerate(r)) + "</tr>"
                   for r in rows[:max_rows])
    if len(rows) > max_rows:
        body += (f'<tr><td colspan="{len(columns)}">... '
                 f"{html.escape(_more(len(rows) - max_rows, noun))}</td></tr>")
    title = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f"<table>{title}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
