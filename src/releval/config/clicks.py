"""The ``[clicks]`` section: the interactions input (impressions and clicks), the click model
that turns it into labels and a position bias, and the online measures; and ``[qrels]
source = "clicks"``, the run evaluated against those labels (docs/clicks.md)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from releval.errors import ConfigError

if TYPE_CHECKING:
    from releval.config.settings import Config

#: The interactions input's formats.
CLICK_FORMATS = ("delta", "parquet", "csv", "jsonl")
#: The click models ``model`` takes (docs/clicks.md, "Models").
CLICK_MODELS = ("pbm", "sdbn", "dbn")
#: ``[qrels] source``: the qrels table (default) or the click labels.
QRELS_SOURCES = ("table", "clicks")
#: The online measures ``measures`` takes: ``CTR@k``, ``Success@T`` and the plain names.
ONLINE_MEASURE = re.compile(r"^(CTR@[1-9][0-9]*|Success@[0-9]+(\.[0-9]+)?|Abandonment|ClickRR"
                            r"|Clicks)$")
#: The interactions' column keys and their canonical names (releval.core.columns).
COLUMN_KEYS = ("search_id", "query_id", "doc_id", "position", "clicked", "dwell", "team")
#: A partition column or table-name part SQL text can carry: letters, digits, underscores.
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class ClicksSettings:
    """Where the interactions are (one row per shown result), how their columns map to
    releval's, and what the job derives from them: the ``click_labels`` and
    ``position_bias`` tables, per ``partition_by`` value.

    ``model`` is the click model, ``min_impressions`` the impressions a (query, document)
    needs for a label, ``grades`` the attractiveness cut points of the graded ``relevance``
    (strictly increasing in (0, 1]: a label is the number of cut points at or below its
    attractiveness; None: ``releval.clicks.labels.DEFAULT_GRADES``); ``measures`` the online
    measures of ``releval clicks measures``.
    """
    path: str | None = None
    table: str | None = None
    format: str = "delta"
    filter: str | None = None
    #: Read this Delta version (time travel); the batch job pins the one it started with.
    version: int | None = None
    search_id: str = "search_id"
    query_id: str = "query_id"
    doc_id: str = "doc_id"
    position: str = "position"
    clicked: str = "clicked"
    dwell: str | None = None
    team: str | None = None
    partition_by: tuple[str, ...] = ()
    model: str = "pbm"
    min_impressions: int = 10
    grades: tuple[float, ...] | None = None
    measures: tuple[str, ...] = ("CTR@5", "Abandonment", "ClickRR", "Clicks")

    def columns(self) -> dict[str, str]:
        """The column mapping (canonical name -> the input's column), optional ones when set.

        Example:
            >>> ClicksSettings(doc_id="item_id").columns()["doc_id"]
            'item_id'
        """
        mapped = {key: getattr(self, key) for key in COLUMN_KEYS}
        return {key: column for key, column in mapped.items() if column is not None}


def check_clicks(clicks: ClicksSettings, source: str = "config") -> ClicksSettings:
    """Check the ``[clicks]`` settings and return them (``grades`` as a tuple of floats); a
    ConfigError names the key, its value and what was expected."""
    if clicks.format not in CLICK_FORMATS:
        raise ConfigError(f"{source}: clicks.format = {clicks.format!r}; expected one of "
                          f"{list(CLICK_FORMATS)}")
    if (clicks.path is None) == (clicks.table is None):
        raise ConfigError(f"{source}: [clicks] needs exactly one of 'path' or 'table' (the "
                          "interactions: one row per shown result)")
    if clicks.table is not None and clicks.format != "delta":
        raise ConfigError(f"{source}: [clicks] 'table' is a catalog table: format must be delta")
    if clicks.model not in CLICK_MODELS:
        raise ConfigError(f"{source}: clicks.model = {clicks.model!r}; expected one of "
                          f"{list(CLICK_MODELS)} (docs/clicks.md, 'Models')")
    if clicks.min_impressions < 1:
        raise ConfigError(f"{source}: clicks.min_impressions = {clicks.min_impressions!r}; "
                          "expected an integer >= 1")
    mapped = [c for c in clicks.columns().values()]
    twice = sorted({c for c in mapped if mapped.count(c) > 1})
    if twice:
        raise ConfigError(f"{source}: [clicks] maps {twice} to two keys; each of "
                          f"{list(COLUMN_KEYS)} names its own column")
    if len(set(clicks.partition_by)) != len(clicks.partition_by):
        raise ConfigError(f"{source}: clicks.partition_by = {list(clicks.partition_by)} names "
                          "a column twice")
    for name in clicks.partition_by:
        if not _IDENTIFIER.fullmatch(name):
            raise ConfigError(f"{source}: clicks.partition_by names {name!r}: a partition column "
                              "must be letters, digits and underscores, not starting with a digit")
    if clicks.table is not None and not all(
            _IDENTIFIER.fullmatch(p) for p in clicks.table.split(".")):
        raise ConfigError(f"{source}: clicks.table = {clicks.table!r} is not a table name "
                          "releval accepts: [catalog.][database.]table")
    clash = [c for c in clicks.partition_by if c in mapped]
    if clash:
        raise ConfigError(f"{source}: clicks.partition_by names {clash}, mapped as an "
                          "interactions column; partition by another column")
    bad = [m for m in clicks.measures if not ONLINE_MEASURE.match(m)]
    if bad:
        raise ConfigError(f"{source}: clicks.measures has {bad}; expected online measures: "
                          "CTR@k, Abandonment, ClickRR, Clicks, Success@T (T in seconds)")
    return dataclasses.replace(clicks, grades=_grades(clicks.grades, source))


def _grades(grades: object, source: str) -> tuple[float, ...] | None:
    """``grades`` as a tuple of cut points strictly increasing in (0, 1); None stays None."""
    if grades is None:
        return None
    where = f"{source}: clicks.grades = {grades!r}"
    if not isinstance(grades, list | tuple) or not grades or not all(
            isinstance(g, int | float) and not isinstance(g, bool) for g in grades):
        raise ConfigError(f"{where}; expected a list of attractiveness cut points, e.g. "
                          "[0.1, 0.3, 0.6] (grades 0-3)")
    cuts = tuple(float(g) for g in grades)
    if not all(0.0 < g <= 1.0 for g in cuts) or any(
            b <= a for a, b in zip(cuts, cuts[1:], strict=False)):
        raise ConfigError(f"{where}; expected cut points strictly increasing, each above 0 "
                          "and at most 1")
    return cuts


def qrels_from_clicks(config: Config, given: Mapping[str, object], source: str) -> Config:
    """``[qrels] source = "clicks"``: the qrels are the ``click_labels`` table the job writes
    from ``[clicks]`` (its ``query_id``, ``doc_id``, ``relevance``); any other source leaves
    ``config`` as it is.

    Raises:
        ConfigError: no ``[clicks]``, a qrels location or column key given too, or labels
            partitioned by ``clicks.partition_by`` without a ``qrels.filter`` picking one
            partition's labels.
    """
    qrels = config.qrels
    if qrels.source not in QRELS_SOURCES:
        raise ConfigError(f"{source}: qrels.source = {qrels.source!r}; expected one of "
                          f"{list(QRELS_SOURCES)}")
    if qrels.source != "clicks":
        return config
    if config.clicks is None:
        raise ConfigError(f"{source}: qrels.source = 'clicks' needs a [clicks] section (the "
                          "interactions the labels come from)")
    clash = sorted(k for k in ("path", "table", "format", "query_id", "doc_id", "relevance",
                               "relevant", "graded") if k in given)
    if clash:
        raise ConfigError(f"{source}: qrels.source = 'clicks' reads the click_labels table the "
                          f"job writes; drop {[f'qrels.{k}' for k in clash]}")
    if config.clicks.partition_by and not qrels.filter:
        raise ConfigError(
            f"{source}: qrels.source = 'clicks' with clicks.partition_by = "
            f"{list(config.clicks.partition_by)} needs qrels.filter picking one partition's "
            f"labels, e.g. \"{config.clicks.partition_by[0]} = '...'\"")
    path, table = config.located("click_labels")
    if path is None and table is None:
        raise ConfigError(f"{source}: qrels.source = 'clicks' needs the click_labels table's "
                          "location: output.click_labels_path or output.per_query_path")
    located = dataclasses.replace(qrels, path=path, table=table, format="delta",
                                  query_id="query_id", doc_id="doc_id", relevance="relevance")
    return dataclasses.replace(config, qrels=located)


def with_clicks(config: Config, raw: Mapping[str, Any], source: str) -> Config:
    """``config`` with its ``[clicks]`` checked (:func:`check_clicks`) and its qrels
    located (:func:`qrels_from_clicks`); ``raw`` is the parsed TOML document."""
    if config.clicks is not None:
        config = dataclasses.replace(config, clicks=check_clicks(config.clicks, source))
    return qrels_from_clicks(config, dict(raw.get("qrels") or {}), source)
