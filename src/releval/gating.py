"""A gate's decision and its table, as :func:`releval.gate` returns it: printed, shown in a
notebook, logged to MLflow. See docs/usage.md ("Release gates")."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from releval.arguments import Side, attributes, measure_keys, renamed, sides
from releval.config.gate import check_alpha, check_mode
from releval.core import columns as S
from releval.core.frames import local_frame
from releval.errors import ConfigError
from releval.evaluation.partitions import partition_label
from releval.frames import gate as gate_frames
from releval.stats import gate as G

#: The gate table's schema (:data:`releval.stats.gate.COLUMNS`).
SCHEMA = T.StructType([
    T.StructField(c, T.LongType() if c in (S.NUM_QUERIES, S.QUERIES_NEEDED)
                  else T.StringType() if c in (G.RULE, S.MEASURE_KEY, S.SLICE, S.SLICE_VALUE,
                                               G.OUTCOME)
                  else T.DoubleType())
    for c in G.COLUMNS])
#: Rows shown first: the failing ones, then those that could not decide.
_ORDER = {G.FAIL: 0, G.INCONCLUSIVE: 1, G.NO_BASELINE: 2, G.PASS: 3}
_SHOWN = (G.RULE, S.SLICE_VALUE, G.ESTIMATE, G.BOUND_LOW, G.BOUND_HIGH, G.THRESHOLD,
          G.OUTCOME, G.P_PASS, G.P_FAIL_ADJUSTED, S.NUM_QUERIES, S.QUERIES_NEEDED)


plain = G.plain


def table_rows(rows: pd.DataFrame) -> list[tuple[Any, ...]]:
    """The gate rows as tuples in :data:`SCHEMA`'s order (undefined values None)."""
    return G.records(rows)


def _cell(value: Any) -> str:
    value = plain(value)
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e-3 and value != 0 else f"{value:.4f}"
    return str(value)


