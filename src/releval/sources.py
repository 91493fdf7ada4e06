"""The caller's DataFrames as :func:`releval.evaluate` reads them: the run's and the qrels'
sources from their column mappings (rows, a ranked array, gold labels per query), and the
slices split between the run's columns and the queries input's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyspark.sql import DataFrame

from releval.arguments import mapping
from releval.checks.rules import QRELS_RAW_COLUMNS, RUN_RAW_COLUMNS
from releval.config import DATAFRAME, QrelsSource, RunSource
from releval.core import columns as S
from releval.errors import ConfigError
from releval.io.shapes import GRADED, RANKED, RELEVANT


def split_slices(slices: Sequence[str], run: DataFrame, queries: DataFrame | None
                  ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``slices`` as (the run's columns, the queries input's columns).

    Raises:
        ConfigError: a slice is a column of both (which one is meant is unknown), or of
            neither (naming both frames' columns).
    """
    in_queries = set(queries.columns) if queries is not None else set()
    run_slices, queries_slices = [], []
    for name in slices:
        if name in run.columns and name in in_queries:
            raise ConfigError(
                f"slice {name!r} is a column of both the run DataFrame and the queries "
                "DataFrame; which one is meant is unknown: rename or drop one of them")
        if name in run.columns:
            run_slices.append(name)
        elif name in in_queries:
            queries_slices.append(name)
        else:
            where = (f"the queries DataFrame has {queries.columns}" if queries is not None
                     else "no queries DataFrame was given")
            raise ConfigError(f"slice {name!r} is not a column of the run DataFrame (it has "
                              f"{run.columns}) nor of the queries input ({where})")
    return tuple(run_slices), tuple(queries_slices)


def check_run_slices(slices: Sequence[str], src: RunSource,
                      columns: Mapping[str, str] | None) -> None:
    """Raises ConfigError when a run slice is a partition column or a column ``columns`` or
    ``window`` maps (a slice is an attribute of a query, not of a run or a document)."""
    taken = {c for c in (*(columns or {}).values(), src.query_id, src.doc_id, src.score,
                         src.rank, src.window, src.ranked) if c}
    if len(set(slices)) != len(slices):
        raise ConfigError(f"slices {list(slices)} name a column twice")
    for name in slices:
        if name in src.partition_columns:
            raise ConfigError(f"slice {name!r} is a partition_by column: each run partition "
                              "has its own aggregate rows already")
        if name in taken:
            raise ConfigError(f"slice {name!r} is a run column releval reads as the query id, "
                              "a document, a score, a rank or the window; slice by another "
                              "column")


def run_source(run: DataFrame, columns: Mapping[str, str] | None, parts: tuple[str, ...],
                rank_by: str | None, window: str | None) -> RunSource:
    """The run's source from ``columns``: rows, or a ranked array per query."""
    given = dict(columns or {})
    run_map = mapping(given, (*RUN_RAW_COLUMNS, RANKED), "columns", run)
    ranked = given.get(RANKED)
    if ranked:
        clash = sorted(set(given) & {S.DOC_ID, S.SCORE, S.RANK})
        if clash:
            raise ConfigError(f"columns: 'ranked' ({ranked!r}) holds each query's documents "
                              f"in rank order, which replaces {clash}: drop them")
        if rank_by not in (None, "rank"):
            raise ConfigError(f"rank_by={rank_by!r}: a ranked array ({ranked!r}) is ranked by "
                              "its positions; to rank by score, give one row per document")
    rank_by = "rank" if ranked else (rank_by or "score")
    if rank_by not in ("score", "rank"):
        raise ConfigError(f"rank_by must be 'score' or 'rank', got {rank_by!r}")
    return RunSource(
        format=DATAFRAME, query_id=run_map[S.QUERY_ID], doc_id=run_map[S.DOC_ID],
        score=run_map[S.SCORE], rank=run_map[S.RANK], partition_columns=parts, rank_by=rank_by,
        window=window, ranked=ranked,
    )


def qrels_source(qrels: DataFrame, columns: Mapping[str, str] | None,
                  run_query_id: str | None) -> QrelsSource:
    """The qrels' source from ``qrels_columns``: rows, or gold labels per query;
    ``run_query_id`` (qrels=None: the run holds the labels) is the default query id."""
    given = dict(columns or {})
    known = (*QRELS_RAW_COLUMNS, RELEVANT, GRADED)
    qrels_map = mapping(given, known, "qrels_columns", qrels)
    gold = [k for k in (RELEVANT, GRADED) if given.get(k)]
    if len(gold) > 1:
        raise ConfigError("qrels_columns: give 'relevant' (ids, label 1) or 'graded' "
                          "(id -> grade), not both")
    if run_query_id is not None and not gold:
        raise ConfigError("qrels=None: the run DataFrame holds the gold labels; name their "
                          "column in qrels_columns, {'relevant': ...} or {'graded': ...}")
    clash = sorted(set(given) & {S.DOC_ID, S.RELEVANCE})
    if gold and clash:
        raise ConfigError(f"qrels_columns: {gold[0]!r} ({given[gold[0]]!r}) holds each "
                          f"query's labels, which replaces {clash}: drop them")
    query_id = given.get(S.QUERY_ID) or run_query_id or qrels_map[S.QUERY_ID]
    return QrelsSource(
        format=DATAFRAME, query_id=query_id, doc_id=qrels_map[S.DOC_ID],
        relevance=qrels_map[S.RELEVANCE], relevant=given.get(RELEVANT),
        graded=given.get(GRADED),
    )
