"""Values as pruning compares them: stats bounds read into a column's type, then brought into the
type a comparison is made in.

`stats_value(raw, column_type, is_max=...)` reads a per-file bound (a stats JSON value or a partition
value's text) into a Python value of the column's type, or None when it cannot bound safely:
- a timestamp maximum is widened by 1 ms (Delta's stats are truncated to milliseconds);
- a string maximum of 32+ characters without a successor character is no bound (truncated);
- float bounds are rounded to the column's float type (the true bound is a value of the type, and
  rounding is monotone, so the rounded text still bounds); a NaN bound bounds nothing (writers order
  NaN differently: delta-rs leaves it out, Spark puts it last);
- decimal bounds allow for writers that wrote them as doubles (delta-rs): a bound that may have been
  rounded through a double is moved one double step outward;
- booleans, binary and nested values bound nothing.

`in_type(value, t)` brings a bound into the type Spark compares in (engine.sql.expressions's
`comparable`: DATE vs TIMESTAMP as TIMESTAMP, a float column vs a decimal literal as DOUBLE, integers
vs decimals as a wider decimal). Every such conversion is monotone (never reorders two values), so a
converted bound still bounds the converted values: pruning stays sound.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import struct
from typing import Any

import pyarrow as pa

from airflow_txnlog.engine.errors import SchemaMismatchError
from airflow_txnlog.engine.schema import parse_partition_value

_PACK_FORMAT = {16: "e", 32: "f"}


def round_float(x: float, t: pa.DataType) -> float:
    """`x` rounded to the nearest value of float type `t` (C cast semantics: overflow gives +-inf)."""
    fmt = _PACK_FORMAT.get(t.bit_width)
    if fmt is None:
        return x
    try:
        return float(struct.unpack(fmt, struct.pack(fmt, x))[0])
    except OverflowError:
        return math.copysign(math.inf, x)


def float_bound(x: Any, t: pa.DataType) -> float | None:
    """A stats bound of a float column in the column's type (NaN bounds nothing)."""
    if x is None:
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else round_float(f, t)


def stats_value(raw: Any, t: pa.DataType, *, is_max: bool) -> Any:
    """Typed bound from a stats JSON value; None when it cannot bound safely (module docstring)."""
    if raw is None or isinstance(raw, dict | list):
        return None
    try:
        if pa.types.is_timestamp(t):
            v = parse_partition_value(str(raw), t)
            return v + dt.timedelta(milliseconds=1) if is_max else v
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            s = str(raw)
            return None if is_max and len(s) >= 32 and s[-1] not in ("\x7f", "\U0010ffff") else s
        if pa.types.is_decimal(t):
            return _decimal_bound(decimal.Decimal(str(raw)), t, is_max=is_max)
        if pa.types.is_floating(t):
            return float_bound(parse_partition_value(raw, t) if isinstance(raw, str) else raw, t)
        if pa.types.is_integer(t) or pa.types.is_date(t):
            return parse_partition_value(str(raw), t) if isinstance(raw, str) else raw
    except (SchemaMismatchError, ValueError, ArithmeticError):
        return None
    return None


def _decimal_bound(d: decimal.Decimal, t: pa.DataType, *, is_max: bool) -> decimal.Decimal | None:
    """A decimal stat as a bound, allowing for writers (delta-rs) that write decimal stats as doubles."""
    if not d.is_finite():
        return None
    if t.precision <= 15:
        return d  # 15 significant digits survive a trip through a double: even a double stat is exact
    f = float(d)
    if decimal.Decimal(repr(f)) != d:
        return d  # not a double's shortest form, so written exactly
    return decimal.Decimal(math.nextafter(f, math.inf if is_max else -math.inf))


def in_type(value: Any, t: pa.DataType) -> Any:
    """A bound of a column brought into the comparison type `t` (monotone; see the module docstring).
    TypeError when this type does not take it (the caller then does not prune)."""
    if value is None:
        return None
    if pa.types.is_floating(t):
        if isinstance(value, bool) or not isinstance(value, int | float | decimal.Decimal):
            raise TypeError(f"{value!r} is not a number")
        return round_float(float(value), t)
    if pa.types.is_decimal(t) and isinstance(value, int | decimal.Decimal) and not isinstance(value, bool):
        return decimal.Decimal(value)
    if pa.types.is_timestamp(t) and isinstance(value, dt.datetime):  # (the session time zone: UTC)
        if t.tz and value.tzinfo is None:
            return value.replace(tzinfo=dt.UTC)
        if not t.tz and value.tzinfo is not None:
            return value.astimezone(dt.UTC).replace(tzinfo=None)
        return value
    if pa.types.is_timestamp(t) and isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC if t.tz else None)
    return value
