"""SQL predicates (parsed with sqlglot, never evaluated as code) for row filters and file pruning.

`parse_predicate(text, schema)` turns a WHERE-clause fragment into a small typed tree:
    ("and", a, b) | ("or", a, b) | ("not", a) | ("cmp", op, column, value)
    | ("cmpcol", op, column, column) | ("in", column, values) | ("isnull", column) | ("const", bool | None)
Literals are coerced to the column's type when parsed, so a bad literal fails early.

Two evaluations of the same tree:
- `to_arrow_expression` -> a pyarrow.compute expression over rows (SQL three-valued logic);
- `may_match(tree, ranges)` -> can any row of a file satisfy the predicate, given per column a
  `Range` (min/max/null count from stats, or the exact partition value)? Each node evaluates to
  (can_be_true, can_be_false); NULL is neither, so NOT stays sound. Unknown stats mean "maybe".
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from sqlglot import exp

from airflow_txnlog.engine.errors import PredicateError, SchemaMismatchError
from airflow_txnlog.engine.schema import parse_partition_value

Node = tuple[Any, ...]
_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_CMP: dict[type[exp.Expression], str] = {
    exp.EQ: "=",
    exp.NEQ: "!=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.GT: ">",
    exp.GTE: ">=",
}


@dataclass(frozen=True)
class Predicate:
    text: str
    tree: Node
    columns: frozenset[str]


@dataclass(frozen=True, slots=True)
class Range:
    """What is known about one column in one file (None = unknown / unbounded)."""

    lo: Any = None
    hi: Any = None
    null_count: int | None = None
    num_records: int | None = None


class _Parser:
    def __init__(self, text: str, schema: pa.Schema) -> None:
        self.text = text
        self.schema = schema
        self.by_lower = {f.name.lower(): f for f in schema}
        self.columns: set[str] = set()

    def fail(self, what: str) -> PredicateError:
        return PredicateError(f"predicate {self.text!r}: {what}")

    def column(self, node: exp.Expression) -> str | None:
        if not isinstance(node, exp.Column):
            return None
        if node.table:
            raise self.fail(f"nested or qualified column {node.sql()!r} is not supported")
        f = self.by_lower.get(node.name.lower())
        if f is None:
            raise self.fail(f"unknown column {node.name!r}; columns are {', '.join(self.schema.names)}")
        self.columns.add(f.name)
        return str(f.name)

    def literal(self, node: exp.Expression) -> Any:
        if isinstance(node, exp.Paren):
            return self.literal(node.this)
        if isinstance(node, exp.Null):
            return None
        if isinstance(node, exp.Boolean):
            return bool(node.this)
        if isinstance(node, exp.Neg):
            v = self.literal(node.this)
            if isinstance(v, int | float | decimal.Decimal) and not isinstance(v, bool):
                return -v
            raise self.fail(f"cannot negate {node.this.sql()!r}")
        if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal):
            return node.this.this  # DATE '...' / TIMESTAMP '...': coerced to the column type later
        if isinstance(node, exp.Literal):
            if node.is_string:
                return node.this
            text = node.this
            try:
                return int(text) if text.lstrip("-").isdigit() else float(text)
            except ValueError as exc:
                raise self.fail(f"bad number {text!r}") from exc
        raise self.fail(f"unsupported expression {node.sql()!r} (only columns and literals may be compared)")

    def coerce(self, value: Any, column: str) -> Any:
        if value is None:
            return None
        t = self.schema.field(column).type
        try:
            if pa.types.is_string(t) or pa.types.is_large_string(t):
                return value if isinstance(value, str) else str(value)
            if isinstance(value, str):
                return parse_partition_value(value, t)
            if pa.types.is_integer(t) and isinstance(value, float) and value.is_integer():
                return int(value)
            if pa.types.is_boolean(t) != isinstance(value, bool) or not (
                pa.types.is_integer(t)
                or pa.types.is_floating(t)
                or pa.types.is_decimal(t)
                or pa.types.is_boolean(t)
            ):
                raise self.fail(f"literal {value!r} does not match type {t} of column {column!r}")
            return decimal.Decimal(str(value)) if pa.types.is_decimal(t) else value
        except (SchemaMismatchError, ValueError) as exc:
            raise self.fail(f"literal {value!r} is not a valid {t} for column {column!r}") from exc

    def node(self, e: exp.Expression) -> Node:
        if isinstance(e, exp.Paren):
            return self.node(e.this)
        if isinstance(e, exp.And | exp.Or):
            return ("and" if isinstance(e, exp.And) else "or", self.node(e.this), self.node(e.expression))
        if isinstance(e, exp.Not):
            return ("not", self.node(e.this))
        if isinstance(e, exp.Boolean | exp.Null):
            return ("const", self.literal(e))
        if isinstance(e, exp.Is):
            col = self.column(e.this)
            if col is None or not isinstance(e.expression, exp.Null):
                raise self.fail(f"unsupported IS expression {e.sql()!r}")
            return ("isnull", col)
        if isinstance(e, exp.In):
            col = self.column(e.this)
            if col is None or e.args.get("query") is not None:
                raise self.fail(f"IN needs a column and a list of literals: {e.sql()!r}")
            return ("in", col, tuple(self.coerce(self.literal(x), col) for x in e.expressions))
        if isinstance(e, exp.Between):
            col = self.column(e.this)
            if col is None:
                raise self.fail(f"BETWEEN needs a column: {e.sql()!r}")
            lo = self.coerce(self.literal(e.args["low"]), col)
            hi = self.coerce(self.literal(e.args["high"]), col)
            return ("and", ("cmp", ">=", col, lo), ("cmp", "<=", col, hi))
        op = _CMP.get(type(e))
        if op is not None:
            return self.comparison(op, e.this, e.expression)
        raise self.fail(f"unsupported expression {e.sql()!r}")

    def comparison(self, op: str, left: exp.Expression, right: exp.Expression) -> Node:
        lcol, rcol = self.column(left), self.column(right)
        if lcol and rcol:
            return ("cmpcol", op, lcol, rcol)
        if lcol:
            return ("cmp", op, lcol, self.coerce(self.literal(right), lcol))
        if rcol:
            return ("cmp", _FLIP[op], rcol, self.coerce(self.literal(left), rcol))
        raise self.fail("a comparison needs at least one column")


def parse_predicate(text: str, schema: pa.Schema) -> Predicate:
    """Parse and type-check a SQL boolean expression over `schema`'s top-level columns."""
    if not isinstance(text, str) or not text.strip():
        raise PredicateError("predicate must be a non-empty SQL expression")
    try:
        tree = sqlglot.parse_one(text, dialect="spark")
    except sqlglot.errors.SqlglotError as exc:
        raise PredicateError(f"predicate {text!r} is not valid SQL: {exc}") from exc
    if tree is None:
        raise PredicateError(f"predicate {text!r} is empty")
    parser = _Parser(text, schema)
    if not isinstance(tree, exp.Expression):
        raise PredicateError(f"predicate {text!r} is not an expression")
    return Predicate(text, parser.node(tree), frozenset(parser.columns))


