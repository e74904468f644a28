"""Predicates over a table: a Spark SQL boolean expression, its rows back end and its pruning tree.

`parse_predicate(text, schema)` compiles the text ONCE with the room's compiler
(engine.sql.expressions: one parse, one name resolver, one typer with Spark 4's coercions, ANSI
semantics). Its two back ends read that same compiled expression:

- **rows**: `Predicate.matches(data)` evaluates it over Arrow data, TRUE where Spark's filter keeps a
  row (FALSE and NULL drop it): NaN is one value above every number, `NaN = NaN`, -0.0 = 0.0,
  three-valued logic, ANSI errors (InvalidArgumentError), branches evaluated only where they are
  reached. Whatever the compiler cannot compute exactly it refuses when the predicate is parsed
  (UnsupportedExpressionError), never while rows are read.
- **pruning**: `Predicate.tree`, a small tree over the parts pruning understands:
      ("and", a, b) | ("or", a, b) | ("not", a) | ("const", True | False | None) | ("unknown",)
      | ("isnull", column) | ("cmp", op, column, value, type) | ("in", column, values, type)
  A comparison leaf is a top-level column against a constant, typed exactly as the compiler types
  it (`expressions.comparable`): `type` is the type Spark compares in and `value` the constant in
  it (a DATE column against a TIMESTAMP literal compares as TIMESTAMP, a FLOAT column against 0.1 as
  DOUBLE). Anything else is ("unknown",): it may be TRUE and may be FALSE.

`truth(tree, ranges)` gives (can_be_true, can_be_false) for one file from per-column `Range`s (stats
bounds in the column's type, engine.sql.literals; or a partition's exact value); `may_match` is its
first half. Soundness under Spark's semantics: bounds are brought into the comparison type by a
monotone conversion (`literals.in_type`); a float column may hold NaN that no stat shows (writers
leave it out of min / max), and NaN is above every number and equal to itself, so on such a file
`>`, `>=`, `!=` a number and `=`, `>=`, `<=` NaN can always be TRUE (the other cases FALSE), unless
the file holds exactly one known value. NULL is neither TRUE nor FALSE, so NOT stays sound. The
vectorized twin over all files at once is engine.state.skipping.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from airflow_txnlog.engine.errors import PredicateError, UnsupportedExpressionError
from airflow_txnlog.engine.sql import expressions as ex
from airflow_txnlog.engine.sql import parse as sql_parse
from airflow_txnlog.engine.sql.functions import kind, spark_name
from airflow_txnlog.engine.sql.hints import unquoted_date_error
from airflow_txnlog.engine.sql.literals import in_type

Node = tuple[Any, ...]
UNKNOWN: Node = ("unknown",)
FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_CMP: dict[type[exp.Expression], str] = {
    exp.EQ: "=", exp.NEQ: "!=", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">=",
}  # fmt: skip


@dataclass(frozen=True)
class Predicate:
    """A parsed predicate: its text, the compiled expression (rows), the pruning tree, the
    top-level columns it reads."""

    text: str
    tree: Node
    columns: frozenset[str]
    expression: ex.CompiledExpression

    def matches(self, data: pa.Table | pa.RecordBatch) -> pa.Array | pa.ChunkedArray:
        """TRUE where the predicate is TRUE (FALSE and NULL: FALSE); InvalidArgumentError where a
        value breaks an ANSI rule, as Spark's filter fails."""
        return pc.fill_null(pc.cast(self.expression.evaluate(data), pa.bool_()), False)

    def filter(self, data: pa.Table) -> pa.Table:
        """The rows of `data` the predicate keeps."""
        return data.filter(self.matches(data))


@dataclass(frozen=True, slots=True)
class Range:
    """What is known about one column in one file (None = unknown / unbounded)."""

    lo: Any = None
    hi: Any = None
    null_count: int | None = None
    num_records: int | None = None


