"""Named exceptions. Each message says what was expected and what was found."""

from __future__ import annotations


class RelevalError(Exception):
    """Base class of the errors a user can fix (exit code 2 in the CLI)."""


class ConfigError(RelevalError):
    """The configuration (file or command line) is invalid."""


class InputError(RelevalError):
    """An input table or file is missing, has the wrong columns, or cannot be parsed."""


class MeasureError(RelevalError):
    """A measure name or parameter is invalid."""


class QualityError(RelevalError):
    """Strict mode: input rows were quarantined (the quarantine table was written)."""


class AccountingError(RelevalError):
    """Input rows != rows used + rows quarantined: a row disappeared (a bug, not bad data)."""


class SchemaVersionError(RelevalError):
    """An output table was written by another releval schema version (see docs/migrations.md)."""


class WriteConflictError(RelevalError):
    """A concurrent job kept changing the same output partitions; the write gave up."""


class ComparisonError(RelevalError):
    """A comparison cannot be made: a side is missing, or the sides used different qrels."""


class ClusterError(RelevalError):
    """The executors' Python lacks a module, or cannot see a path the job reads or writes."""


class DeltaUnavailableError(RelevalError):
    """The SparkSession cannot write Delta tables: Delta's jars or its two settings are missing."""


class SignDisagreementWarning(UserWarning):
    """A comparison's difference over all queries has one sign, and its traffic-weighted
    difference, or the slice values holding most of the weight, the other."""
