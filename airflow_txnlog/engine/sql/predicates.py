"""SQL predicates (parsed with sqlglot, never evaluated as code) for row filters and file pruning.

`parse_predicate(text, schema)` turns a WHERE-clause fragment into a small typed tree:
    ("and", a, b) | ("or", a, b) | ("not", a) | ("const", bool | None)
    | ("cmp", op, column, value, type[, double]) | ("cmpcol", op, column, column)
    | ("in", column, values, type[, doubles]) | ("isnull", column) | ("decided", column, bool)
where `type` is the column's Arrow type. Literals are brought into the column's type when parsed
(`literals.fit`), so a bad literal fails early and both evaluations below compare the same values:
numbers are read exactly from the SQL text, integers and decimals compare exactly, floats compare in
the column's float type. A comparison no literal of the type can stand for (`i32 < 3000000000`,
`i32 = 2.5`) becomes ("decided", column, result): `result` where the column is not NULL, NULL where
it is. `double(s)` is there for a float32 column whose literal the float32 rounding changed: the
literal as a double, which is how Spark compares a float column with a literal. Pruning keeps a file
that either value could match (so a Spark job planned with these predicates never loses a file);
the row filter uses `value`.

Two evaluations of the same tree, which must agree (a file is skipped only when the row filter
would drop every row of it):
- `to_arrow_expression` -> a pyarrow.compute expression over rows: SQL three-valued logic, and IEEE
  floats (NaN makes every comparison FALSE except `!=`, which it makes TRUE);
- `may_match(tree, ranges)` -> can any row of a file satisfy the predicate, given per column a
  `Range` (min/max/null count from stats, or the exact partition value)? Each node evaluates to
  (can_be_true, can_be_false); NULL is neither, so NOT stays sound. Unknown stats mean "maybe".
  Float min/max never rule out NaN (delta-rs and others leave NaN out of them), so on a file with
  values a float comparison can always be FALSE (and `!=` TRUE), which keeps negations sound.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from sqlglot import exp

from airflow_txnlog.engine.errors import PredicateError, SchemaMismatchError, UnsupportedFeatureError
from airflow_txnlog.engine.schema import parse_partition_value
from airflow_txnlog.engine.sql.hints import not_a_literal, syntax_error
from airflow_txnlog.engine.sql.literals import fit, is_number, round_float

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
# Not pa.scalar(None, ...): converting a Python value loads pandas, which an engine import must not.
_NULL_BOOL = pa.nulls(1, pa.bool_())[0]


@dataclass(frozen=True)
class Predicate:
    text: str
    tree: Node
    columns: frozenset[str]
    # a number was compared with a string column: this tree compares text ('011' < '10'), Spark SQL
    # casts the column to a number (11 > 10); a Spark caller must neither prune nor filter with it
    loose: bool = False


@dataclass(frozen=True, slots=True)
class Range:
    """What is known about one column in one file (None = unknown / unbounded)."""

    lo: Any = None
    hi: Any = None
    null_count: int | None = None
    num_records: int | None = None


def _number(text: str) -> int | decimal.Decimal:
    """A numeric literal exactly as written (a float would round it before the column type is known)."""
    if text.isascii() and text.isdigit():
        return int(text)
    try:
        value = decimal.Decimal(text)
    except decimal.InvalidOperation as exc:
        raise ValueError(text) from exc
    if not value.is_finite():
        raise ValueError(text)
    return value


def _show(value: Any) -> str:
    return str(value) if isinstance(value, decimal.Decimal) else repr(value)


def _family(t: pa.DataType) -> str:
    """Which column types pyarrow compares with each other (types of one family)."""
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "number"
    text_types = (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary, pa.types.is_large_binary)
    if any(is_text(t) for is_text in text_types):
        return "text"
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        # A date compares with either kind of timestamp; zoned and local timestamps do not compare.
        return "zoned time" if getattr(t, "tz", None) is not None else "time"
    return "boolean" if pa.types.is_boolean(t) else f"other {t}"


def _comparable(a: pa.DataType, b: pa.DataType) -> bool:
    fa, fb = _family(a), _family(b)
    if {fa, fb} == {"time", "zoned time"}:
        return bool(pa.types.is_date(a) or pa.types.is_date(b))
    return fa == fb and not fa.startswith("other")


def _as_double(fitted: tuple[str, Any], value: Any, t: pa.DataType) -> float | None:
    """The literal as a double when a float32 column's rounding changed it (see the module doc)."""
    if not (pa.types.is_floating(t) and t.bit_width < 64 and is_number(value)):
        return None
    double = fit(fitted[0], pa.float64(), value)
    # Beyond float32's range both comparisons say the same of every float32 value.
    if isinstance(double, bool) or double[0] != fitted[0] or double[1] == fitted[1]:
        return None
    return float(double[1])


