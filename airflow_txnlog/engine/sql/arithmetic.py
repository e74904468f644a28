"""Arithmetic of the expression compiler (`expressions`): `+ - * / %` and `div`, with Spark 4's result
types and ANSI rules. INT op INT is INT (the wider integer), `/` DOUBLE; FLOAT op FLOAT is FLOAT, a
FLOAT with anything else DOUBLE; decimals get Spark's result type, computed exactly in 256-bit
decimals and rounded HALF_UP. Integer overflow and a zero divisor of a non-NULL value raise
(`Failed`). `%` takes integers only (Java's sign: the dividend's).

`a div b` (IntegralDivide) is BIGINT: integers as BIGINT, truncated toward zero (BIGINT's minimum
div -1 overflows); decimals divided exactly, the quotient truncated and its low 64 bits kept (Java's
BigDecimal.longValue: Spark raises no overflow there); a zero divisor raises.
"""

from __future__ import annotations

import decimal
from collections.abc import Callable
from functools import partial
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from airflow_txnlog.engine.sql.casts import cast, round_decimal
from airflow_txnlog.engine.sql.types import (
    NUMERIC,
    Failed,
    Refused,
    Term,
    Value,
    adjusted_decimal,
    any_true,
    checked,
    constant,
    decimal_shape,
    derive,
    kind,
    pairwise,
    spark_name,
    sql_of,
    wider_type,
    zero_of,
)

ARITHMETIC = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%", exp.IntDiv: "div"}
_FLOAT = {"+": pc.add, "-": pc.subtract, "*": pc.multiply, "/": pc.divide}
_INT = {"+": pc.add_checked, "-": pc.subtract_checked, "*": pc.multiply_checked, "div": pc.divide_checked}
_EXACT = decimal.Context(prec=200)


def arithmetic(node: exp.Binary, c: Any) -> Term:
    """`+ - * / % div` with Spark's result types; integer overflow and a zero divisor raise (ANSI).
    An operand that is the NULL literal makes the whole a NULL constant, as Spark's optimizer
    (NullPropagation) does before anything runs: `-(l) + NULL` never evaluates `-(l)`."""
    a, b = c.compile(node.this), c.compile(node.expression)
    term = _typed_arithmetic(node, a, b)
    if any(x.literal is not None and not x.literal.is_valid for x in (a, b)):
        return constant(None, term.type, term.sql)
    return term


def _typed_arithmetic(node: exp.Binary, a: Term, b: Term) -> Term:
    op, sql = ARITHMETIC[type(node)], sql_of(node)
    if not {kind(a.type), kind(b.type)} <= NUMERIC | {"null"}:
        raise Refused(f"{sql} ({spark_name(a.type)} {op} {spark_name(b.type)})")
    ta, tb = (x.type if kind(x.type) != "null" else y.type for x, y in ((a, b), (b, a)))
    null = pa.int64() if op == "div" else pa.float64()  # NULL + NULL: DOUBLE; NULL div NULL: BIGINT
    ta, tb = (null, null) if kind(ta) == "null" else (ta, tb)
    kinds = {kind(ta), kind(tb)}
    if (op == "%" and kinds != {"int"}) or (op == "div" and "float" in kinds):
        raise Refused(f"{sql} ({op} of {spark_name(ta)} and {spark_name(tb)}: Spark refuses or converts it)")
    if op == "div":
        return _integral_divide(node, cast(a, ta), cast(b, tb), kinds)
    if "float" in kinds or (op == "/" and kinds == {"int"}):
        t = pa.float32() if {ta, tb} == {pa.float32()} and op != "/" else pa.float64()
        return _binary(node, op, cast(a, t), cast(b, t), out=t, kernel=_FLOAT[op])
    if "decimal" in kinds:
        return _decimal(node, op, (a, ta), (b, tb))
    t, kernel = wider_type(ta, tb), partial(_remainder, sql=sql) if op == "%" else _INT[op]
    return _binary(node, op, cast(a, t), cast(b, t), out=t, kernel=partial(checked, kernel, sql))


