"""The configuration's frozen dataclasses and the choices each key takes."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from releval.config.clicks import ClicksSettings
from releval.core.columns import NEGATIVE_LABEL_RULES

FORMATS = ("delta", "parquet", "trec", "jsonl")
#: The formats of the answers input (an evaluator's output: a table or a CSV file).
ANSWER_FORMATS = ("delta", "parquet", "csv")
#: The format of a source given as a DataFrame (releval.evaluate), never read from a config.
DATAFRAME = "DataFrame"
RANK_BY = ("score", "rank")
MISSING_QUERIES = ("zero", "skip")
#: Keys releval refuses: (section, key) -> the error, saying what to do.
REMOVED_KEYS = {("evaluation", "engine"): (
    "evaluation.engine was removed: the Arrow engine (vectorized NumPy per shuffle "
    "partition) is the only production engine; the SQL window-function engine is kept "
    "as a test oracle only (docs/performance.md). Delete the key")}
#: What a negative qrels label means; the first is the default (trec_eval's rule).
NEGATIVE_LABELS = NEGATIVE_LABEL_RULES
INTERVAL_METHODS = ("t", "bootstrap")
CORRECTIONS = ("holm", "bh")
TESTS = ("randomization", "t", "tukey")

#: The ``[spark]`` keys that stand for one Spark setting each (``[spark.conf]`` may not set these).
SPARK_KEYS = {
    "shuffle_partitions": "spark.sql.shuffle.partitions",
    "executor_memory": "spark.executor.memory", "executor_cores": "spark.executor.cores",
    "adaptive": "spark.sql.adaptive.enabled", "warehouse": "spark.sql.warehouse.dir",
}
#: A Hadoop path with a scheme (``hdfs://``, ``s3a://``, ``file:/``), not a local path.
URI_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:/")


@dataclass(frozen=True)
class SparkSettings:
    """How the SparkSession is built; ``master`` None leaves it to ``spark-submit``."""
    master: str | None = None
    #: A Spark Connect server (``sc://host:port``): the session is its client, ``master`` is
    #: ignored; None: ``SPARK_REMOTE`` if set, else a classic session.
    remote: str | None = None
    app_name: str = "releval"
    shuffle_partitions: int | None = None
    #: Each executor's JVM heap (``spark.executor.memory``), e.g. ``"4g"``; None: Spark's default.
    executor_memory: str | None = None
    #: Concurrent tasks of each executor (``spark.executor.cores``); None: Spark's default.
    executor_cores: int | None = None
    #: Adaptive query execution (``spark.sql.adaptive.enabled``).
    adaptive: bool = True
    #: Where managed tables live (``spark.sql.warehouse.dir``): any Hadoop-compatible path.
    warehouse: str | None = None
    conf: Mapping[str, str] = field(default_factory=dict)

    def spark_conf(self) -> dict[str, str]:
        """The dedicated keys' settings by Spark name; unset (None) keys keep Spark's default."""
        conf = {}
        for key, name in SPARK_KEYS.items():
            value = getattr(self, key)
            if isinstance(value, bool):
                conf[name] = "true" if value else "false"
            elif value is not None:
                conf[name] = str(value)
        return conf


@dataclass(frozen=True)
class RunSource:
    """Where the run table is and how its columns map to releval's."""
    path: str | None = None
    table: str | None = None
    format: str = "delta"
    query_id: str = "query_id"
    doc_id: str = "doc_id"
    score: str | None = "score"
    rank: str | None = "rank"
    partition_columns: tuple[str, ...] = ()
    rank_by: str = "score"
    filter: str | None = None
    #: Read this Delta version (time travel); the batch job pins the one it started with.
    version: int | None = None
    #: The column holding each query's window k_q (the top documents the consumer used), read
    #: by the ``@window`` measures; None: no window.
    window: str | None = None
    #: The column holding each query's ranking as an array (one row per run partition and
    #: query; position i is rank i), instead of ``doc_id``/``score``/``rank``; None: rows.
    ranked: str | None = None
    #: Run columns to slice the aggregate by, each holding one value per query of a run
    #: partition (a query whose rows disagree gets the slice value ``(conflicting)``).
    slices: tuple[str, ...] = ()