class _Parser:
    def __init__(self, text: str, schema: pa.Schema) -> None:
        self.text = text
        self.schema = schema
        self.by_lower = {f.name.lower(): f for f in schema}
        self.columns: set[str] = set()
        self.loose = False

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
            if is_number(v):
                return -v
            raise self.fail(f"cannot negate {node.this.sql()!r}")
        if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal):
            return node.this.this  # DATE '...' / TIMESTAMP '...': coerced to the column type later
        if isinstance(node, exp.Literal):
            if node.is_string:
                return node.this
            try:
                return _number(node.this)
            except ValueError as exc:
                raise self.fail(f"bad number {node.this!r}") from exc
        raise self.fail(not_a_literal(node))

    def coerce(self, value: Any, column: str) -> Any:
        """`value` as a Python value of the column's kind (numbers are fitted to the type by `compare`)."""
        if value is None:
            return None
        t = self.schema.field(column).type
        try:
            if pa.types.is_string(t) or pa.types.is_large_string(t):
                self.loose = self.loose or not isinstance(value, str)
                return value if isinstance(value, str) else str(value)
            if isinstance(value, str):
                return parse_partition_value(value, t)
        except (SchemaMismatchError, UnsupportedFeatureError, ValueError, ArithmeticError) as exc:
            raise self.fail(f"literal {value!r} is not a valid {t} for column {column!r}") from exc
        numeric = pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
        if (numeric and is_number(value)) or (pa.types.is_boolean(t) and isinstance(value, bool)):
            return value
        raise self.fail(f"literal {_show(value)} does not match type {t} of column {column!r}")

    def compare(self, op: str, column: str, value: Any) -> Node:
        t = self.schema.field(column).type
        try:
            fitted = fit(op, t, value)
        except (ValueError, ArithmeticError) as exc:
            raise self.fail(f"literal {_show(value)} is not a valid {t} for column {column!r}") from exc
        if isinstance(fitted, bool):
            return ("decided", column, fitted)
        node = ("cmp", fitted[0], column, fitted[1], t)
        double = _as_double(fitted, value, t)
        return node if double is None else (*node, double)

    def membership(self, column: str, values: Iterable[Any]) -> Node:
        kept: list[Any] = []
        doubles: list[Any] = []
        for v in values:
            node = self.compare("=", column, v)
            # A value of another type equals nothing; NaN equals nothing either (IEEE), though
            # pyarrow's is_in would match it.
            if node[0] == "cmp" and not (isinstance(node[3], float) and math.isnan(node[3])):
                kept.append(node[3])
                doubles.append(node[5] if len(node) > 5 else node[3])
        if not kept:
            return ("decided", column, False)
        membership = ("in", column, tuple(kept), self.schema.field(column).type)
        return membership if doubles == kept else (*membership, tuple(doubles))

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
            return self.membership(col, [self.coerce(self.literal(x), col) for x in e.expressions])
        if isinstance(e, exp.Between):
            col = self.column(e.this)
            if col is None:
                raise self.fail(f"BETWEEN needs a column: {e.sql()!r}")
            lo = self.compare(">=", col, self.coerce(self.literal(e.args["low"]), col))
            return ("and", lo, self.compare("<=", col, self.coerce(self.literal(e.args["high"]), col)))
        op = _CMP.get(type(e))
        if op is not None:
            return self.comparison(op, e.this, e.expression)
        raise self.fail(f"unsupported expression {e.sql()!r}")

    def comparison(self, op: str, left: exp.Expression, right: exp.Expression) -> Node:
        lcol, rcol = self.column(left), self.column(right)
        if lcol and rcol:
            lt, rt = self.schema.field(lcol).type, self.schema.field(rcol).type
            if not _comparable(lt, rt):
                raise self.fail(f"column {lcol!r} ({lt}) cannot be compared with column {rcol!r} ({rt})")
            return ("cmpcol", op, lcol, rcol)
        if lcol:
            return self.compare(op, lcol, self.coerce(self.literal(right), lcol))
        if rcol:
            return self.compare(_FLIP[op], rcol, self.coerce(self.literal(left), rcol))
        raise self.fail("a comparison needs at least one column")


