"""trec_eval ``-q`` text compared line for line: names and query ids exactly, numbers to 1e-9."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from releval.core.measures import parse_measure
from releval.errors import MeasureError


def name_of(line: str) -> str:
    return line.split("\t")[0].strip()


def expected_lines(path: Path, names: set[str]) -> list[str]:
    """The lines of a trec_eval -q file whose measure is one of ``names``, in its order."""
    return [line for line in path.read_text().splitlines() if name_of(line) in names]


def assert_same_lines(produced: Sequence[str], expected: Sequence[str], tol: float = 1e-9) -> None:
    """Same lines in the same order: the name field (padding included) and the query id equal,
    the values equal as numbers within ``tol`` (as text when not numbers: runid)."""
    assert [line.split("\t")[:2] for line in produced] == [
        line.split("\t")[:2] for line in expected
    ]
    bad = []
    for got, want in zip(produced, expected, strict=True):
        a, b = got.split("\t")[2], want.split("\t")[2]
        try:
            same = abs(float(a) - float(b)) <= tol
        except ValueError:
            same = a == b
        if not same:
            bad.append((got, want))
    assert not bad, f"{len(bad)} lines differ, first: {bad[:5]}"


def supported(names: Iterable[str]) -> dict[str, str]:
    """trec_eval name -> releval measure key, for the names releval computes under that name."""
    out = {}
    for name in sorted(names):
        try:
            measure = parse_measure(name)
        except MeasureError:
            continue
        if measure.trec_name == name:
            out[name] = measure.key
    return out


def implemented(names: Iterable[str]) -> list[str]:
    """The trec_eval names releval computes under the same name, sorted."""
    return list(supported(names))
