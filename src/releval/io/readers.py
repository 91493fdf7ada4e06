"""Readers: Delta (path or catalog table), Parquet, and TREC text.

Every reader returns the canonical columns of ``releval.schemas`` (plus the
run's partition columns), so nothing downstream knows where the data came from.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from releval import schemas as S
from releval.config import QrelsSource, RunSource
from releval.errors import InputError

#: The partition column a TREC run file provides: its tag (6th field).
TREC_RUN_ID = "run_id"


def source_name(src: RunSource | QrelsSource) -> str:
    """How a source is named in messages: its path or its table name."""
    return f"{src.format} {'table ' + src.table if src.table else src.path}"


def _load(spark: SparkSession, src: RunSource | QrelsSource, version: int | None = None) -> DataFrame:
    """Load a Delta/Parquet path or a catalog table (a Delta ``version``: time travel)."""
    try:
        reader = spark.read.format(src.format)
        if version is not None:
            reader = reader.option("versionAsOf", version)
        if src.table:
            return reader.table(src.table) if version is not None else spark.table(src.table)
        return reader.load(src.path)
    except Exception as exc:  # Spark raises AnalysisException subclasses here
        message = str(exc).splitlines()[0]
        raise InputError(f"cannot read {source_name(src)}: {message}") from None


def _require_columns(
    df: DataFrame, mapping: dict[str, str | None], src: RunSource | QrelsSource, section: str
) -> None:
    """Fail with the expected and found columns when a mapped column is missing."""
    missing = {key: col for key, col in mapping.items() if col and col not in df.columns}
    if missing:
        keys = ", ".join(f"{section}.{key} = {col!r}" for key, col in missing.items())
        raise InputError(
            f"{source_name(src)}: missing column(s) {sorted(missing.values())} "
            f"(mapped by {keys}); found columns {df.columns}"
        )


def _trec_fields(spark: SparkSession, path: str, src: RunSource | QrelsSource) -> DataFrame:
    """Lines of a TREC text file split on white space; blank and '#' lines skipped."""
    try:
        lines = spark.read.text(path)
    except Exception as exc:
        raise InputError(f"cannot read {source_name(src)}: {str(exc).splitlines()[0]}") from None
    trimmed = F.trim(F.col("value"))
    return lines.where((trimmed != "") & ~trimmed.startswith("#")).select(
        F.split(trimmed, r"\s+").alias("f")
    )


def read_run(spark: SparkSession, src: RunSource, *, version: int | None = None) -> DataFrame:
    """Read a run into ``partition columns + query_id, doc_id, score, rank``.

    TREC run text is ``qid Q0 docno rank score tag [anything]``; its tag becomes
    the ``run_id`` partition column. ``version`` pins a Delta input (``versionAsOf``).
    """
    if src.format == "trec":
        f = F.col("f")
        df = _trec_fields(spark, src.path or "", src).select(
            f[5].alias(TREC_RUN_ID),
            f[0].alias(S.QUERY_ID),
            f[2].alias(S.DOC_ID),
            f[4].cast("double").alias(S.SCORE),
            f[3].cast("int").alias(S.RANK),
        )
        partitions = [c for c in src.partition_columns if c != TREC_RUN_ID]
        if partitions:
            raise InputError(
                f"{source_name(src)}: a TREC run has only the partition column "
                f"'{TREC_RUN_ID}' (its tag); run.partition_columns names {partitions}"
            )
        return df.select(*src.partition_columns, S.QUERY_ID, S.DOC_ID, S.SCORE, S.RANK)
    df = _load(spark, src, version)
    mapping = {"query_id": src.query_id, "doc_id": src.doc_id, "score": src.score, "rank": src.rank}
    needed = {k: v for k, v in mapping.items() if k in ("query_id", "doc_id", src.rank_by)}
    _require_columns(df, needed, src, "run")
    missing_parts = [c for c in src.partition_columns if c not in df.columns]
    if missing_parts:
        raise InputError(
            f"{source_name(src)}: missing partition column(s) {missing_parts} "
            f"(run.partition_columns); found columns {df.columns}"
        )
    if src.filter:
        df = df.where(src.filter)

    def col_or_null(name: str | None, type_: str) -> Column:
        return F.col(name).cast(type_) if name and name in df.columns else F.lit(None).cast(type_)

    return df.select(
        *src.partition_columns,
        F.col(src.query_id).cast("string").alias(S.QUERY_ID),
        F.col(src.doc_id).cast("string").alias(S.DOC_ID),
        col_or_null(src.score, "double").alias(S.SCORE),
        col_or_null(src.rank, "int").alias(S.RANK),
    )


def read_qrels(spark: SparkSession, src: QrelsSource, *, version: int | None = None) -> DataFrame:
    """Read qrels into ``query_id, doc_id, relevance``.

    TREC qrels text is ``qid iteration docno rel``. ``version`` pins a Delta input.
    """
    if src.format == "trec":
        f = F.col("f")
        return _trec_fields(spark, src.path or "", src).select(
            f[0].alias(S.QUERY_ID), f[2].alias(S.DOC_ID), f[3].cast("int").alias(S.RELEVANCE)
        )
    df = _load(spark, src, version)
    mapping = {"query_id": src.query_id, "doc_id": src.doc_id, "relevance": src.relevance}
    _require_columns(df, dict(mapping), src, "qrels")
    if src.filter:
        df = df.where(src.filter)
    return df.select(
        F.col(src.query_id).cast("string").alias(S.QUERY_ID),
        F.col(src.doc_id).cast("string").alias(S.DOC_ID),
        F.col(src.relevance).cast("int").alias(S.RELEVANCE),
    )
