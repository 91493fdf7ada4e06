"""``releval.interleaving``: which of two rankers users prefer, from an interleaved search log
(each shown result's ``team`` names the ranker that contributed it, as team-draft
interleaving logs it). A search's preference is +1 when the candidate team's results got more
clicks than the baseline team's, -1 when fewer, 0 on a tie (no click included); a query's
``Preference`` is the mean over its searches, (wins - losses) / searches, in [-1, 1]."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from releval.arguments import checked_queries
from releval.checks.interactions import QUERY_KEY, CheckedInteractions, check_interactions
from releval.checks.query_means import SEARCHES, query_means
from releval.clicks.online import kept_sums, online_result, wide_table
from releval.clicks.result import ClickResult
from releval.core import columns as S
from releval.core.measures.online import parse_online
from releval.errors import ConfigError

#: team values taken as the baseline when ``baseline`` is not given (lower case)
BASELINE_TEAMS = ("baseline", "control", "production", "prod", "current", "old", "a")


def query_preferences(checked: CheckedInteractions, *, baseline: str,
                      candidates: Sequence[str],
                      keep: Callable[[DataFrame], DataFrame] | None = None) -> DataFrame:
    """One row per (run partition, team, query): its query key
    (:data:`releval.checks.interactions.QUERY_KEY`), its searches and ``_v0``, the mean over
    them of the sign of (the team's clicks - the baseline team's), for the baseline (0:
    itself) and each candidate; clicks on other teams' results are not read. ``keep``: as
    :func:`releval.checks.query_means.query_means` takes it."""
    parts = list(checked.partition_columns)
    teams = [baseline, *candidates]
    signs = [f"_p{i}" for i in range(len(teams))]

    def clicks(team: str) -> Column:
        return F.sum(F.when(F.col(S.TEAM) == team, F.col(S.CLICKED)).otherwise(0))

    def array_clicks(rows: Column, team: str) -> Column:
        return F.aggregate(rows, F.lit(0).cast("long"), lambda total, r: total + F.when(
            r[S.TEAM] == team, r[S.CLICKED]).otherwise(F.lit(0).cast("long")))

    means = query_means(
        checked, {p: F.signum(clicks(t) - clicks(baseline))
                  for p, t in zip(signs, teams, strict=True)},
        lambda rows: {p: F.signum(array_clicks(rows, t) - array_clicks(rows, baseline))
                      for p, t in zip(signs, teams, strict=True)}, keep=keep)
    each = F.explode(F.array(*[F.struct(F.lit(t).alias(S.TEAM), F.col(p).alias("_v0"))
                               for p, t in zip(signs, teams, strict=True)]))
    return means.select(*parts, *QUERY_KEY, SEARCHES, each.alias("_t")).select(
        *parts, F.col(f"_t.{S.TEAM}").alias(S.TEAM), *QUERY_KEY, SEARCHES,
        F.col("_t._v0").cast("double").alias("_v0"))


def interleaving(
    interactions: DataFrame,
    *,
    baseline: str | None = None,
    candidates: str | Sequence[str] | None = None,
    columns: Mapping[str, str] | None = None,
    partition_by: Sequence[str] | str = (),
    queries: DataFrame | None = None,
    queries_columns: Mapping[str, str] | None = None,
    slices: Sequence[str] = (),
    ci_level: float = 0.95,
) -> ClickResult:
    """Interleaving's ``Preference`` per query, run partition and team, as a
    :class:`releval.Result`: (wins - losses) / searches of the team over the baseline team,
    in [-1, 1]; each query's weight is its number of searches.

    The per-query rows' run partitions are ``partition_by`` and ``team``: a row per
    candidate team, and the baseline team's rows, 0 (a ranker against itself), so that
    ``result.gate(baseline="team=old", candidates="team=new", rules=["Preference > 0"])``
    decides as every gate does (a level rule reads the candidate's values).

    Args:
        interactions: one row per shown result with its ``team``
            (:func:`releval.checks.interactions.check_interactions`, ``team=True``: a row
            without a team is quarantined as ``missing_team``).
        baseline: the baseline ranker's value in the team column. None: of the log's two
            team values, the one named as in :data:`BASELINE_TEAMS` (``baseline``,
            ``control``, ``A``, ...), else the first in sorted order.
        candidates: the candidate ranker's team value, or several (each against the
            baseline). None: every other team value of the log.
        columns, partition_by, queries, queries_columns, slices, ci_level: as
            :func:`releval.evaluate_clicks`.

    Example:
        >>> log = spark.createDataFrame([("s1", "q", "a", 1, 1, "new"),
        ...     ("s1", "q", "b", 2, 0, "old"), ("s2", "q", "a", 1, 0, "new"),
        ...     ("s2", "q", "c", 2, 0, "old")], "search_id string, query_id string, "
        ...     "doc_id string, position int, clicked int, team string")
        >>> result = interleaving(log, baseline="old", candidates="new")
        >>> sorted((r.team, r.value, r.weight) for r in result.per_query.collect())
        [('new', 0.5, 2.0), ('old', 0.0, 2.0)]
    """
    checked = check_interactions(interactions, columns, name="interactions DataFrame",
                                 partition_by=partition_by, team=True)
    if baseline is None or candidates is None:
        baseline, candidates = log_teams(checked.rows, baseline, candidates)
    teams = [candidates] if isinstance(candidates, str) else list(candidates)
    if not teams or baseline in teams or len(set(teams)) != len(teams):
        raise ConfigError(f"interleaving: candidates {teams} must be team values other than "
                          f"the baseline {baseline!r}, each once")
    parts = list(checked.partition_columns)
    attributes = checked_queries(queries, queries_columns, slices)
    persisted: list[DataFrame] = []
    means = query_preferences(checked, baseline=baseline, candidates=teams,
                              keep=kept_sums(persisted))
    measures = (parse_online("Preference"),)
    wide = wide_table(means, measures, partition_columns=[*parts, S.TEAM],
                      values=["_v0"], checked=checked)
    return online_result(wide, measures, checked=checked, queries=attributes,
                         ci_level=ci_level, name="interleaving",
                         partition_columns=(*parts, S.TEAM), persisted=persisted)


def log_teams(rows: DataFrame, baseline: str | None,
              candidates: str | Sequence[str] | None) -> tuple[str, list[str]]:
    """The baseline and candidate teams of a log whose call names one or neither: the
    distinct team values (a few rows to the driver), the baseline as :func:`interleaving`
    says."""
    values = sorted(r[0] for r in rows.select(S.TEAM).distinct().collect())
    if baseline is None:
        others = [v for v in values if v not in ([candidates] if isinstance(candidates, str)
                                                 else list(candidates or ()))]
        named = [v for v in others if v.lower() in BASELINE_TEAMS]
        if candidates is None and len(values) != 2:
            raise ConfigError(f"interleaving: the log's team column holds {values}; with more "
                              "or fewer than two teams, name baseline= and candidates=")
        if not others:
            raise ConfigError(f"interleaving: the log's team column holds {values}, no team "
                              "besides the candidates to be the baseline")
        baseline = named[0] if len(named) == 1 else others[0]
    if candidates is None:
        candidates = [v for v in values if v != baseline]
    return baseline, [candidates] if isinstance(candidates, str) else list(candidates)