def parse_predicate(text: str, schema: pa.Schema) -> Predicate:
    """Compile a Spark SQL boolean expression over `schema`: PredicateError if it is not one (or not
    BOOLEAN), UnsupportedExpressionError if the engine cannot compute it exactly."""
    if not isinstance(text, str) or not text.strip():
        raise PredicateError("predicate must be a non-empty SQL expression")
    try:
        compiled = ex.compile_expression(text, schema)
    except (PredicateError, UnsupportedExpressionError) as exc:
        hint = _hint(text)
        if hint is not None:
            raise PredicateError(f"predicate {text!r}{hint}") from None
        if isinstance(exc, PredicateError):
            said = str(exc)
            raise PredicateError(
                f"predicate {said}" if said.startswith(repr(text)) else f"predicate {text!r}: {said}"
            ) from None
        raise
    if kind(compiled.result_type) not in ("bool", "null"):
        raise PredicateError(f"predicate {text!r} is {spark_name(compiled.result_type)}, not BOOLEAN")
    tree = _Pruning(compiled, schema).node(compiled.node)
    return Predicate(text, tree, compiled.columns, compiled)


def _hint(text: str) -> str | None:
    """engine.sql.hints' words for a predicate that failed, if an unquoted date explains it."""
    try:
        return unquoted_date_error(text, sql_parse.parse(text), None)
    except sql_parse.SYNTAX_ERRORS as exc:
        return unquoted_date_error(text, None, exc)


class _Pruning:
    """The pruning tree of a compiled predicate (see the module docstring)."""

    def __init__(self, compiled: ex.CompiledExpression, schema: pa.Schema) -> None:
        self.compiled, self.schema = compiled, schema
        self.by_lower = {f.name.lower(): f.name for f in schema}

    def node(self, e: exp.Expression) -> Node:
        if isinstance(e, exp.Paren):
            return self.node(e.this)
        if isinstance(e, exp.And | exp.Or):
            return ("and" if isinstance(e, exp.And) else "or", self.node(e.this), self.node(e.expression))
        if isinstance(e, exp.Not):
            return ("not", self.node(e.this))
        if isinstance(e, exp.Boolean):
            return ("const", bool(e.this))
        if isinstance(e, exp.Null):
            return ("const", None)
        try:
            return self._leaf(e)
        except Exception:
            return UNKNOWN

    def _leaf(self, e: exp.Expression) -> Node:
        folded = ex.part_term(self.compiled, self.schema, e).literal
        if folded is not None:  # (a constant the analyzer made of it: the same for every row)
            value = folded.as_py()
            return ("const", None if value is None else bool(value))
        if isinstance(e, exp.Is) and isinstance(e.expression, exp.Null):
            column = self.column(e.this)
            return UNKNOWN if column is None else ("isnull", column)
        if isinstance(e, exp.Between) and not e.args.get(
            "symmetric"
        ):  # (as the rows back end: two comparisons)
            low = self.node(exp.GTE(this=e.this.copy(), expression=e.args["low"].copy()))
            return ("and", low, self.node(exp.LTE(this=e.this.copy(), expression=e.args["high"].copy())))
        if isinstance(e, exp.In) and e.expressions:
            return self.membership(e.this, list(e.expressions))
        op = _CMP.get(type(e))
        return UNKNOWN if op is None else self.compare(op, e.this, e.expression)

    def column(self, e: exp.Expression) -> str | None:
        """The top-level column `e` names (a nested field or anything else: None)."""
        if isinstance(e, exp.Paren):
            return self.column(e.this)
        if not isinstance(e, exp.Column) or e.table or isinstance(e.this, exp.Star):
            return None
        return self.by_lower.get(str(e.name).lower())

    def compare(self, op: str, left: exp.Expression, right: exp.Expression) -> Node:
        column, other = self.column(left), right
        if column is None:
            column, other, op = self.column(right), left, FLIP[op]
        if column is None:
            return UNKNOWN
        terms = ex.operand_terms(self.compiled, self.schema, [exp.column(column, quoted=True), other])
        return self._typed("cmp", op, column, terms)

    def membership(self, value: exp.Expression, items: list[exp.Expression]) -> Node:
        column = self.column(value)
        if column is None:
            return UNKNOWN
        terms = ex.operand_terms(self.compiled, self.schema, [exp.column(column, quoted=True), *items])
        return self._typed("in", "=", column, terms)

    def _typed(self, kind: str, op: str, column: str, terms: list[Any]) -> Node:
        """The leaf, when every operand but the column is a constant of the comparison type."""
        constants = terms[1:]
        if any(t.literal is None for t in constants):
            return UNKNOWN
        values = tuple(t.literal.as_py() for t in constants)
        ctype = terms[0].type
        if kind == "in":
            return ("in", column, values, ctype)
        return ("const", None) if values[0] is None else ("cmp", op, column, values[0], ctype)


# ----------------------------------------------------------------------------- files
def _nan(x: Any) -> bool:
    return isinstance(x, float) and math.isnan(x)


