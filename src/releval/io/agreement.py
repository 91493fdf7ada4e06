"""The agreement table (``releval agree``): its columns, schema, comments and one writer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import types as T

from releval.core.columns import quote_literal
from releval.core.frames import local_frame
from releval.io.atomic import WriteResult, replace_partitions
from releval.io.writers import with_comments

AGREEMENT_ID, AGREED_AT = "agreement_id", "agreed_at"
REFERENCE, OTHER = "reference", "other"

_LABELS: list[tuple[str, T.DataType, str]] = [
    (AGREEMENT_ID, T.StringType(), "The agreement's id (releval agree --agreement-id, or uuid4)."),
    (AGREED_AT, T.TimestampType(), "When the agreement was computed."),
    (REFERENCE, T.StringType(), "The reference qrels: source and filter ([qrels])."),
    (OTHER, T.StringType(), "The qrels compared with it: source and filter ([agree])."),
    ("relevance_level", T.IntegerType(), "A label >= this is relevant (binary_agreement)."),
    ("pairs", T.LongType(), "(query, document) pairs both versions judge: what the label "
     "statistics count."),
    ("queries", T.LongType(), "Queries with at least one pair both versions judge."),
    ("reference_only", T.LongType(), "Pairs only the reference judges (not compared)."),
    ("other_only", T.LongType(), "Pairs only the other version judges (not compared)."),
    ("kappa", T.DoubleType(), "Cohen's kappa over the pairs, labels as categories; null "
     "when undefined (kappa_null_reason)."),
    ("kappa_linear", T.DoubleType(), "Cohen's kappa with weights |a - b| on the label values."),
    ("kappa_ci_low", T.DoubleType(), "Lower end of kappa's percentile bootstrap interval, "
     "resampling queries; null below 2 queries."),
    ("kappa_ci_high", T.DoubleType(), "Upper end of kappa's bootstrap interval."),
    ("ci_level", T.DoubleType(), "The interval's coverage (agree.level)."),
    ("resamples", T.LongType(), "Bootstrap resamples (agree.resamples)."),
    ("seed", T.LongType(), "The bootstrap's seed (agree.seed)."),
    ("kappa_null_reason", T.StringType(), "Why kappa is null: no pair judged by both, or one "
     "label on both sides; null when kappa is defined."),
    ("binary_agreement", T.DoubleType(), "Share of pairs on which both versions agree that "
     "the document is relevant (label >= relevance_level) or not."),
    ("confusion", T.MapType(T.StringType(), T.LongType()), "Pairs by 'reference/other' label."),
]
_SYSTEMS: list[tuple[str, T.DataType, str]] = [
    ("measure_key", T.StringType(), "With the run: the measure ordering the run partitions "
     "(their macro means); null on the one row of an agreement without the run."),
    ("partitions", T.LongType(), "Run partitions both evaluations score on the measure."),
    ("kendall_tau_b", T.DoubleType(), "Kendall's tau-b between the partitions' means under "
     "both qrels; null below 2 partitions or when one side is constant."),
    ("tau_ap", T.DoubleType(), "tau_AP (Yilmaz, Aslam and Robertson) of the other ordering "
     "against the reference's; ties broken by the partition label."),
    ("baseline", T.StringType(), "The baseline run partition of the decisions (--baseline)."),
    ("decisions", T.LongType(), "Candidates compared with the baseline on the measure."),
    ("flipped_decisions", T.LongType(), "Of those, the ones whose significance differs "
     "between the two qrels (the configured test and correction)."),
    ("flipped_candidates", T.ArrayType(T.StringType()), "The candidates whose decision flips."),
]
COMMENTS = {name: comment for name, _, comment in [*_LABELS, *_SYSTEMS]}
#: Columns the writer requires (the rest are nullable).
_REQUIRED = {AGREEMENT_ID, AGREED_AT, REFERENCE, OTHER, "pairs"}


def agreement_schema() -> T.StructType:
    """One row per agreement and measure: the label statistics (the same on each row of an
    agreement), then the measure's ordering statistics and flipped decisions."""
    return T.StructType([T.StructField(n, t, n not in _REQUIRED)
                         for n, t, _ in [*_LABELS, *_SYSTEMS]])


def write_agreement(
    spark: SparkSession, rows: Sequence[Mapping[str, Any]], *, path: str | None,
    table: str | None, agreement_id: str,
) -> WriteResult:
    """Replace the rows of ``agreement_id`` with ``rows`` (made on the driver) in one commit."""
    schema = with_comments(agreement_schema(), COMMENTS)
    frame = local_frame(spark, [tuple(r.get(f.name) for f in schema.fields) for r in rows], schema)
    return replace_partitions(
        frame, path=path, table=table, schema=schema, partition_columns=(),
        description="releval agreement: two qrels versions' labels and system orderings, "
        "one row per agreement and measure.",
        predicate=f"{AGREEMENT_ID} = {quote_literal(agreement_id)}",
        user_metadata=f"releval agreement_id={agreement_id}",
    )