@dataclass(frozen=True)
class QrelsSource:
    """Where the qrels table is and how its columns map to releval's."""
    path: str | None = None
    table: str | None = None
    format: str = "delta"
    query_id: str = "query_id"
    doc_id: str = "doc_id"
    relevance: str = "relevance"
    filter: str | None = None
    #: Read this Delta version (time travel); the batch job pins the one it started with.
    version: int | None = None
    #: One row per query instead of ``doc_id``/``relevance``: the column holding an array of
    #: relevant ids (label 1 each), or one holding a map id -> grade (or an array of
    #: ``{id, grade}`` structs). Without a path or table, the run's table holds them.
    relevant: str | None = None
    graded: str | None = None
    #: ``"table"``: the path or table above; ``"clicks"``: the ``click_labels`` table the job
    #: writes from ``[clicks]`` (releval.config.clicks.qrels_from_clicks).
    source: str = "table"

    @property
    def gold(self) -> str | None:
        """The column of gold labels per query (``relevant`` or ``graded``); None: rows."""
        return self.relevant or self.graded


@dataclass(frozen=True)
class AnswersSource:
    """Where the answers are (one score in [0, 1] per run partition and query, from any
    evaluator), how their columns map to releval's, and when an answer is correct
    (``answer_score >= correct_at``) and its evidence retrieved (the measure
    ``retrieved_by >= retrieved_at``). The run partition columns keep the run's names."""
    path: str | None = None
    table: str | None = None
    format: str = "delta"
    query_id: str = "query_id"
    answer_score: str = "answer_score"
    filter: str | None = None
    #: Read this Delta version (time travel); the batch job pins the one it started with.
    version: int | None = None
    correct_at: float = 0.5
    #: None: :meth:`retrieval_measure`'s default
    retrieved_by: str | None = None
    retrieved_at: float = 1.0

    def retrieval_measure(self, window: str | None) -> str:
        """``retrieved_by``; unset: ``Hit@window`` when the run has a window, else ``Hit@10``."""
        return self.retrieved_by or ("Hit@window" if window else "Hit@10")


@dataclass(frozen=True)
class QueriesSource:
    """Where the queries input is (one row per query: its attributes and, optionally, a
    traffic weight), its query id and weight columns and the columns to slice by."""
    path: str | None = None
    table: str | None = None
    format: str = "delta"
    filter: str | None = None
    query_id: str = "query_id"
    #: The traffic weight column; None: no weighted rows.
    weight: str | None = None
    slices: tuple[str, ...] = ()
    #: Read this Delta version (time travel).
    version: int | None = None


@dataclass(frozen=True)
class EvaluationSettings:
    """What is computed."""
    measures: tuple[str, ...] = ("P@5", "P@10", "R@100", "Hit@10", "RR", "nDCG@10", "AP", "AP@100")
    relevance_level: int = 1
    missing_queries: str = "zero"
    #: Compute every measure judged-only (trec_eval -J); ``[judged]`` does it per measure.
    judged_only: bool = False
    #: A negative label is "unjudged" (trec_eval) or "judged" (docs/incomplete-judgments.md).
    negative_labels: str = "unjudged"
    #: Evaluate each ranking's first ``depth`` documents only (trec_eval -M); None: all.
    depth: int | None = None
    #: Warn in the job summary when more than this share of a top k is unjudged.
    unjudged_warning_share: float = 0.2
    #: Any quarantined input row fails the job (after the quarantine table is written).
    strict: bool = False


@dataclass(frozen=True)
class IntervalSettings:
    """Each macro value's interval: Student's t over queries, or a Poisson bootstrap."""
    method: str = "t"
    level: float = 0.95
    resamples: int = 2000
    seed: int = 20261130


@dataclass(frozen=True)
class ComparisonSettings:
    """The paired comparison of run partitions (``releval compare``; docs/statistics.md).

    ``alpha`` is the level of the corrected p-values (interval: 1 - alpha); ``test`` picks whose
    p-value marks a row ("tukey": Tukey HSD over all pairs); ``correction`` is "holm"
    (family-wise) or "bh" (false discovery rate). ``power`` is the t-test's chance to detect
    ``min_detectable_diff``, and ``effect_of_interest`` (in the measure's units) the
    difference ``queries_needed`` is for.
    """
    permutations: int = 10000
    seed: int = 20261130
    correction: str = "holm"
    alpha: float = 0.05
    test: str = "randomization"
    power: float = 0.8
    effect_of_interest: float = 0.02


@dataclass(frozen=True)
class AgreeSettings:
    """``releval agree`` (docs/agreement.md): the second qrels version, compared with
    ``[qrels]`` (the reference). Unset keys take ``[qrels]``'s, so one table with two
    filters needs only ``filter``. ``resamples``, ``seed`` and ``level``: kappa's bootstrap
    interval over queries."""
    path: str | None = None
    table: str | None = None
    format: str | None = None
    query_id: str | None = None
    doc_id: str | None = None
    relevance: str | None = None
    filter: str | None = None
    resamples: int = 1000
    seed: int = 20261130
    level: float = 0.95

    def other_qrels(self, reference: QrelsSource) -> QrelsSource:
        """The second qrels source: ``reference`` with the keys set here (a path or table
        replaces both), at its latest version."""
        keys = ("format", "query_id", "doc_id", "relevance", "filter")
        given = {k: getattr(self, k) for k in keys if getattr(self, k) is not None}
        if self.path is not None or self.table is not None:
            given.update(path=self.path, table=self.table)
        return replace(reference, version=None, **given)


