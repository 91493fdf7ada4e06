"""The ``[gate]`` section's checks (the rules' form is checked before a job runs)."""

from __future__ import annotations

from releval.config.checks import check_choice
from releval.config.settings import GATE_BASELINES, GateSettings
from releval.errors import ConfigError

#: How a gate decides: on its tests' confidence bounds, or on the point estimates.
MODES = ("confidence", "point")
#: What an inconclusive decision may count as (``on_inconclusive``).
ON_INCONCLUSIVE = ("pass", "fail")


def check_alpha(alpha: float, where: str) -> None:
    """A gate's ``alpha``: a level in (0, 0.5), each rule's test being one-sided.

    Example:
        >>> check_alpha(0.05, "gate.alpha")
    """
    if not 0.0 < alpha < 0.5:
        raise ConfigError(f"{where} = {alpha!r}; expected a level in (0, 0.5)")


def check_mode(mode: str, where: str) -> None:
    """A gate's ``mode``: one of :data:`MODES`."""
    if mode not in MODES:
        raise ConfigError(f"{where} = {mode!r}; expected one of {list(MODES)}")


def gate_order_by(gate: GateSettings, partition_columns: tuple[str, ...]) -> str | None:
    """The column that orders a system's partitions: ``order_by``, else ``date`` when it is
    a run partition column."""
    if gate.order_by is not None:
        return gate.order_by
    return "date" if "date" in partition_columns else None


def check_gate(gate: GateSettings, partition_columns: tuple[str, ...],
               source: str = "config") -> GateSettings:
    """Check the ``[gate]`` settings (the rules' form is checked before the job runs)."""
    if not gate.rules:
        raise ConfigError(f"{source}: gate.rules is empty; give at least one rule, e.g. "
                          "\"nDCG@10 change >= -0.01\"")
    check_alpha(gate.alpha, f"{source}: gate.alpha")
    if gate.on_inconclusive is not None:
        check_choice(gate.on_inconclusive, ON_INCONCLUSIVE, "gate.on_inconclusive", source)
    check_mode(gate.mode, f"{source}: gate.mode")
    if gate.baseline in GATE_BASELINES:
        if gate_order_by(gate, partition_columns) not in partition_columns:
            raise ConfigError(
                f"{source}: gate.baseline = {gate.baseline!r} needs gate.order_by, the run "
                f"partition column that orders a system's partitions (a date), one of "
                f"{list(partition_columns)}; got {gate.order_by!r}")
    else:
        pairs = [p.partition("=") for p in gate.baseline.split(",") if p.strip()]
        unknown = [k.strip() for k, sep, _ in pairs if not sep or k.strip() not in
                   partition_columns]
        if not pairs or unknown:
            raise ConfigError(
                f"{source}: gate.baseline = {gate.baseline!r}; expected \"previous\", "
                f"\"last_pass\" or a run partition KEY=VALUE[,KEY=VALUE] of the columns "
                f"{list(partition_columns)}")
    return gate
