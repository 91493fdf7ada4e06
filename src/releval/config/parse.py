"""A TOML file parsed into the configuration, strictly: unknown keys, wrong types and missing
keys are errors naming the file, section, key and line."""

from __future__ import annotations

import dataclasses
import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import fields
from numbers import Integral
from pathlib import Path
from typing import Any

from releval.config.clicks import ClicksSettings, with_clicks
from releval.config.gate import check_gate
from releval.config.settings import (
    ANSWER_FORMATS,
    CORRECTIONS,
    FORMATS,
    INTERVAL_METHODS,
    MISSING_QUERIES,
    NEGATIVE_LABELS,
    RANK_BY,
    REMOVED_KEYS,
    SPARK_KEYS,
    TESTS,
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


def _check_choice(value: str, choices: tuple[str, ...], where: str, source: str) -> None:
    if value not in choices:
        raise ConfigError(f"{source}: {where} = {value!r}; expected one of {list(choices)}")


def check_depth(depth: object, where: str) -> None:
    """ConfigError naming ``where`` unless ``depth`` is None (every document) or a positive
    integer (a bool is not one)."""
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, Integral)
                              or depth < 1):
        raise ConfigError(f"{where} = {depth!r}; expected a positive integer, the documents "
                          "evaluated at the top of each ranking (trec_eval -M); unset: all")


#: A JVM memory size with its unit, as Spark reads it: ``512m``, ``4g``, ``1t``.
MEMORY_SIZE = re.compile(r"^[1-9][0-9]*[kmgtp]b?$", re.IGNORECASE)
#: A column or table-name part that may appear in SQL text: letters, digits, underscores.
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


#: A Spark Connect URL, as pyspark takes it: ``sc://host``, ``sc://host:port``, ``/;param=v``.
CONNECT_URL = re.compile(r"^sc://[^/:;]+(:[0-9]+)?(/.*)?$")


def check_remote(url: str | None, where: str) -> None:
    """ConfigError naming ``where`` unless ``url`` is None or a Spark Connect URL."""
    if url is not None and not CONNECT_URL.match(url):
        raise ConfigError(f"{where} = {url!r}; expected a Spark Connect URL, sc://host:port "
                          "(e.g. sc://localhost:15002)")


def _check_spark(spark: SparkSettings, source: str) -> None:
    """Positive counts, a memory size with a unit, a Spark Connect URL, no ``[spark.conf]`` for
    a dedicated key."""
    check_remote(spark.remote, f"{source}: spark.remote")
    for key in ("shuffle_partitions", "executor_cores"):
        value = getattr(spark, key)
        if value is not None and value < 1:
            raise ConfigError(f"{source}: spark.{key} = {value!r}; expected an integer >= 1")
    if spark.executor_memory is not None and not MEMORY_SIZE.match(spark.executor_memory):
        raise ConfigError(f"{source}: spark.executor_memory = {spark.executor_memory!r}; "
                          "expected a size with its unit, e.g. '4g' or '512m'")
    owned = {name: key for key, name in SPARK_KEYS.items() if name in spark.conf}
    if owned:
        name, key = sorted(owned.items())[0]
        raise ConfigError(f"{source}: spark.conf sets {name!r}, which the key spark.{key} "
                          f"stands for; set spark.{key} instead")


def _check_identifiers(config: Config, source: str) -> None:
    """Refuse table names and partition columns that SQL text could not carry safely."""
    out = config.output
    tables = {
        "run.table": config.run.table, "qrels.table": config.qrels.table,
        "output.per_query_table": out.per_query_table,
        "output.aggregate_table": out.aggregate_table,
        "output.quarantine_table": out.quarantine_table,
        "output.run_log_table": out.run_log_table,
        "output.comparison_table": out.comparison_table,
        "output.attribution_table": out.attribution_table,
        "output.agreement_table": out.agreement_table,
        "output.gate_table": out.gate_table,
        "answers.table": config.answers.table if config.answers else None,
        "agree.table": config.agree.table if config.agree else None,
        "queries.table": config.queries.table if config.queries else None,
    }
    for key, name in tables.items():
        if name is None:
            continue
        parts = name.split(".")
        if not 1 <= len(parts) <= 3 or not all(IDENTIFIER.fullmatch(p) for p in parts):
            raise ConfigError(f"{source}: {key} = {name!r} is not a table name releval accepts: "
                              "expected [catalog.][database.]table, each part letters, digits "
                              "and underscores")
    columns = {"run.partition_columns": config.run.partition_columns,
               "output.partition_columns": config.output.partition_columns or ()}
    for key, names in columns.items():
        for name in names:
            if not IDENTIFIER.fullmatch(name):
                raise ConfigError(f"{source}: {key} names {name!r}: a partition column must be "
                                  "letters, digits and underscores, not starting with a digit "
                                  "(rename or alias it)")


def _check_answers(answers: AnswersSource, source: str) -> None:
    """A path or a table, a known format, and thresholds an answer score can meet."""
    _check_located(answers, "answers", source)
    check_correct_at(answers.correct_at, f"{source}: answers.correct_at")