# ----------------------------------------------------------------------------- rows
def to_arrow_expression(tree: Node, schema: pa.Schema) -> pc.Expression:
    kind = tree[0]
    if kind in ("and", "or"):
        a, b = to_arrow_expression(tree[1], schema), to_arrow_expression(tree[2], schema)
        return a & b if kind == "and" else a | b
    if kind == "not":
        return ~to_arrow_expression(tree[1], schema)
    if kind == "const":
        return pc.scalar(tree[1])
    if kind == "isnull":
        return pc.field(tree[1]).is_null()
    if kind == "in":
        t = schema.field(tree[1]).type
        return pc.field(tree[1]).isin(pa.array(list(tree[2]), type=t))
    op, left = tree[1], pc.field(tree[2])
    right = (
        pc.field(tree[3]) if kind == "cmpcol" else pc.scalar(pa.scalar(tree[3], schema.field(tree[2]).type))
    )
    ops: dict[str, Callable[[Any, Any], pc.Expression]] = {
        "=": lambda x, y: x == y,
        "!=": lambda x, y: x != y,
        "<": lambda x, y: x < y,
        "<=": lambda x, y: x <= y,
        ">": lambda x, y: x > y,
        ">=": lambda x, y: x >= y,
    }
    return ops[op](left, right)


