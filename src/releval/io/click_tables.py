"""The ``click_labels`` and ``position_bias`` tables: their schemas, column comments and one
writer each (docs/warehouse.md, docs/clicks.md).

Both are partitioned by ``[clicks] partition_by`` (none: one label set); a job replaces the
partitions it computed, in one commit per table, its ``job_run_id`` in the commit's
``userMetadata`` as on the job's other tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from releval.core import columns as C
from releval.io.atomic import WriteResult, replace_partitions
from releval.io.writers import with_comments

#: The lineage columns of both tables: which interactions, at which Delta version, which model.
INTERACTIONS_SOURCE = "interactions_source"
INTERACTIONS_VERSION = "interactions_version"
MODEL = "model"

#: The click-labels columns (``releval.ClickLabels.labels``) after the partition columns.
LABEL_FIELDS = [
    T.StructField(C.QUERY_ID, T.StringType(), False),
    T.StructField(C.DOC_ID, T.StringType(), False),
    T.StructField(C.RELEVANCE, T.IntegerType(), False),
    T.StructField("attractiveness", T.DoubleType(), False),
    T.StructField("attractiveness_low", T.DoubleType(), True),
    T.StructField("attractiveness_high", T.DoubleType(), True),
    T.StructField("satisfaction", T.DoubleType(), True),
    T.StructField("impressions", T.LongType(), False),
    T.StructField("clicks", T.LongType(), False),
    T.StructField("label_source", T.StringType(), False),
]
#: The position-bias columns (``releval.ClickLabels.position_bias``) after the partitions.
BIAS_FIELDS = [
    T.StructField(C.POSITION, T.IntegerType(), False),
    T.StructField("examination", T.DoubleType(), True),
    T.StructField("examination_low", T.DoubleType(), True),
    T.StructField("examination_high", T.DoubleType(), True),
    T.StructField("method", T.StringType(), False),
    T.StructField("impressions", T.LongType(), True),
]
LINEAGE_FIELDS = [
    T.StructField(INTERACTIONS_SOURCE, T.StringType(), False),
    T.StructField(INTERACTIONS_VERSION, T.LongType(), True),
    T.StructField(MODEL, T.StringType(), False),
    T.StructField(C.JOB_RUN_ID, T.StringType(), True),
]

CLICK_LABELS_COMMENTS = {
    C.QUERY_ID: "Query key of the interactions (the query the labels aggregate over).",
    C.DOC_ID: "Document id, as in the interactions.",
    C.RELEVANCE: "Graded label from the attractiveness: the number of [clicks] grades cut points "
                 "at or below it (the model's default cut points when unset).",
    "attractiveness": "P(click given examined): the model's estimate for this (query, document), "
                      "corrected for position bias.",
    "attractiveness_low": "Lower end of the attractiveness interval (docs/clicks.md).",
    "attractiveness_high": "Upper end of the attractiveness interval.",
    "satisfaction": "P(satisfied given a click) of a cascade model (sdbn, dbn); null for pbm.",
    "impressions": "Times the document was shown for the query (at least min_impressions).",
    "clicks": "Impressions of the document for the query that were clicked.",
    "label_source": "Where the label comes from: clicks:<model>, e.g. clicks:pbm.",
    INTERACTIONS_SOURCE: "The interactions input the labels come from ([clicks] path or table).",
    INTERACTIONS_VERSION: "Its Delta version the job read; null for files.",
    MODEL: "The click model ([clicks] model).",
    C.JOB_RUN_ID: "Id of the job run that wrote this row; joins to the run-log table.",
}
POSITION_BIAS_COMMENTS = {
    C.POSITION: "1-based position on the result page.",
    "examination": "P(a result at this position is examined), relative to position 1 (1.0): "
                   "PBM identifies only examination x attractiveness, so the scale is fixed "
                   "at the top.",
    "examination_low": "Lower end of the examination interval.",
    "examination_high": "Upper end of the examination interval.",
    "method": "pbm_em: the PBM fitted by EM over every impression; intervention_harvesting: "
              "from (query, document) pairs shown at several positions only.",
    "impressions": "Impressions at this position the estimate used.",
    INTERACTIONS_SOURCE: CLICK_LABELS_COMMENTS[INTERACTIONS_SOURCE],
    INTERACTIONS_VERSION: CLICK_LABELS_COMMENTS[INTERACTIONS_VERSION],
    MODEL: CLICK_LABELS_COMMENTS[MODEL],
    C.JOB_RUN_ID: CLICK_LABELS_COMMENTS[C.JOB_RUN_ID],
}
PARTITION_COMMENT = "A [clicks] partition_by column: the labels of this value's interactions."


def click_labels_schema(partition_fields: Sequence[T.StructField]) -> T.StructType:
    """Schema of the click-labels table: the partition columns, the labels, the lineage."""
    return T.StructType([*partition_fields, *LABEL_FIELDS, *LINEAGE_FIELDS])


def position_bias_schema(partition_fields: Sequence[T.StructField]) -> T.StructType:
    """Schema of the position-bias table: the partition columns, one row per position and
    method, the lineage."""
    return T.StructType([*partition_fields, *BIAS_FIELDS, *LINEAGE_FIELDS])


def _lineage(rows: DataFrame, *, source: str, version: int | None, model: str,
             job_run_id: str | None) -> DataFrame:
    return rows.select(
        "*", F.lit(source).alias(INTERACTIONS_SOURCE),
        F.lit(version).cast("long").alias(INTERACTIONS_VERSION),
        F.lit(model).alias(MODEL), F.lit(job_run_id).cast("string").alias(C.JOB_RUN_ID))


def _commented(schema: T.StructType, comments: Mapping[str, str],
               partition_fields: Sequence[T.StructField]) -> T.StructType:
    return with_comments(schema, {**comments, **{f.name: PARTITION_COMMENT
                                                 for f in partition_fields}})


def write_click_table(
    rows: DataFrame, *, kind: str, path: str | None, table: str | None,
    partition_fields: Sequence[T.StructField], predicate: str | None, source: str,
    version: int | None, model: str, job_run_id: str | None,
) -> WriteResult:
    """Replace ``predicate``'s rows (None: the whole table) of the ``click_labels`` or
    ``position_bias`` table (``kind``) with ``rows`` in one commit, with their lineage.

    Args:
        rows: the partition columns and :data:`LABEL_FIELDS` or :data:`BIAS_FIELDS`.
        source, version, model: the interactions' label, Delta version and the click model.
        job_run_id: written to every row and the commit's ``userMetadata``.
    """
    if kind == "click_labels":
        schema = _commented(click_labels_schema(partition_fields), CLICK_LABELS_COMMENTS,
                            partition_fields)
        description = "releval click labels: one row per partition, query and document."
    elif kind == "position_bias":
        schema = _commented(position_bias_schema(partition_fields), POSITION_BIAS_COMMENTS,
                            partition_fields)
        description = "releval position bias: one row per partition, position and method."
    else:
        raise ValueError(f"kind {kind!r}: expected 'click_labels' or 'position_bias'")
    written = _lineage(rows, source=source, version=version, model=model, job_run_id=job_run_id)
    return replace_partitions(
        written.select(*schema.names), path=path, table=table, schema=schema,
        partition_columns=[f.name for f in partition_fields], description=description,
        predicate=predicate, user_metadata=f"releval job_run_id={job_run_id}",
    )