def parse_predicate(text: str, schema: pa.Schema) -> Predicate:
    """Parse and type-check a SQL boolean expression over `schema`'s top-level columns."""
    if not isinstance(text, str) or not text.strip():
        raise PredicateError("predicate must be a non-empty SQL expression")
    try:
        tree = sqlglot.parse_one(text, dialect="spark")
    except sqlglot.errors.SqlglotError as exc:
        raise PredicateError(f"predicate {text!r} is not valid SQL: {syntax_error(exc, text)}") from exc
    if tree is None:
        raise PredicateError(f"predicate {text!r} is empty")
    parser = _Parser(text, schema)
    if not isinstance(tree, exp.Expression):
        raise PredicateError(f"predicate {text!r} is not an expression")
    node = parser.node(tree)
    return Predicate(text, node, frozenset(parser.columns), loose=parser.loose)


# ----------------------------------------------------------------------------- rows
def to_arrow_expression(tree: Node, schema: pa.Schema) -> pc.Expression:
    kind = tree[0]
    if kind in ("and", "or"):
        a, b = to_arrow_expression(tree[1], schema), to_arrow_expression(tree[2], schema)
        return a & b if kind == "and" else a | b
    if kind == "not":
        return ~to_arrow_expression(tree[1], schema)
    if kind == "const":
        return pc.scalar(pa.scalar(tree[1], pa.bool_()))  # typed: a null-type NULL fails in and/or
    if kind == "isnull":
        return pc.field(tree[1]).is_null()
    if kind == "decided":
        return _unless_null(tree[1], pc.scalar(tree[2]))
    if kind == "in":
        return _arrow_in(tree[1], tree[2], schema.field(tree[1]).type)
    if kind == "cmpcol":
        return _arrow_cmp(tree[1], *_column_operands(tree[2], tree[3], schema))
    t = schema.field(tree[2]).type
    return _arrow_cmp(tree[1], pc.field(tree[2]), pc.scalar(pa.scalar(tree[3], t)))


def _unless_null(column: str, expr: pc.Expression) -> pc.Expression:
    """`expr` where `column` is not NULL, NULL where it is (as SQL says for a comparison with NULL)."""
    return pc.if_else(pc.field(column).is_null(), _NULL_BOOL, expr)


def _arrow_in(column: str, values: tuple[Any, ...], t: pa.DataType) -> pc.Expression:
    # is_in says FALSE for a NULL row and TRUE for a NULL row when NULL is listed; SQL says NULL for
    # both, and turns every FALSE into NULL when NULL is listed.
    hit = pc.field(column).isin(pa.array([v for v in values if v is not None], type=t))
    expr = _unless_null(column, hit)
    return expr | pc.scalar(_NULL_BOOL) if None in values else expr


def _column_operands(left: str, right: str, schema: pa.Schema) -> tuple[pc.Expression, pc.Expression]:
    a, b = schema.field(left).type, schema.field(right).type
    if pa.types.is_decimal(a) and pa.types.is_decimal(b) and a != b:
        # pyarrow's common decimal type can exceed its precision limit; this one holds both exactly.
        scale = max(a.scale, b.scale)
        precision = scale + max(a.precision - a.scale, b.precision - b.scale)
        common = pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)
        return pc.field(left).cast(common), pc.field(right).cast(common)
    return pc.field(left), pc.field(right)


_ARROW_OPS: dict[str, Callable[[Any, Any], pc.Expression]] = {
    "=": lambda x, y: x == y,
    "!=": lambda x, y: x != y,
    "<": lambda x, y: x < y,
    "<=": lambda x, y: x <= y,
    ">": lambda x, y: x > y,
    ">=": lambda x, y: x >= y,
}


def _arrow_cmp(op: str, left: pc.Expression, right: pc.Expression) -> pc.Expression:
    return _ARROW_OPS[op](left, right)


# ----------------------------------------------------------------------------- files
def _float_bound(x: Any, t: pa.DataType) -> float | None:
    """A stats bound of a float column in the column's type (NaN bounds nothing)."""
    if x is None:
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    # Rounding is monotone and the true bound is a value of the type, so the rounded bound still
    # bounds; and it is how the literal was rounded (an exact float32 stat 0.10000000149 and a
    # shortest-repr "0.1" both become the float32 0.1).
    return None if math.isnan(f) else round_float(f, t)


