"""CAST with Spark 4's ANSI rules (session time zone UTC): a value that does not fit or does not read
raises (`Failed`, CAST_INVALID_INPUT / overflow); a conversion this evaluator does not compute as
Spark does is refused when the expression is compiled (`Refused`), never while rows are written.

Text read as Spark reads it: an integer is `[+-]digits` (no `0x10`, no `1.0`), trimmed of bytes 0-32
and 127; a FLOAT / DOUBLE is Java's decimal grammar (`1.5`, `.5`, `5.`, `1e3`, a `d` / `f` suffix,
`NaN`, `Infinity`, a hexadecimal float such as `0x1.8p1`: `float_text.read_hex`) or Spark's `inf`,
`infinity`, `nan` in any case, trimmed of bytes 0-32; a DECIMAL is Java's BigDecimal
grammar, rounded HALF_UP; DATE and TIMESTAMP are `time_text`'s. Written as Spark writes it: a FLOAT
or DOUBLE as Java's toString (`float_text`), a DATE / TIMESTAMP as `time_text`, a decimal's plain
digits. Between DATE and TIMESTAMP a day is 86,400,000,000 microseconds (UTC); a date whose
midnight is past TIMESTAMP's range fails, as Spark's long overflow.
"""

from __future__ import annotations

import decimal
import math
import re
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_txnlog.engine.sql import time_text
from airflow_txnlog.engine.sql.float_text import HEX, java_text, read_hex
from airflow_txnlog.engine.sql.time_text import nulls
from airflow_txnlog.engine.sql.types import (
    NUMERIC,
    STRING,
    TEMPORAL,
    Failed,
    Refused,
    Source,
    Term,
    Value,
    any_true,
    constant,
    kind,
    python_map,
    spark_name,
    text_of,
    zero_of,
)

_BIG = decimal.Context(prec=1000, rounding=decimal.ROUND_HALF_UP)
_JAVA_TRIM = "".join(map(chr, range(33)))  # Java's String.trim: every character up to the space
_INTEGER = r"^[+-]?\d+$"
_FLOATING = (
    r"^[+-]?(?:NaN|Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFdD]?)$|^(?i:[+-]?inf(?:inity)?|nan)$"
    f"|^{HEX}$"
)
_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_LAST_US = 106_751_991  # the last day (and minus the first) whose midnight is a BIGINT of microseconds


def cast(term: Term, dst: pa.DataType, *, sql: Source | None = None) -> Term:
    """CAST with Spark's ANSI rules; a literal is cast here (if it fails, per batch: at rows, as Spark)."""
    if term.type == dst:
        return term
    convert, may_fail = _converter(term.type, dst)
    text: Source = sql or (lambda: f"CAST({term.sql} AS {spark_name(dst)})")

    def fn(batch: Any) -> Value:
        try:
            return convert(term.fn(batch))
        except (pa.ArrowInvalid, Failed) as e:
            raise Failed(f"{text_of(text)} failed ({e})") from e

    try:
        value = fn(None) if term.literal is not None else None
    except Failed:
        value = None
    return Term(fn, dst, text, term.may_fail or may_fail) if value is None else constant(value, dst, text)


