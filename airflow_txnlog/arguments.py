"""The vocabulary and argument checks of the Airflow layer (operators, sensors, triggers, hook, callback).

Modes and policies are `Literal` aliases; a check builds its message from the alias with
`typing.get_args`, so the accepted values are written once. Every check raises the engine's
`InvalidArgumentError` (a `TxnLogError`, and a `ValueError`) naming what is accepted, and runs before
a task does any work: at construction for plain values, after rendering (at the start of `execute`)
for templated ones, whose value is not known when the DAG file is parsed.

This module stays light: DAG files build operators at parse time, when pyarrow and the engine must not
load; the engine's error class is imported only when a check fails. The engine and the Spark layer
check these values again (their public signatures use the same literals).

`WriteMode` and `ForeignCommitsPolicy` are the engine's own (defined once, in engine.validate, which
is pyarrow-free): they load on first use (PEP 562 `__getattr__`), so a module that imports only the
checks here (the sensor, the trigger, the hook) loads nothing of the engine.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, get_args

from airflow_txnlog._shown import listed, shown

if TYPE_CHECKING:  # (`X as X`: re-exported for type checkers; at run time `__getattr__` gives them)
    from airflow_txnlog.engine import ForeignCommitsPolicy as ForeignCommitsPolicy  # noqa: PLC0414
    from airflow_txnlog.engine import InvalidArgumentError
    from airflow_txnlog.engine import WriteMode as WriteMode  # noqa: PLC0414

_ENGINE_LITERALS = ("ForeignCommitsPolicy", "WriteMode")
_FLAG_WORDS = {"true": True, "false": False}


def __getattr__(name: str) -> Any:
    """`WriteMode` / `ForeignCommitsPolicy` from the engine, on first use (see the module docstring)."""
    if name not in _ENGINE_LITERALS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from airflow_txnlog import engine  # noqa: PLC0415 - the door loads only engine.validate: no pyarrow

    value = getattr(engine, name)
    globals()[name] = value  # (kept: this runs once per name)
    return value


def invalid(message: str) -> InvalidArgumentError:
    """The error every check raises (the engine, and so pyarrow, loads only on this failure path)."""
    from airflow_txnlog.engine import InvalidArgumentError  # noqa: PLC0415 - see the module docstring

    return InvalidArgumentError(message)


def renders_later(value: object) -> bool:
    """True for a Jinja template string: its value is known only after rendering, at execute time."""
    return isinstance(value, str) and "{{" in value


def check_choice(name: str, value: object, choices: Any) -> None:
    """Refuse `value` unless it is one of the `Literal` alias `choices`."""
    accepted = get_args(choices)
    if not isinstance(value, str) or value not in accepted:
        raise invalid(f"{name} must be {listed(accepted)}; got {shown(value)}")


def str_mapping(name: str, value: object) -> dict[str, str]:
    """A copy of a mapping of str to str (None: empty). Values are not echoed: they may be secrets."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise invalid(f"{name} must be a mapping of str to str; got a {type(value).__name__}")
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, str):
            raise invalid(
                f"{name} must be a mapping of str to str; key {shown(key)} ({type(key).__name__}) "
                f"has a {type(item).__name__} value"
            )
    return dict(value)


def column_names(name: str, value: object) -> list[str]:
    """A list of column names (None: empty); a bare string is refused rather than split into letters."""
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise invalid(f"{name} must be a list of column names; got {shown(value)}")
    if not all(isinstance(item, str) and item for item in value):
        raise invalid(f"{name} must be a list of non-empty column names; got {shown(list(value))}")
    return list(value)


def operation_names(name: str, value: object) -> list[str] | None:
    """commitInfo operation names (None: any operation; one string: that operation)."""
    if value is None:
        return None
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, Sequence) or not all(isinstance(op, str) and op.strip() for op in items):
        raise invalid(
            f"{name} must be None (any operation) or a list of operation names such as "
            f"['WRITE', 'MERGE']; got {shown(value)}"
        )
    return list(items)


def channel_name(name: str, value: object, operations: object = None) -> str | None:
    """A publication channel (None: follow commits, not publications); not with `operations`."""
    if value is None:
        return None
    from airflow_txnlog.engine.spi import publication_records  # noqa: PLC0415 - light

    channel = publication_records.validate_channel(value)  # InvalidArgumentError naming the rule
    if operations is not None:
        raise invalid(
            f"{name} and operations cannot be combined: a publication is not a commit of an operation. "
            "Help: drop operations, or drop the channel to wait for commits"
        )
    return channel


def _number(value: object, kind: type[int] | type[float]) -> int | float | None:
    """`value` as a number of `kind` (numbers, or text as a rendered template gives), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        return kind(value)
    except ValueError:
        return None


def hours(name: str, value: object) -> float | None:
    """A retention in hours: None (the table's own), or a number >= 0."""
    if value is None:
        return None
    number = _number(value, float)
    if number is None or math.isnan(number) or number < 0:
        raise invalid(
            f"{name} must be None (the table's retention) or a number of hours >= 0; got {shown(value)}"
        )
    return float(number)


def version_number(name: str, value: object) -> int | None:
    """A table version: None, or an integer (a rendered template gives text such as "12")."""
    if value is None:
        return None
    number = _number(value, int)
    if number is None or (isinstance(value, float) and not value.is_integer()):
        raise invalid(f"{name} must be None or an integer table version; got {shown(value)}")
    return int(number)


def flag(name: str, value: object) -> bool:
    """A connection flag: a JSON boolean, "true"/"false" (URI-style connections hold text) or null."""
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _FLAG_WORDS:
        return _FLAG_WORDS[value.strip().lower()]
    raise invalid(f"{name} must be true or false; got {shown(value)}")