def _cmp_range(op: str, r: Range, v: Any, t: pa.DataType) -> tuple[bool, bool]:
    floating = pa.types.is_floating(t)
    lo, hi = (_float_bound(r.lo, t), _float_bound(r.hi, t)) if floating else (r.lo, r.hi)
    lo_lt = lo is None or lo < v  # some value may be < v
    lo_le = lo is None or lo <= v
    hi_gt = hi is None or hi > v
    hi_ge = hi is None or hi >= v
    exact = lo is not None and lo == hi == v
    table = {
        "=": (lo_le and hi_ge, not exact),
        "!=": (not exact, lo_le and hi_ge),
        "<": (lo_lt, hi_ge),
        "<=": (lo_le, hi_gt),
        ">": (hi_gt, lo_le),
        ">=": (hi_ge, lo_lt),
    }
    can_true, can_false = table[op]
    if floating and not _single_value(r, lo, hi):
        # A NaN the stats do not show makes `!=` TRUE and every other comparison FALSE.
        return (True, can_false) if op == "!=" else (can_true, True)
    return can_true, can_false


def _single_value(r: Range, lo: Any, hi: Any) -> bool:
    """The column holds exactly one non-NULL value, `lo` (a partition value, or a one-row file)."""
    return lo is not None and lo == hi and r.num_records == 1 and r.null_count == 0


def _in_range(r: Range, values: tuple[Any, ...], t: pa.DataType) -> tuple[bool, bool]:
    hits = [_cmp_range("=", r, v, t) for v in values if v is not None]
    # A NULL in the list turns every FALSE into NULL.
    return any(h for h, _ in hits), None not in values and all(m for _, m in hits)


def _has_value(r: Range) -> bool:
    if r.null_count is None or r.num_records is None:
        return True
    return r.null_count < r.num_records


def _tv(tree: Node, ranges: Mapping[str, Range]) -> tuple[bool, bool]:
    kind = tree[0]
    if kind in ("and", "or"):
        (at, af), (bt, bf) = _tv(tree[1], ranges), _tv(tree[2], ranges)
        return (at and bt, af or bf) if kind == "and" else (at or bt, af and bf)
    if kind == "not":
        t, f = _tv(tree[1], ranges)
        return f, t
    if kind == "const":
        return (tree[1] is True, tree[1] is False)
    if kind == "cmpcol":
        return True, True
    r = ranges.get(tree[2] if kind == "cmp" else tree[1], Range())
    if kind == "isnull":
        return (r.null_count is None or r.null_count > 0), _has_value(r)
    if not _has_value(r):
        return False, False
    if kind == "decided":
        return tree[2], not tree[2]
    try:
        if kind == "in":
            found = _in_range(r, tree[2], tree[3])
            return found if len(tree) < 5 else _either(found, _in_range(r, tree[4], tree[3]))
        if tree[3] is None:
            return False, False
        found = _cmp_range(tree[1], r, tree[3], tree[4])
        return found if len(tree) < 6 else _either(found, _cmp_range(tree[1], r, tree[5], tree[4]))
    except TypeError:
        return True, True  # incomparable stats: do not prune


def _either(a: tuple[bool, bool], b: tuple[bool, bool]) -> tuple[bool, bool]:
    """What one of two readings of a comparison (float32 or double literal) could make it."""
    return a[0] or b[0], a[1] or b[1]


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
            return _decimal_bound(decimal.Decimal(str(raw)), t, is_max=is_max)
        if pa.types.is_floating(t):
            # Read exactly (JSON, or Decimal when decimals are parsed exactly), rounded to the type
            # when compared; a NaN bound (a writer that orders NaN last) bounds nothing.
            return _float_bound(parse_partition_value(raw, t) if isinstance(raw, str) else raw, t)
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
    # Possibly a double rounded from the true bound: that bound lies within one step of it.
    return decimal.Decimal(math.nextafter(f, math.inf if is_max else -math.inf))


def truth(tree: Node, ranges: Mapping[str, Range]) -> tuple[bool, bool]:
    """(can_be_true, can_be_false) of `tree` for one file: the per-file reference of data skipping."""
    return _tv(tree, ranges)
