"""``releval report``, ``sql``, ``views`` and ``measures``: the output tables and the registry."""

from __future__ import annotations

import argparse

from releval.cli.evaluate import add_remote_argument, remote_of, session


def add_report_arguments(rep: argparse.ArgumentParser) -> None:
    """The arguments of ``releval report`` (also ``jobs/report.py``)."""
    rep.add_argument("--config", required=True,
                     help="the TOML config whose output tables to read (path tables without "
                     "Spark; catalog tables through a SparkSession built from [spark])")
    rep.add_argument("--output", default="report.html",
                     help="the HTML file to write (default report.html)")
    rep.add_argument("--date", default=None,
                     help="the date of the per-run figures (default: the latest in the tables)")
    add_remote_argument(rep)


def report(args: argparse.Namespace) -> int:
    from releval import report
    from releval.config import load_config
    from releval.report.data import needs_spark

    config = load_config(args.config)
    if needs_spark(config):  # catalog tables: only Spark knows the metastore
        spark = session(config, remote_of(args))
        try:
            path = report.write(config, args.output, date=args.date, config_name=args.config,
                                spark=spark)
        finally:
            spark.stop()
    else:
        path = report.write(config, args.output, date=args.date, config_name=args.config)
    print(f"releval report: {path} ({path.stat().st_size // 1024} KiB)")
    return 0


def sql(args: argparse.Namespace) -> int:
    from releval import sql
    from releval.config import load_config

    print(sql.render(sql.query(load_config(args.config), args.query)))
    return 0


def views(args: argparse.Namespace) -> int:
    from releval.config import load_config

    config = load_config(args.config)
    out = config.output
    if not (out.per_query_table or out.aggregate_table):
        from releval.io.views import path_views_sql

        print(path_views_sql(config, dialect=args.dialect))
        return 0
    from releval.io.views import views_command

    spark = session(config, remote_of(args))
    try:
        print(views_command(spark, config, dialect=args.dialect))
    finally:
        spark.stop()
    return 0


def list_measures() -> int:
    from releval.core.measures import REGISTRY

    for name, spec in sorted(REGISTRY.items()):
        aliases = f" (also {', '.join(spec.aliases)})" if spec.aliases else ""
        params = ", ".join(f"{k}={'?' if v is None else f'{v:g}'}" for k, v in spec.params)
        params = f", parameters {params}" if params else ""
        print(f"{name}{aliases}, cutoff {spec.cutoff}{params}: {spec.description}")
    print(
        "\nSyntax: NAME[(rel=N, param=x)][@k][[judged]][[ties]]: (rel=N) sets this measure's "
        "relevance threshold, param=x one of its parameters (? = required); [judged] computes "
        "it on judged documents only (condensed list, trec_eval -J); [ties] gives its expected "
        "value over every order of tied scores (P, R, Hit, RR, AP, nDCG). The names trec_eval and "
        "all_trec stand for trec_eval's default set and all its measures. See docs/measures.md."
    )
    return 0
