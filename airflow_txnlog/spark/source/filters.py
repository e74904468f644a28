"""Filters Spark pushes to the `txnlog` data source, as the engine's SQL predicates.

Spark hands `pushFilters` a list of simple filters (ANDed): comparisons, IN, IS [NOT] NULL, NOT,
string prefix / suffix / contains, each on one column path with Python literal values. Each one
that has an exact SQL form over a top-level column is rendered as a predicate the engine parses
(`Predicate` via `Snapshot.files(filter=...)`), and the engine prunes files with them: by partition
values (exact) and by min / max / null-count stats (a file that may hold a match is kept).

What goes back to Spark (it evaluates those on the rows):
- every filter on a data column (stats only prune, they do not filter rows), and
- every filter the engine cannot take: nested columns, string matching, timestamps (their Python
  values carry no reliable zone here), what the engine refuses when parsing (a number against a
  string column: Spark casts the string), an IN list holding NULL, non-finite floats and types
  without a literal form. Float columns are taken: the engine's pruning follows Spark's NaN order.
A filter on partition columns only is not returned: the kept files' partition values satisfy it
exactly, so every row read does.

Literals are rendered, never interpolated raw: strings are quoted with `\\` and `'` backslash-
escaped (the engine parses Spark SQL, where a doubled `''` would join two strings), binary as X'..',
dates as DATE '...', decimals in plain notation; the rendered text is parsed again by the engine,
so an unexpected value is refused there rather than misread.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
)

from airflow_txnlog.engine import (
    PredicateError,
    SchemaMismatchError,
    UnsupportedExpressionError,
    UnsupportedFeatureError,
    parse_predicate,
)

_OPS: dict[type, str] = {
    EqualTo: "=",
    GreaterThan: ">",
    GreaterThanOrEqual: ">=",
    LessThan: "<",
    LessThanOrEqual: "<=",
}


def _column(path: Sequence[str], schema: pa.Schema) -> str | None:
    if len(path) != 1 or path[0] not in schema.names:
        return None  # nested fields are not predicates the engine takes
    return "`" + path[0].replace("`", "``") + "`"


def _literal(value: Any) -> str | None:
    """The SQL text of a Python literal, or None when it has no exact, zone-free form."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else None
    if isinstance(value, decimal.Decimal):
        return format(value, "f") if value.is_finite() else None
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, bytes | bytearray):
        return "X'" + bytes(value).hex() + "'"
    if isinstance(value, dt.datetime):
        return None  # (checked before date: a datetime is a date)
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    return None


def to_sql(f: Filter, schema: pa.Schema) -> str | None:
    """The predicate text of one pushed filter, or None when the engine should not take it."""
    if isinstance(f, Not):
        inner = to_sql(f.child, schema)
        return None if inner is None else f"NOT ({inner})"
    col = _column(getattr(f, "attribute", ()), schema)
    if col is None:
        return None
    if isinstance(f, IsNull | IsNotNull):
        return f"{col} IS {'' if isinstance(f, IsNull) else 'NOT '}NULL"
    if isinstance(f, EqualNullSafe):
        # `a <=> v`: TRUE where a = v, FALSE elsewhere (NULL rows too), never NULL; `a IS NULL` for v NULL
        lit = _literal(f.value)
        return (
            f"{col} IS NULL"
            if f.value is None
            else (None if lit is None else f"({col} IS NOT NULL AND {col} = {lit})")
        )
    if isinstance(f, In):
        # (a NULL in the list makes `NOT IN` NULL for every other value: not pushed)
        lits = [_literal(v) for v in f.value]
        if not lits or any(v is None for v in lits):
            return None
        return f"{col} IN ({', '.join(str(v) for v in lits)})"
    op = _OPS.get(type(f))
    lit = _literal(getattr(f, "value", None))
    return None if op is None or lit is None else f"{col} {op} {lit}"


def _columns(f: Filter) -> set[str]:
    if isinstance(f, Not):
        return _columns(f.child)
    return {".".join(getattr(f, "attribute", ("",)))}


def plan(
    filters: Sequence[Filter], schema: pa.Schema, partition_columns: Sequence[str]
) -> tuple[str | None, list[Filter]]:
    """(the engine predicate for pruning, or None; the filters Spark must still evaluate)."""
    taken: list[str] = []
    back: list[Filter] = []
    for f in filters:
        text = to_sql(f, schema)
        if text is not None:
            try:
                parse_predicate(text, schema)
            except (PredicateError, SchemaMismatchError, UnsupportedFeatureError, UnsupportedExpressionError):
                text = None  # (Spark evaluates what the engine cannot compute exactly)
        if text is not None:
            taken.append(f"({text})")
        if text is None or not _columns(f) <= set(partition_columns):
            back.append(f)
    return (" AND ".join(taken) if taken else None), back
