"""A TOML file parsed into the configuration, strictly: unknown keys, wrong types and missing
keys are errors naming the file, section, key and line."""

from __future__ import annotations

import dataclasses
import re
import tomllib
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from releval.config.checks import (
    _check_answers,
    _check_identifiers,
    _check_queries,
    _check_run_slices,
    _check_spark,
    check_agree,
    check_choice,
    check_comparison,
    check_depth,
)
from releval.config.clicks import ClicksSettings, with_clicks
from releval.config.gate import check_gate
from releval.config.settings import (
    FORMATS,
    INTERVAL_METHODS,
    MISSING_QUERIES,
    NEGATIVE_LABELS,
    RANK_BY,
    REMOVED_KEYS,
    AgreeSettings,
    AnswersSource,
    ComparisonSettings,
    Config,
    EvaluationSettings,
    GateSettings,
    IntervalSettings,
    OutputSettings,
    QrelsSource,
    QueriesSource,
    RunSource,
    SparkSettings,
)
from releval.errors import ConfigError

_SECTION_TYPES = {
    "run": RunSource, "qrels": QrelsSource, "evaluation": EvaluationSettings,
    "output": OutputSettings, "spark": SparkSettings, "intervals": IntervalSettings,
    "comparison": ComparisonSettings, "answers": AnswersSource, "agree": AgreeSettings,
    "gate": GateSettings,
    "queries": QueriesSource, "clicks": ClicksSettings,
}


def _build(cls: type, raw: Any, where: str, source: str) -> Any:
    """Build dataclass ``cls`` from the mapping ``raw``, strictly."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: [{where}] must be a table, got {type(raw).__name__}")
    known = {f.name: f for f in fields(cls)}
    for key in raw:
        if (where, key) in REMOVED_KEYS:
            raise ConfigError(f"{source}: {REMOVED_KEYS[(where, key)]}")
    unknown = sorted(set(raw) - set(known))
    if unknown:
        raise ConfigError(f"{source}: unknown key(s) {unknown} in [{where}]; "
                          f"valid keys: {sorted(known)}")
    values: dict[str, Any] = {
        name: _coerce(known[name], value, f"{where}.{name}", source) for name, value in raw.items()}
    try:
        return cls(**values)
    except TypeError as exc:  # a required key is missing
        raise ConfigError(f"{source}: [{where}] {exc}") from None


def _coerce(f: dataclasses.Field[Any], value: Any, where: str, source: str) -> Any:
    type_ = str(f.type)
    if "tuple[str" in type_:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{source}: {where} must be a list of strings, got {value!r}")
        return tuple(value)
    if "Mapping[str, str]" in type_:
        if not isinstance(value, dict):
            raise ConfigError(f"{source}: {where} must be a table of strings, got {value!r}")
        return {str(k): str(v) for k, v in value.items()}
    if type_.startswith("bool"):
        if not isinstance(value, bool):
            raise ConfigError(f"{source}: {where} must be true or false, got {value!r}")
        return value
    if type_ == "float":
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise ConfigError(f"{source}: {where} must be a number, got {value!r}")
        return float(value)
    if type_.startswith("int"):
        if not isinstance(value, int) or isinstance(value, bool):
            raise ConfigError(f"{source}: {where} must be an integer, got {value!r}")
        return value
    if type_.startswith("str"):
        if not isinstance(value, str):
            raise ConfigError(f"{source}: {where} must be a string, got {value!r}")
        return value
    return value


def validate(config: Config, source: str = "config") -> Config:
    """Check the cross-field rules of a config and return it; a ConfigError names the key."""
    for name, src in (("run", config.run), ("qrels", config.qrels)):
        check_choice(src.format, FORMATS, f"{name}.format", source)
        if (src.path is None) == (src.table is None):
            raise ConfigError(f"{source}: [{name}] needs exactly one of 'path' or 'table'")
        if src.table is not None and src.format != "delta":
            raise ConfigError(f"{source}: [{name}] 'table' is a catalog table: format must be delta")
    if config.answers is not None:
        _check_answers(config.answers, source)
    if config.agree is not None:
        check_agree(config.agree, source)
    if config.queries is not None:
        _check_queries(config.queries, source)
    _check_identifiers(config, source)
    _check_spark(config.spark, source)
    for name, key in (("run", config.run.ranked), ("qrels", config.qrels.gold)):
        if key and getattr(config, name).format == "trec":
            raise ConfigError(f"{source}: [{name}] holds arrays or maps ({key!r}): give it as "
                              "a Delta, Parquet or JSON Lines table, not TREC text")
    if config.qrels.relevant and config.qrels.graded:
        raise ConfigError(f"{source}: [qrels] takes 'relevant' (ids, label 1) or 'graded' "
                          "(id -> grade), not both")
    check_choice(config.run.rank_by, RANK_BY, "run.rank_by", source)
    if config.run.rank_by == "score" and not config.run.score and config.run.format != "trec":
        raise ConfigError(f"{source}: run.rank_by = 'score' needs run.score (the score column)")
    if config.run.rank_by == "rank" and not config.run.rank and config.run.format != "trec":
        raise ConfigError(f"{source}: run.rank_by = 'rank' needs run.rank (the rank column)")
    if config.run.window is not None and (config.run.format == "trec" or not config.run.window):
        raise ConfigError(f"{source}: run.window = {config.run.window!r}; expected the name of "
                          "a column of a Delta or Parquet run (a TREC run has no window)")
    _check_run_slices(config, source)
    check_choice(config.evaluation.missing_queries, MISSING_QUERIES, "evaluation.missing_queries", source)
    check_choice(config.evaluation.negative_labels, NEGATIVE_LABELS,
                  "evaluation.negative_labels", source)
    check_depth(config.evaluation.depth, f"{source}: evaluation.depth")
    if not config.evaluation.measures:
        raise ConfigError(f"{source}: evaluation.measures is empty")
    if not 0.0 <= config.evaluation.unjudged_warning_share <= 1.0:
        raise ConfigError(f"{source}: evaluation.unjudged_warning_share = "
                          f"{config.evaluation.unjudged_warning_share!r}; expected a share "
                          "between 0 and 1")
    check_choice(config.intervals.method, INTERVAL_METHODS, "intervals.method", source)
    if not 0.0 < config.intervals.level < 1.0:
        raise ConfigError(f"{source}: intervals.level = {config.intervals.level!r}; expected a "
                          "coverage strictly between 0 and 1, e.g. 0.95")
    if config.intervals.resamples < 1:
        raise ConfigError(f"{source}: intervals.resamples = {config.intervals.resamples!r}; "
                          "expected >= 1")
    check_comparison(config.comparison, source)
    if config.gate is not None:
        check_gate(config.gate, config.run.partition_columns, source)
    missing = [c for c in config.output_partition_columns if c not in config.run.partition_columns]
    if missing:
        raise ConfigError(f"{source}: output.partition_columns {missing} are not in "
                          f"run.partition_columns {list(config.run.partition_columns)}")
    return config


#: The keys a run or qrels given one row per query (arrays, maps) replaces.
ROW_KEYS = {"ranked": ("doc_id", "score", "rank", "rank_by"),
            "relevant": ("doc_id", "relevance"), "graded": ("doc_id", "relevance")}


def per_query_shapes(config: Config, raw: Mapping[str, Any], source: str) -> Config:
    """A run with ``ranked`` is ranked by position; qrels with ``relevant`` or ``graded``
    and neither ``path`` nor ``table`` are read from the run's table (its query id and
    filter unless given). ConfigError when a key they replace is given too."""
    for section, src in (("run", config.run), ("qrels", config.qrels)):
        given = raw.get(section) or {}
        for key, replaced in ROW_KEYS.items():
            clash = [k for k in replaced if k in given]
            if getattr(src, key, None) and clash:
                raise ConfigError(f"{source}: {section}.{key} holds one row per query, which "
                                  f"replaces {[f'{section}.{k}' for k in clash]}: drop them")
    run, qrels = config.run, config.qrels
    if run.ranked:
        run = dataclasses.replace(run, rank_by="rank")
    if qrels.gold and qrels.path is None and qrels.table is None:
        given = raw.get("qrels") or {}
        qrels = dataclasses.replace(
            qrels, path=run.path, table=run.table, format=run.format,
            query_id=given.get("query_id", run.query_id),
            filter=given.get("filter", run.filter))
    return dataclasses.replace(config, run=run, qrels=qrels)


def config_from_dict(raw: Mapping[str, Any], source: str = "config") -> Config:
    """Parse a mapping (a parsed TOML document) into a validated :class:`Config`."""
    sections = {f.name: f for f in fields(Config)}
    unknown = sorted(set(raw) - set(sections))
    if unknown:
        raise ConfigError(f"{source}: unknown section(s) {unknown}; valid: {sorted(sections)}")
    for required in ("run", "qrels"):
        if required not in raw:
            raise ConfigError(f"{source}: missing section [{required}]")
    built = {name: _build(_SECTION_TYPES[name], value, name, source) for name, value in raw.items()}
    config = with_clicks(per_query_shapes(Config(**built), raw, source), raw, source)
    return validate(config, source)


def load_config(path: str | Path) -> Config:
    """Read and validate a TOML config file; ConfigError if missing, not TOML, or wrong."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    check_unknown_keys(raw, text, str(path))
    return config_from_dict(raw, source=str(path))