def _check_run_slices(config: Config, source: str) -> None:
    """``run.slices``: columns of a Delta or Parquet run, each once, none a partition or
    mapped column, none also a ``queries.slices`` column (which one is meant is unknown)."""
    run = config.run
    if not run.slices:
        return
    if run.format == "trec":
        raise ConfigError(f"{source}: run.slices = {list(run.slices)}; a TREC run has no "
                          "slice columns (give the run as a Delta or Parquet table)")
    if len(set(run.slices)) != len(run.slices):
        raise ConfigError(f"{source}: run.slices = {list(run.slices)} names a column twice")
    mapped = {c for c in (run.query_id, run.doc_id, run.score, run.rank, run.window, run.ranked)
              if c}
    for name in run.slices:
        if name in run.partition_columns or name in mapped:
            raise ConfigError(f"{source}: run.slices names {name!r}, a partition column or a "
                              "column releval reads as the query id, a document, a score, a "
                              "rank or the window; slice by another column")
        if config.queries is not None and name in config.queries.slices:
            raise ConfigError(f"{source}: {name!r} is in both run.slices and queries.slices; "
                              "which one is meant is unknown: name it in one of them")


def _check_queries(queries: QueriesSource, source: str) -> None:
    """A path or a table, a known format (the answers' formats)."""
    _check_located(queries, "queries", source)


def _check_located(section: AnswersSource | QueriesSource, name: str, source: str) -> None:
    """A side input's ``[name]``: a known format, exactly one of a path or a catalog table
    (a Delta table)."""
    _check_choice(section.format, ANSWER_FORMATS, f"{name}.format", source)
    if (section.path is None) == (section.table is None):
        raise ConfigError(f"{source}: [{name}] needs exactly one of 'path' or 'table'")
    if section.table is not None and section.format != "delta":
        raise ConfigError(f"{source}: [{name}] 'table' is a catalog table: format must be delta")


def check_agree(agree: AgreeSettings, source: str = "config") -> AgreeSettings:
    """Check the ``[agree]`` settings and return them; a ConfigError names the key."""
    if agree.format is not None:
        _check_choice(agree.format, FORMATS, "agree.format", source)
    if agree.path is not None and agree.table is not None:
        raise ConfigError(f"{source}: [agree] takes 'path' or 'table', not both")
    if agree.resamples < 1:
        raise ConfigError(f"{source}: agree.resamples = {agree.resamples!r}; expected >= 1")
    if not 0.0 < agree.level < 1.0:
        raise ConfigError(f"{source}: agree.level = {agree.level!r}; expected a coverage "
                          "strictly between 0 and 1, e.g. 0.95")
    return agree


def check_correct_at(value: float, where: str) -> None:
    """Refuse a correctness threshold no answer score in [0, 1] is compared with sensibly."""
    if not 0.0 <= value <= 1.0:
        raise ConfigError(f"{where} = {value!r}; expected an answer score between 0 and 1")


def check_comparison(settings: ComparisonSettings, source: str = "config") -> ComparisonSettings:
    """Check the ``[comparison]`` settings and return them; a ConfigError names the key and
    its value."""
    _check_choice(settings.correction, CORRECTIONS, "comparison.correction", source)
    _check_choice(settings.test, TESTS, "comparison.test", source)
    if not 0.0 < settings.alpha < 1.0:
        raise ConfigError(f"{source}: comparison.alpha = {settings.alpha!r}; expected a "
                          "level strictly between 0 and 1, e.g. 0.05")
    if settings.permutations < 1:
        raise ConfigError(f"{source}: comparison.permutations = "
                          f"{settings.permutations!r}; expected >= 1")
    if not 0.0 < settings.power < 1.0:
        raise ConfigError(f"{source}: comparison.power = {settings.power!r}; expected "
                          "a probability strictly between 0 and 1, e.g. 0.8")
    if not 0.0 < settings.effect_of_interest < math.inf:
        raise ConfigError(f"{source}: comparison.effect_of_interest = "
                          f"{settings.effect_of_interest!r}; expected a difference "
                          "> 0 in the measure's units, e.g. 0.02")
    return settings


def validate(config: Config, source: str = "config") -> Config:
    """Check the cross-field rules of a config and return it; a ConfigError names the key."""
    for name, src in (("run", config.run), ("qrels", config.qrels)):
        _check_choice(src.format, FORMATS, f"{name}.format", source)
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
    _check_choice(config.run.rank_by, RANK_BY, "run.rank_by", source)
    if config.run.rank_by == "score" and not config.run.score and config.run.format != "trec":
        raise ConfigError(f"{source}: run.rank_by = 'score' needs run.score (the score column)")
    if config.run.rank_by == "rank" and not config.run.rank and config.run.format != "trec":
        raise ConfigError(f"{source}: run.rank_by = 'rank' needs run.rank (the rank column)")
    if config.run.window is not None and (config.run.format == "trec" or not config.run.window):
        raise ConfigError(f"{source}: run.window = {config.run.window!r}; expected the name of "
                          "a column of a Delta or Parquet run (a TREC run has no window)")
    _check_run_slices(config, source)
    _check_choice(config.evaluation.missing_queries, MISSING_QUERIES, "evaluation.missing_queries", source)
    _check_choice(config.evaluation.negative_labels, NEGATIVE_LABELS,
                  "evaluation.negative_labels", source)
    check_depth(config.evaluation.depth, f"{source}: evaluation.depth")
    if not config.evaluation.measures:
        raise ConfigError(f"{source}: evaluation.measures is empty")
    if not 0.0 <= config.evaluation.unjudged_warning_share <= 1.0:
        raise ConfigError(f"{source}: evaluation.unjudged_warning_share = "
                          f"{config.evaluation.unjudged_warning_share!r}; expected a share "
                          "between 0 and 1")
    _check_choice(config.intervals.method, INTERVAL_METHODS, "intervals.method", source)
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
