"""Types, casts and scalar functions of the Spark SQL expression compiler (`expressions`): Spark's
type families (`kind`) and widening (`wider_type`), `cast` with ANSI rules (a value that does not fit
raises; what Arrow cannot convert as Spark does is refused, or converted in Python), `FUNCTIONS`
(builders keyed by the sqlglot node class of the Spark dialect), and the internal errors
`expressions` turns into the engine's. Timestamps are UTC.
"""

from __future__ import annotations

import decimal
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial, reduce
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

Value = Any  # a pa.Array (a value per row) or a pa.Scalar (pyarrow has no type hints)
Builder = Callable[[Any, Any], "Term"]  # (node, compiler: compile, is_column, written) -> Term
TS, NTZ, STRING = pa.timestamp("us", tz="UTC"), pa.timestamp("us"), pa.string()
_KINDS = {pa.null(): ("null", "VOID"), pa.bool_(): ("bool", "BOOLEAN"), pa.int8(): ("int", "TINYINT")}
_KINDS |= {pa.int16(): ("int", "SMALLINT"), pa.int32(): ("int", "INT"), pa.int64(): ("int", "BIGINT")}
_KINDS |= {pa.float32(): ("float", "FLOAT"), pa.float64(): ("float", "DOUBLE"), STRING: ("string", "STRING")}
_KINDS |= {pa.large_string(): ("string", "STRING"), pa.binary(): ("binary", "BINARY")}
_KINDS |= {pa.date32(): ("date", "DATE"), TS: ("ts", "TIMESTAMP"), NTZ: ("ntz", "TIMESTAMP_NTZ")}
NUMERIC, TEMPORAL = frozenset({"int", "float", "decimal"}), frozenset({"date", "ts", "ntz"})
_DIGITS = {8: 3, 16: 5, 32: 10, 64: 20}  # the decimal precision Spark gives each integer type
_BIG = decimal.Context(prec=1000, rounding=decimal.ROUND_HALF_UP)


class Refused(Exception):
    """Valid Spark SQL this evaluator does not compute; the message names the construct."""


class Invalid(Exception):
    """Not a valid expression over the schema (an unknown column, a bad literal...)."""


class Failed(Exception):
    """A value broke an ANSI rule while evaluating (overflow, division by zero, a bad cast)."""


@dataclass(frozen=True)
class Term:
    """A compiled sub-expression: `fn(batch)` gives an array (a value per row) or a scalar of type
    `type`; `may_fail`: it can raise `Failed`; `literal`: its value (pa.Scalar) if a constant."""

    fn: Callable[[Any], Value]
    type: pa.DataType
    sql: str
    may_fail: bool = False
    literal: Any = None


def sql_of(node: exp.Expr) -> str:
    return str(node.sql(dialect="spark"))


def null_of(t: pa.DataType) -> Value:
    return pa.nulls(1, t)[0]


def constant(value: Any, t: pa.DataType, sql: str) -> Term:
    s = null_of(t) if value is None else pa.scalar(value, type=t)
    return Term(lambda _: s, t, sql, literal=s)


def derive(node: exp.Expr, t: pa.DataType, fn: Callable[..., Value], *args: Term, fail: bool = False) -> Term:
    """A term computing `fn(*values of args)`, of type `t`."""
    fns = [a.fn for a in args]
    return Term(lambda b: fn(*(f(b) for f in fns)), t, sql_of(node), fail or any(a.may_fail for a in args))


# --- types ---------------------------------------------------------------------------------------


def kind(t: pa.DataType) -> str:
    """Spark's family: null bool int float decimal string binary date ts (UTC) ntz, or other."""
    return "decimal" if pa.types.is_decimal(t) else _KINDS.get(t, ("other", ""))[0]


def spark_name(t: pa.DataType) -> str:
    return f"DECIMAL({t.precision},{t.scale})" if kind(t) == "decimal" else _KINDS.get(t, ("", str(t)))[1]


def decimal_shape(t: pa.DataType) -> tuple[int, int]:
    """(precision, scale) of a decimal, or of the decimal Spark widens an integer type to."""
    return (t.precision, t.scale) if kind(t) == "decimal" else (_DIGITS[t.bit_width], 0)


