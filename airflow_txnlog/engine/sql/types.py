"""Spark's types for the expression compiler (`expressions`): the type families (`kind`), Spark's
names, widening (`wider_type`, `common_type`: Spark 4's ANSI coercion), the type a CAST names
(`arrow_type`), the compiled sub-expression `Term` and the internal errors `expressions` turns into
the engine's, with the small helpers every builder shares. Timestamps are UTC.
"""

from __future__ import annotations

import decimal
import functools
from collections.abc import Callable
from dataclasses import dataclass
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


class Refused(Exception):
    """Valid Spark SQL this evaluator does not compute; the message names the construct."""


class Invalid(Exception):
    """Not a valid expression over the schema (an unknown column, a bad literal...)."""


class Failed(Exception):
    """A value broke an ANSI rule while evaluating (overflow, division by zero, a bad cast)."""


# A term's Spark SQL text, rendered only when a message needs it (rendering each sub-term's text as
# it was compiled took about 40 % of compiling a predicate): the text, its node, or a function.
Source = str | exp.Expr | Callable[[], str]


@dataclass(frozen=True)
class Term:
    """A compiled sub-expression: `fn(batch)` gives an array (a value per row) or a scalar of type
    `type`; `source`: its text (`sql`); `may_fail`: it can raise `Failed`; `literal`: its value
    (pa.Scalar) if a constant."""

    fn: Callable[[Any], Value]
    type: pa.DataType
    source: Source
    may_fail: bool = False
    literal: Any = None

    @functools.cached_property
    def sql(self) -> str:
        return text_of(self.source)


def text_of(source: Source) -> str:
    """The Spark SQL text of a `Source`."""
    if isinstance(source, str):
        return source
    return sql_of(source) if isinstance(source, exp.Expr) else source()


def sql_of(node: exp.Expr) -> str:
    return str(node.sql(dialect="spark"))


def null_of(t: pa.DataType) -> Value:
    return pa.nulls(1, t)[0]


def constant(value: Any, t: pa.DataType, sql: Source) -> Term:
    s = null_of(t) if value is None else pa.scalar(value, type=t)
    return Term(lambda _: s, t, sql, literal=s)


def derive(node: exp.Expr, t: pa.DataType, fn: Callable[..., Value], *args: Term, fail: bool = False) -> Term:
    """A term computing `fn(*values of args)`, of type `t`."""
    fns = [a.fn for a in args]
    return Term(lambda b: fn(*(f(b) for f in fns)), t, node, fail or any(a.may_fail for a in args))


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
    """The type Spark 4 (ANSI coercion) brings two values to before comparing or choosing; None where
    it refuses or this evaluator does not follow (string vs number...). Integers and FLOAT meet in
    DOUBLE (AnsiTypeCoercion: a FLOAT cannot hold every INT), FLOAT and DECIMAL too; decimals (an
    integer as DECIMAL(10,0)...) in the decimal of both's integer digits and scale, past 38 digits
    the scale cut (DECIMAL(38,10) and DECIMAL(17,17): DECIMAL(38,10)); DATE and TIMESTAMP in
    TIMESTAMP, DATE and TIMESTAMP_NTZ in TIMESTAMP_NTZ."""
    ka, kb = kind(a), kind(b)
    if a == b or "null" in (ka, kb):
        return b if ka == "null" else a
    if ka == kb and ka in ("string", "int"):
        return pa.large_string() if ka == "string" else max(a, b, key=lambda t: t.bit_width)
    if {ka, kb} <= NUMERIC and "float" in (ka, kb):
        return pa.float64()
    if {ka, kb} <= NUMERIC:  # past 38 digits the integer digits are kept, the scale gives way
        (p1, s1), (p2, s2) = decimal_shape(a), decimal_shape(b)
        digits, scale = max(p1 - s1, p2 - s2), max(s1, s2)
        return pa.decimal128(min(digits + scale, 38), max(0, min(scale, 38 - digits)))
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


def python_map(v: Value, fn: Callable[[Any], Any], dst: pa.DataType) -> Value:
    """`fn` on each non-NULL value (in Python), giving `dst`."""
    if isinstance(v, pa.Scalar):
        return null_of(dst) if not v.is_valid else pa.scalar(fn(v.as_py()), type=dst)
    return pa.array([None if x is None else fn(x) for x in v.to_pylist()], type=dst)


def pairwise(fn: Callable[[Any, Any], Any], x: Value, y: Value, *, out: pa.DataType) -> Value:
    """`fn` on each pair of non-NULL values of `x` and `y` (arrays or scalars), in Python."""
    if isinstance(x, pa.Scalar) and isinstance(y, pa.Scalar):
        return pa.scalar(fn(x.as_py(), y.as_py()) if x.is_valid and y.is_valid else None, out)
    n = len(y) if isinstance(x, pa.Scalar) else len(x)
    xs, ys = ([v.as_py()] * n if isinstance(v, pa.Scalar) else v.to_pylist() for v in (x, y))
    return pa.array([None if p is None or q is None else fn(p, q) for p, q in zip(xs, ys, strict=True)], out)


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


def on_rows(term: Term, batch: Any, mask: Value) -> Value:
    """`term` on the rows where `mask` (no NULLs) is TRUE, NULL elsewhere (all rows if it cannot fail)."""
    if not term.may_fail or (isinstance(mask, pa.Scalar) and mask.as_py()):
        return term.fn(batch)
    chosen = mask.as_py() if isinstance(mask, pa.Scalar) else pc.sum(mask).as_py() or 0
    if not chosen or chosen == batch.num_rows:
        return term.fn(batch) if chosen else null_of(term.type)
    return pc.replace_with_mask(pa.nulls(batch.num_rows, term.type), mask, term.fn(batch.filter(mask)))