def _converter(src: pa.DataType, dst: pa.DataType) -> tuple[Callable[[Value], Value], bool]:
    """(conversion, whether it can fail on a value) from `src` to `dst`."""
    ks, kd = kind(src), kind(dst)
    if ks == "null" or ks == kd == "string" or (kd == "float" and ks in ("int", "float")):
        return (lambda v: pc.cast(v, dst, safe=False)), False
    if {ks, kd} <= TEMPORAL:
        return _between_times(ks, dst), ks == "date"
    if kd == "string" and ks in _TO_STRING:
        return _TO_STRING[ks], False
    if ks == "string" and kd in _FROM_STRING:
        return _FROM_STRING[kd](dst), True
    if kd == "bool" and ks in NUMERIC:
        return (lambda v: pc.not_equal(v, zero_of(src))), False
    if ks == "bool" and kd == "decimal":  # (by value: FALSE fits DECIMAL(4,4), TRUE does not)
        wide = _wider_decimal(3 + dst.scale, dst.scale)
        return (lambda v: pc.cast(pc.cast(pc.cast(v, pa.int8()), wide), dst)), True
    if ks == "bool" and kd in NUMERIC:
        return (lambda v: pc.cast(pc.cast(v, pa.int8()), dst)), False
    if kd == "int" and ks == "decimal":  # toward zero, with room for the integer digit (0.5 -> 0)
        wide = _wider_decimal(src.precision + 1, src.scale)
        return (lambda v: pc.cast(pc.trunc(pc.cast(v, wide)), dst)), True
    if kd == "int" and ks in NUMERIC:  # toward zero; NaN, infinities and out-of-range values raise
        return (lambda v: pc.cast(v if ks == "int" else pc.trunc(v), dst)), True
    if kd == "float" and ks == "decimal":  # correctly rounded, as Java's BigDecimal.doubleValue
        return (lambda v: pc.cast(python_map(v, float, pa.float64()), dst)), False
    if kd == "decimal" and ks == "float":  # the double's shortest text; NaN: NULL, as Spark even in ANSI
        fit = lambda x: fit_decimal(decimal.Decimal(repr(x)), dst) if math.isfinite(x) else None  # noqa: E731
        return (lambda v: python_map(v, fit, dst)), True
    if kd == "decimal" and ks in ("int", "decimal"):
        wide = pa.decimal128(20, 0) if ks == "int" else src  # Arrow casts BIGINT to >= 19 digits
        return (lambda v: pc.cast(round_decimal(pc.cast(v, wide), dst.scale), dst)), True
    raise Refused(f"a cast from {spark_name(src)} to {spark_name(dst)}")


def _between_times(ks: str, dst: pa.DataType) -> Callable[[Value], Value]:
    """DATE <-> TIMESTAMP(_NTZ) in UTC; a DATE past TIMESTAMP's range fails, as in Spark."""

    def from_date(a: pa.Array) -> pa.Array:
        days = time_text.ints(a)
        if np.any(pc.is_valid(a).to_numpy(zero_copy_only=False) & (np.abs(days) > _LAST_US)):
            raise Failed("long overflow: a date past the TIMESTAMP range")
        return pc.cast(pa.array(days * 86_400_000_000, pa.int64(), mask=nulls(a)), dst)

    def to_date(a: pa.Array) -> pa.Array:
        days = time_text.ints(a) // 86_400_000_000
        return pa.array(days.astype(np.int32), pa.int32(), mask=nulls(a)).view(pa.date32())

    if ks == "date":
        return partial(time_text.per_array, from_date)
    if kind(dst) == "date":
        return partial(time_text.per_array, to_date)
    return lambda v: pc.cast(v, dst)  # TIMESTAMP <-> TIMESTAMP_NTZ: the same microseconds in UTC


def _java_floats(v: Value) -> Value:
    """FLOAT / DOUBLE as Java's toString, computed once per distinct value."""
    if isinstance(v, pa.Scalar):
        return python_map(v, partial(java_text, single=v.type == pa.float32()), STRING)
    distinct = pc.unique(v)
    texts = python_map(distinct, partial(java_text, single=v.type == pa.float32()), STRING)
    return pc.take(texts, pc.index_in(v, distinct))


_TO_STRING: dict[str, Callable[[Value], Value]] = {"int": partial(pc.cast, target_type=STRING)}
_TO_STRING |= {"bool": partial(pc.cast, target_type=STRING), "float": _java_floats}
_TO_STRING |= {"decimal": lambda v: python_map(v, "{:f}".format, STRING), "date": time_text.date_text}
_TO_STRING |= dict.fromkeys(("ts", "ntz"), time_text.timestamp_text)


def _wider_decimal(precision: int, scale: int) -> pa.DataType:
    return (pa.decimal128 if precision <= 38 else pa.decimal256)(min(precision, 76), scale)


def round_decimal(values: Value, scale: int) -> Value:
    """Decimals rounded HALF_UP (as Java's BigDecimal) to `scale`, one digit wider (9.99 -> 10.0)."""
    t = values.type
    if t.scale <= scale:
        return values
    wide = (pa.decimal128 if t.precision < 38 else pa.decimal256)(min(t.precision + 1, 76), t.scale)
    return pc.round(pc.cast(values, wide), scale, round_mode="half_towards_infinity")


