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

from releval.checks.queries import CheckedQueries, check_queries
from releval.core import columns as S
from releval.core.frames import local_frame
from releval.errors import ConfigError, InputError
from releval.job.partitions import partition_label
from releval.stats import gate as G
from releval.stats import gate_frames

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


def parse_side(value: Mapping[str, str] | str, columns: Sequence[str]) -> dict[str, str]:
    """A run partition: a mapping, or ``"column=value[,column=value]"``."""
    if isinstance(value, str):
        pairs = [p.partition("=") for p in value.split(",") if p.strip()]
        if any(not sep or not k.strip() for k, sep, _ in pairs):
            raise ConfigError(f"{value!r}: expected column=value[,column=value]")
        value = {k.strip(): v.strip() for k, _, v in pairs}
    unknown = sorted(set(value) - set(columns))
    if unknown:
        raise InputError(f"{dict(value)}: no column(s) {unknown} in the per-query rows {list(columns)}")
    return {k: str(v) for k, v in value.items()}


#: releval's queries column -> the caller's (``queries_columns``); ``weight``: None, unweighted
QUERIES_COLUMNS = (S.QUERY_ID, S.WEIGHT)


def checked_queries(queries: DataFrame, columns: Mapping[str, str | None] | None,
                    slices: Sequence[str]) -> CheckedQueries:
    """The queries DataFrame checked; a rejected row is an error.

    Raises:
        InputError: naming the queries DataFrame, the column and an example row.
    """
    given = dict(columns or {})
    unknown = sorted(set(given) - set(QUERIES_COLUMNS))
    if unknown:
        raise ConfigError(f"queries_columns: unknown key(s) {unknown}; releval's columns are "
                          f"{list(QUERIES_COLUMNS)} (map them to the DataFrame's columns "
                          f"{queries.columns})")
    query_id = given.get(S.QUERY_ID) or S.QUERY_ID
    weight = given.get(S.WEIGHT)
    checked = check_queries(queries, query_id=query_id, weight=weight, slices=slices)
    bad = checked.rejected.limit(1).collect()
    if bad:
        row = bad[0]
        column = weight if row[S.REASON_CODE] == "invalid_weight" else query_id
        raise InputError(f"{checked.name}: a row is rejected ({row[S.REASON_CODE]}) in column "
                         f"{column!r}: {row[S.MESSAGE]}; e.g. row {dict(row[S.RAW])}")
    return checked


def gate(
    per_query: DataFrame,
    *,
    baseline: Mapping[str, str] | str,
    candidate: Mapping[str, str] | str,
    rules: Sequence[str],
    alpha: float = 0.05,
    queries: DataFrame | None = None,
    queries_columns: Mapping[str, str | None] | None = None,
    mode: str = "confidence",
) -> Gate:
    """Decide a release: pass, fail or inconclusive, with stated error rates.

    A rule passes when its one-sided test rejects the rule's opposite at ``alpha`` (the
    gate passes when every rule does: no correction is needed); it fails when the test that
    it is broken rejects after Holm's correction over every rule and slice value. Pairs are
    the queries both sides scored; a level rule reads the candidate's scored queries.
    Collects only the per-query values of the measures the rules name.

    Args:
        per_query: per-query rows (``Result.per_query`` or the per-query table).
        baseline, candidate: run partitions, ``{"system": "bm25"}`` or ``"system=bm25"``.
        rules: e.g. ``"nDCG@10 change >= -0.01"`` (non-inferiority by a 0.01 margin),
            ``"nDCG@10 change > 0"``, ``"RR change >= -2%"`` (candidate - 0.98 x baseline
            >= 0), ``"Hit@10 >= 0.9"`` (the candidate's mean), a prefix ``weighted``
            (traffic-weighted means) and a suffix ``per SLICE`` (each slice value).
        alpha: each test's level; the bounds are one-sided at 1 - alpha.
        queries: one row per query: its attributes (the slices the rules name) and weight.
        queries_columns: releval's column -> yours: ``query_id``, ``weight``.
        mode: ``"confidence"``, or ``"point"``: the estimates alone decide (MLflow's
            thresholds), with no inconclusive outcome.

    Returns:
        A :class:`releval.gating.Gate`: ``decision``, ``passed``, ``table``, ``render()``.

    Raises:
        ConfigError: an invalid rule (naming it and the form expected), a measure that was
            not evaluated (naming those that were), a slice or weight the queries lack.
        InputError: a rejected queries row.

    Example:
        >>> rows = spark.createDataFrame([(s, f"q{i}", "RR", "RR", v) for i in range(8)
        ...     for s, v in (("bm25", 0.5), ("dense", 1.0))],
        ...     "system string, query_id string, measure_key string, measure string, value double")
        >>> g = gate(rows, baseline="system=bm25", candidate="system=dense",
        ...          rules=["RR change >= -0.05"])
        >>> g.decision, g.table.first().estimate  # every query gains 0.5 (4 would not prove it)
        ('pass', 0.5)
    """
    parsed = [G.parse_rule(r) for r in rules]
    if not parsed:
        raise ConfigError("gate: no rules; give at least one, e.g. 'nDCG@10 change >= -0.01'")
    if not 0.0 < alpha < 0.5:
        raise ConfigError(f"gate: alpha {alpha!r} must be in (0, 0.5)")
    if mode not in G.MODES:
        raise ConfigError(f"gate: mode {mode!r}: expected one of {list(G.MODES)}")
    slices = gate_frames.rule_slices(parsed)
    checked = None
    if queries is not None:
        checked = checked_queries(queries, queries_columns, slices)
    elif queries_columns:
        raise ConfigError("gate: queries_columns without queries=")
    gate_frames.check_rules(parsed, slices=checked.slices if checked else (),
                            weighted=bool(checked and checked.weighted))
    base = parse_side(baseline, per_query.columns)
    cand = parse_side(candidate, per_query.columns)
    keys = sorted({*base, *cand})
    values = gate_frames.side_values(per_query, [base, cand], parsed, queries=checked)
    rows = gate_frames.gate_table(values, parsed, baseline=0, candidate=1, alpha=alpha,
                                  mode=mode)
    return Gate(rows=rows, baseline=partition_label(base, [k for k in keys if k in base]),
                candidate=partition_label(cand, [k for k in keys if k in cand]), alpha=alpha,
                mode=mode, spark=per_query.sparkSession)