# ----------------------------------------------------------------------------- files
def _cmp_range(op: str, r: Range, v: Any) -> tuple[bool, bool]:
    lo_lt = r.lo is None or r.lo < v  # some value may be < v
    lo_le = r.lo is None or r.lo <= v
    hi_gt = r.hi is None or r.hi > v
    hi_ge = r.hi is None or r.hi >= v
    exact = r.lo is not None and r.lo == r.hi == v
    table = {
        "=": (lo_le and hi_ge, not exact),
        "!=": (not exact, lo_le and hi_ge),
        "<": (lo_lt, hi_ge),
        "<=": (lo_le, hi_gt),
        ">": (hi_gt, lo_le),
        ">=": (hi_ge, lo_lt),
    }
    return table[op]


def _tv(tree: Node, ranges: Mapping[str, Range]) -> tuple[bool, bool]:
    kind = tree[0]
    if kind == "and":
        (at, af), (bt, bf) = _tv(tree[1], ranges), _tv(tree[2], ranges)
        return at and bt, af or bf
    if kind == "or":
        (at, af), (bt, bf) = _tv(tree[1], ranges), _tv(tree[2], ranges)
        return at or bt, af and bf
    if kind == "not":
        t, f = _tv(tree[1], ranges)
        return f, t
    if kind == "const":
        return (tree[1] is True, tree[1] is False)
    if kind == "cmpcol":
        return True, True
    r = ranges.get(tree[1] if kind in ("isnull", "in") else tree[2], Range())
    known = r.null_count is not None and r.num_records is not None
    has_value = not known or (r.null_count or 0) < (r.num_records or 0)
    if kind == "isnull":
        return (r.null_count is None or r.null_count > 0), has_value
    if not has_value:
        return False, False
    try:
        if kind == "in":
            vals = [v for v in tree[2] if v is not None]
            hits = [_cmp_range("=", r, v) for v in vals]
            return any(t for t, _ in hits), all(f for _, f in hits) if hits else False
        if tree[3] is None:
            return False, False
        return _cmp_range(tree[1], r, tree[3])
    except TypeError:
        return True, True  # incomparable stats: do not prune


def may_match(tree: Node, ranges: Mapping[str, Range]) -> bool:
    """False only when no row of the file can satisfy the predicate."""
    return _tv(tree, ranges)[0]


def stats_value(raw: Any, t: pa.DataType, *, is_max: bool) -> Any:
    """Typed bound from a stats JSON value; None when it cannot bound safely."""
    if raw is None or isinstance(raw, dict | list):
        return None
    try:
        if pa.types.is_timestamp(t):
            v = parse_partition_value(str(raw), t)
            return v + dt.timedelta(milliseconds=1) if is_max else v  # stats are truncated to ms
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            s = str(raw)
            # A truncated max without a successor char does not bound the real max.
            return None if is_max and len(s) >= 32 and s[-1] not in ("\x7f", "\U0010ffff") else s
        if pa.types.is_decimal(t):
            return decimal.Decimal(str(raw))
        if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_date(t):
            return parse_partition_value(str(raw), t) if isinstance(raw, str) else raw
    except (SchemaMismatchError, ValueError, ArithmeticError):
        return None
    return None
