"""Partition filters derived from generated partition columns (as Delta on Spark's
`OptimizablePartitionExpression`s do): a filter on `ts` prunes the partitions of `d = CAST(ts AS DATE)`.

For a partition column `g` generated as `f(src)` where `f` never decreases as `src` grows, every row
with `src >= v` has `g >= f(v)`, `src <= v` gives `g <= f(v)` and `src = v` gives `g = f(v)`. So
`derive(tree)` walks a parsed predicate and, for each comparison of a source column with a literal,
adds that comparison on `g`; `AND` keeps what either side gives, `OR` only what both give, `NOT`
and anything else give nothing. The result is ANDed to the predicate for file pruning only (rows
are still filtered by the predicate as written), so the added part must be implied by it: it is.

Which `f` qualify (the expression names exactly one column, the source):
    CAST(src AS DATE), TO_DATE(src), YEAR(src), DATE_TRUNC(unit, src), TRUNC(src, unit) on a date or
    timestamp; DATE_FORMAT(src, p) when `p` lists fields from the year down with fixed widths
    (`yyyy`, `yyyy-MM`, `yyyyMMdd`, `yyyy-MM-dd HH`, ...); SUBSTRING(src, 1, n) on a string.
MONTH, DAY or HOUR alone wrap around and derive nothing.

`f(v)` is computed by the engine's Arrow evaluator (engine.sql.expressions), in UTC. A
writer may have computed `g` in another session time zone (Spark evaluates CAST(ts AS DATE) in
`spark.sql.session.timeZone`; Spark accepts offsets up to 18 hours, under a day from UTC), so
wherever `g` depends on that zone the derived bounds are widened to hold for every zone:
- a source TIMESTAMP (with time zone): the bounds are taken from `v - 1 day` / `v + 1 day`;
- a result TIMESTAMP (with time zone), i.e. DATE_TRUNC's, whatever its source: the bounds `f(v)`
  are widened by a day (on top of the source's widening). DATE_TRUNC('MONTH', d) of a DATE `d` is
  the month's first midnight *in the writer's zone* (Spark casts the date to a timestamp in the
  session zone): in Tokyo 2024-03-01 00:00+09:00, stored as 2024-02-29 15:00 UTC, which the UTC
  value 2024-03-01 00:00 alone would miss.
Results that do not depend on the zone are not widened: a DATE, a number or a string computed from
a DATE or a TIMESTAMP_NTZ (CAST, TO_DATE, YEAR, TRUNC, DATE_FORMAT keep the wall-clock fields;
one exception is not covered: DATE_FORMAT of a wall-clock time that the writer zone's daylight
saving gap skips, which Spark moves forward by the gap).
This keeps pruning sound whatever zone the writer used, at the cost of at most one more partition
at each end. A string-valued partition column also keeps its NULL partition: an empty SUBSTRING is
stored as NULL. The function must apply to the column itself (`SUBSTRING(lower(s), 1, 1)` derives
nothing: an inner function may break the order).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
from sqlglot import exp

from airflow_txnlog.engine.errors import TxnLogError
from airflow_txnlog.engine.sql import parse as sql_parse
from airflow_txnlog.engine.sql.expressions import compile_expression

Node = tuple[Any, ...]
_DATE_FORMAT = re.compile(r"^\s*date_format\s*\(\s*`?\w+`?\s*,\s*'([^']*)'\s*\)\s*$", re.IGNORECASE)
_FIELDS = ("yyyy", "MM", "dd", "HH", "mm", "ss")
_SEPARATORS = re.compile(r"[-/ _.:T]*")
_TEMPORAL = (exp.TsOrDsToDate, exp.Year, exp.TimestampTrunc, exp.DateTrunc)
_DAY = dt.timedelta(days=1)


def _monotone_pattern(pattern: str) -> bool:
    """Whether a DATE_FORMAT pattern orders like the time it formats: fields from the year down,
    each at its fixed width, separated by constant characters."""
    rest, expected = pattern, 0
    while rest:
        sep = _SEPARATORS.match(rest)
        rest = rest[sep.end() :] if sep else rest
        if not rest:
            break
        if expected >= len(_FIELDS) or not rest.startswith(_FIELDS[expected]):
            return False
        rest = rest[len(_FIELDS[expected]) :]
        if rest[:1].isalpha() and rest[:1] == _FIELDS[expected][0]:
            return False  # e.g. 'yyyyy'
        expected += 1
    return expected > 0


def source_of(expression: str, schema: pa.Schema) -> str | None:
    """The column `expression` is a non-decreasing function of (see the module docstring), or None."""
    try:
        node = sql_parse.parse(expression)
    except sql_parse.SYNTAX_ERRORS:
        return None
    columns = list(node.find_all(exp.Column))
    if len(columns) != 1 or len(columns[0].parts) > 1:
        return None
    name: str | None = next((str(n) for n in schema.names if n.lower() == columns[0].name.lower()), None)
    if name is None:
        return None
    t = schema.field(name).type
    temporal = pa.types.is_timestamp(t) or pa.types.is_date(t)
    if not isinstance(node, exp.TimeToStr) and not _bare(node.this):
        return None  # (an inner function, e.g. lower(s), may break the order)
    if isinstance(node, exp.Cast) and node.to.this == exp.DataType.Type.DATE and temporal:
        return name
    if isinstance(node, _TEMPORAL) and temporal:
        return name
    if isinstance(node, exp.TimeToStr) and temporal:
        match = _DATE_FORMAT.match(expression)
        return name if match and _monotone_pattern(match.group(1)) else None
    if isinstance(node, exp.Substring) and (pa.types.is_string(t) or pa.types.is_large_string(t)):
        start, length = node.args.get("start"), node.args.get("length")
        literal = isinstance(start, exp.Literal) and not start.is_string and start.this in ("0", "1")
        return name if literal and isinstance(length, exp.Literal) and not length.is_string else None
    return None


def _bare(arg: object) -> bool:
    """Whether a function's argument is the column itself (YEAR(ts) parses as YEAR(TO_DATE(ts)))."""
    if isinstance(arg, exp.TsOrDsToDate) and not arg.args.get("format"):
        arg = arg.this
    return isinstance(arg, exp.Column)


