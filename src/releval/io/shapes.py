"""Rankings and gold labels held one row per query, turned into releval's rows (one per
element) before the row rules: a ranked array (position i is rank i) becomes run rows; an
array of relevant ids, a map id -> grade or an array of ``{id, grade}`` structs becomes
qrels rows, each query's labels once. See docs/inputs.md ("One row per query")."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from releval.core import columns as S
from releval.core.columns import GOLD_CONFLICT, RANKING_REPEATED, RAW_LINE, RAW_SOURCE
from releval.errors import InputError

#: The keys of the column mappings (``columns=``, ``[run]``, ``[qrels]``) for these shapes.
RANKED = "ranked"
RELEVANT = "relevant"
GRADED = "graded"
#: A struct element's id field (the first found), its score, and a graded struct's grade.
ID_FIELDS = ("id", "doc_id")
SCORE_FIELD = "score"
GRADE_FIELDS = ("grade", "relevance")

_ATOMIC = (T.StringType, T.NumericType, T.BooleanType, T.DateType, T.TimestampType)
_ELEMENT = "_element"
_POSITION = "_position"
_GOLD = "_gold"


def _fail(name: str, column: str, key: str, dtype: T.DataType, expected: str) -> InputError:
    return InputError(f"{name}: column {column!r} ({key}) has type {dtype.simpleString()}; "
                      f"expected {expected}")


def _field(struct: T.StructType, names: Sequence[str]) -> str | None:
    return next((n for n in names if n in struct.fieldNames()), None)


def ranked_rows(df: DataFrame, *, ranked: str, query_id: str, partition_columns: Sequence[str],
                window: str | None, name: str, key: str,
                slices: Sequence[str] = ()) -> DataFrame:
    """One run row per array element: partition columns, ``_source``, ``_line``, query_id,
    doc_id, score (a struct's ``score``, else null) and rank (the 1-based position), values
    as read, and ``_ranking_repeated`` (the query has another array in its run partition:
    quarantined). An empty or null array gives no row (the query retrieved nothing).

    Args:
        ranked: the array column: of ids (any type a doc id may have), or of structs with
            ``id`` (or ``doc_id``) and optionally ``score``.
        name, key: how the input and the mapping key are named in errors.

    Raises:
        InputError: the column is not such an array.

    Example:
        >>> df = spark.createDataFrame([("q1", ["d3", "d1"])], "q string, hits array<string>")
        >>> [tuple(r)[2:6] for r in ranked_rows(df, ranked="hits", query_id="q",
        ...     partition_columns=(), window=None, name="run", key="ranked").collect()]
        [('q1', 'd3', None, 1), ('q1', 'd1', None, 2)]
    """
    dtype = df.schema[ranked].dataType
    expected = ("an array of ids (strings or numbers) or of structs {id or doc_id, score}, "
                "in rank order")
    if not isinstance(dtype, T.ArrayType):
        raise _fail(name, ranked, key, dtype, expected)
    element = dtype.elementType
    e = F.col(_ELEMENT)
    if isinstance(element, T.StructType):
        id_field = _field(element, ID_FIELDS)
        if id_field is None or not isinstance(element[id_field].dataType, _ATOMIC):
            raise _fail(name, ranked, key, dtype, expected)
        doc, score = e[id_field], (e[SCORE_FIELD] if SCORE_FIELD in element.fieldNames()
                                   else F.lit(None).cast("double"))
    elif isinstance(element, _ATOMIC):
        doc, score = e, F.lit(None).cast("double")
    else:
        raise _fail(name, ranked, key, dtype, expected)
    kept = [*partition_columns, *([window] if window else []), *slices]
    per_query = Window.partitionBy(*partition_columns, query_id)
    counted_rows = df.select(*kept, query_id, ranked,
                             (F.count(F.lit(1)).over(per_query) > 1).alias(RANKING_REPEATED))
    exploded = counted_rows.select(
        *kept, F.col(query_id).alias(S.QUERY_ID), RANKING_REPEATED,
        F.posexplode(F.col(ranked)).alias(_POSITION, _ELEMENT))
    return exploded.select(
        *partition_columns,
        F.lit(name).alias(RAW_SOURCE),
        F.lit(None).cast("long").alias(RAW_LINE),
        S.QUERY_ID,
        doc.alias(S.DOC_ID),
        score.alias(S.SCORE),
        (F.col(_POSITION) + 1).cast("int").alias(S.RANK),
        *([F.col(window).alias(S.WINDOW)] if window else []),
        *slices,
        RANKING_REPEATED,
    )


def _entries(df: DataFrame, column: str, *, graded: bool, name: str, key: str) -> Column:
    """The gold labels of a row as an array of ``struct(id, grade)``, sorted (comparable)."""
    dtype = df.schema[column].dataType
    c = F.col(column)
    if not graded:
        expected = "an array of relevant ids (strings or numbers)"
        if not isinstance(dtype, T.ArrayType) or not isinstance(dtype.elementType, _ATOMIC):
            raise _fail(name, column, key, dtype, expected)
        pairs = F.transform(c, lambda x: F.struct(x.alias("id"), F.lit(1).alias("grade")))
        return F.array_sort(pairs)
    expected = ("a map id -> grade, or an array of structs {id or doc_id, grade or relevance}")
    if isinstance(dtype, T.StructType):  # a JSON object read by Spark's inference
        c = F.from_json(F.to_json(c), "map<string,string>")
        dtype = T.MapType(T.StringType(), T.StringType())
    if isinstance(dtype, T.MapType):
        if not isinstance(dtype.keyType, _ATOMIC) or not isinstance(dtype.valueType, _ATOMIC):
            raise _fail(name, column, key, dtype, expected)
        pairs = F.transform(F.map_entries(c), lambda x: F.struct(
            x["key"].alias("id"), x["value"].alias("grade")))
        return F.array_sort(pairs)
    element = dtype.elementType if isinstance(dtype, T.ArrayType) else None
    if not isinstance(element, T.StructType):
        raise _fail(name, column, key, dtype, expected)
    id_field, grade_field = _field(element, ID_FIELDS), _field(element, GRADE_FIELDS)
    if id_field is None or grade_field is None:
        raise _fail(name, column, key, dtype, expected)
    pairs = F.transform(c, lambda x: F.struct(x[id_field].alias("id"),
                                              x[grade_field].alias("grade")))
    return F.array_sort(pairs)


def gold_rows(df: DataFrame, *, gold: str, graded: bool, query_id: str, name: str,
              key: str) -> DataFrame:
    """One qrels row per gold label of each query: ``_source``, ``_line``, query_id, doc_id,
    relevance (values as read) and ``_gold_conflict``.

    The labels of a query count once, however many rows repeat them (a frame with one row per
    run partition and query); rows whose labels differ mark every label of the query
    ``_gold_conflict`` (quarantined). A null or empty value gives its row no labels.

    Args:
        gold: the column: with ``graded`` false an array of ids (label 1 each); with
            ``graded`` a map id -> grade, or an array of structs with ``id`` (or ``doc_id``)
            and ``grade`` (or ``relevance``).

    Raises:
        InputError: the column is not one of these shapes.

    Example:
        >>> df = spark.createDataFrame([("s1", "q1", ["d1"]), ("s2", "q1", ["d1"])],
        ...                            "sys string, q string, gold array<string>")
        >>> [tuple(r)[2:5] for r in gold_rows(df, gold="gold", graded=False, query_id="q",
        ...                                   name="qrels", key="relevant").collect()]
        [('q1', 'd1', 1)]
    """
    labels = _entries(df, gold, graded=graded, name=name, key=key)
    versions = df.select(F.col(query_id).alias(S.QUERY_ID), labels.alias(_GOLD)).where(
        F.size(F.col(_GOLD)) > 0).distinct()
    per_query = Window.partitionBy(S.QUERY_ID)
    e = F.col(_ELEMENT)
    return versions.select(
        "*", (F.count(F.lit(1)).over(per_query) > 1).alias(GOLD_CONFLICT),
    ).select(
        S.QUERY_ID, GOLD_CONFLICT, F.explode(F.col(_GOLD)).alias(_ELEMENT),
    ).select(
        F.lit(name).alias(RAW_SOURCE),
        F.lit(None).cast("long").alias(RAW_LINE),
        S.QUERY_ID,
        e["id"].alias(S.DOC_ID),
        e["grade"].alias(S.RELEVANCE),
        GOLD_CONFLICT,
    )


def counted(name: str, column: str | None) -> str:
    """An input's name in the accounts: given one row per query (``column``), its rows are
    the elements of that column.

    Example:
        >>> counted("run DataFrame", "retrieved")
        "run DataFrame; a row is an element of 'retrieved'"
    """
    return f"{name}; a row is an element of {column!r}" if column else name


def run_partitions(df: DataFrame, partition_columns: Sequence[str]) -> DataFrame:
    """The run partitions ``df`` names, whether or not their arrays hold an element."""
    return df.select(*partition_columns).distinct()