def key_line(text: str, section: str | None, key: str) -> int | None:
    """1-based line of ``key`` in ``[section]`` of TOML ``text`` (section None: a header)."""
    current: str | None = None
    header = re.compile(r"^\s*\[\s*([^\]\s]+)\s*\]")
    for number, line in enumerate(text.splitlines(), start=1):
        match = header.match(line)
        if match:
            current = match.group(1)
            if section is None and current == key:
                return number
            continue
        if section is not None and current == section and re.match(
            rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=", line
        ):
            return number
    return None


def check_unknown_keys(raw: Mapping[str, Any], text: str, source: str) -> None:
    """Raise ConfigError (``file:line: unknown key ...``) on the first unknown section or key."""
    for name, value in raw.items():
        if name not in _SECTION_TYPES:
            line = key_line(text, None, name)
            raise ConfigError(f"{source}:{line or '?'}: unknown section [{name}]; "
                              f"valid: {sorted(_SECTION_TYPES)}")
        if not isinstance(value, dict):
            continue
        known = {f.name for f in fields(_SECTION_TYPES[name])}
        for key in value:
            if (name, key) in REMOVED_KEYS:
                line = key_line(text, name, key)
                raise ConfigError(f"{source}:{line or '?'}: {REMOVED_KEYS[(name, key)]}")
            if key not in known:
                line = key_line(text, name, key)
                raise ConfigError(f"{source}:{line or '?'}: unknown key {key!r} in [{name}]; "
                                  f"valid keys: {sorted(known)}")
