"""Type widening (Delta PROTOCOL.md "Type Widening", features `typeWidening` / `typeWidening-preview`).

A column's type may be widened without rewriting files (`ALTER COLUMN ... TYPE`); the schema field
then records each change in its metadata, `delta.typeChanges` = [{fromType, toType, tableVersion,
fieldPath?}]. Readers must convert values of files written before a change to the current type, and
must fail on a change they do not support. Supported changes (the protocol's list):

    byte -> short -> integer -> long            float -> double
    byte | short | integer -> double            date -> timestamp_ntz
    decimal(p, s) -> decimal(p + k1, s + k2)                          with k1 >= k2 >= 0
    byte | short | integer -> decimal(10 + k1, k2),  long -> decimal(20 + k1, k2)   (k1 >= k2 >= 0)

Converting values is the scan's cast to the table type (`scan._conform_column`). Stats need one more
rule: a file's stats were written in the type of its time. Every change above maps each old value to
exactly one new value, in order, so old bounds stay bounds - except float -> double: a float's JSON
bound is its shortest float text ("3.4"), which as a double (3.4) is not the widened value
(3.4000000953674316). Data skipping therefore ignores the stats of columns widened from float
(`inexact_stats_columns`): unknown, so a file is kept, never wrongly skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import orjson
import pyarrow as pa

from airflow_txnlog.engine import feature_registry as registry
from airflow_txnlog.engine.errors import UnsupportedFeatureError

TYPE_CHANGES = "delta.typeChanges"
FEATURES = frozenset({registry.TYPE_WIDENING.name, registry.TYPE_WIDENING_PREVIEW.name})
_INTEGERS = ("byte", "short", "integer", "long")
_DECIMAL_RE = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
_INTEGER_DIGITS = {"byte": 10, "short": 10, "integer": 10, "long": 20}


def _decimal(t: str) -> tuple[int, int] | None:
    m = _DECIMAL_RE.match(t.replace(" ", ""))
    return (int(m.group(1)), int(m.group(2))) if m else None


def is_supported(from_type: str, to_type: str) -> bool:
    """Whether the protocol allows widening `from_type` to `to_type` (Delta type names)."""
    if from_type in _INTEGERS and to_type in _INTEGERS:
        return _INTEGERS.index(from_type) < _INTEGERS.index(to_type)
    if (from_type, to_type) == ("float", "double") or (from_type, to_type) == ("date", "timestamp_ntz"):
        return True
    if from_type in _INTEGERS[:3] and to_type == "double":
        return True
    new = _decimal(to_type)
    if new is None:
        return False
    old = _decimal(from_type)
    if old is not None:
        k1, k2 = new[0] - old[0], new[1] - old[1]
    elif from_type in _INTEGER_DIGITS:
        k1, k2 = new[0] - _INTEGER_DIGITS[from_type], new[1]
    else:
        return False
    return k1 >= k2 >= 0


def _field_changes(f: pa.Field) -> list[dict[str, Any]]:
    raw = (f.metadata or {}).get(TYPE_CHANGES.encode())
    if raw is None:
        return []
    changes = orjson.loads(raw)
    return [c for c in changes if isinstance(c, dict)] if isinstance(changes, list) else []


def _walk(fields: list[pa.Field], path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], dict[str, Any]]]:
    for f in fields:
        here = (*path, f.name)
        for change in _field_changes(f):
            yield here, change
        t = f.type
        while pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
            t = t.item_type if pa.types.is_map(t) else t.value_type
        if pa.types.is_struct(t):
            yield from _walk(list(t), here)


def type_changes(schema: pa.Schema) -> list[tuple[tuple[str, ...], dict[str, Any]]]:
    """(field path, change record) of every `delta.typeChanges` entry in the schema, nested too."""
    return list(_walk(list(schema), ()))


def check_supported(schema: pa.Schema) -> None:
    """UnsupportedFeatureError naming the first type change the protocol does not allow."""
    for path, change in type_changes(schema):
        old, new = str(change.get("fromType")), str(change.get("toType"))
        if not is_supported(old, new):
            raise UnsupportedFeatureError(
                f"column {'.'.join(path)!r} was widened from {old} to {new}, a type change this engine "
                "cannot read",
                feature="typeWidening",
            )


def inexact_stats_columns(schema: pa.Schema) -> frozenset[str]:
    """Top-level columns with a change from float (their old stats are not exact bounds now)."""
    return frozenset(path[0] for path, change in type_changes(schema) if change.get("fromType") == "float")