class _Derivation:
    """The partition comparisons one predicate tree implies, for the generated partition columns."""

    def __init__(self, schema: pa.Schema, by_source: Mapping[str, list[tuple[str, str]]]) -> None:
        self.schema = schema
        self.by_source = by_source  # source column -> [(partition column, expression)]

    def apply(self, node: Node) -> Node | None:
        kind = node[0]
        if kind in ("and", "or"):
            a, b = self.apply(node[1]), self.apply(node[2])
            if kind == "or":
                return ("or", a, b) if a is not None and b is not None else None
            return a if b is None else b if a is None else ("and", a, b)
        if kind == "cmp" and node[2] in self.by_source and node[1] != "!=" and self._own(node[2], node[4]):
            return self._all(node[2], lambda g, expr: self._cmp(node[1], node[2], node[3], g, expr))
        if kind == "in" and node[1] in self.by_source and self._own(node[1], node[3]):
            values = [v for v in node[2] if v is not None]
            return self._all(node[1], lambda g, expr: self._in(node[1], values, g, expr))
        return None

    def _own(self, source: str, t: pa.DataType) -> bool:
        """The leaf compares in the source column's own type (a DATE column against a TIMESTAMP
        literal compares as TIMESTAMP: its value is no value of the source to compute `f` on)."""
        return bool(t == self.schema.field(source).type)

    def _all(self, source: str, one: Any) -> Node | None:
        found = [n for g, expr in self.by_source[source] if (n := one(g, expr)) is not None]
        out = None
        for n in found:
            out = n if out is None else ("and", out, n)
        return out

    def _cmp(self, op: str, source: str, value: Any, g: str, expr: str) -> Node | None:
        low, high = self._bounds(source, value)
        lo, hi = self._value(source, low, g, expr), self._value(source, high, g, expr)
        g_type = self.schema.field(g).type
        if pa.types.is_timestamp(g_type) and g_type.tz is not None:
            # an instant-valued result moves with the writer's zone, whatever the source: Spark
            # truncates in its session zone (DATE_TRUNC('MONTH', d) of a DATE in Tokyo is Tokyo's
            # midnight, 15:00 UTC the day before)
            lo, hi = _shifted(lo, -_DAY), _shifted(hi, _DAY)
        node: Node | None = None
        if op in (">", ">="):
            node = None if lo is None else ("cmp", ">=", g, lo, g_type)
        elif op in ("<", "<="):
            node = None if hi is None else ("cmp", "<=", g, hi, g_type)
        elif lo is not None and hi is not None:
            node = ("and", ("cmp", ">=", g, lo, g_type), ("cmp", "<=", g, hi, g_type))
            node = ("cmp", "=", g, lo, g_type) if lo == hi else node
        if node is not None and (pa.types.is_string(g_type) or pa.types.is_large_string(g_type)):
            node = ("or", node, ("isnull", g))  # an empty string result is stored as a NULL partition
        return node

    def _in(self, source: str, values: list[Any], g: str, expr: str) -> Node | None:
        if not values:
            return None
        parts = [self._cmp("=", source, v, g, expr) for v in values]
        if any(p is None for p in parts):
            return None
        out = parts[0]
        for p in parts[1:]:
            out = ("or", out, p)
        return out

    def _bounds(self, source: str, value: Any) -> tuple[Any, Any]:
        t = self.schema.field(source).type
        if pa.types.is_timestamp(t) and t.tz is not None and isinstance(value, dt.datetime):
            try:  # the writer's session time zone is at most a day away from UTC
                return value - _DAY, value + _DAY
            except OverflowError:
                return None, None
        return value, value

    def _value(self, source: str, value: Any, g: str, expr: str) -> Any:
        if value is None:
            return None
        try:
            compiled = compile_expression(expr, self.schema)
            row = pa.table({source: pa.array([value], self.schema.field(source).type)})
            out = pa.chunked_array([compiled.evaluate(row)]).cast(self.schema.field(g).type)
        except (TxnLogError, pa.ArrowException, ValueError, TypeError, OverflowError):
            return None
        return out[0].as_py()


def _shifted(value: Any, by: dt.timedelta) -> Any:
    try:
        return None if value is None else value + by
    except OverflowError:
        return None


def derive(
    tree: Node, schema: pa.Schema, generated: Mapping[str, str], partition_columns: list[str]
) -> Node | None:
    """The partition comparisons `tree` implies on the generated partition columns, or None."""
    by_source: dict[str, list[tuple[str, str]]] = {}
    for g, expr in generated.items():
        if g in partition_columns:
            source = source_of(expr, schema)
            if source is not None:
                by_source.setdefault(source, []).append((g, expr))
    return _Derivation(schema, by_source).apply(tree) if by_source else None
