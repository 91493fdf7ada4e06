"""What ``releval.click_labels`` returns: the labels, the position bias, the accounts."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from releval import display
from releval.core import columns as S
from releval.runtime.delta import require_delta

if TYPE_CHECKING:
    from releval.checks.interactions import CheckedInteractions
    from releval.clicks.position_bias import PositionBias


@dataclass(frozen=True)
class ClickAccounts:
    """Where every impression and every (query, doc) went.

    ``impressions_read = impressions_used + sum(quarantined)`` and ``pairs = pairs_labelled +
    pairs_under_min_impressions + pairs_unidentified`` (a PBM pair shown only at positions
    whose examination the log cannot estimate).
    """

    impressions_read: int
    impressions_used: int
    quarantined: dict[str, int] = field(default_factory=dict)
    pairs: int = 0
    pairs_labelled: int = 0
    pairs_under_min_impressions: int = 0
    pairs_unidentified: int = 0
    min_impressions: int = 10

    @property
    def quarantined_total(self) -> int:
        return sum(self.quarantined.values())

    def render(self) -> list[str]:
        """The accounts as lines of text."""
        reasons = ", ".join(f"{k} {v:,}" for k, v in sorted(self.quarantined.items()))
        return [
            f"impressions read {self.impressions_read:,}: used {self.impressions_used:,}, "
            f"quarantined {self.quarantined_total:,}" + (f" ({reasons})" if reasons else ""),
            f"(query, doc) pairs {self.pairs:,}: labelled {self.pairs_labelled:,}, under "
            f"min_impressions={self.min_impressions} {self.pairs_under_min_impressions:,}, "
            f"unidentified {self.pairs_unidentified:,}",
        ]

    def __str__(self) -> str:
        return "\n".join(self.render())


@dataclass
class ClickLabels:
    """Click labels and the log's position bias (``releval.click_labels``).

    Attributes:
        labels: qrels-shaped: ``query_id``, ``doc_id``, ``relevance`` (int), ``attractiveness``
            with ``attractiveness_low``/``_high`` (95%), ``satisfaction`` (cascade models; null
            for pbm), ``impressions``, ``clicks``, ``label_source`` (``clicks:<model>``).
        model, min_impressions, grades: as asked.
    """

    labels: DataFrame
    scored: DataFrame
    checked: CheckedInteractions
    compressed: DataFrame
    model: str
    min_impressions: int
    grades: tuple[float, ...]
    fitted: PositionBias | None = None

    #: positions :meth:`__repr__` shows at most
    SHOWN_POSITIONS: ClassVar[int] = 10

    @property
    def bias(self) -> PositionBias:
        """Both position-bias fits (computed on first use for the cascade models)."""
        if self.fitted is None:
            from releval.clicks.position_bias import fit_position_bias

            self.fitted = fit_position_bias(self.compressed)
        return self.fitted

    @property
    def position_bias(self) -> DataFrame:
        """``position``, ``examination`` (position 1 = 1.0), ``examination_low``/``_high``
        (95%), ``method`` (``pbm_em``, ``intervention_harvesting``), ``impressions``."""
        return self.bias.table

    @property
    def quarantine(self) -> DataFrame:
        """The rejected interaction rows, a reason each (the repo's quarantine shape)."""
        return self.checked.quarantine

    @cached_property
    def accounts(self) -> ClickAccounts:
        """Impressions read, used and quarantined (by reason); pairs labelled, under
        ``min_impressions`` and unidentified (two small jobs)."""
        account = self.checked.accounts
        quarantined: dict[str, int] = {}
        for part in account.partitions:
            for reason, count in part.quarantined.items():
                quarantined[reason] = quarantined.get(reason, 0) + count
        enough = F.col(S.IMPRESSIONS) >= self.min_impressions
        row = self.scored.agg(
            F.count(F.lit(1)).alias("pairs"),
            F.sum((F.col("_identified") & enough).cast("long")).alias("labelled"),
            F.sum((F.col("_identified") & ~enough).cast("long")).alias("under"),
            F.sum((~F.col("_identified")).cast("long")).alias("unidentified"),
        ).first()
        return ClickAccounts(
            impressions_read=account.input,
            impressions_used=account.used,
            quarantined=quarantined,
            pairs=int(row["pairs"] or 0),
            pairs_labelled=int(row["labelled"] or 0),
            pairs_under_min_impressions=int(row["under"] or 0),
            pairs_unidentified=int(row["unidentified"] or 0),
            min_impressions=self.min_impressions,
        )

    def _summary(self) -> tuple[list[str], list[str], list[list[Any]], str]:
        grades = ", ".join(f"{g:g}" for g in self.grades)
        head = [
            f"releval.ClickLabels: model {self.model}, relevance cut points [{grades}]",
            *(f"  {line}" for line in self.accounts.render()),
            "position bias (examination, position 1 = 1) [95% interval]:",
        ]
        fits = [("pbm_em", self.bias.pbm), ("harvesting", self.bias.harvesting)]
        columns = ["position", *(name for name, _ in fits)]
        rows = [
            [k + 1, *(_estimate(f.theta[k], f.low[k], f.high[k]) for _, f in fits)]
            for k in range(self.bias.positions)
        ]
        footer = (
            "tables (DataFrames): labels.labels (qrels= of releval.evaluate), "
            "labels.position_bias, labels.quarantine; labels.accounts"
        )
        return head, columns, rows, footer

    def __repr__(self) -> str:
        """The model, the accounts and the position-bias curves, side by side."""
        head, columns, rows, footer = self._summary()
        table = display.text_table(
            rows, columns, max_rows=self.SHOWN_POSITIONS, max_width=130, noun="position"
        )
        return "\n".join([*head, table, footer])

    def _repr_html_(self) -> str:
        """:meth:`__repr__` as HTML, for notebooks."""
        head, columns, rows, footer = self._summary()
        lines = "".join(f"<div>{html.escape(line.strip())}</div>" for line in head)
        table = display.html_table(rows, columns, max_rows=self.SHOWN_POSITIONS, noun="position")
        return f"<div>{lines}{table}<div>{html.escape(footer)}</div></div>"

    def unpersist(self, blocking: bool = False) -> None:
        """Drop the compressed counts the fit keeps in Spark's cache."""
        self.compressed.unpersist(blocking)

    def write(
        self,
        labels: str | None = None,
        *,
        position_bias: str | None = None,
        quarantine: str | None = None,
        catalog: bool = False,
    ) -> None:
        """Write the tables asked for as Delta tables, replacing their contents.

        Args:
            labels, position_bias, quarantine: where each goes: a path, or with ``catalog``
                a table name; None: not written.
            catalog: the names are catalog tables, not paths.
        """
        asked = [
            (labels, self.labels),
            (position_bias, self.position_bias),
            (quarantine, self.quarantine),
        ]
        if any(where for where, _ in asked):
            require_delta(self.labels.sparkSession, "ClickLabels.write")
        for where, df in asked:
            if not where:
                continue
            writer = df.write.format("delta").mode("overwrite").option("overwriteSchema", "true")
            if catalog:
                writer.saveAsTable(where)
            else:
                writer.save(where)


def _estimate(value: float, low: float, high: float) -> str:
    if value != value:  # NaN: no estimate
        return display.MISSING
    return f"{value:.3f} [{low:.3f}, {high:.3f}]"