def _binary(node: exp.Expr, op: str, a: Term, b: Term, *, out: Any, kernel: Callable[..., Value]) -> Term:
    """`kernel(a, b)` of type `out`; for `/`, `%` and `div` a zero divisor (of a non-NULL value) raises."""
    sql, divides = sql_of(node), op in ("/", "%", "div")

    def fn(x: Value, y: Value) -> Value:
        if divides and any_true(pc.and_(pc.equal(y, zero_of(y.type)), pc.is_valid(x))):
            raise Failed(f"{'remainder' if op == '%' else 'division'} by zero in {sql}")
        return kernel(x, y)

    return derive(node, out, fn, a, b, fail=divides or kind(out) in ("int", "decimal"))


def _remainder(a: Value, b: Value, sql: str) -> Value:  # Java's sign (the dividend's); MIN % -1 is 0
    safe = pc.if_else(pc.or_(pc.equal(b, 0), pc.equal(b, -1)), pc.cast(pa.scalar(1), b.type), b)
    return pc.subtract(a, pc.multiply(pc.divide(a, safe), safe))


def _integral_divide(node: exp.Binary, a: Term, b: Term, kinds: set[str]) -> Term:
    """`a div b` as BIGINT (see the module docstring)."""
    if "decimal" not in kinds:
        kernel = partial(checked, _INT["div"], sql_of(node))
        return _binary(node, "div", cast(a, pa.int64()), cast(b, pa.int64()), out=pa.int64(), kernel=kernel)

    def quotient(x: decimal.Decimal, y: decimal.Decimal) -> int:  # y != 0: checked before
        q = int(_EXACT.divide_int(x, y))
        return (q + 2**63) % 2**64 - 2**63

    kernel = partial(pairwise, quotient, out=pa.int64())
    wide = [pa.decimal128(*decimal_shape(t.type)) if kind(t.type) == "int" else t.type for t in (a, b)]
    return _binary(node, "div", cast(a, wide[0]), cast(b, wide[1]), out=pa.int64(), kernel=kernel)


def _decimal(node: exp.Binary, op: str, left: tuple[Term, Any], right: tuple[Term, Any]) -> Term:
    """Spark's result type (an integer literal counts its digits); exact in 256-bit decimals (to one
    more digit for `/`: Arrow truncates), then HALF_UP to the result scale."""

    def shape(term: Term, t: pa.DataType) -> tuple[int, int]:
        literal = term.literal if kind(term.type) == "int" else None
        return (
            (len(str(abs(literal.as_py()))), 0)
            if literal is not None and literal.is_valid
            else decimal_shape(t)
        )

    (p1, s1), (p2, s2) = shape(*left), shape(*right)
    scale = {"+": max(s1, s2), "-": max(s1, s2), "*": s1 + s2, "/": max(6, s1 + p2 + 1)}[op]
    digits = {"*": p1 + p2 + 1, "/": p1 - s1 + s2 + scale}.get(op, max(p1 - s1, p2 - s2) + scale + 1)
    out = adjusted_decimal(digits, scale)  # (past 76 digits Arrow fails while compiling: refused)
    shift = max(0, out.scale + 1 - (s1 + p2 - s2 + 1)) if op == "/" else 0

    def fn(x: Value, y: Value) -> Value:
        x, y = pc.cast(x, pa.decimal256(p1 + shift, s1 + shift)), pc.cast(y, pa.decimal256(p2, s2))
        exact = _FLOAT[op](x, y)
        return checked(pc.cast, sql_of(node), round_decimal(exact, out.scale), out)

    a, b = cast(left[0], pa.decimal128(p1, s1)), cast(right[0], pa.decimal128(p2, s2))
    return _binary(node, op, a, b, out=out, kernel=fn)
