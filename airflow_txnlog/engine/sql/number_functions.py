"""Number functions of the expression compiler (builders of `functions.FUNCTIONS`, each taking the
sqlglot node and the compiler): ABS, FLOOR / CEIL, ROUND, GREATEST / LEAST, ISNAN, NANVL, as Spark 4
computes them (ANSI: ABS of an integer's minimum overflows).

ISNAN(x): x as DOUBLE (a string is read as a DOUBLE, ANSI), never NULL (NULL is not NaN).
NANVL(a, b): a if it is not NaN, else b (evaluated only on those rows, as Spark); NULL if a is NULL;
FLOAT if both are FLOAT, else DOUBLE (integers, decimals and strings cast to DOUBLE).
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Callable
from functools import partial, reduce
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from airflow_txnlog.engine.sql.casts import cast, coerce, fit_decimal
from airflow_txnlog.engine.sql.types import (
    NTZ,
    NUMERIC,
    TEMPORAL,
    Refused,
    Term,
    Value,
    checked,
    common_type,
    constant,
    decimal_shape,
    derive,
    kind,
    literal_arg,
    on_rows,
    python_map,
    spark_name,
    sql_of,
)

_BIG = decimal.Context(prec=1000, rounding=decimal.ROUND_HALF_UP)
_SCALA_DIGITS = 34  # Scala's BigDecimal arithmetic: MathContext.DECIMAL128
_SCALA = decimal.Context(prec=_SCALA_DIGITS, rounding=decimal.ROUND_HALF_EVEN)


def absolute(node: exp.Abs, c: Any) -> Term:  # ABS(-128Y) overflows; a wide decimal as `negated`
    term = coerce(c.compile(node.this), "float int decimal", "ABS()")
    if kind(term.type) == "int":
        return derive(node, term.type, partial(checked, pc.abs_checked, sql_of(node)), term, fail=True)
    if kind(term.type) == "decimal" and term.type.precision > _SCALA_DIGITS:
        t = term.type
        up = lambda x: x if x >= 0 else fit_decimal(_SCALA.minus(x), t)  # noqa: E731
        return derive(node, t, lambda v: python_map(v, up, t), term, fail=True)
    return derive(node, term.type, pc.abs, term)


def negated(v: Value) -> Value:
    """-v as Spark computes it (Decimal.unary_-): a decimal of more than 34 digits goes through Scala's
    BigDecimal, which rounds to 34 significant digits (HALF_EVEN), then back to the scale (HALF_UP);
    a carry past the type's precision fails (NUMERIC_VALUE_OUT_OF_RANGE)."""
    t = v.type
    if kind(t) != "decimal" or t.precision <= _SCALA_DIGITS:
        return pc.negate(v)
    return python_map(v, lambda x: fit_decimal(_SCALA.minus(x), t), t)


def floor_ceil(node: exp.Floor | exp.Ceil, c: Any, *, kernel: Callable[[Value], Value]) -> Term:
    """BIGINT (of a double, Java's (long): NaN is 0, out of range saturates), or DECIMAL(p - s + 1, 0)."""
    term = coerce(c.compile(node.this), "float int decimal", sql_of(node))
    if node.args.get("decimals") is not None:
        raise Refused(f"{sql_of(node)} (with a scale)")
    if kind(term.type) == "int":  # an integer is its own floor, as BIGINT
        return cast(term, pa.int64(), sql=node)
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


def round_half_up(node: exp.Round, c: Any) -> Term:
    """ROUND(x[, d]) HALF_UP: a double on its shortest text (Spark's BigDecimal(x)), exactly;
    integers keep their type, decimals get Spark's DECIMAL(p - s + 1 + d, d)."""
    term, given = coerce(c.compile(node.this), "float int decimal", "ROUND()"), node.args.get("decimals")
    scale = 0 if given is None else literal_arg(c.compile(given), "int", "a ROUND scale")
    if scale is None or (kind(term.type) == "int" and scale >= 0):
        return term if scale is not None else constant(None, term.type, node)
    if kind(term.type) == "float":
        step = decimal.Decimal(1).scaleb(-scale)
        # (+ 0.0: a BigDecimal has no negative zero, so ROUND(-0.4D) is 0.0 in Spark, never -0.0)
        up = lambda x: (  # noqa: E731
            float(decimal.Decimal(repr(x)).quantize(step, context=_BIG)) + 0.0 if math.isfinite(x) else x
        )
        return derive(node, term.type, lambda v: python_map(v, up, term.type), term)
    p, s = decimal_shape(term.type)
    digits = max(p - s + 1, 1 - scale) if scale < 0 else p - s + 1 + min(s, scale)
    out = term.type if kind(term.type) == "int" else pa.decimal128(min(digits, 38), max(min(s, scale), 0))
    wide = pa.decimal256(p + 1, s)  # room for the carry: 9.5 -> 10
    half_up = partial(pc.round, ndigits=scale, round_mode="half_towards_infinity")
    fn = lambda v: checked(pc.cast, sql_of(node), half_up(pc.cast(v, wide)), out)  # noqa: E731
    return derive(node, out, fn, term, fail=True)


def extremum(node: exp.Greatest | exp.Least, c: Any, *, largest: bool) -> Term:
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
    return derive(node, t, fn, *terms) if kind(t) != "null" else constant(None, t, node)


def is_nan(node: exp.IsNan, c: Any) -> Term:
    """ISNAN(x): never NULL (see the module docstring)."""
    term = coerce(c.compile(node.this), "float int decimal string", sql_of(node))
    term = term if kind(term.type) == "float" else cast(term, pa.float64())
    return derive(node, pa.bool_(), lambda v: pc.fill_null(pc.is_nan(v), False), term)


def nan_or(node: exp.Nanvl, c: Any) -> Term:
    """NANVL(a, b) (see the module docstring)."""
    a, b = (
        coerce(c.compile(e), "float int decimal string", sql_of(node)) for e in (node.this, node.expression)
    )
    t = (
        pa.float32()
        if {a.type, b.type} <= {pa.float32(), pa.null()} and pa.float32() in (a.type, b.type)
        else pa.float64()
    )
    a, b = cast(a, t), cast(b, t)

    def fn(batch: Any) -> Value:
        first = a.fn(batch)
        nan = pc.fill_null(pc.is_nan(first), False)
        return pc.if_else(nan, on_rows(b, batch, nan), first)

    return Term(fn, t, node, a.may_fail or b.may_fail)