def _checked_text(v: Value, trim: str, pattern: str, target: pa.DataType) -> Value:
    """`v` trimmed; Failed (CAST_INVALID_INPUT) if a non-NULL value does not match `pattern`."""
    text = pc.utf8_trim(pc.cast(v, STRING), characters=trim)
    wrong = pc.invert(pc.fill_null(pc.match_substring_regex(text, pattern), True))
    if any_true(wrong):
        bad = v if isinstance(v, pa.Scalar) else v.filter(wrong)[0]
        raise Failed(f"the value {bad.as_py()!r} cannot be cast to {spark_name(target)} (CAST_INVALID_INPUT)")
    return text


def _read_int(t: pa.DataType) -> Callable[[Value], Value]:
    def read(v: Value) -> Value:
        text = pc.utf8_ltrim(_checked_text(v, time_text.TRIM, _INTEGER, t), characters="+")
        try:
            return pc.cast(text, t)
        except pa.ArrowInvalid as e:  # out of the type's range: Spark's CAST_INVALID_INPUT too
            raise Failed(f"{e} (CAST_INVALID_INPUT)") from e

    return read


def _read_float(t: pa.DataType) -> Callable[[Value], Value]:
    def read(v: Value) -> Value:
        text = _checked_text(v, _JAVA_TRIM, _FLOATING, t)
        hexadecimal = pc.match_substring_regex(text, f"^{HEX}$")
        if any_true(hexadecimal):  # (Java reads them; Arrow does not)
            none = pa.scalar(None, STRING)
            hex_text, decimal_text = pc.if_else(hexadecimal, text, none), pc.if_else(hexadecimal, none, text)
            exact = python_map(hex_text, partial(read_hex, single=t == pa.float32()), pa.float64())
            return pc.if_else(hexadecimal, pc.cast(exact, t), _read_decimal_float(decimal_text, t))
        return _read_decimal_float(text, t)

    return read


def _read_decimal_float(text: Value, t: pa.DataType) -> Value:
    return pc.cast(pc.replace_substring_regex(text, r"([\d.])[dDfF]$", r"\1"), t)


def _read_decimal(t: pa.DataType) -> Callable[[Value], Value]:
    """Java's BigDecimal grammar (its digits: any Unicode decimal digit, as Python's `\\d`)."""

    def one(x: str) -> decimal.Decimal:
        text = x.strip(_JAVA_TRIM)
        if not _DECIMAL.fullmatch(text):
            raise Failed(f"the value {x!r} cannot be cast to {spark_name(t)} (CAST_INVALID_INPUT)")
        return fit_decimal(decimal.Decimal(text), t)

    return lambda v: python_map(v, one, t)


_FROM_STRING: dict[str, Callable[[pa.DataType], Callable[[Value], Value]]] = {"int": _read_int}
_FROM_STRING |= {"float": _read_float, "decimal": _read_decimal, "date": lambda t: time_text.text_to_date}
_FROM_STRING |= {"binary": lambda t: partial(pc.cast, target_type=t)}
_FROM_STRING |= {"ts": lambda t: partial(time_text.text_to_timestamp, zoned=True)}
_FROM_STRING |= {"ntz": lambda t: partial(time_text.text_to_timestamp, zoned=False)}


def fit_decimal(d: decimal.Decimal, dst: pa.DataType) -> decimal.Decimal:
    """`d` rounded HALF_UP to `dst`'s scale; raises `Failed` if it does not fit `dst`."""
    q = d.quantize(decimal.Decimal(1).scaleb(-dst.scale), context=_BIG) if d.adjusted() < 100 else d
    if len(q.as_tuple().digits) > dst.precision and q != 0:
        raise Failed(f"{d} cannot be represented as {spark_name(dst)}")
    return q


def coerce(term: Term, kinds: str, what: str, to: pa.DataType | None = None) -> Term:
    """`term` as an argument of `kinds` (or NULL, then of the first kind's type), cast to `to`."""
    k = kind(term.type)
    if k not in ("null", *kinds.split()):
        raise Refused(f"{what} of a {spark_name(term.type)} value")
    first = {"string": STRING, "int": pa.int32(), "date": pa.date32(), "bool": pa.bool_()}
    return cast(term, to or (first.get(kinds.partition(" ")[0], pa.float64()) if k == "null" else term.type))
