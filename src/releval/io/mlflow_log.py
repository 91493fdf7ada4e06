"""An evaluation logged to MLflow: each macro mean as a metric (per run partition), the
settings as params, the per-query rows (Parquet) and the report as artifacts. MLflow is
imported when used: ``pip install 'releval[mlflow]'``. See docs/usage.md ("MLflow")."""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from pyspark.sql import DataFrame

from releval.core import columns as S
from releval.core.overall import MACRO, overall
from releval.errors import ConfigError

#: releval's measure families that MLflow's retriever metrics name (``precision_at_k``).
FAMILIES = {"P": "precision", "R": "recall", "nDCG": "ndcg"}
#: Where the artifacts go in the run.
ARTIFACT_PATH = "releval"
_BATCH = 100  # MLflow's limit of params per batch (and well under its metrics limit)


def _sanitized(text: str) -> str:
    return re.sub(r"_+", "_", re.sub(r"[^0-9A-Za-z]", "_", text)).strip("_")


def metric_name(measure_key: str) -> str:
    """MLflow's name for a measure: ``P@k``, ``R@k``, ``nDCG@k`` as its retriever metrics
    (``precision_at_k``, ``recall_at_k``, ``ndcg_at_k``); the family of any other lower-cased,
    ``@`` read as ``_at_``, every other sign an underscore.

    Example:
        >>> [metric_name(k) for k in ("nDCG@10", "P(rel=2)@5", "RR", "AP[judged]", "Rprec")]
        ['ndcg_at_10', 'precision_rel_2_at_5', 'rr', 'ap_judged', 'rprec']
    """
    family = re.match(r"[A-Za-z]*", measure_key).group(0)  # type: ignore[union-attr]
    rest = _sanitized(measure_key[len(family):].replace("@", "_at_")).lower()
    name = FAMILIES.get(family, family.lower())
    return f"{name}_{rest}" if rest else name


def partition_prefix(values: Mapping[str, Any]) -> str:
    """A run partition's metric prefix: its values in column order, each followed by ``/``
    (``{"system": "bm25", "day": "2026-11-28"}`` -> ``bm25/2026-11-28/``); ``""`` without
    partitions. Signs MLflow refuses in a name become ``_``."""
    def part(value: Any) -> str:
        text = re.sub(r"[^\w.\- ]", "_", "null" if value is None else str(value))
        return "_" if text.strip(".") == "" else text

    return "".join(f"{part(v)}/" for v in values.values())


def macro_metrics(aggregate: Iterable[Mapping[str, Any]], partition_columns: Sequence[str],
                  prefix: str = "") -> dict[str, float]:
    """``{name: macro mean}``: one per (run partition, measure) of the aggregate rows; a mean
    over no query (null) is left out.

    Raises:
        ConfigError: two measures of a run partition get the same name.
    """
    metrics: dict[str, float] = {}
    keys: dict[str, str] = {}
    for row in overall(list(aggregate), MACRO):
        if row[S.VALUE] is None:
            continue
        values = {c: row[c] for c in partition_columns}
        name = prefix + partition_prefix(values) + metric_name(row[S.MEASURE_KEY])
        if keys.setdefault(name, row[S.MEASURE_KEY]) != row[S.MEASURE_KEY]:
            raise ConfigError(f"MLflow: measures {keys[name]!r} and {row[S.MEASURE_KEY]!r} "
                              f"both log as {name!r}; evaluate them separately")
        metrics[name] = float(row[S.VALUE])
    return metrics


def _mlflow() -> Any:
    try:
        import mlflow
    except ImportError:
        raise ConfigError("logging to MLflow needs mlflow: pip install 'releval[mlflow]' "
                          "(or mlflow-skinny)") from None
    uri = mlflow.get_tracking_uri()
    if uri.startswith("file:") or "://" not in uri:
        # a local folder store, which MLflow 3 refuses unless opted in
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    return mlflow


def _chunks(items: list[Any]) -> Iterable[list[Any]]:
    for i in range(0, len(items), _BATCH):
        yield items[i:i + _BATCH]


