"""Run-time checks of the engine's public arguments, made before anything is read or written.

The signatures say `Literal["append", "overwrite"]` or `Mapping[str, str]`, but the engine is called
from untyped code (DAG files, notebooks, other engines' glue), so those types are checked again here.
Each check raises `InvalidArgumentError` (a `TxnLogError` and a `ValueError`) naming the argument and
what it accepts. The vocabulary every layer shares is defined here, once: `WriteMode` and
`ForeignCommitsPolicy` (the engine, the Spark layer and the Airflow layer take the same values; this
module is pyarrow-free, so the Airflow layer can load it while a DAG file is parsed).

- `one_of(name, value, Alias)`: the accepted values come from `typing.get_args(Alias)`, so they are
  written once, in the `Literal` alias;
- `mapping(name, value, ...)`: a real mapping (a str or a list of pairs is refused) with str keys and,
  where the log stores text (tags, table properties), str values. Values are never echoed: storage
  options hold secrets;
- `json_mapping`: a mapping that also serializes to JSON (commitInfo fields), so the commit cannot
  fail half-way through building its payload;
- `number` / `text` / `flag`: a plain number in range (never a bool), an optional string, a real
  bool (`"false"` is truthy: a destructive option must not be guessed);
- `names`: a list of column names (a bare string would otherwise be read one letter per column).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args

import orjson

from airflow_txnlog._shown import shown
from airflow_txnlog.engine.errors import InvalidArgumentError

WriteMode = Literal["append", "overwrite"]
"""How a write treats the rows already in the table (`Table.write`, `SparkTable.write`, the operators)."""

ForeignCommitsPolicy = Literal["fail", "force"]
"""What a restore does when other writers committed since its target (see `Table.restore`)."""

# A name safe as one path segment on every store: savepoint names, publication channels.
# (\Z, not $: `$` also matches before a final newline, and "name\n" is no safe path segment)
SAFE_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}\Z")


def safe_name(what: str, value: object) -> str:
    """`value` if it is a SAFE_NAME_RE name (one path segment, no '..'), else InvalidArgumentError
    saying "invalid <what> ..." and the rule."""
    if not isinstance(value, str) or not SAFE_NAME_RE.match(value) or ".." in value:
        raise InvalidArgumentError(
            f"invalid {what} {value!r}: use 1-128 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit (no path separators, no '..')"
        )
    return value


def one_of(name: str, value: object, alias: Any) -> None:
    """Refuse `value` unless it is one of the values of the `Literal` alias."""
    accepted = get_args(alias)
    if isinstance(value, str) and value in accepted:
        return
    listed = ", ".join(repr(a) for a in accepted)
    raise InvalidArgumentError(f"{name} must be one of {listed}; got {shown(value)}")


def mapping(name: str, value: object, *, example: str, str_values: bool = False) -> dict[str, Any]:
    """A copy of the mapping `value` (None: empty) whose keys, and values if `str_values`, are str."""
    if value is None:
        return {}
    wanted = "str to str" if str_values else "str keys"
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(
            f"{name} must be a mapping ({wanted}) such as {example}, or None; got a {type(value).__name__}"
        )
    for key, item in value.items():
        if not isinstance(key, str) or (str_values and not isinstance(item, str)):
            raise InvalidArgumentError(
                f"{name} must map str to {'str' if str_values else 'values'} (such as {example}); "
                f"key {shown(key)} ({type(key).__name__}) has a {type(item).__name__} value"
            )
    return dict(value)


def json_mapping(name: str, value: object, *, example: str) -> dict[str, Any]:
    """`mapping` whose values also serialize to JSON (they go into commitInfo as they are)."""
    out = mapping(name, value, example=example)
    try:
        orjson.dumps(out)
    except TypeError as exc:  # orjson.JSONEncodeError
        raise InvalidArgumentError(
            f"{name} must hold JSON values (str, numbers, lists, dicts): {exc}"
        ) from exc
    return out


def number(
    name: str, value: object, *, minimum: float, integer: bool = False, none_means: str | None = None
) -> None:
    """Refuse anything but a number >= `minimum` (an int if `integer`; None when `none_means` says so)."""
    if value is None and none_means is not None:
        return
    if (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and not (integer and isinstance(value, float))
        and value >= minimum  # False for NaN
    ):
        return
    kind = "an integer" if integer else "a number"
    alternative = f", or None ({none_means})" if none_means is not None else ""
    raise InvalidArgumentError(
        f"{name} must be at least {minimum:g} ({kind}){alternative}; got {shown(value)}"
    )


def text(name: str, value: object, *, none_ok: bool = True, empty_ok: bool = True) -> None:
    """Refuse anything but a str (or None when `none_ok`; an empty one only when `empty_ok`)."""
    if value is None and none_ok:
        return
    if not isinstance(value, str) or (not empty_ok and not value.strip()):
        kind = "a string" if empty_ok else "a non-empty string"
        raise InvalidArgumentError(
            f"{name} must be {kind}{' or None' if none_ok else ''}; got {shown(value)}"
        )


def flag(name: str, value: object) -> None:
    """Refuse anything but True or False."""
    if not isinstance(value, bool):
        raise InvalidArgumentError(f"{name} must be True or False; got {shown(value)}")


def names(name: str, value: object, *, none_means: str) -> list[str] | None:
    """A list of column names, or None (`none_means`); a bare string is refused, not split."""
    if value is None:
        return None
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise InvalidArgumentError(
            f"{name} must be a list of column names such as ['id'], or None ({none_means}); "
            f"got {shown(value)}"
        )
    if not all(isinstance(item, str) for item in value):
        raise InvalidArgumentError(f"{name} must hold column names (str); got {shown(value)}")
    return list(value)


def txn_pair(txn: object) -> tuple[str, int]:
    """(app id, version) of an idempotent write's `txn=` argument, or InvalidArgumentError."""
    if isinstance(txn, tuple | list) and len(txn) == 2:
        app_id, version = txn
        ok_version = isinstance(version, int) and not isinstance(version, bool) and version >= 0
        if isinstance(app_id, str) and app_id and ok_version:
            return app_id, version
    raise InvalidArgumentError(
        f"txn must be a pair (non-empty app id, version >= 0) such as ('ingest', 42); got {shown(txn)}"
    )
