"""Vectorized data skipping: which files of a `file_table` may hold a row matching a predicate.

`may_match_mask(tree, files, schema, partition_columns)` evaluates the parsed predicate tree
(`predicates.parse_predicate(...).tree`) over all files at once and returns a boolean array, TRUE
where the file may match. It is the column-wise twin of `predicates.may_match` (the per-file
reference, which the property test compares it with): every node yields two boolean arrays
(can_be_true, can_be_false), combined with pyarrow.compute exactly as `predicates._tv` combines two
bools, under the same soundness rules:

- per referenced column, `_Col` holds per file lo / hi bounds (null = unknown), the null count and
  the row count. Data columns take them from the stats columns (`min.<c>`, `max.<c>`,
  `null_count.<c>`, `num_records`) through `literals.stats_value`'s rules: a timestamp maximum
  widened by 1 ms (stats are truncated to ms), a string maximum of 32+ characters without a
  successor character unknown (truncated), float bounds as doubles with NaN bounding nothing, no
  bounds for booleans and binary. Partition columns take the exact typed value (`lo = hi = value`,
  null count 1 for a NULL value, one "row");
- a comparison casts the bounds to the type Spark compares in (the leaf's type: a monotone cast, so
  bounds stay bounds) and compares them with the constant there;
- on a float column a NaN no stat shows may be there (Spark's order: above every number, equal to
  itself), unless the column holds exactly one known value; a NaN constant compares the same way;
- IN lists (a NULL in the list turns FALSE into NULL) and "unknown" leaves (always "maybe") follow
  the reference.

Columns Arrow cannot compare exactly fall back to the reference per file (`_Col.ranges`, a `Range`
per file fed to `predicates.truth`): decimals of precision > 15 (whose double-written stats widen to
a bound outside the type) and partition values that do not fit their Arrow type.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_txnlog.engine.sql.literals import stats_value
from airflow_txnlog.engine.sql.predicates import FLIP, NAN_VS_NAN, NAN_VS_NUMBER, Node, Range, truth
from airflow_txnlog.engine.state.add_actions import parsed_partition, raw_partition, typed_partition

Pair = tuple[pa.Array, pa.Array]  # (can_be_true, can_be_false), one bool per file, never null
_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError)
# The largest value a 1 ms widening does not overflow (Python's datetime stops at year 9999).
_TS_LIMIT = dt.datetime.max - dt.timedelta(milliseconds=1)


@dataclass
class _Col:
    """What the files say about one column (None: unknown for every file)."""

    lo: pa.Array | None = None
    hi: pa.Array | None = None
    null_count: pa.Array | None = None
    num_records: pa.Array | None = None
    floating: bool = False
    ranges: list[Range] | None = None  # set instead of the arrays for the per-file fallback


def _get(files: pa.Table, name: str) -> pa.Array | None:
    if name not in files.column_names:
        return None
    col = files.column(name)
    return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()


def _full(n: int, value: bool) -> pa.Array:
    return pa.repeat(pa.scalar(value), n)


def _true_where_null(arr: pa.Array) -> pa.Array:
    return pc.fill_null(arr, True)


# ----------------------------------------------------------------------------- columns
def _bound(arr: pa.Array | None, t: pa.DataType, *, is_max: bool) -> pa.Array | None:
    """A stats column as bounds (`predicates.stats_value`'s rules, column-wise)."""
    if arr is None:
        return None
    if pa.types.is_timestamp(t):
        if not is_max:
            return arr
        step = pa.scalar(dt.timedelta(milliseconds=1), pa.duration(t.unit))
        limit = pa.scalar(_TS_LIMIT, pa.timestamp(t.unit)).cast(t)
        return pc.if_else(pc.greater(arr, limit), pa.nulls(1, t)[0], pc.add(arr, step))
    if pa.types.is_string(t):
        if not is_max:
            return arr
        long = pc.greater_equal(pc.utf8_length(arr), 32)
        succ = pc.or_(pc.ends_with(arr, "\x7f"), pc.ends_with(arr, "\U0010ffff"))
        return pc.if_else(pc.and_(long, pc.invert(succ)), pa.nulls(1, t)[0], arr)
    if pa.types.is_floating(t):
        wide = arr.cast(pa.float64())
        return pc.if_else(pc.is_nan(wide), pa.nulls(1, pa.float64())[0], wide)
    if pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_decimal(t):
        return arr
    return None  # booleans, binary, nested: stats do not bound them


def _fallback(t: pa.DataType, lo: list[Any], hi: list[Any], nc: list[Any], nr: list[Any]) -> _Col:
    """Per-file ranges for the reference evaluation (the rare columns Arrow cannot compare exactly)."""
    ranges = [
        Range(stats_value(a, t, is_max=False), stats_value(b, t, is_max=True), c, n)
        for a, b, c, n in zip(lo, hi, nc, nr, strict=True)
    ]
    return _Col(ranges=ranges)


def _data_col(files: pa.Table, c: str, t: pa.DataType) -> _Col:
    lo, hi = _get(files, f"min.{c}"), _get(files, f"max.{c}")
    nc, nr = _get(files, f"null_count.{c}"), _get(files, "num_records")
    if pa.types.is_decimal(t) and t.precision > 15 and lo is not None and hi is not None:
        n = files.num_rows
        py = [x.to_pylist() if x is not None else [None] * n for x in (lo, hi, nc, nr)]
        return _fallback(t, *py)
    return _Col(
        _bound(lo, t, is_max=False),
        _bound(hi, t, is_max=True),
        nc,
        nr,
        floating=pa.types.is_floating(t),
    )


def _partition_col(files: pa.Table, c: str, t: pa.DataType) -> _Col:
    raw = raw_partition(files, c)
    try:
        values = typed_partition(raw, t)
    except (*_ARROW_ERRORS, OverflowError):  # a value that does not fit the Arrow type: per file
        parsed, indices = parsed_partition(raw, t)
        per_file = [None if i is None else parsed[i] for i in indices.to_pylist()]
        return _Col(ranges=[Range(v, v, 1 if v is None else 0, 1) for v in per_file])
    nc = pc.if_else(values.is_null(), 1, 0).cast(pa.int64())
    # Exact values, so no widening or truncation; floats as doubles with NaN bounding nothing.
    bound = _bound(values, t, is_max=False) if pa.types.is_floating(t) else values
    return _Col(bound, bound, nc, pa.repeat(pa.scalar(1, pa.int64()), len(values)), pa.types.is_floating(t))


# ----------------------------------------------------------------------------- comparisons
def _in_type(arr: pa.Array | None, t: pa.DataType) -> pa.Array | None:
    """Bounds brought into the comparison type (a monotone cast: `literals.in_type`, column-wise)."""
    return arr if arr is None or arr.type == t else pc.cast(arr, t, safe=False)


def _test(arr: pa.Array | None, fn: Callable[..., pa.Array], v: pa.Scalar, n: int) -> pa.Array:
    """`fn(bound, v)` per file, TRUE where the bound is unknown."""
    return _full(n, True) if arr is None else _true_where_null(fn(arr, v))


def _single_value(col: _Col, n: int) -> pa.Array:
    """The column holds exactly one non-NULL value (`predicates._single_value`)."""
    if col.lo is None or col.hi is None or col.num_records is None or col.null_count is None:
        return _full(n, False)
    same = pc.and_(pc.equal(col.lo, col.hi), pc.equal(col.num_records, 1))
    return pc.fill_null(pc.and_(same, pc.equal(col.null_count, 0)), False)


def _interval(op: str, lo: pa.Array | None, hi: pa.Array | None, v: pa.Scalar, n: int) -> Pair:
    """`predicates._interval` column-wise, for a number (not NaN) or any other value `v`."""
    lo_lt, lo_le = _test(lo, pc.less, v, n), _test(lo, pc.less_equal, v, n)
    hi_gt, hi_ge = _test(hi, pc.greater, v, n), _test(hi, pc.greater_equal, v, n)
    if op in ("=", "!="):
        exact = _full(n, False) if lo is None or hi is None else pc.fill_null(
            pc.and_(pc.equal(lo, v), pc.equal(hi, v)), False
        )  # fmt: skip
        inside = pc.and_(lo_le, hi_ge)
        return (inside, pc.invert(exact)) if op == "=" else (pc.invert(exact), inside)
    return {"<": (lo_lt, hi_ge), "<=": (lo_le, hi_gt), ">": (hi_gt, lo_le), ">=": (hi_ge, lo_lt)}[op]


def _cmp(op: str, col: _Col, value: Any, t: pa.DataType, n: int) -> Pair:
    """`predicates._cmp_range`, column-wise, in the comparison type `t`, Spark's NaN order."""
    nan = isinstance(value, float) and math.isnan(value)
    if nan:  # every number is below NaN: the answer for the non-NaN rows is the same in every file
        below = NAN_VS_NUMBER[FLIP[op]]
        can_true, can_false = _full(n, below), _full(n, not below)
    else:
        can_true, can_false = _interval(op, _in_type(col.lo, t), _in_type(col.hi, t), pa.scalar(value, t), n)
    if not col.floating:
        return can_true, can_false
    nan_true = (NAN_VS_NAN if nan else NAN_VS_NUMBER)[op]  # a NaN no stat shows may be there
    maybe_nan = pc.invert(_single_value(col, n))
    return (pc.or_(can_true, maybe_nan), can_false) if nan_true else (can_true, pc.or_(can_false, maybe_nan))


def _in(col: _Col, values: tuple[Any, ...], t: pa.DataType, n: int) -> Pair:
    can_true, can_false = _full(n, False), _full(n, None not in values)
    for v in values:
        if v is not None:
            hit, miss = _cmp("=", col, v, t, n)
            can_true, can_false = pc.or_(can_true, hit), pc.and_(can_false, miss)
    return can_true, can_false


def _has_value(col: _Col, n: int) -> pa.Array:
    if col.null_count is None or col.num_records is None:
        return _full(n, True)
    return _true_where_null(pc.less(col.null_count, col.num_records))


# ----------------------------------------------------------------------------- the tree
def _per_file(tree: Node, name: str, ranges: list[Range], floating: bool) -> Pair:
    """The reference evaluation of one leaf, file by file (the fallback columns)."""
    floats = frozenset({name}) if floating else frozenset()
    per_file = [truth(tree, {name: r}, floats) for r in ranges]
    return pa.array([t for t, _ in per_file], pa.bool_()), pa.array([f for _, f in per_file], pa.bool_())


class _Evaluator:
    def __init__(self, files: pa.Table, schema: pa.Schema, partition_columns: list[str]) -> None:
        self.files = files
        self.n = files.num_rows
        self.schema = schema
        self.parts = set(partition_columns)
        self.cols: dict[str, _Col] = {}

    def col(self, name: str) -> _Col:
        if name not in self.cols:
            t = self.schema.field(name).type
            build = _partition_col if name in self.parts else _data_col
            self.cols[name] = build(self.files, name, t)
        return self.cols[name]

    def node(self, tree: Node) -> Pair:
        kind, n = tree[0], self.n
        if kind in ("and", "or"):
            (at, af), (bt, bf) = self.node(tree[1]), self.node(tree[2])
            if kind == "and":
                return pc.and_(at, bt), pc.or_(af, bf)
            return pc.or_(at, bt), pc.and_(af, bf)
        if kind == "not":
            t, f = self.node(tree[1])
            return f, t
        if kind == "const":
            return _full(n, tree[1] is True), _full(n, tree[1] is False)
        if kind == "unknown":
            return _full(n, True), _full(n, True)
        name = tree[2] if kind == "cmp" else tree[1]
        col = self.col(name)
        if col.ranges is not None:
            return _per_file(tree, name, col.ranges, pa.types.is_floating(self.schema.field(name).type))
        has_value = _has_value(col, n)
        if kind == "isnull":
            nulls = col.null_count
            return (_full(n, True) if nulls is None else _true_where_null(pc.greater(nulls, 0))), has_value
        try:
            t, f = self.leaf(tree, col)
        except _ARROW_ERRORS:
            t, f = _full(n, True), _full(n, True)  # incomparable bounds: do not prune
        return pc.and_(has_value, t), pc.and_(has_value, f)

    def leaf(self, tree: Node, col: _Col) -> Pair:
        if tree[0] == "in":
            return _in(col, tree[2], tree[3], self.n)
        return _cmp(tree[1], col, tree[3], tree[4], self.n)


def may_match_mask(tree: Node, files: pa.Table, schema: pa.Schema, partition_columns: list[str]) -> pa.Array:
    """Per row of `files` (a `add_actions.file_table`): FALSE only when no row of that file can match."""
    return _Evaluator(files, schema, partition_columns).node(tree)[0]