def log_evaluation(
    *,
    aggregate: Iterable[Mapping[str, Any]],
    partition_columns: Sequence[str],
    params: Mapping[str, Any],
    per_query: DataFrame | None = None,
    report: str | None = None,
    prefix: str | None = None,
    run_id: str | None = None,
) -> str:
    """Log an evaluation to MLflow's active run, to ``run_id``, or to a run it starts (and
    ends) when neither.

    Args:
        aggregate: the aggregate rows (mappings); each macro mean becomes a metric named
            ``prefix`` + :func:`partition_prefix` + :func:`metric_name`.
        params: logged as params (``prefix`` before each name; None as ``"none"``).
        per_query: logged as ``releval/per_query.parquet`` (collected to the driver).
        report: an HTML file, logged under ``releval/``.

    Returns:
        The MLflow run id.
    """
    mlflow = _mlflow()
    from mlflow.entities import Metric, Param

    prefix = prefix or ""
    metrics = macro_metrics(aggregate, partition_columns, prefix)
    client = mlflow.MlflowClient()
    with _in_run(mlflow, run_id) as run_id:
        now = int(time.time() * 1000)
        for chunk in _chunks([Metric(k, v, now, 0) for k, v in metrics.items()]):
            client.log_batch(run_id, metrics=chunk)
        for chunk in _chunks([Param(prefix + k, "none" if v is None else str(v))
                              for k, v in params.items()]):
            client.log_batch(run_id, params=chunk)
        if per_query is not None:
            with tempfile.TemporaryDirectory(prefix="releval-mlflow-") as tmp:
                path = Path(tmp) / "per_query.parquet"
                pq.write_table(per_query.toArrow(), path)
                client.log_artifact(run_id, str(path), ARTIFACT_PATH)
        if report is not None:
            client.log_artifact(run_id, report, ARTIFACT_PATH)
    return run_id


#: The MLflow tag that holds a gate's decision.
GATE_TAG = "releval.gate"
_OPS = {">=": " ge ", "<=": " le ", ">": " gt ", "<": " lt ", "-": "minus", "%": "pct",
        "@": "_at_"}


def name_part(text: str) -> str:
    """``text`` as one part of an MLflow name, distinct texts giving distinct parts: the text
    itself when it holds only letters, digits, ``_`` and ``.`` (and not only dots); else
    every other sign as ``_``, then ``-`` and 8 hex digits of its SHA-256 (``-`` is never in
    a part kept as it is).

    Example:
        >>> [name_part(v) for v in ("en_US", "en-US", "en US", "en/US")]
        ['en_US', 'en_US-5c49f88d', 'en_US-40f500bd', 'en_US-6d89affb']
    """
    kept = re.sub(r"[^\w.]", "_", text)
    if kept == text and kept.strip("."):
        return text
    return f"{kept}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def gate_metric_prefix(rule: str, slice_name: str | None, slice_value: str | None) -> str:
    """A gate row's metric prefix: ``gate/`` + the rule in words (operators spelled out)
    + ``/slice/value`` for a slice row (each by :func:`name_part`).

    Example:
        >>> gate_metric_prefix("nDCG@10 change >= -0.01", "segment", "head")
        'gate/nDCG_at_10_change_ge_minus0.01/segment/head/'
    """
    text = rule
    for sign, word in _OPS.items():
        text = text.replace(sign, word)
    name = re.sub(r"_+", "_", re.sub(r"[^\w.]", "_", text)).strip("_")
    if slice_name is not None:
        name += f"/{name_part(slice_name)}/{name_part(str(slice_value))}"
    return f"gate/{name}/"


def log_gate(rows: Iterable[Mapping[str, Any]], decision: str, *, prefix: str | None = None,
             run_id: str | None = None) -> str:
    """Log a gate to MLflow's active run, to ``run_id``, or to a run it starts (and ends):
    the tag :data:`GATE_TAG` (the decision) and each row's ``estimate``, ``bound_low`` and
    ``bound_high`` as metrics under :func:`gate_metric_prefix` (undefined ones left out),
    after the row's own ``_prefix`` when it has one (the job's run partition).

    Returns:
        The MLflow run id.
    """
    mlflow = _mlflow()
    from mlflow.entities import Metric, RunTag

    prefix = prefix or ""
    now = int(time.time() * 1000)
    metrics = []
    for row in rows:
        name = (prefix + row.get("_prefix", "")
                + gate_metric_prefix(row["rule"], row[S.SLICE], row[S.SLICE_VALUE]))
        for column in ("estimate", "bound_low", "bound_high"):
            value = row[column]
            if value is not None and value == value:
                metrics.append(Metric(name + column, float(value), now, 0))
    client = mlflow.MlflowClient()
    with _in_run(mlflow, run_id) as run_id:
        client.log_batch(run_id, tags=[RunTag(GATE_TAG, decision)])
        for chunk in _chunks(metrics):
            client.log_batch(run_id, metrics=chunk)
    return run_id


@contextmanager
def _in_run(mlflow: Any, run_id: str | None) -> Iterator[str]:
    """The run to log to: ``run_id``, else the active run, else one started here and ended
    when the block ends."""
    started = None
    if run_id is None:
        active = mlflow.active_run()
        started = None if active is not None else mlflow.start_run()
        run_id = (active or started).info.run_id
    try:
        yield run_id
    finally:
        if started is not None:
            mlflow.end_run()
