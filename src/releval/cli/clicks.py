"""``releval clicks labels|measures|interleaving``: a search log's impressions and clicks
turned into labels and a position bias, online measures, or an interleaving preference
(docs/clicks.md).

    releval clicks labels --events PATH [--column doc_id=item_id ...] [--model pbm]
    releval clicks measures --events PATH --measures "CTR@5,Abandonment" --partition-by system
    releval clicks interleaving --ubi-queries PATH --ubi-events PATH

The log is ``--events`` (one row per shown result; Delta, Parquet, CSV or JSON Lines) or
OpenSearch UBI's two tables (``--ubi-queries``, ``--ubi-events``). Each prints a short table
and the interactions' account; exit 0, or 2 on a user error.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from releval.cli.evaluate import add_remote_argument, default_master, positive_int, remote_of
from releval.config.clicks import (
    CLICK_FORMATS,
    CLICK_MODELS,
    COLUMN_KEYS,
    ClicksSettings,
    check_clicks,
)
from releval.display import text_table
from releval.errors import ConfigError

ACTIONS = ("labels", "measures", "interleaving")
#: The online measures ``releval clicks measures`` computes without ``--measures``.
DEFAULT_MEASURES = ("CTR@5", "Abandonment", "ClickRR", "Clicks")
#: The rows of the labels printed (the position bias is printed whole).
SHOWN_LABELS = 10


def add_clicks_arguments(clicks: argparse.ArgumentParser) -> None:
    """The arguments of ``releval clicks``."""
    clicks.add_argument("action", choices=ACTIONS,
                        help="labels: click labels and the position bias; measures: online "
                        "measures per partition; interleaving: the Preference of team A")
    log = clicks.add_argument_group("the log: --events, UBI's two tables, or a config's [clicks]")
    log.add_argument("--config", default=None, metavar="FILE",
                     help="a job config: its [clicks] section's log, columns, model, "
                     "min_impressions, grades, partition_by and measures (the options below "
                     "override them)")
    log.add_argument("--events", default=None, metavar="PATH",
                     help="one row per shown result (and optional click rows without a "
                     "position): search_id, query_id, doc_id, position, clicked[, dwell, team]")
    log.add_argument("--format", choices=CLICK_FORMATS, default=None,
                     help="format of --events and the UBI tables (default: delta for a folder "
                     "with a _delta_log, csv or jsonl by the file's suffix, else parquet)")
    log.add_argument("--ubi-queries", default=None, metavar="PATH",
                     help="OpenSearch UBI's ubi_queries table (each search's shown hits)")
    log.add_argument("--ubi-events", default=None, metavar="PATH",
                     help="OpenSearch UBI's ubi_events table (the clicks)")
    clicks.add_argument("--column", action="append", default=[], metavar="KEY=NAME",
                        help="the log's column for releval's KEY (search_id, query_id, doc_id, "
                        "position, clicked, dwell, team); repeatable")
    clicks.add_argument("--partition-by", default=None, metavar="A,B",
                        help="comma-separated partition columns (system, date, an A/B bucket)")
    clicks.add_argument("--model", choices=CLICK_MODELS, default=None,
                        help="labels: the click model (default pbm)")
    clicks.add_argument("--min-impressions", type=positive_int, default=None,
                        help="labels: impressions a (query, document) needs for a label")
    clicks.add_argument("--grades", default=None, metavar="C1,C2,...",
                        help="labels: attractiveness cut points of the graded relevance")
    clicks.add_argument("--measures", default=None,
                        help="measures: comma-separated online measures (default "
                        "CTR@5,Abandonment,ClickRR,Clicks)")
    clicks.add_argument("--baseline", default=None, metavar="TEAM",
                        help="interleaving: the baseline ranker's value in the team column")
    clicks.add_argument("--candidate", action="append", default=[], metavar="TEAM",
                        help="interleaving: a candidate ranker's team value (repeatable)")
    clicks.add_argument("--output", default=None, metavar="DIR",
                        help="labels: write the click_labels and position_bias Delta tables "
                        "under DIR")
    clicks.add_argument("--master", default=None,
                        help="Spark master (default local[*]; not with a Spark Connect server)")
    add_remote_argument(clicks)


def log_format(path: str) -> str:
    """The format of a log path given without ``--format``."""
    folder = Path(path)
    if (folder / "_delta_log").is_dir():
        return "delta"
    suffix = folder.suffix.lower()
    return {".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl"}.get(suffix, "parquet")


def _given(args: argparse.Namespace) -> dict[str, object]:
    """The ``[clicks]`` keys the command line sets (``--column``, ``--model``, ...)."""
    given: dict[str, object] = {}
    for item in args.column:
        key, sep, name = item.partition("=")
        if not sep or not key.strip() or not name.strip():
            raise ConfigError(f"--column {item!r}: expected KEY=NAME, e.g. doc_id=item_id")
        given[key.strip()] = name.strip()
    unknown = sorted(set(given) - set(COLUMN_KEYS))
    if unknown:
        raise ConfigError(f"--column {unknown}: releval's interaction columns are "
                          f"{', '.join(COLUMN_KEYS)}")
    if args.grades:
        try:
            given["grades"] = [float(g) for g in args.grades.split(",")]
        except ValueError:
            raise ConfigError(f"--grades {args.grades!r}: expected numbers, e.g. "
                              "0.1,0.3,0.6") from None
    if args.partition_by is not None:
        given["partition_by"] = tuple(p.strip() for p in args.partition_by.split(",")
                                      if p.strip())
    if args.measures is not None:
        given["measures"] = tuple(m.strip() for m in args.measures.split(",") if m.strip())
    for key in ("model", "min_impressions"):
        if getattr(args, key) is not None:
            given[key] = getattr(args, key)
    return given


def settings(args: argparse.Namespace) -> ClicksSettings:
    """The ``[clicks]`` settings a command line describes (checked as a config's are):
    ``--config``'s section, or the log's path, with the options given."""
    ubi = (args.ubi_queries, args.ubi_events)
    logs = [args.events is not None, any(p is not None for p in ubi), args.config is not None]
    if sum(logs) != 1 or (None in ubi and any(ubi)):
        raise ConfigError("releval clicks: give --events PATH, both --ubi-queries and "
                          "--ubi-events, or --config FILE (its [clicks] section)")
    if args.action == "interleaving" and (args.baseline is None or not args.candidate):
        raise ConfigError("releval clicks interleaving: give --baseline TEAM and --candidate "
                          "TEAM (the team column's values of the two rankers)")
    if args.config is not None:
        from releval.config import load_config

        base = load_config(args.config).clicks
        if base is None:
            raise ConfigError(f"{args.config}: no [clicks] section (the interactions input)")
    else:
        path = args.events or args.ubi_queries
        base = ClicksSettings(path=path, format=args.format or log_format(path),
                              measures=DEFAULT_MEASURES)
    return check_clicks(dataclasses.replace(base, **_given(args)),  # type: ignore[arg-type]
                        source=args.config or "command line")


def read_log(spark: SparkSession, args: argparse.Namespace, clicks: ClicksSettings
             ) -> DataFrame:
    """The log as the interactions input: ``--events`` as read, or UBI's tables joined
    (:func:`releval.io.ubi.read_ubi`, releval's column names)."""
    from releval.io.click_inputs import read_interactions
    from releval.io.ubi import read_ubi

    if args.ubi_queries is None:
        return read_interactions(spark, clicks)
    queries = read_interactions(spark, clicks)
    events = read_interactions(spark, ClicksSettings(path=args.ubi_events, format=clicks.format))
    return read_ubi(queries, events, partition_by=clicks.partition_by)


def _columns(args: argparse.Namespace, clicks: ClicksSettings) -> dict[str, str] | None:
    """The column mapping of ``--events`` (UBI's rows carry releval's names already)."""
    return clicks.columns() if args.ubi_queries is None else None


def session(args: argparse.Namespace, clicks: ClicksSettings) -> SparkSession:
    """The command's session: local (small local files: a short job's JVM) or ``--remote``."""
    from releval.config.settings import SparkSettings
    from releval.runtime.session import build_session, short_inputs

    spark_settings = SparkSettings(master=default_master(args), remote=remote_of(args),
                                   app_name="releval-clicks", shuffle_partitions=8)
    paths = [args.events or args.ubi_queries or clicks.path, *([args.ubi_events] if
                                                              args.ubi_events else [])]
    return build_session(spark_settings, short=short_inputs(spark_settings.master, paths))


def run(args: argparse.Namespace) -> int:
    """``releval clicks``: the action on the log; prints its table, returns the exit code."""
    clicks = settings(args)
    spark = session(args, clicks)
    try:
        rows = read_log(spark, args, clicks)
        columns = _columns(args, clicks)
        if args.action == "labels":
            lines = _labels(rows, columns, clicks, args.output)
        else:
            lines = _result(rows, columns, clicks, args)
    finally:
        spark.stop()
    print("\n".join(lines))
    return 0


def _labels(rows: DataFrame, columns: dict[str, str] | None, clicks: ClicksSettings,
            output: str | None) -> list[str]:
    from releval.clicks.labels import click_labels

    found = click_labels(rows, columns=columns, model=clicks.model,
                         min_impressions=clicks.min_impressions, grades=clicks.grades)
    bias = [r.asDict() for r in found.position_bias.orderBy("method", "position").collect()]
    labels = found.labels
    counts = [r.asDict() for r in labels.groupBy("relevance").count().orderBy("relevance")
              .collect()]
    top = [r.asDict() for r in labels.orderBy("query_id", "doc_id").limit(SHOWN_LABELS)
           .collect()]
    if output:
        found.write(str(Path(output) / "click_labels"),
                    position_bias=str(Path(output) / "position_bias"))
    lines = [f"position bias ({clicks.model}):", *_table(bias, _BIAS_COLUMNS),
             "", "labels by relevance:", *_table(counts, ["relevance", "count"]),
             "", f"first {len(top)} labels:", *_table(top, _LABEL_COLUMNS)]
    return [*lines, "", *_account_lines(found)]


_BIAS_COLUMNS = ["method", "position", "examination", "examination_low", "examination_high",
                 "impressions"]
_LABEL_COLUMNS = ["query_id", "doc_id", "relevance", "attractiveness", "attractiveness_low",
                  "attractiveness_high", "impressions", "clicks"]


def _table(rows: list[dict[str, object]], columns: list[str]) -> list[str]:
    """``rows`` (dicts) as the lines of a text table of ``columns``."""
    return text_table([[r.get(c) for c in columns] for r in rows], columns,
                      max_rows=40).splitlines()


def _account_lines(found: object) -> list[str]:
    """The labels' account (impressions read, quarantined, labelled), as the object renders
    it."""
    accounts = getattr(found, "accounts", None)
    if accounts is None:
        return []
    render = getattr(accounts, "render", None)
    return list(render()) if callable(render) else [str(accounts)]


def _result(rows: DataFrame, columns: dict[str, str] | None, clicks: ClicksSettings,
            args: argparse.Namespace) -> list[str]:
    parts = list(clicks.partition_by)
    if args.action == "measures":
        from releval.clicks.online import evaluate_clicks

        result = evaluate_clicks(rows, measures=list(clicks.measures), partition_by=parts,
                                 columns=columns)
    else:
        from releval.clicks.interleaving import interleaving

        result = interleaving(rows, baseline=args.baseline, candidates=args.candidate,
                              columns=columns, partition_by=parts)
        parts = [*parts, "team"]
    shown = [*parts, "measure_key", "num_queries", "value", "ci_low", "ci_high"]
    macro = result.aggregate.where("averaging = 'macro' AND slice IS NULL").orderBy(
        *parts, "measure_key")
    found = [r.asDict() for r in macro.select(*shown).collect()]
    return [*_table(found, shown), "", *result.accounts.render().splitlines()]