def _less(a: Any, b: Any) -> bool:
    """a < b in Spark's order (NaN above every number)."""
    return not _nan(a) and (_nan(b) or a < b)


def _interval(op: str, lo: Any, hi: Any, v: Any) -> tuple[bool, bool]:
    """(can be TRUE, can be FALSE) of `x op v` for some non-NaN x in [lo, hi] (None: unbounded)."""
    some_lt = lo is None or _less(lo, v)
    some_le = some_lt or (lo is not None and lo == v)
    some_gt = hi is None or _less(v, hi)
    some_ge = some_gt or (hi is not None and hi == v)
    exact = lo is not None and not _nan(v) and lo == hi == v
    return {
        "=": (some_le and some_ge, not exact),
        "!=": (not exact, some_le and some_ge),
        "<": (some_lt, some_ge),
        "<=": (some_le, some_gt),
        ">": (some_gt, some_le),
        ">=": (some_ge, some_lt),
    }[op]


# `NaN op v` for v a number / for v NaN (Spark: NaN is above every number and equal to itself).
NAN_VS_NUMBER = {"=": False, "!=": True, "<": False, "<=": False, ">": True, ">=": True}
NAN_VS_NAN = {"=": True, "!=": False, "<": False, "<=": True, ">": False, ">=": True}


def _cmp_range(op: str, r: Range, v: Any, t: pa.DataType, floating: bool) -> tuple[bool, bool]:
    lo, hi = (None if _nan(b) else in_type(b, t) for b in (r.lo, r.hi))  # (a NaN bound bounds nothing)
    can_true, can_false = _interval(op, lo, hi, v)
    if floating and not _single_value(r, lo, hi):  # a NaN no stat shows may be there
        nan_true = (NAN_VS_NAN if _nan(v) else NAN_VS_NUMBER)[op]
        return can_true or nan_true, can_false or not nan_true
    return can_true, can_false


def _single_value(r: Range, lo: Any, hi: Any) -> bool:
    """The column holds exactly one non-NULL value, `lo` (a partition value, or a one-row file)."""
    return lo is not None and lo == hi and r.num_records == 1 and r.null_count == 0


def _has_value(r: Range) -> bool:
    if r.null_count is None or r.num_records is None:
        return True
    return r.null_count < r.num_records


def _leaf_truth(tree: Node, r: Range, floating: bool) -> tuple[bool, bool]:
    if not _has_value(r):
        return False, False
    if tree[0] == "in":
        values, t = tree[2], tree[3]
        hits = [_cmp_range("=", r, v, t, floating) for v in values if v is not None]
        return any(h for h, _ in hits), None not in values and all(m for _, m in hits)
    return _cmp_range(tree[1], r, tree[3], tree[4], floating)


def _tv(tree: Node, ranges: Mapping[str, Range], floats: frozenset[str]) -> tuple[bool, bool]:
    kind = tree[0]
    if kind in ("and", "or"):
        (at, af), (bt, bf) = _tv(tree[1], ranges, floats), _tv(tree[2], ranges, floats)
        return (at and bt, af or bf) if kind == "and" else (at or bt, af and bf)
    if kind == "not":
        t, f = _tv(tree[1], ranges, floats)
        return f, t
    if kind == "const":
        return tree[1] is True, tree[1] is False
    if kind == "unknown":
        return True, True
    name = tree[2] if kind == "cmp" else tree[1]
    r = ranges.get(name, Range())
    if kind == "isnull":
        return (r.null_count is None or r.null_count > 0), _has_value(r)
    try:
        return _leaf_truth(tree, r, name in floats)
    except TypeError:
        return True, True  # bounds the comparison type does not take: do not prune


def truth(tree: Node, ranges: Mapping[str, Range], floats: frozenset[str] | None = None) -> tuple[bool, bool]:
    """(can_be_true, can_be_false) of `tree` for one file. `floats`: the columns of a float type (a
    NaN no stat shows may be there); None: every column that `ranges` bounds with floats."""
    if floats is None:
        floats = frozenset(n for n, r in ranges.items() if isinstance(r.lo, float) or isinstance(r.hi, float))
    return _tv(tree, ranges, floats)


def may_match(tree: Node, ranges: Mapping[str, Range], floats: frozenset[str] | None = None) -> bool:
    """False only when no row of the file can satisfy the predicate."""
    return truth(tree, ranges, floats)[0]