@dataclass(frozen=True)
class GateSettings:
    """The release gate (docs/usage.md, "Release gates"): each run partition the job
    evaluates is gated by ``rules`` against its ``baseline``: ``"previous"`` (the same
    system's latest earlier partition by the ``order_by`` column), ``"last_pass"`` (the
    latest such partition whose gate passed or had no baseline: a series' first night is
    its first reference) or a fixed run partition ``"KEY=VALUE[,...]"``
    (its other columns the gated partition's); ``order_by`` defaults to ``date`` when it is a
    run partition column. ``on_inconclusive``: ``"pass"`` or ``"fail"``
    maps an inconclusive gate for the exit code (unset: exit 3); ``mode``: ``"confidence"``
    or ``"point"`` (the estimates alone decide)."""
    rules: tuple[str, ...] = ()
    baseline: str = "previous"
    alpha: float = 0.05
    on_inconclusive: str | None = None
    order_by: str | None = None
    mode: str = "confidence"


#: ``[gate] baseline``'s nightly forms (any other value is a fixed run partition).
GATE_BASELINES = ("previous", "last_pass")


@dataclass(frozen=True)
class OutputSettings:
    """Where the Delta tables go (a folder path, or catalog table names); the quarantine,
    run-log, comparison, attribution, agreement, gate, click-labels and position-bias tables
    default to ``<name>`` next to the per-query table."""
    per_query_path: str | None = None
    aggregate_path: str | None = None
    per_query_table: str | None = None
    aggregate_table: str | None = None
    partition_columns: tuple[str, ...] | None = None
    quarantine_path: str | None = None
    quarantine_table: str | None = None
    run_log_path: str | None = None
    run_log_table: str | None = None
    comparison_path: str | None = None
    comparison_table: str | None = None
    attribution_path: str | None = None
    attribution_table: str | None = None
    agreement_path: str | None = None
    agreement_table: str | None = None
    gate_path: str | None = None
    gate_table: str | None = None
    click_labels_path: str | None = None
    click_labels_table: str | None = None
    position_bias_path: str | None = None
    position_bias_table: str | None = None
    #: Log each evaluation to MLflow (the active run, else one it starts): the macro means,
    #: the settings and the per-query rows (``pip install 'releval[mlflow]'``).
    mlflow: bool = False


@dataclass(frozen=True)
class Config:
    """The whole job configuration."""
    run: RunSource
    qrels: QrelsSource
    evaluation: EvaluationSettings = EvaluationSettings()
    output: OutputSettings = OutputSettings()
    spark: SparkSettings = SparkSettings()
    intervals: IntervalSettings = IntervalSettings()
    comparison: ComparisonSettings = ComparisonSettings()
    #: The answers input; None: no answers, no attribution table.
    answers: AnswersSource | None = None
    #: The second qrels version of ``releval agree``; None: none configured.
    agree: AgreeSettings | None = None
    #: The release gate of each evaluated run partition; None: no gate table.
    gate: GateSettings | None = None
    #: The queries input (slices, traffic weights); None: none.
    queries: QueriesSource | None = None
    #: The interactions input and its click model; None: no click tables.
    clicks: ClicksSettings | None = None

    def sibling_table(self, name: str) -> tuple[str | None, str | None]:
        """(path, table) of table ``name`` next to the per-query table (folder or catalog)."""
        if self.output.per_query_table:
            return None, f"{self.output.per_query_table}_{name}"
        if self.output.per_query_path:
            path = self.output.per_query_path.rstrip("/")
            if URI_SCHEME.match(path):  # hdfs://, s3a://, file:/...: no local abspath
                return f"{path.rsplit('/', 1)[0]}/{name}", None
            return os.path.join(os.path.dirname(os.path.abspath(path)), name), None
        return None, None

    def located(self, name: str) -> tuple[str | None, str | None]:
        """(path, table) of ``name``: ``output.<name>_path/_table``, else its sibling table."""
        path = getattr(self.output, f"{name}_path")
        table = getattr(self.output, f"{name}_table")
        if path or table:
            return path, table
        return self.sibling_table(name)

    @property
    def output_partition_columns(self) -> tuple[str, ...]:
        """Partition columns of the output tables (default: the run's)."""
        if self.output.partition_columns is not None:
            return self.output.partition_columns
        return self.run.partition_columns
