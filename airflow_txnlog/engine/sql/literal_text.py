"""Python values written as Spark SQL literals: how a message shows a row's values.

`sql_literal(value)` is the value as a user would write it in a Spark SQL predicate or constraint,
so a violation message shows `TIMESTAMP '2026-11-27 00:00:00'` rather than a Python repr:

    None -> NULL            True -> TRUE              1.5 -> 1.5    Decimal('1.50') -> 1.50
    'it''s' -> 'it\\'s'      b'\\x01' -> X'01'          date -> DATE '2026-11-27'
    zoned datetime -> TIMESTAMP '2026-11-27 00:00:00' (in UTC, as the engine reads a TIMESTAMP literal)
    naive datetime -> TIMESTAMP_NTZ '2026-11-27 00:00:00'
    NaN / infinity -> CAST('NaN' AS DOUBLE) / CAST('Infinity' AS DOUBLE)
    {'a': 1} -> struct(1 AS a)   [1, 2] -> array(1, 2)   [(k, v)] (an Arrow map) or a dict with
    other than string keys -> map(k, v)

Strings are quoted with single quotes and backslash escapes, as Spark SQL reads them (control
characters escaped, so a message stays on one line). Anything else falls back to its repr. A value
is cut to `limit` characters with '...' (a 10 MB array must not become a 10 MB message); nested
values stop being written once the limit is passed, so the cost stays bounded too.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

LIMIT = 200
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\0": "\\0"}


def sql_literal(value: Any, limit: int = LIMIT) -> str:
    """`value` as a Spark SQL literal, at most `limit` characters (see the module docstring)."""
    text = _literal(value, limit)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _literal(value: Any, budget: int) -> str:
    scalar = _scalar(value)
    if scalar is not None:
        return scalar
    if isinstance(value, Mapping):
        if all(isinstance(k, str) for k in value):
            return _call("struct", (f"{_literal(v, budget)} AS {_name(k)}" for k, v in value.items()), budget)
        return _call("map", _pairs(value.items(), budget), budget)
    if isinstance(value, list | tuple):
        if value and all(isinstance(x, tuple) and len(x) == 2 for x in value):
            return _call("map", _pairs(value, budget), budget)  # pyarrow gives a map as (key, value) pairs
        return _call("array", (_literal(x, budget) for x in value), budget)
    return repr(value)


def _scalar(value: Any) -> str | None:
    """A literal for a value that is not a container (None when it is one, or unknown)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, decimal.Decimal):
        return format(value, "f")  # (never 1E+3, which Spark reads as a double)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return f"X'{bytes(value).hex().upper()}'"
    if isinstance(value, dt.datetime):
        return _timestamp(value)
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    return None


def _float(value: float) -> str:
    if math.isnan(value):
        return "CAST('NaN' AS DOUBLE)"
    if math.isinf(value):
        return f"CAST('{'-' if value < 0 else ''}Infinity' AS DOUBLE)"
    return repr(value)


def _string(value: str) -> str:
    out = (_ESCAPES.get(c) or (f"\\u{ord(c):04x}" if ord(c) < 0x20 or c == "\x7f" else c) for c in value)
    return "'" + "".join(out) + "'"


def _timestamp(value: dt.datetime) -> str:
    if value.tzinfo is None or value.utcoffset() is None:
        return f"TIMESTAMP_NTZ '{value.isoformat(sep=' ')}'"
    utc = value.astimezone(dt.UTC).replace(tzinfo=None)
    return f"TIMESTAMP '{utc.isoformat(sep=' ')}'"


def _name(name: str) -> str:
    return name if _PLAIN_NAME.fullmatch(name) else "`" + name.replace("`", "``") + "`"


def _pairs(items: Iterable[tuple[Any, Any]], budget: int) -> Iterable[str]:
    for k, v in items:
        yield f"{_literal(k, budget)}, {_literal(v, budget)}"


def _call(function: str, items: Iterable[str], budget: int) -> str:
    """`function(item, ...)`, leaving out the items past `budget` characters (shown as '...')."""
    parts: list[str] = []
    size = len(function) + 2
    for item in items:
        if size > budget:
            parts.append("...")
            break
        parts.append(item)
        size += len(item) + 2
    return f"{function}({', '.join(parts)})"
