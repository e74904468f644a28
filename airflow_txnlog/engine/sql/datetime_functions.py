"""Date and time functions of the expression compiler (builders of `functions.FUNCTIONS`), as Spark 4
computes them in the session time zone UTC, on the proleptic Gregorian calendar over the types'
whole ranges (`time_text.civil`: Arrow's calendar kernels are wrong far from 1970).

- YEAR MONTH DAY QUARTER DAYOFYEAR DAYOFWEEK (1 = Sunday) WEEKOFYEAR (ISO) of x as a DATE; HOUR
  MINUTE SECOND of x as a TIMESTAMP (text is cast, ANSI).
- DATE_ADD(d, n) / DATE_SUB(d, n): d as a DATE, n a TINYINT / SMALLINT / INT (or text read as INT);
  the day count wraps around as Spark's 32-bit addition does. DATEDIFF(end, start): end - start days,
  INT (wrapping likewise).
- TRUNC(date, fmt) -> DATE, DATE_TRUNC(fmt, x) -> TIMESTAMP (a DATE is cast to its midnight first);
  weeks start on Monday; a format Spark does not know gives NULL; a result before TIMESTAMP's range
  fails, as Spark's long overflow.
- TO_DATE(x) (no pattern), DATE_FORMAT(x, pattern) with the letters of `date_pattern`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from airflow_txnlog.engine.sql.casts import coerce
from airflow_txnlog.engine.sql.time_text import (
    civil,
    epoch_days,
    ints,
    joined,
    nulls,
    padded,
    per_array,
    year_parts,
)
from airflow_txnlog.engine.sql.types import (
    STRING,
    TS,
    Failed,
    Invalid,
    Refused,
    Term,
    Value,
    constant,
    derive,
    kind,
    literal_arg,
    sql_of,
)

_LETTERS = {
    "yyyy",
    "yy",
    "MM",
    "MMM",
    "MMMM",
    "dd",
    "DDD",
    "HH",
    "hh",
    "mm",
    "ss",
    "a",
    "E",
    "EE",
    "EEE",
    "EEEE",
}
_MONTHS = np.array(["January", "February", "March", "April", "May", "June", "July", "August", "September",
                    "October", "November", "December"])  # fmt: skip
_WEEKDAYS = np.array(["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"])
_DATES = "string date ts ntz"
_DAY_US, _LAST_DAY = 86_400_000_000, 106_751_991  # (minus) the last day whose midnight is a BIGINT of us


def date_pattern(java: str) -> list[tuple[bool, str]]:
    """A Java (Spark) datetime pattern as (is a field, text) pieces: letter runs of `_LETTERS`
    (English, as Locale.US), quoted text, other characters; other letters: refused (`YYYY`, `d`)."""
    pieces = list(re.finditer(r"'((?:[^']|'')*)'|([A-Za-z])\2*|[^'A-Za-z]", java))
    if sum(len(m.group(0)) for m in pieces) != len(java):
        raise Invalid(f"the date pattern {java!r} has an unclosed quote")
    out = []
    for m in pieces:
        text, letter = m.group(0), m.group(2)
        if (letter and text not in _LETTERS) or text in "[]{}#":
            raise Refused(f"the date pattern {java!r} (its {text!r})")
        literal = "'" if text == "''" else (m.group(1) or text).replace("''", "'")
        out.append((True, text) if letter else (False, literal))
    return out


def date_format(node: exp.TimeToStr, c: Any) -> Term:
    """DATE_FORMAT(x, pattern): x as a TIMESTAMP, a constant pattern (adjacent literals join)."""
    given = node.args["format"]
    parts = given.expressions if isinstance(given, exp.Concat) else [given]
    texts = [literal_arg(c.compile(p), "string", "a DATE_FORMAT pattern") for p in parts]
    term = coerce(c.compile(node.this), _DATES, sql_of(node), TS)
    if None in texts:
        return constant(None, STRING, node)
    pieces = date_pattern("".join(texts))
    return derive(node, STRING, lambda v: per_array(partial(_formatted, pieces), v), term)


def _formatted(pieces: list[tuple[bool, str]], a: pa.Array) -> pa.Array:
    """TIMESTAMP values written by the pattern's pieces, from the proleptic Gregorian fields of the
    whole TIMESTAMP range (Arrow's strftime is wrong far from 1970)."""
    us = ints(a)
    days, tod = us // _DAY_US, us % _DAY_US
    y, m, d = civil(days)
    hour = tod // 3_600_000_000
    fields: dict[str, Any] = {"yy": padded(np.abs(y) % 100, 2), "MM": padded(m, 2), "dd": padded(d, 2)}
    fields |= {"MMMM": pa.array(_MONTHS[m - 1]), "EEEE": pa.array(_WEEKDAYS[(days + 4) % 7])}
    fields |= {
        "HH": padded(hour, 2),
        "hh": padded((hour + 11) % 12 + 1, 2),
        "mm": padded(tod // 60_000_000 % 60, 2),
    }
    fields |= {"ss": padded(tod // 1_000_000 % 60, 2), "a": pa.array(np.where(hour < 12, "AM", "PM"))}
    fields["DDD"] = padded(days - epoch_days(y, np.ones_like(m), np.ones_like(m)) + 1, 3)
    out: list[Any] = []
    for field, text in pieces:
        if not field:
            out.append(text)
        elif text == "yyyy":
            out.extend(year_parts(y))
        elif text in ("MMM", "E", "EE", "EEE"):
            out.append(pc.utf8_slice_codeunits(fields["MMMM" if text == "MMM" else "EEEE"], 0, 3))
        else:
            out.append(fields[text])
    return joined(a, out) if out else pc.if_else(pc.is_valid(a), "", pa.scalar(None, STRING))


_UNITS = {"YEAR": "year", "YYYY": "year", "YY": "year", "QUARTER": "quarter", "MONTH": "month", "MM": "month"}
_UNITS |= {"MON": "month", "WEEK": "week"}
_TIME_UNITS = _UNITS | {"DAY": "day", "DD": "day", "HOUR": "hour", "MINUTE": "minute", "SECOND": "second"}
_TIME_UNITS |= {"MILLISECOND": "millisecond", "MICROSECOND": "microsecond"}
_STEPS = {"day": _DAY_US, "hour": 3_600_000_000, "minute": 60_000_000, "second": 1_000_000}
_STEPS |= {"millisecond": 1000, "microsecond": 1}


def _floor_days(days: np.ndarray, unit: str) -> np.ndarray:
    """The first day of the year, quarter, month or week (from Monday) of each day."""
    if unit == "week":
        return days - (days + 3) % 7  # type: ignore[no-any-return]
    y, m, _ = civil(days)
    m = np.ones_like(m) if unit == "year" else (m - 1) // 3 * 3 + 1 if unit == "quarter" else m
    return epoch_days(y, m, np.ones_like(m))


def _floor_array(a: pa.Array, unit: str) -> pa.Array:
    """DATE (-> DATE) or TIMESTAMP (-> TIMESTAMP) values truncated to `unit`."""
    if kind(a.type) == "date":
        out = _floor_days(ints(a), unit)
        return pa.array(out.astype(np.int32), pa.int32(), mask=nulls(a)).view(pa.date32())
    us = ints(a)
    if unit in _STEPS:
        out = us - us % _STEPS[unit]
    else:
        days = _floor_days(us // _DAY_US, unit)
        if np.any(pc.is_valid(a).to_numpy(zero_copy_only=False) & (days < -_LAST_DAY)):
            raise Failed("long overflow: the truncated value is before the TIMESTAMP range")
        out = days * _DAY_US
    return pa.array(out, pa.int64(), mask=nulls(a)).view(a.type)


def truncate(node: exp.DateTrunc | exp.TimestampTrunc, c: Any) -> Term:
    """TRUNC(date, fmt) -> DATE, DATE_TRUNC(fmt, x) -> TIMESTAMP (see the module docstring).
    sqlglot expands abbreviations Spark lacks (`'Q'`) and reads a column fmt as its name: refused
    where the text allows either."""
    unit = node.args.get("unit")
    if not isinstance(unit, exp.Var | exp.Literal):
        raise Refused(f"{sql_of(node)} with a format that is not a constant")
    name = str(unit.name).upper()
    shorts = [short for short, full in exp.TimeUnit.UNABBREVIATED_UNIT_NAME.items() if full == name]
    if any(c.written(w) for w in shorts) or (c.is_column(name) and c.written(name, as_name=True)):
        raise Refused(f"{sql_of(node)} (its format may be a column, or an abbreviation sqlglot expands)")
    t = pa.date32() if isinstance(node, exp.DateTrunc) else TS
    floor = (_UNITS if t == pa.date32() else _TIME_UNITS).get(name)
    term = coerce(c.compile(node.this), _DATES, sql_of(node), t)
    if floor is None:
        return constant(None, t, node)
    return derive(node, t, partial(per_array, partial(_floor_array, unit=floor)), term, fail=t == TS)


def to_date(node: exp.Expr, c: Any, *, t: pa.DataType) -> Term:  # TO_DATE(x), and the casts sqlglot adds
    if node.args.get("format") is not None:
        raise Refused(f"{sql_of(node)} (with a pattern)")
    return coerce(c.compile(node.this), _DATES, sql_of(node), t)


def _part(kernel: Callable[[np.ndarray], np.ndarray], *, time: bool) -> Callable[[exp.Func, Any], Term]:
    """A builder of an INT field of x as a DATE (or, `time`, as a TIMESTAMP)."""

    def build(node: exp.Func, c: Any) -> Term:
        term = coerce(c.compile(node.this), _DATES, sql_of(node), TS if time else pa.date32())

        def fn(a: pa.Array) -> pa.Array:
            return pa.array(kernel(ints(a)).astype(np.int32), pa.int32(), mask=nulls(a))

        return derive(node, pa.int32(), partial(per_array, fn), term)

    return build


def _iso_week(days: np.ndarray) -> np.ndarray:
    thursday = days - (days + 3) % 7 + 3  # ISO weeks belong to the year of their Thursday
    return (thursday - epoch_days(civil(thursday)[0], np.ones_like(days), np.ones_like(days))) // 7 + 1  # type: ignore[no-any-return]


def _day_of_year(days: np.ndarray) -> np.ndarray:
    return days - epoch_days(civil(days)[0], np.ones_like(days), np.ones_like(days)) + 1  # type: ignore[no-any-return]


DATE_PARTS: dict[type[exp.Expr], Callable[[exp.Func, Any], Term]] = {
    exp.Year: _part(lambda d: civil(d)[0], time=False),
    exp.Month: _part(lambda d: civil(d)[1], time=False),
    exp.Day: _part(lambda d: civil(d)[2], time=False),
    exp.DayOfMonth: _part(lambda d: civil(d)[2], time=False),
    exp.Quarter: _part(lambda d: (civil(d)[1] - 1) // 3 + 1, time=False),
    exp.DayOfYear: _part(_day_of_year, time=False),
    exp.DayOfWeek: _part(lambda d: (d + 4) % 7 + 1, time=False),  # 1 is Sunday
    exp.WeekOfYear: _part(_iso_week, time=False),
    exp.Hour: _part(lambda us: us % _DAY_US // 3_600_000_000, time=True),
    exp.Minute: _part(lambda us: us // 60_000_000 % 60, time=True),
    exp.Second: _part(lambda us: us // 1_000_000 % 60, time=True),
}


def _wrapped(values: np.ndarray) -> np.ndarray:  # Spark's int arithmetic on days: 32-bit wrap-around
    return (values + 2**31) % 2**32 - 2**31


def date_add(node: exp.TsOrDsAdd, c: Any) -> Term:
    """DATE_ADD(d, n) and DATE_SUB(d, n), which sqlglot reads as DATE_ADD(d, n * -1)."""
    unit, n = node.args.get("unit"), node.expression
    if unit is not None and str(unit.name).upper() != "DAY":
        raise Refused(f"{sql_of(node)} (a unit other than DAY)")
    sign = 1
    if isinstance(n, exp.Mul) and isinstance(n.expression, exp.Neg) and not n.expression.this.meta:
        n, sign = n.this, -1  # sqlglot's own `* -1` (its literal has no place in the text): DATE_SUB
    start = coerce(c.compile(node.this), _DATES, "DATE_ADD() / DATE_SUB()", pa.date32())
    days = c.compile(n)
    if kind(days.type) == "int" and days.type.bit_width > 32:
        raise Refused(f"{sql_of(node)} (Spark takes a TINYINT, SMALLINT or INT day count, not BIGINT)")
    days = coerce(days, "int string", "a DATE_ADD() / DATE_SUB() day count", pa.int32())

    def fn(d: pa.Array, n: pa.Array) -> pa.Array:
        out = _wrapped(ints(d) + sign * ints(n))
        return pa.array(out.astype(np.int32), pa.int32(), mask=nulls(d, n)).view(pa.date32())

    return derive(node, pa.date32(), lambda d, n: _both(fn, d, n), start, days)


def date_diff(node: exp.DateDiff, c: Any) -> Term:
    """DATEDIFF(end, start): days from start to end, INT (32-bit, wrapping as Spark's)."""
    if node.args.get("unit") is not None:
        raise Refused(f"{sql_of(node)} (with a unit)")
    end, start = (
        coerce(c.compile(e), _DATES, "DATEDIFF()", pa.date32()) for e in (node.this, node.expression)
    )

    def fn(e: pa.Array, s: pa.Array) -> pa.Array:
        out = _wrapped(ints(e) - ints(s))
        return pa.array(out.astype(np.int32), pa.int32(), mask=nulls(e, s))

    return derive(node, pa.int32(), lambda e, s: _both(fn, e, s), end, start)


def _both(fn: Callable[[pa.Array, pa.Array], pa.Array], x: Value, y: Value) -> Value:
    """`fn` of two values, each an array or a scalar (a scalar result if both are)."""
    if isinstance(x, pa.Scalar) and isinstance(y, pa.Scalar):
        return fn(pa.repeat(x, 1), pa.repeat(y, 1))[0]
    n = len(y) if isinstance(x, pa.Scalar) else len(x)
    return fn(*(pa.repeat(v, n) if isinstance(v, pa.Scalar) else v for v in (x, y)))
