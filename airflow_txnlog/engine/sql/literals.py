"""Numeric literals of a predicate, brought into the type of the column they are compared with.

`fit(op, arrow_type, value)` rewrites `column <op> value` so that the literal is a value of the
column's type, or decides the comparison outright. Invariant: a returned literal is exactly
representable in the column's Arrow type, so pyarrow builds the row-filter scalar without an error
or a rounding of its own, and data skipping compares that same value with the typed stats bounds.

- Integer and decimal columns compare exactly. A literal between two values of the type cannot be
  equal to any of them (`i32 = 2.5`, or `dec = 0.12345678901` on scale 10, matches nothing) and an
  order comparison moves to the neighbouring value of the type (`i32 < 2.5` is `i32 <= 2`).
- Float columns compare in the column's type, as pyarrow does: the literal becomes the nearest
  double (Python float) and, for a float32 column, that double's nearest float32. This is the same
  double rounding a value went through when it was written from Python or Spark doubles, so
  `f = 0.1` finds the 0.1 that was written.
- A finite literal beyond the type's range never wraps or becomes infinity: it is above (or below)
  every value of the type, which decides `=`/`!=` (and, for integers and decimals, every order
  comparison) for each non-NULL row. Floats also hold infinities, so their order comparisons move
  to the largest finite value instead (`f < 1e300` on float32 is `f <= 3.4028235e38`).
- A NaN literal (`f = 'NaN'`) decides the comparison too: IEEE makes it FALSE, and TRUE for `!=`.
The result is `(op, value)`, or a bool: the comparison's result for every row where the column is
not NULL (it stays NULL where the column is NULL).
"""

from __future__ import annotations

import decimal
import math
import struct
import sys
from typing import Any

import pyarrow as pa

Fitted = tuple[str, Any] | bool

# Quantizing a decimal in range yields at most 76 digits (decimal256); the default context has 28.
_CTX = decimal.Context(prec=200)
_PACK_FORMAT = {16: "e", 32: "f"}
_FLOAT_MAX = {16: 65504.0, 32: 3.4028234663852886e38, 64: sys.float_info.max}


def is_number(value: Any) -> bool:
    return isinstance(value, int | float | decimal.Decimal) and not isinstance(value, bool)


def round_float(x: float, t: pa.DataType) -> float:
    """`x` rounded to the nearest value of float type `t` (C cast semantics: overflow gives +-inf)."""
    fmt = _PACK_FORMAT.get(t.bit_width)
    if fmt is None:
        return x
    try:
        return float(struct.unpack(fmt, struct.pack(fmt, x))[0])
    except OverflowError:
        return math.copysign(math.inf, x)


def fit(op: str, t: pa.DataType, value: Any) -> Fitted:
    """`column <op> value` with the literal in the column type `t`, or its result for non-NULL rows."""
    if not is_number(value):
        return op, value
    if pa.types.is_floating(t):
        return _fit_float(op, t, value)
    if pa.types.is_integer(t) or pa.types.is_decimal(t):
        exact = value if isinstance(value, int) else decimal.Decimal(value)
        if isinstance(exact, decimal.Decimal) and not exact.is_finite():
            raise ValueError(f"{value} is not a finite number")
        return _fit_exact(op, t, exact)
    return op, value


def _beyond(op: str, *, above: bool) -> bool:
    """The result of `column <op> literal` when the literal is above (below) every value of the type."""
    return op == "!=" or (op in ("<", "<=") if above else op in (">", ">="))


def _fit_exact(op: str, t: pa.DataType, v: int | decimal.Decimal) -> Fitted:
    if pa.types.is_integer(t):
        quantum = decimal.Decimal(1)
        top = 2 ** (t.bit_width - 1) - 1 if pa.types.is_signed_integer(t) else 2**t.bit_width - 1
        bottom: int | decimal.Decimal = -top - 1 if pa.types.is_signed_integer(t) else 0
    else:
        quantum = decimal.Decimal(1).scaleb(-t.scale)
        top = _CTX.subtract(decimal.Decimal(1).scaleb(t.precision - t.scale, _CTX), quantum)
        bottom = -top
    # Range first: it keeps int() and quantize() away from literals like 1e999999.
    if v > top or v < bottom:
        return _beyond(op, above=v > top)
    floor = v if isinstance(v, int) else v.quantize(quantum, decimal.ROUND_FLOOR, _CTX)
    ceiling = v if isinstance(v, int) else v.quantize(quantum, decimal.ROUND_CEILING, _CTX)
    as_type: Any = int if pa.types.is_integer(t) else decimal.Decimal
    if floor == v:
        return op, as_type(floor)
    if op in ("=", "!="):
        return op == "!="  # the literal lies between two values of the type
    return ("<=", as_type(floor)) if op in ("<", "<=") else (">=", as_type(ceiling))


def _fit_float(op: str, t: pa.DataType, v: int | float | decimal.Decimal) -> Fitted:
    x = v if isinstance(v, float) else _to_float(v)
    if math.isnan(x):
        return op == "!="  # NaN compares FALSE with everything but `!=` (IEEE, as pyarrow does)
    y = round_float(x, t)
    if math.isinf(y) and not (isinstance(v, float) and math.isinf(v)):
        if op in ("=", "!="):
            return op == "!="
        top = _FLOAT_MAX.get(t.bit_width, math.inf)
        if y > 0:
            return ("<=", top) if op in ("<", "<=") else (">", top)
        return (">=", -top) if op in (">", ">=") else ("<", -top)
    return op, y


def _to_float(v: int | decimal.Decimal) -> float:
    try:
        return float(v)  # correctly rounded; an int too large for a double raises
    except OverflowError:
        return math.inf if v > 0 else -math.inf
