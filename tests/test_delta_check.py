"""Whether a session has Delta: its two settings, else the error Delta's SQL gives (a platform
with Delta built in answers with an error of Delta's own; a session without it cannot parse)."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from releval.errors import DeltaUnavailableError
from releval.runtime.delta import CATALOG, EXTENSION, has_delta, require_delta


class _Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)


class _Session:
    """A session whose settings are ``conf`` and whose SQL fails with ``error``."""

    def __init__(self, conf: dict[str, str], error: str | None) -> None:
        self.conf, self.error, self.statements = _Conf(conf), error, []

    def sql(self, statement: str):  # noqa: ANN201 - a DataFrame's stand-in
        self.statements.append(statement)
        if self.error:
            raise RuntimeError(self.error)
        return self

    def collect(self) -> list:
        return []


def test_the_suite_session_has_delta(spark: SparkSession) -> None:
    assert has_delta(spark)
    require_delta(spark, "result.write")


def test_the_two_settings_answer_without_a_statement() -> None:
    session = _Session({"spark.sql.extensions": f"other.Ext,{EXTENSION}",
                        "spark.sql.catalog.spark_catalog": CATALOG}, error="[PARSE_SYNTAX_ERROR]")
    assert has_delta(session) and session.statements == []


@pytest.mark.parametrize(("error", "found"), [
    ("[DELTA_TABLE_ONLY_OPERATION] `/x` is not a Delta table.", True),  # Delta built in
    ("[DELTA_MISSING_DELTA_TABLE] `/x` is not a Delta table.", True),
    ("[PARSE_SYNTAX_ERROR] Syntax error at or near 'HISTORY'.", False),  # no Delta extension
    ("[TABLE_OR_VIEW_NOT_FOUND] The table or view `delta`.`/x` cannot be found.", False),
])
def test_without_the_settings_delta_s_own_error_says_it_is_there(error, found) -> None:
    session = _Session({}, error)
    assert has_delta(session) is found
    assert session.statements[0].startswith("DESCRIBE HISTORY delta.`")


def test_a_session_without_delta_gets_one_line_naming_what_to_set() -> None:
    with pytest.raises(DeltaUnavailableError) as info:
        require_delta(_Session({}, "[PARSE_SYNTAX_ERROR] x"), "result.write")
    message = str(info.value)
    assert message.startswith("result.write writes Delta tables, and this SparkSession has no "
                              "Delta Lake: start it with Delta's jars")
    assert "\n" not in message
    assert f"spark.sql.extensions={EXTENSION}" in message
    assert f"spark.sql.catalog.spark_catalog={CATALOG}" in message
