"""Checks of the arguments of the public Spark API, made before any Spark job runs or file is written.

Why up front: a wrong value that reaches pyspark or the planner fails late and obscurely (a
`ValueError` from `dict("all")`, a `TypeError` deep inside a join, or, worse, a silent misreading
such as `partition_by="day"` taken as the columns `d`, `a`, `y`). Each check raises
`InvalidArgumentError` whose message names what is accepted, so the caller learns the right form.

Mode and policy parameters are `Literal` aliases whose accepted values are written once: the
engine's `check_choice` builds its message from `typing.get_args` of the alias. `SparkTable.write`
takes the engine's own `WriteMode` (it means what `Table.write(mode=...)` means); `AllColumns`
(MERGE's `"*"`) is defined here. Mappings must be real mappings with non-empty string keys; SQL
given as text must be a non-empty string. The table's own facts (which columns exist) are checked
later by the operation, still before its first Spark job (`dml._dml.resolve_columns`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args

from pyspark.sql import DataFrame

from airflow_txnlog._shown import listed, shown
from airflow_txnlog.engine import InvalidArgumentError

#: MERGE `set=` / `values=`: every column, taken from the source column of the same name.
AllColumns = Literal["*"]
ALL: AllColumns = "*"


def _got(value: object) -> str:
    return f"got {type(value).__name__} {shown(value)}"


def sql_text(name: str, value: object, *, none_means: str | None = None) -> None:
    """A non-empty Spark SQL string; None too when `none_means` says what None does."""
    if value is None and none_means is not None:
        return
    if not isinstance(value, str) or not value.strip():
        alternative = f", or None ({none_means})" if none_means is not None else ""
        raise InvalidArgumentError(f"{name} must be a non-empty Spark SQL string{alternative}; {_got(value)}")


def string_keyed(name: str, value: object, *, accepted: str, empty_ok: bool = True) -> dict[str, Any]:
    """A mapping with non-empty string keys (None -> {}); `accepted` describes the expected form."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(f"{name} must be {accepted}; {_got(value)}")
    if not value and not empty_ok:
        raise InvalidArgumentError(f"{name} must not be empty: it must be {accepted}")
    for key in value:
        if not isinstance(key, str) or not key:
            raise InvalidArgumentError(
                f"{name} keys must be non-empty strings ({accepted}); got key {shown(key)}"
            )
    return dict(value)


def sql_mapping(name: str, value: object, *, accepted: str) -> dict[str, str]:
    """A non-empty mapping {column: non-empty SQL expression}."""
    if value is None:
        raise InvalidArgumentError(f"{name} must be {accepted}; {_got(value)}")
    out = string_keyed(name, value, accepted=accepted, empty_ok=False)
    for key, sql in out.items():
        sql_text(f"{name}[{key!r}]", sql)
    return out


def all_or_sql_mapping(name: str, value: object, *, all_method: str) -> dict[str, str] | None:
    """MERGE `set=` / `values=`: `"*"` (-> None: every column) or a mapping {column: SQL}.

    Other strings are refused by name, since Delta spells "every column" `updateAll` and delta-rs
    `update_all`: a user may well write "all".
    """
    if value == ALL:
        return None
    accepted = (
        f"{listed(get_args(AllColumns))} (every column, as {all_method}() does), "
        "or a mapping {target column: SQL expression} such as {'value': 's.value'}"
    )
    if isinstance(value, str):
        raise InvalidArgumentError(f"{name} must be {accepted}; {_got(value)}")
    return sql_mapping(name, value, accepted=accepted)


def scheme_map(value: object) -> dict[str, str]:
    """`scheme_map`: {fsspec scheme: Hadoop scheme}, both non-empty strings (None -> {})."""
    accepted = "a mapping {fsspec scheme: Hadoop scheme} such as {'s3': 's3a'}, or None"
    out = string_keyed("scheme_map", value, accepted=accepted)
    for key, scheme in out.items():
        if not isinstance(scheme, str) or not scheme:
            raise InvalidArgumentError(
                f"scheme_map[{key!r}] must be a non-empty Hadoop scheme; {_got(scheme)}"
            )
    return out


def storage_options(value: object) -> dict[str, Any] | None:
    """`storage_options`: fsspec options {name: value}, or None (kept None: the engine's default)."""
    accepted = "a mapping {fsspec option: value} such as {'anon': False}, or None"
    return string_keyed("storage_options", value, accepted=accepted) if value is not None else None


def column_names(name: str, value: object) -> tuple[str, ...]:
    """A sequence of column names; a lone string is refused (it would read as one name per letter)."""
    accepted = "a list of column names such as ['day']"
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise InvalidArgumentError(f"{name} must be {accepted}; {_got(value)}")
    for item in value:
        if not isinstance(item, str) or not item:
            raise InvalidArgumentError(f"{name} must be {accepted}; got item {shown(item)}")
    return tuple(value)


def dataframe(name: str, value: object) -> None:
    """A Spark DataFrame (classic or Connect: both derive from `pyspark.sql.DataFrame`)."""
    if not isinstance(value, DataFrame):
        raise InvalidArgumentError(f"{name} must be a Spark DataFrame; {_got(value)}")


def alias(name: str, value: object) -> None:
    """A DataFrame alias: it is quoted as `alias` in generated SQL, so it may not hold a backtick."""
    if not isinstance(value, str) or not value.strip() or "`" in value:
        raise InvalidArgumentError(
            f"{name} must be a non-empty name without backticks such as 's'; {_got(value)}"
        )


def flag(name: str, value: object) -> None:
    """A real bool: a string such as "false" would otherwise count as True."""
    if not isinstance(value, bool):
        raise InvalidArgumentError(f"{name} must be True or False; {_got(value)}")


def positive_int(name: str, value: object, *, none_means: str) -> None:
    """None, or an int > 0 (bool refused: True is not a size)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InvalidArgumentError(
            f"{name} must be a positive integer, or None ({none_means}); {_got(value)}"
        )


def app_transaction(value: object) -> None:
    """`txn=(app_id, version)`: a non-empty string and an int >= 0."""
    if isinstance(value, tuple | list) and len(value) == 2:
        app_id, version = value
        valid_version = isinstance(version, int) and not isinstance(version, bool) and version >= 0
        if isinstance(app_id, str) and app_id and valid_version:
            return
    raise InvalidArgumentError(
        "txn must be a pair (app id: non-empty str, version: int >= 0) such as ('ingest', 42), "
        f"or None; {_got(value)}"
    )


def metrics(value: object) -> dict[str, int]:
    """Extra operationMetrics: a mapping of str to int (None: none)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in value.items()
    ):
        raise InvalidArgumentError(f"metrics must be a mapping of str to int, got {_got(value)}")
    return dict(value)