def shown(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows to show, failing first, in the order of the rules within each outcome."""
    order = rows[G.OUTCOME].map(_ORDER).fillna(1)
    return rows.assign(_o=order).sort_values("_o", kind="stable").drop(columns="_o")


@dataclass(frozen=True, eq=False)
class Gate:
    """A gate's decision over its rules, and the table behind it.

    Attributes:
        rows: the gate table as pandas (one row per rule and slice value).
        baseline, candidate: the compared run partitions as labels.
        alpha: the gate's level; mode: ``"confidence"`` or ``"point"``.
    """

    rows: pd.DataFrame
    baseline: str
    candidate: str
    alpha: float
    mode: str
    spark: SparkSession

    @property
    def decision(self) -> str:
        """``"pass"`` (every rule passes), ``"fail"`` (a rule fails) or ``"inconclusive"``."""
        found = G.decide(self.rows[G.OUTCOME])
        return G.INCONCLUSIVE if found == G.NO_BASELINE else found

    @property
    def passed(self) -> bool:
        """Whether the gate passed."""
        return self.decision == G.PASS

    @property
    def rules(self) -> dict[str, str]:
        """Each rule's outcome (a rule per slice: fail when a slice value fails, pass when
        every one passes)."""
        return G.rule_outcomes(self.rows)

    @property
    def table(self) -> DataFrame:
        """The gate table: ``rule``, ``measure_key``, ``slice``, ``slice_value``, ``estimate``,
        ``bound_low``, ``bound_high`` (one-sided, 1 - alpha), ``threshold``, ``outcome``,
        ``p_pass``, ``p_fail``, ``p_fail_adjusted`` (Holm), ``num_queries``,
        ``queries_needed`` and ``relative_change`` (a fraction, change rules)."""
        return local_frame(self.spark, table_rows(self.rows), SCHEMA)

    def verdict(self) -> str:
        """One line: the decision, how many rules had each outcome, what was compared."""
        outcomes = list(self.rules.values())
        counts = ", ".join(f"{outcomes.count(o)} {o}" for o in (G.FAIL, G.INCONCLUSIVE, G.PASS)
                           if outcomes.count(o))
        rules = f"{len(outcomes)} rule" + ("" if len(outcomes) == 1 else "s")
        return (f"gate: {self.decision.upper()} ({counts}; {rules}) - "
                f"{self.candidate} against {self.baseline}, alpha {self.alpha:g}"
                + (", point estimates" if self.mode == "point" else ""))

    def render(self) -> str:
        """The verdict, then the table (failing rows first)."""
        rows = shown(self.rows)
        cells = [[str(c) for c in _SHOWN]] + [[_cell(r[c]) for c in _SHOWN]
                                             for _, r in rows.iterrows()]
        widths = [max(len(line[i]) for line in cells) for i in range(len(_SHOWN))]
        lines = ["  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip()
                 for line in cells]
        return "\n".join([self.verdict(), *("  " + line for line in lines)])

    def __repr__(self) -> str:
        return self.render()

    def _repr_html_(self) -> str:
        rows = shown(self.rows)
        head = "".join(f"<th>{html.escape(c)}</th>" for c in _SHOWN)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(_cell(r[c]))}</td>" for c in _SHOWN) + "</tr>"
            for _, r in rows.iterrows())
        return (f"<p><b>{html.escape(self.verdict())}</b></p>"
                f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")

    def log_mlflow(self, prefix: str | None = None, run_id: str | None = None) -> str:
        """Log to MLflow's active run (or ``run_id``; neither: a run started and ended
        here): the tag ``releval.gate`` (the decision) and each row's estimate and bounds
        (``gate/<rule>/estimate``, ``.../bound_low``, ``.../bound_high``).

        Returns:
            The MLflow run id.
        """
        from releval.io.mlflow_log import log_gate

        records = [dict(zip(G.COLUMNS, r, strict=True)) for r in table_rows(self.rows)]
        return log_gate(records, self.decision, prefix=prefix, run_id=run_id)


def gate(
    per_query: DataFrame,
    *,
    baseline: Side,
    candidates: Side | Sequence[Side] | None = None,
    rules: Sequence[str],
    measures: Sequence[str] | None = None,
    slices: Sequence[str] | None = None,
    alpha: float = 0.05,
    queries: DataFrame | None = None,
    queries_columns: Mapping[str, str | None] | None = None,
    mode: str = "confidence",
    **renamed_arguments: Any,
) -> Gate | dict[str, Gate]:
    """Decide a release: pass, fail or inconclusive, with stated error rates.

    A rule passes when its one-sided test rejects the rule's opposite at ``alpha`` (the
    gate passes when every rule does: no correction is needed); it fails when the test that
    it is broken rejects after Holm's correction over every rule and slice value. Pairs are
    the queries both sides scored; a level rule reads the candidate's scored queries.
    Collects only the per-query values of the measures the rules name.

    Args:
        per_query: per-query rows (``Result.per_query`` or the per-query table).
        baseline: a run partition, ``{"system": "bm25"}`` or ``"system=bm25"``.
        candidates: a run partition in the same forms (a :class:`Gate` back), or a list of
            them (a Gate per candidate, by label). ``candidate=`` is its deprecated spelling.
        rules: e.g. ``"nDCG@10 change >= -0.01"`` (non-inferiority by a 0.01 margin),
            ``"nDCG@10 change > 0"``, ``"RR change >= -2%"`` (candidate - 0.98 x baseline
            >= 0), ``"Hit@10 >= 0.9"`` (the candidate's mean), a prefix ``weighted``
            (traffic-weighted means) and a suffix ``per SLICE`` (each slice value).
        measures: the measures the rules may name (None: any evaluated one).
        slices: each rule without ``per SLICE`` is also decided per value of each of these
            slices; None: only the slices the rules name. The values (and the weight of
            ``weighted`` rules) come from the per-query rows, or from ``queries``.
        alpha: each test's level; the bounds are one-sided at 1 - alpha.
        queries: one row per query: its attributes (the slices) and weight, in place of
            the ``weight`` and ``slices`` the per-query rows carry.
        queries_columns: releval's column -> yours: ``query_id``, ``weight``.
        mode: ``"confidence"``, or ``"point"``: the estimates alone decide (MLflow's
            thresholds), with no inconclusive outcome.

    Returns:
        A :class:`releval.gating.Gate` (``decision``, ``passed``, ``table``, ``render()``),
        or with a list of candidates, a dict of them by candidate label.

    Raises:
        ConfigError: an invalid rule (naming it and the form expected), a measure that was
            not evaluated (naming those that were) or not in ``measures``, a slice or
            weight neither the queries nor the per-query rows have.
        InputError: a rejected queries row.

    Example:
        >>> rows = spark.createDataFrame([(s, f"q{i}", "RR", "RR", v) for i in range(8)
        ...     for s, v in (("bm25", 0.5), ("dense", 1.0))],
        ...     "system string, query_id string, measure_key string, measure string, value double")
        >>> g = gate(rows, baseline="system=bm25", candidates="system=dense",
        ...          rules=["RR change >= -0.05"])
        >>> g.decision, g.table.first().estimate  # every query gains 0.5 (4 would not prove it)
        ('pass', 0.5)
    """
    old = renamed(renamed_arguments, "candidate", "candidates", "gate")
    if renamed_arguments:
        raise TypeError(f"gate() got an unexpected keyword argument "
                        f"{next(iter(renamed_arguments))!r}")
    if old is not None:
        if candidates is not None:
            raise TypeError("gate(): give candidates=, not both candidates= and candidate=")
        candidates = old
    if candidates is None:
        raise TypeError("gate() missing the keyword argument 'candidates'")
    parsed = [G.parse_rule(r) for r in rules]
    if not parsed:
        raise ConfigError("gate: no rules; give at least one, e.g. 'nDCG@10 change >= -0.01'")
    parsed += [G.parse_rule(f"{r.text} per {s}") for s in (slices or ()) for r in parsed
               if not r.slice]
    check_alpha(alpha, "gate: alpha")
    check_mode(mode, "gate: mode")
    allowed = measure_keys(measures)
    outside = sorted({r.measure_key for r in parsed} - set(allowed or [r.measure_key
                                                                      for r in parsed]))
    if outside:
        raise ConfigError(f"gate: rules name {outside}, which are not among measures= "
                          f"{list(measures or [])}")
    base, labels = sides(per_query, baseline, candidates)
    checked = attributes(per_query, baseline=base, candidates=list(labels.values()),
                         queries=queries, queries_columns=queries_columns,
                         slices=gate_frames.rule_slices(parsed))
    gate_frames.check_rules(parsed, slices=checked.slices if checked else (),
                            weighted=bool(checked and checked.weighted))
    values = gate_frames.side_values(per_query, [base, *labels.values()], parsed,
                                     queries=checked)
    base_label = partition_label(base, sorted({k for s in [base, *labels.values()]
                                               for k in s if k in base}))
    found = {label: Gate(rows=gate_frames.gate_table(values, parsed, baseline=0, candidate=i,
                                                     alpha=alpha, mode=mode),
                         baseline=base_label, candidate=label, alpha=alpha, mode=mode,
                         spark=per_query.sparkSession)
             for i, label in enumerate(labels, start=1)}
    single = isinstance(candidates, str | Mapping)
    return next(iter(found.values())) if single else found
