"""The inputs' accounts: ``input = used + quarantined``, per run partition, from the ledger.

The engine counts the rows it receives, rejects and uses (:mod:`releval.core.ledger`);
here the counts become :class:`InputAccount` values and the invariant is checked, once.
See docs/design/checks.md.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from releval.core.columns import EXACT_DUPLICATE, MAX_LABEL, RECEIVED, USED
from releval.errors import AccountingError

_INPUT_TAG = "_input"
_USED_TAG = "_used"


def render_partition(key: str) -> str:
    """``{"date":"2024-05-01"}`` -> ``date=2024-05-01``; ``{}`` -> ``all``."""
    values = json.loads(key) if key else {}
    return "/".join(f"{k}={v}" for k, v in values.items()) or "all"


@dataclass(frozen=True)
class PartitionAccount:
    """Row counts of one input partition."""

    partition: str
    input: int
    used: int
    quarantined: dict[str, int] = field(default_factory=dict)
    #: The partition's column values as strings (the key ``partition`` renders).
    values: dict[str, str | None] = field(default_factory=dict)

    @property
    def quarantined_total(self) -> int:
        return sum(self.quarantined.values())

    @property
    def balanced(self) -> bool:
        return self.input == self.used + self.quarantined_total


@dataclass(frozen=True)
class InputAccount:
    """Row counts of one input (run or qrels), per partition."""

    name: str
    source: str
    partitions: tuple[PartitionAccount, ...]
    exact_duplicates: int = 0
    #: The highest label of the used qrels rows; None for the run.
    used_max: int | None = None

    @property
    def input(self) -> int:
        return sum(p.input for p in self.partitions)

    @property
    def used(self) -> int:
        return sum(p.used for p in self.partitions)

    @property
    def quarantined(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in self.partitions:
            for code, n in p.quarantined.items():
                out[code] = out.get(code, 0) + n
        return dict(sorted(out.items()))

    @property
    def quarantined_total(self) -> int:
        return sum(self.quarantined.values())

    def render(self) -> list[str]:
        reasons = ", ".join(f"{c} {n}" for c, n in self.quarantined.items()) or "none"
        lines = [
            f"  {self.name} ({self.source}): input {self.input} = used {self.used} "
            f"+ quarantined {self.quarantined_total} ({reasons})"
        ]
        for p in self.partitions:
            mark = "ok" if p.balanced else "MISMATCH"
            lines.append(
                f"    {p.partition}: input {p.input} = used {p.used} + quarantined "
                f"{p.quarantined_total} [{mark}]"
            )
        if self.exact_duplicates:
            lines.append(f"    exact duplicate judgments (kept, counted once): {self.exact_duplicates}")
        return lines


def account_ledger(
    name: str,
    source: str,
    ledger: Mapping[tuple[str | None, ...], Mapping[str, int]],
    *,
    partition_columns: Sequence[str],
    used_as: str = " (ranked)",
) -> InputAccount:
    """The run's (or the answers') account from a ledger, with the invariant checked.

    ``received`` is counted before anything drops a row, apart from ``used`` (the rows
    ranked) and the reasons, so a row the engine loses or adds breaks the invariant.

    Args:
        ledger: partition values as strings, in ``partition_columns`` order -> counts by
            tag (``received``, ``used`` and the reason codes).
        used_as: what ``used`` means, in the error message.

    Raises:
        AccountingError: naming the first partition whose counts disagree.
    """
    parts = list(partition_columns)
    by_key: dict[str, dict[str, int]] = {}
    for values, counts in ledger.items():
        key = json.dumps(dict(zip(parts, values, strict=True)), separators=(",", ":"),
                         ensure_ascii=False)
        tags = {_INPUT_TAG: int(counts.get(RECEIVED, 0)), _USED_TAG: int(counts.get(USED, 0))}
        tags.update({c: int(n) for c, n in counts.items() if c not in (RECEIVED, USED) and n})
        by_key[key] = tags
    return _input_account(name, source, by_key, used_as=used_as)


def account_qrels_ledger(name: str, source: str, ledger: Iterable[tuple[str, int]]) -> InputAccount:
    """The qrels' account from the evaluation's qrels ledger, with the invariant checked.

    ``received`` is counted before anything drops a row and ``used`` after.

    Args:
        ledger: (tag without the ``qrels:`` prefix, count) per shuffle partition; counts
            are summed, ``max_label`` is the highest.

    Raises:
        AccountingError: input != used + quarantined.
    """
    tags: dict[str, int] = {}
    for tag, n in ledger:
        n = int(n)
        tags[tag] = max(tags.get(tag, n), n) if tag == MAX_LABEL else tags.get(tag, 0) + n
    received, used = tags.pop(RECEIVED, 0), tags.pop(USED, 0)
    duplicates, top = tags.pop(EXACT_DUPLICATE, 0), tags.pop(MAX_LABEL, None)
    by_key = {"{}": {_INPUT_TAG: received, _USED_TAG: used, **{c: n for c, n in tags.items() if n}}}
    account = _input_account(name, source, by_key, duplicates=duplicates)
    return dataclasses.replace(account, used_max=top)


def _input_account(
    name: str, source: str, by_key: dict[str, dict[str, int]], *, duplicates: int = 0,
    used_as: str = "",
) -> InputAccount:
    """The :class:`InputAccount` of ``{partition key JSON: {tag: count}}``; raises
    AccountingError naming the first partition whose counts disagree."""
    partitions = []
    for k in sorted(by_key):
        counts = dict(by_key[k])
        partitions.append(
            PartitionAccount(
                partition=render_partition(k),
                input=counts.pop(_INPUT_TAG, 0),
                used=counts.pop(_USED_TAG, 0),
                quarantined=dict(sorted(counts.items())),
                values=json.loads(k) if k else {},
            )
        )
    result = InputAccount(name, source, tuple(partitions), duplicates)
    broken = [p for p in partitions if not p.balanced]
    if broken:
        p = broken[0]
        where = f"partition {p.partition}: " if p.values else ""
        raise AccountingError(
            f"{name} {source}: {where}input rows {p.input} (received by the evaluation) != "
            f"used {p.used}{used_as} + quarantined {p.quarantined_total} {p.quarantined}; "
            "rows were lost or duplicated inside the evaluation; nothing was written"
        )
    return result


@dataclass(frozen=True)
class QualityReport:
    """What the input checks found: row accounting of both inputs and the quarantine."""

    run: InputAccount
    qrels: InputAccount
    quarantine: str | None
    strict: bool
    #: The answers' account; None when the job read no answers.
    answers: InputAccount | None = None
    #: The queries input's account; None when the job read no queries input.
    queries: InputAccount | None = None
    #: Scored (run partition, query) pairs the queries input does not list (slice value
    #: ``(unlisted)``, left out of the weighted means); None without a queries input.
    unlisted: int | None = None

    @property
    def inputs(self) -> tuple[InputAccount, ...]:
        """The accounts of the inputs read: run, qrels and, when read, answers and queries."""
        return (self.run, self.qrels, *([self.answers] if self.answers else []),
                *([self.queries] if self.queries else []))

    @property
    def quarantined(self) -> int:
        return sum(account.quarantined_total for account in self.inputs)

    def render(self) -> str:
        """One line per input; a partition is named only when it does not balance."""
        where = f" -> {self.quarantine}" if self.quarantine else ""
        lines = [f"  row accounting   {'input':>10} {'used':>10} {'quarantined':>11}"]
        for account in self.inputs:
            reasons = ", ".join(f"{c} {n}" for c, n in account.quarantined.items()) or "none"
            ok = sum(1 for p in account.partitions if p.balanced)
            dups = (f"; exact duplicate judgments (kept, counted once): {account.exact_duplicates}"
                    if account.exact_duplicates else "")
            lines.append(
                f"    {account.name:<15}{account.input:>10} {account.used:>10} "
                f"{account.quarantined_total:>11}  ({reasons}); input = used + quarantined in "
                f"{ok} of {len(account.partitions)} partition(s){dups}; {account.source}"
            )
            lines += [f"      MISMATCH {p.partition}: input {p.input} = used {p.used} + "
                      f"quarantined {p.quarantined_total}"
                      for p in account.partitions if not p.balanced]
        if self.unlisted is not None:
            lines.append(f"  scored queries (run partition x query) the queries input does not "
                         f"list: {self.unlisted} (slice value (unlisted); not in weighted means)")
        lines.append(f"  quarantined rows: {self.quarantined}{where}")
        return "\n".join(lines)
