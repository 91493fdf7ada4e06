"""The click labels as a second qrels version of ``releval agree --clicks``: the
``click_labels`` table the job writes from ``[clicks]``, compared with ``[qrels]`` where both
label a (query, document) (docs/clicks.md, docs/agreement.md)."""

from __future__ import annotations

from releval.config import Config, QrelsSource
from releval.errors import ConfigError


def click_labels_qrels(config: Config, filter_: str | None = None) -> QrelsSource:
    """The config's ``click_labels`` table as qrels (``query_id``, ``doc_id``, ``relevance``),
    ``filter_`` picking one ``[clicks] partition_by`` value's labels when there are several.

    Raises:
        ConfigError: no ``[clicks]`` section, or the labels are partitioned and no filter
            picks one partition.

    Example:
        >>> from releval.config import config_from_dict
        >>> config = config_from_dict({"run": {"path": "r"}, "qrels": {"path": "q"},
        ...     "output": {"click_labels_path": "out/click_labels"},
        ...     "clicks": {"path": "log"}})
        >>> click_labels_qrels(config).path
        'out/click_labels'
    """
    if config.clicks is None:
        raise ConfigError("releval agree --clicks: the config has no [clicks] section (the "
                          "interactions the click labels come from)")
    if config.clicks.partition_by and not filter_:
        raise ConfigError(
            f"releval agree --clicks: the click labels are partitioned by "
            f"{list(config.clicks.partition_by)}: pick one partition's labels with "
            f"--other-filter, e.g. \"{config.clicks.partition_by[0]} = '...'\"")
    path, table = config.located("click_labels")
    return QrelsSource(path=path, table=table, format="delta", filter=filter_)
