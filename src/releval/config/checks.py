"""The configuration's checks, each a ConfigError naming the source, the key and what was
expected: Spark's settings, identifiers, the answers', queries' and comparison's sections,
and the checks the public functions share (depth, remote URL, correct_at)."""

from __future__ import annotations

import math
import re
from numbers import Integral

from releval.config.settings import (
    ANSWER_FORMATS,
    CORRECTIONS,
    FORMATS,
    SPARK_KEYS,
    TESTS,
    AgreeSettings,
    AnswersSource,
    ComparisonSettings,
    Config,
    QueriesSource,
    SparkSettings,
)
from releval.errors import ConfigError


def check_choice(value: str, choices: tuple[str, ...], where: str, source: str) -> None:
    """ConfigError naming ``source`` and ``where`` unless ``value`` is one of ``choices``."""
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
    check_choice(section.format, ANSWER_FORMATS, f"{name}.format", source)
    if (section.path is None) == (section.table is None):
        raise ConfigError(f"{source}: [{name}] needs exactly one of 'path' or 'table'")
    if section.table is not None and section.format != "delta":
        raise ConfigError(f"{source}: [{name}] 'table' is a catalog table: format must be delta")


def check_agree(agree: AgreeSettings, source: str = "config") -> AgreeSettings:
    """Check the ``[agree]`` settings and return them; a ConfigError names the key."""
    if agree.format is not None:
        check_choice(agree.format, FORMATS, "agree.format", source)
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
    check_choice(settings.correction, CORRECTIONS, "comparison.correction", source)
    check_choice(settings.test, TESTS, "comparison.test", source)
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