def adjusted_decimal(precision: int, scale: int) -> pa.DataType:
    """Spark's decimal result past 38 digits (allowPrecisionLoss): integer digits kept, scale >= 6."""
    if precision > 38:
        precision, scale = 38, max(38 - precision + scale, min(scale, 6))
    return pa.decimal128(precision, scale)


def wider_type(a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
    """The type Spark brings two values to before comparing or choosing (None: string vs number...)."""
    ka, kb = kind(a), kind(b)
    if a == b or "null" in (ka, kb):
        return b if ka == "null" else a
    if ka == kb and ka in ("string", "int"):
        return pa.large_string() if ka == "string" else max(a, b, key=lambda t: t.bit_width)
    if {ka, kb} <= NUMERIC and "float" in (ka, kb):
        return pa.float64()
    if {ka, kb} <= NUMERIC:
        (p1, s1), (p2, s2) = decimal_shape(a), decimal_shape(b)
        return pa.decimal128(min(max(p1 - s1, p2 - s2) + max(s1, s2), 38), max(s1, s2))
    return (NTZ if {ka, kb} == {"date", "ntz"} else TS) if {ka, kb} <= TEMPORAL else None


def common_type(terms: list[Term], what: str) -> pa.DataType:
    t: pa.DataType | None = terms[0].type
    for term in terms[1:]:
        t = None if t is None else wider_type(t, term.type)
    if t is None:
        raise Refused(f"{what} (values of types {', '.join(spark_name(x.type) for x in terms)})")
    return t


def arrow_type(dtype: exp.DataType) -> pa.DataType:
    """The Arrow type of a Spark SQL type in a CAST."""
    d = exp.DataType.Type
    simple = {d.BOOLEAN: pa.bool_(), d.TINYINT: pa.int8(), d.SMALLINT: pa.int16(), d.INT: pa.int32()}
    simple |= {d.BIGINT: pa.int64(), d.FLOAT: pa.float32(), d.DOUBLE: pa.float64(), d.DATE: pa.date32()}
    simple |= {d.TEXT: STRING, d.VARCHAR: STRING, d.CHAR: STRING, d.BINARY: pa.binary(), d.TIMESTAMPNTZ: NTZ}
    simple |= dict.fromkeys((d.TIMESTAMP, d.TIMESTAMPTZ, d.TIMESTAMPLTZ), TS)
    if dtype.this != d.DECIMAL:
        if dtype.this not in simple:
            raise Refused(f"a cast to {sql_of(dtype)}")
        return simple[dtype.this]
    params = [int(p.this.this) if isinstance(p.this, exp.Literal) else -1 for p in dtype.expressions]
    precision, scale = (params + [10, 0][len(params) :])[:2]  # DECIMAL is DECIMAL(10, 0)
    if not 0 < precision <= 38 or not 0 <= scale <= precision:
        raise Invalid(f"{sql_of(dtype)} is not a decimal type (precision 1 to 38, scale 0 to precision)")
    return pa.decimal128(precision, scale)


# --- casts ---------------------------------------------------------------------------------------


def cast(term: Term, dst: pa.DataType, *, sql: str | None = None) -> Term:
    """CAST with Spark's ANSI rules; a literal is cast here (if it fails, per batch: at rows, as Spark)."""
    if term.type == dst:
        return term
    convert, may_fail = _converter(term.type, dst)
    text = sql or f"CAST({term.sql} AS {spark_name(dst)})"

    def fn(batch: Any) -> Value:
        try:
            return convert(term.fn(batch))
        except (pa.ArrowInvalid, Failed) as e:
            raise Failed(f"{text} failed ({e})") from e

    try:
        value = fn(None) if term.literal is not None else None
    except Failed:
        value = None
    return Term(fn, dst, text, term.may_fail or may_fail) if value is None else constant(value, dst, text)


def _converter(src: pa.DataType, dst: pa.DataType) -> tuple[Callable[[Value], Value], bool]:
    """(conversion, whether it can fail on a value) from `src` to `dst`."""
    ks, kd = kind(src), kind(dst)
    if ks == "null" or {ks, kd} <= TEMPORAL or ks == kd == "string" or (kd == "float" and ks in NUMERIC):
        return (lambda v: pc.cast(v, dst, safe=False)), False
    if kd == "string" and ks in ("int", "bool", "date", "decimal"):  # a decimal's plain digits
        return (lambda v: python_map(v, "{:f}".format, dst) if ks == "decimal" else pc.cast(v, dst)), False
    if ks == "string" and kd in _FROM_STRING:
        return _FROM_STRING[kd](dst), True
    if kd == "bool" and ks in NUMERIC:
        return (lambda v: pc.not_equal(v, zero_of(src))), False
    if ks == "bool" and kd in NUMERIC:
        return (lambda v: pc.cast(pc.cast(v, pa.int8()), dst)), False
    if kd == "int" and ks in NUMERIC:  # toward zero; NaN, infinities and out-of-range values raise
        return (lambda v: pc.cast(v if ks == "int" else pc.trunc(v), dst)), True
    if kd == "decimal" and ks == "float":  # the double's shortest text; NaN: NULL, as Spark even in ANSI
        fit = lambda x: fit_decimal(decimal.Decimal(repr(x)), dst) if math.isfinite(x) else None  # noqa: E731
        return (lambda v: python_map(v, fit, dst)), True
    if kd == "decimal" and ks in ("int", "decimal"):
        wide = pa.decimal128(20, 0) if ks == "int" else src  # Arrow casts BIGINT to >= 19 digits
        return (lambda v: pc.cast(round_decimal(pc.cast(v, wide), dst.scale), dst)), True
    raise Refused(f"a cast from {spark_name(src)} to {spark_name(dst)}")


def round_decimal(values: Value, scale: int) -> Value:
    """Decimals rounded HALF_UP (as Java's BigDecimal) to `scale`, one digit wider (9.99 -> 10.0)."""
    t = values.type
    if t.scale <= scale:
        return values
    wide = (pa.decimal128 if t.precision < 38 else pa.decimal256)(min(t.precision + 1, 76), t.scale)
    return pc.round(pc.cast(values, wide), scale, round_mode="half_towards_infinity")


def _stripped(v: Value) -> Value:  # Spark trims ASCII white space and control characters off a number
    return pc.utf8_trim(v, characters="".join(map(chr, range(33))))


def _text_to_time(dst: pa.DataType) -> Callable[[Value], Value]:
    """Text to DATE / TIMESTAMP(_NTZ): Arrow's ISO 8601 reader after trimming; a DATE is read before
    a space or `T`; no zone is UTC (the session zone); zones (`Z`, `+01:00`) for TIMESTAMP only."""

    def convert(v: Value) -> Value:
        text = pc.utf8_trim_whitespace(v)
        if kind(dst) == "date":
            return pc.cast(pc.replace_substring_regex(text, r"^(\d{4}-\d\d-\d\d)[ T].*$", r"\1"), dst)
        text = pc.replace_substring_regex(text, r"^(\d{4}-\d\d-\d\d)$", r"\1 00")
        zoned = pc.match_substring_regex(text, r"(\D|[+-]\d\d(:?\d\d)?)$")  # ends with Z / an offset
        if kind(dst) == "ts":  # no zone: UTC
            text = pc.if_else(zoned, text, pc.replace_substring_regex(text, "$", "Z"))
        return pc.cast(text, dst)

    return convert


def _read_number(pattern: str, replacement: str, via: Any = None) -> Callable[[pa.DataType], Any]:
    """Text to a number: trimmed, `pattern` replaced (`+5`, `1.5d`), read `via` a type if given."""
    edit = partial(pc.replace_substring_regex, pattern=pattern, replacement=replacement)
    if via is None:
        return lambda t: lambda v: pc.cast(edit(_stripped(v)), t)
    return lambda t: lambda v: pc.cast(round_decimal(pc.cast(edit(_stripped(v)), via), t.scale), t)


_FROM_STRING = {"int": _read_number(r"^\+(\d)", r"\1"), "float": _read_number(r"(\d)[dDfF]$", r"\1")}
_FROM_STRING |= {"decimal": _read_number("^$", "", pa.decimal256(76, 38))}
_FROM_STRING |= {"binary": lambda t: partial(pc.cast, target_type=t)}
_FROM_STRING |= dict.fromkeys(("date", "ts", "ntz"), _text_to_time)


def python_map(v: Value, fn: Callable[[Any], Any], dst: pa.DataType) -> Value:
    if isinstance(v, pa.Scalar):
        return null_of(dst) if not v.is_valid else pa.scalar(fn(v.as_py()), type=dst)
    return pa.array([None if x is None else fn(x) for x in v.to_pylist()], type=dst)


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


def literal_arg(term: Term, kinds: str, what: str) -> Any:
    """The Python value of an argument Spark requires to be a constant of `kinds`."""
    if term.literal is None or kind(term.type) not in ("null", *kinds.split()):
        raise Refused(f"{what} that is not a constant {kinds}")
    return term.literal.as_py()


def any_true(v: Value) -> bool:
    return (v.as_py() if isinstance(v, pa.Scalar) else pc.any(v).as_py()) is True


def zero_of(t: pa.DataType) -> Value:  # comparing a decimal with an integer 0 widens past 38 digits
    return pa.scalar(decimal.Decimal(0) if kind(t) == "decimal" else 0, type=t)


def checked(kernel: Callable[..., Value], sql: str, *values: Value) -> Value:
    """An ANSI kernel: Arrow's overflow error becomes `Failed`."""
    try:
        return kernel(*values)
    except pa.ArrowInvalid as e:
        raise Failed(f"arithmetic overflow in {sql} ({e})") from e


# --- functions: builders take (node, compiler) and options by keyword -----------------------------


def _one(node: exp.Expr, c: Any, *, kernel: Callable[..., Value], kinds: str, **more: Any) -> Term:
    """f(x) of kinds `kinds`, cast `to`, giving `out`; `pattern`: f(x, constant string)."""
    term, out = coerce(c.compile(node.this), kinds, sql_of(node), more.get("to")), more.get("out")
    if more.get("pattern"):
        pattern = literal_arg(c.compile(node.expression), "string", "a pattern")
        if pattern is None:
            return constant(None, out, sql_of(node))
        kernel = partial(kernel, pattern=pattern)
    return derive(node, out or term.type, lambda v: pc.cast(kernel(v), out or term.type), term)


def _case_map(v: Value, *, upper: bool) -> Value:
    """UPPER / LOWER: Arrow's for ASCII; else Python's full mapping, Java's (UPPER('ß') is 'SS')."""
    if any_true(pc.invert(pc.string_is_ascii(v))):
        return python_map(v, str.upper if upper else str.lower, v.type)
    return (pc.ascii_upper if upper else pc.ascii_lower)(v)


def _trim(node: exp.Trim, c: Any) -> Term:  # spaces only, unless characters are given
    term, given = coerce(c.compile(node.this), "string", "TRIM()"), node.args.get("expression")
    chars = " " if given is None else literal_arg(c.compile(given), "string", "TRIM characters")
    trim = {"LEADING": pc.utf8_ltrim, "TRAILING": pc.utf8_rtrim}.get(str(node.args.get("position")))
    if chars is None:
        return constant(None, term.type, sql_of(node))
    return derive(node, term.type, lambda v: (trim or pc.utf8_trim)(v, characters=chars), term)


def concat(node: exp.Expr, parts: list[Term]) -> Term:
    """CONCAT / `||`: NULL if a part is NULL; integers, booleans, dates and decimals are cast."""
    texts = [coerce(p, "string int bool date decimal", "CONCAT()", STRING) for p in parts]
    t = pa.large_string() if pa.large_string() in [p.type for p in parts] else STRING
    texts = [cast(p, t) for p in texts] or [constant("", t, sql_of(node))]
    join = partial(pc.binary_join_element_wise, null_handling="emit_null")
    return derive(node, t, lambda *vs: join(*vs, pa.scalar("", t)), *texts)


def _substring(node: exp.Expr, c: Any, *, side: str = "") -> Term:
    """Spark's SUBSTRING(s, pos[, len]) on code points: 1-based, pos 0 is 1, a negative pos counts
    from the end (len from there), a len <= 0 gives ''. LEFT(s, n) is (s, 1, n), RIGHT (s, -n, n)."""
    term = coerce(c.compile(node.this), "string", sql_of(node))
    args = [node.expression] * 2 if side else [node.args["start"], node.args.get("length")]
    pos, size = (2**31 - 1 if a is None else literal_arg(c.compile(a), "int", "a position") for a in args)
    pos = (1 if side == "left" or pos is None else -pos) if side else pos
    if pos is None or size is None:
        return constant(None, term.type, sql_of(node))
    start = pos - 1 if pos > 0 else min(pos, 0)
    start, stop = (0, 0) if size <= 0 else (start, start + size if pos >= 0 or pos + size < 0 else None)
    return derive(node, term.type, lambda v: pc.utf8_slice_codeunits(v, start, stop), term)


def _abs(node: exp.Abs, c: Any) -> Term:  # ABS(-128Y) overflows
    term = coerce(c.compile(node.this), "float int decimal", "ABS()")
    kernel = (lambda v: checked(pc.abs_checked, sql_of(node), v)) if kind(term.type) == "int" else pc.abs
    return derive(node, term.type, kernel, term, fail=kind(term.type) == "int")


def _floor_ceil(node: exp.Floor | exp.Ceil, c: Any, *, kernel: Callable[[Value], Value]) -> Term:
    """BIGINT (Java's (long): NaN is 0, out of range saturates), or DECIMAL(p - s + 1, 0)."""
    term = coerce(c.compile(node.this), "float int decimal", sql_of(node))
    if node.args.get("decimals") is not None:
        raise Refused(f"{sql_of(node)} (with a scale)")
    if kind(term.type) == "decimal":
        p, s = decimal_shape(term.type)
        out = pa.decimal128(min(p - s + 1, 38), 0)
        return derive(node, out, lambda v: pc.cast(kernel(pc.cast(v, pa.decimal256(p + 1, s))), out), term)

    def to_long(v: Value) -> Value:
        v = kernel(pc.cast(v, pa.float64()))
        high, low = pc.greater_equal(v, 2.0**63), pc.less_equal(v, -(2.0**63))
        longs = pc.cast(pc.if_else(pc.or_(pc.or_(high, low), pc.is_nan(v)), 0.0, v), pa.int64())
        return pc.if_else(high, 2**63 - 1, pc.if_else(low, -(2**63), longs))

    return derive(node, pa.int64(), to_long, term)


def _round(node: exp.Round, c: Any) -> Term:
    """ROUND(x[, d]) HALF_UP: a double on its shortest text (Spark's BigDecimal(x)), exactly;
    integers keep their type, decimals get Spark's DECIMAL(p - s + 1 + d, d)."""
    term, given = coerce(c.compile(node.this), "float int decimal", "ROUND()"), node.args.get("decimals")
    scale = 0 if given is None else literal_arg(c.compile(given), "int", "a ROUND scale")
    if scale is None or (kind(term.type) == "int" and scale >= 0):
        return term if scale is not None else constant(None, term.type, sql_of(node))
    if kind(term.type) == "float":
        step = decimal.Decimal(1).scaleb(-scale)
        up = lambda x: float(decimal.Decimal(repr(x)).quantize(step, context=_BIG)) if math.isfinite(x) else x  # noqa: E731
        return derive(node, term.type, lambda v: python_map(v, up, term.type), term)
    p, s = decimal_shape(term.type)
    digits = max(p - s + 1, 1 - scale) if scale < 0 else p - s + 1 + min(s, scale)
    out = term.type if kind(term.type) == "int" else pa.decimal128(min(digits, 38), max(min(s, scale), 0))
    wide = pa.decimal256(p + 1, s)  # room for the carry: 9.5 -> 10
    half_up = partial(pc.round, ndigits=scale, round_mode="half_towards_infinity")
    fn = lambda v: checked(pc.cast, sql_of(node), half_up(pc.cast(v, wide)), out)  # noqa: E731
    return derive(node, out, fn, term, fail=True)


def _extremum(node: exp.Greatest | exp.Least, c: Any, *, largest: bool) -> Term:
    """GREATEST / LEAST skip NULLs; NaN is above every number (Arrow skips it unless all are)."""
    terms = [c.compile(node.this), *(c.compile(e) for e in node.expressions)]
    t = common_type(terms, sql_of(node))
    if kind(t) not in NUMERIC | TEMPORAL | {"string", "null"}:
        raise Refused(f"{sql_of(node)} of {spark_name(t)} values")
    store, pick = (NTZ if kind(t) == "ts" else t), (pc.max_element_wise if largest else pc.min_element_wise)

    def fn(*vs: Value) -> Value:
        best = pc.cast(pick(*(pc.cast(v, store) for v in vs)), t)
        if not largest or kind(t) != "float":
            return best
        nan = reduce(pc.or_, [pc.fill_null(pc.is_nan(v), False) for v in vs])
        return pc.if_else(nan, pa.scalar(math.nan, t), best)

    terms = [cast(x, t) for x in terms]
    return derive(node, t, fn, *terms) if kind(t) != "null" else constant(None, t, sql_of(node))


# --- dates and times (UTC) -----------------------------------------------------------------------

_JAVA = {"yyyy": "%Y", "yy": "%y", "MM": "%m", "MMM": "%b", "MMMM": "%B", "dd": "%d", "DDD": "%j", "HH": "%H"}
_JAVA |= {"hh": "%I", "mm": "%M", "ss": "%S", "a": "%p", "EEEE": "%A", "E": "%a", "EE": "%a", "EEE": "%a"}
_DATES = "string date ts ntz"


def strftime_pattern(java: str) -> str:
    """A Java (Spark) datetime pattern as strftime's: letter runs of `_JAVA` (English, as Locale.US),
    quoted text, other characters; other letters have no exact strftime (`YYYY`, `d`, `SSS`): refused."""
    pieces = list(re.finditer(r"'((?:[^']|'')*)'|([A-Za-z])\2*|[^'A-Za-z]", java))
    if sum(len(m.group(0)) for m in pieces) != len(java):
        raise Invalid(f"the date pattern {java!r} has an unclosed quote")
    out = []
    for m in pieces:
        text, letter = m.group(0), m.group(2)
        if (letter and text not in _JAVA) or text in "[]{}#":
            raise Refused(f"the date pattern {java!r} (its {text!r})")
        literal = "'" if text == "''" else (m.group(1) or text).replace("''", "'")
        out.append(_JAVA[text] if letter else literal.replace("%", "%%"))
    return "".join(out)


def _date_format(node: exp.TimeToStr, c: Any) -> Term:
    """DATE_FORMAT(x, pattern): x as a TIMESTAMP, a constant pattern (adjacent literals join)."""
    given = node.args["format"]
    parts = given.expressions if isinstance(given, exp.Concat) else [given]
    texts = [literal_arg(c.compile(p), "string", "a DATE_FORMAT pattern") for p in parts]
    term = coerce(c.compile(node.this), _DATES, sql_of(node), TS)
    if None in texts:
        return constant(None, STRING, sql_of(node))
    pattern, seconds = strftime_pattern("".join(texts)), pa.timestamp("s", tz="UTC")  # %S: no fraction
    text = lambda v: pc.strftime(pc.cast(pc.floor_temporal(v, unit="second"), seconds), pattern)  # noqa: E731
    return derive(node, STRING, text, term)


_UNITS = {"YEAR": "year", "YYYY": "year", "YY": "year", "QUARTER": "quarter", "MONTH": "month", "MM": "month"}
_UNITS |= {"MON": "month", "WEEK": "week"}
_TIME_UNITS = _UNITS | {"DAY": "day", "DD": "day", "HOUR": "hour", "MINUTE": "minute", "SECOND": "second"}
_TIME_UNITS |= {"MILLISECOND": "millisecond", "MICROSECOND": "microsecond"}


def _truncate(node: exp.DateTrunc | exp.TimestampTrunc, c: Any) -> Term:
    """TRUNC(date, fmt) -> DATE, DATE_TRUNC(fmt, ts) -> TIMESTAMP (weeks from Monday); an unknown fmt
    gives NULL. sqlglot expands abbreviations Spark lacks (`'Q'`) and reads a column fmt as its name:
    refused where the text allows either."""
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
        return constant(None, t, sql_of(node))
    return derive(node, t, lambda v: pc.floor_temporal(v, unit=floor, week_starts_monday=True), term)


def _to(node: exp.Expr, c: Any, *, t: pa.DataType) -> Term:  # TO_DATE(x), and the casts sqlglot adds
    if node.args.get("format") is not None:
        raise Refused(f"{sql_of(node)} (with a pattern)")
    return coerce(c.compile(node.this), _DATES, sql_of(node), t)


def _length(v: Value) -> Value:  # characters of a string, bytes of a binary
    return (pc.binary_length if kind(v.type) == "binary" else pc.utf8_length)(v)


_DATE_PART = partial(_one, kinds=_DATES, out=pa.int32(), to=pa.date32())
_TIME_PART = partial(_one, kinds=_DATES, out=pa.int32(), to=TS)
_TEXT_TEST = partial(_one, kinds="string", out=pa.bool_(), pattern=True)
FUNCTIONS: dict[type[exp.Expr], Builder] = {exp.Abs: _abs, exp.Round: _round, exp.Trim: _trim}
FUNCTIONS |= {exp.Floor: partial(_floor_ceil, kernel=pc.floor), exp.TimeToStr: _date_format}
FUNCTIONS |= {exp.Ceil: partial(_floor_ceil, kernel=pc.ceil), exp.Substring: _substring}
FUNCTIONS |= {exp.Greatest: partial(_extremum, largest=True), exp.Least: partial(_extremum, largest=False)}
FUNCTIONS |= {exp.Left: partial(_substring, side="left"), exp.Right: partial(_substring, side="right")}
FUNCTIONS |= {exp.Length: partial(_one, kernel=_length, kinds="string binary", out=pa.int32())}
FUNCTIONS |= {exp.Lower: partial(_one, kernel=partial(_case_map, upper=False), kinds="string")}
FUNCTIONS |= {exp.Upper: partial(_one, kernel=partial(_case_map, upper=True), kinds="string")}
FUNCTIONS |= {exp.Concat: lambda node, c: concat(node, [c.compile(e) for e in node.expressions])}
FUNCTIONS |= {exp.StartsWith: partial(_TEXT_TEST, kernel=pc.starts_with)}
FUNCTIONS |= {exp.EndsWith: partial(_TEXT_TEST, kernel=pc.ends_with), exp.DateTrunc: _truncate}
FUNCTIONS |= {exp.Contains: partial(_TEXT_TEST, kernel=pc.match_substring), exp.TimestampTrunc: _truncate}
FUNCTIONS |= {exp.TsOrDsToDate: partial(_to, t=pa.date32()), exp.TimeStrToTime: partial(_to, t=TS)}
FUNCTIONS |= {exp.Year: partial(_DATE_PART, kernel=pc.year), exp.Month: partial(_DATE_PART, kernel=pc.month)}
FUNCTIONS |= {exp.Day: partial(_DATE_PART, kernel=pc.day), exp.DayOfMonth: partial(_DATE_PART, kernel=pc.day)}
FUNCTIONS |= {exp.Quarter: partial(_DATE_PART, kernel=pc.quarter)}
FUNCTIONS |= {exp.DayOfYear: partial(_DATE_PART, kernel=pc.day_of_year)}
FUNCTIONS |= {exp.WeekOfYear: partial(_DATE_PART, kernel=pc.iso_week)}  # ISO weeks, as Spark
_SUNDAY_FIRST = partial(pc.day_of_week, count_from_zero=False, week_start=7)  # Spark: 1 is Sunday
FUNCTIONS |= {exp.DayOfWeek: partial(_DATE_PART, kernel=_SUNDAY_FIRST)}
FUNCTIONS |= {exp.Hour: partial(_TIME_PART, kernel=pc.hour)}
FUNCTIONS |= {exp.Minute: partial(_TIME_PART, kernel=pc.minute)}
FUNCTIONS |= {exp.Second: partial(_TIME_PART, kernel=pc.second)}
