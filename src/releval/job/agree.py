"""``releval agree``: two qrels versions compared (labels; with the run, system orderings and
decisions), written to the agreement table and reported (docs/agreement.md)."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from pyspark.sql import DataFrame, SparkSession

from releval.config import AgreeSettings, Config, QrelsSource
from releval.errors import ConfigError
from releval.evaluation.partitions import KeyFilter
from releval.io.agreement import write_agreement
from releval.io.readers import source_name
from releval.job.agree_clicks import click_labels_qrels
from releval.job.agree_labels import LabelAgreement, label_agreement
from releval.job.agree_render import render
from releval.job.agree_systems import SystemAgreement, system_agreement


def described(src: QrelsSource) -> str:
    """A qrels version as the table and the report name it: source and filter."""
    return f"{source_name(src)} | filter: {src.filter or '(none)'}"


def with_partitions(config: Config, shared: Mapping[str, str]) -> Config:
    """The config with its run filter narrowed to the ``--partition`` values."""
    if not shared:
        return config
    terms = [f"({config.run.filter})"] if config.run.filter else []
    terms += [KeyFilter(key=k, values=(v,)).predicate() for k, v in sorted(shared.items())]
    return dataclasses.replace(config, run=dataclasses.replace(config.run,
                                                               filter=" AND ".join(terms)))


@dataclass(frozen=True)
class AgreementReport:
    """A finished agreement: the labels, the systems (with the run) and the table's rows."""

    agreement_id: str
    reference: str
    other: str
    settings: AgreeSettings
    relevance_level: int
    labels: LabelAgreement
    systems: SystemAgreement | None
    rows: tuple[dict, ...]
    version: int | None = None

    def render(self) -> str:
        return render(self)


def table_rows(report_id: str, config: Config, other: QrelsSource, settings: AgreeSettings,
               labels: LabelAgreement, systems: SystemAgreement | None) -> list[dict]:
    """The agreement table's rows: one per measure with the run, else one."""
    low, high = labels.interval
    base = {
        "agreement_id": report_id, "agreed_at": datetime.now(UTC),
        "reference": described(config.qrels), "other": described(other),
        "relevance_level": config.evaluation.relevance_level, "pairs": labels.pairs,
        "queries": labels.queries, "reference_only": labels.reference_only,
        "other_only": labels.other_only, "kappa": labels.kappa.plain,
        "kappa_linear": labels.kappa.linear, "kappa_ci_low": low, "kappa_ci_high": high,
        "ci_level": settings.level, "resamples": settings.resamples, "seed": settings.seed,
        "kappa_null_reason": labels.kappa.reason, "binary_agreement": labels.binary,
        "confusion": labels.confusion(),
    }
    if systems is None:
        return [base]
    return [{**base, "measure_key": m.measure_key, "partitions": len(m.labels),
             "kendall_tau_b": m.tau_b, "tau_ap": m.tau_ap, "baseline": systems.baseline,
             "decisions": m.decisions,
             "flipped_decisions": None if m.decisions is None else len(m.flips),
             "flipped_candidates": None if m.decisions is None else
             [f.candidate for f in m.flips]}
            for m in systems.measures]


def run(
    spark: SparkSession, config: Config, *, other_filter: str | None = None,
    other_path: str | None = None, with_run: bool = False,
    baseline: Mapping[str, str] | None = None, agreement_id: str | None = None,
    clicks: bool = False,
) -> AgreementReport:
    """Compare the config's second qrels version (``[agree]``, or ``other_path`` /
    ``other_filter``; with ``clicks``, the click labels: :mod:`releval.job.agree_clicks`)
    with ``[qrels]``; with ``with_run``, evaluate the run under both.
    Writes the agreement table when the config places it (``output.agreement_path``, or
    next to the per-query table).

    Raises:
        ConfigError: no second version configured; ``baseline`` without ``with_run``.
    """
    settings = config.agree or AgreeSettings()
    if other_filter is not None or other_path is not None:
        settings = dataclasses.replace(
            settings, filter=other_filter if other_filter is not None else settings.filter,
            path=other_path if other_path is not None else settings.path,
            table=None if other_path is not None else settings.table)
    other = (click_labels_qrels(config, other_filter) if clicks
             else settings.other_qrels(config.qrels))
    if config.agree is None and other_filter is None and other_path is None and not clicks:
        raise ConfigError("releval agree: no second qrels version: add an [agree] section "
                          "(e.g. filter = \"qrels_version = 'llm'\") or give --other-filter "
                          "or --other-path")
    if baseline is not None and not with_run:
        raise ConfigError("releval agree: --baseline compares run partitions: add --run")
    level = config.evaluation.relevance_level
    labels = label_agreement(spark, config.qrels, other, relevance_level=level,
                             resamples=settings.resamples, seed=settings.seed,
                             level=settings.level)
    kept: list[DataFrame] = []
    try:
        systems = (system_agreement(spark, config, other, baseline=baseline, kept=kept)
                   if with_run else None)
    finally:
        for df in reversed(kept):
            df.unpersist()
    report_id = agreement_id or str(uuid.uuid4())
    rows = table_rows(report_id, config, other, settings, labels, systems)
    path, table = config.located("agreement")
    version = None
    if path or table:
        version = write_agreement(spark, rows, path=path, table=table,
                                  agreement_id=report_id).version
    return AgreementReport(report_id, described(config.qrels), described(other), settings,
                           level, labels, systems, tuple(rows), version)
