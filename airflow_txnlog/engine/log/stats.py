"""Per-file statistics in the Delta `add.stats` format, shared by every writer of this package.

`{"numRecords": n, "minValues": {...}, "maxValues": {...}, "nullCount": {...}}`, nested like the
schema. Which leaf columns get stats (`indexed_leaves`):

- `delta.dataSkippingStatsColumns` when set (comma-separated names, `a.b` for a nested field, parts
  with dots or commas quoted in backticks, matched case-insensitively; a struct stands for all its
  leaves): exactly those. It replaces `delta.dataSkippingNumIndexedCols`. Names that match no data
  column (partition columns, dropped columns) are ignored: a write never fails on them.
- otherwise the first `delta.dataSkippingNumIndexedCols` (default 32, -1: all) leaves, depth first.

Arrays and maps never get stats; a variant column is one leaf with a nullCount only (PROTOCOL.md
"Variant Data Type": bounds need shredding). nullCount for every indexed leaf; min/max only for
numbers, dates, timestamps and strings (`json_bounds`), in the forms Spark writes and every Delta
reader parses:

- strings truncated to 32 characters; the max then gets a successor character so it still bounds
  the real max;
- timestamps in milliseconds, `yyyy-MM-ddTHH:mm:ss.SSSZ` (UTC) or without `Z` for timestamp_ntz, the
  year always four digits (`0999-...`); a reader must widen a max by 1 ms;
- decimals as exact JSON numbers in plain notation (`0.0000000000`, never `0E-10`, which delta-rs
  misreads and then skips the file);
- no bounds for a float column holding NaN (Spark orders NaN above every number).

`compute_stats` builds on `indexed_leaves`, `json_bounds` and `stats_json`; every writer of the
project (the engine's, and Spark's through the `txnlog` data source) computes stats with it.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from airflow_txnlog.engine import properties as props
from airflow_txnlog.engine.errors import InvalidArgumentError
from airflow_txnlog.engine.schema import is_variant

STRING_PREFIX = 32
LeafPath = tuple[str, ...]
"""A leaf column as the names from the top-level column down (`("s", "x")` for `s.x`)."""
LeafStats = tuple[LeafPath, int | None, tuple[Any, Any] | None]
"""One leaf's entry for `stats_json`: its path, null count and JSON (min, max); None = unknown."""


# ---------------------------------------------------------------- which columns
def stats_columns(conf: Mapping[str, str]) -> list[LeafPath] | None:
    """Column paths of `delta.dataSkippingStatsColumns` (None when unset or naming no column)."""
    raw = conf.get(props.STATS_COLUMNS)
    if raw is None or not str(raw).strip():
        return None
    paths = [_column_path(item, str(raw)) for item in _split_unquoted(str(raw), ",") if item.strip()]
    return paths or None


def _split_unquoted(text: str, sep: str) -> list[str]:
    """`text` split at `sep` outside backtick quotes (a doubled backtick inside quotes is one)."""
    parts, current, quoted = [], "", False
    for ch in text:
        if ch == "`":
            quoted = not quoted  # a doubled backtick toggles twice: still inside the same quote
        if ch == sep and not quoted:
            parts.append(current)
            current = ""
        else:
            current += ch
    if quoted:
        raise InvalidArgumentError(f"{props.STATS_COLUMNS}: unclosed backtick in {text!r}")
    return [*parts, current]


def _column_path(item: str, whole: str) -> LeafPath:
    path = []
    for part in _split_unquoted(item.strip(), "."):
        name = part.strip()
        if name.startswith("`") and name.endswith("`") and len(name) >= 2:
            name = name[1:-1].replace("``", "`")
        elif "`" in name:
            raise InvalidArgumentError(f"{props.STATS_COLUMNS}: misplaced backtick in {item!r} of {whole!r}")
        if not name:
            raise InvalidArgumentError(f"{props.STATS_COLUMNS}: empty column name in {item!r} of {whole!r}")
        path.append(name)
    return tuple(path)


def _leaves(fields: Iterable[pa.Field], prefix: LeafPath) -> Iterable[tuple[LeafPath, pa.Field]]:
    for f in fields:
        path = (*prefix, f.name)
        if is_variant(f.type):
            yield path, f  # one leaf: nullCount only (PROTOCOL.md: no bounds without shredding)
        elif pa.types.is_struct(f.type):
            yield from _leaves((f.type.field(i) for i in range(f.type.num_fields)), path)
        elif not (pa.types.is_list(f.type) or pa.types.is_large_list(f.type) or pa.types.is_map(f.type)):
            yield path, f  # Delta collects no stats for arrays and maps


def indexed_leaves(
    schema: pa.Schema, *, num_indexed_cols: int = 32, stats_columns: Sequence[LeafPath] | None = None
) -> list[tuple[LeafPath, pa.Field]]:
    """The leaf columns of a data file's `schema` that get stats, depth first, with their fields."""
    leaves = list(_leaves(schema, ()))
    if stats_columns is not None:
        wanted = {tuple(p.lower() for p in path) for path in stats_columns}
        # A listed struct stands for every leaf under it: match any prefix of the leaf's path.
        return [
            (path, f)
            for path, f in leaves
            if any(tuple(p.lower() for p in path[:i]) in wanted for i in range(1, len(path) + 1))
        ]
    return leaves if num_indexed_cols < 0 else leaves[:num_indexed_cols]


# ---------------------------------------------------------------- how values are written
def format_timestamp(value: dt.datetime, zoned: bool) -> str:
    """A timestamp bound in milliseconds (`Z`: UTC, for zoned columns), year always 4 digits."""
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    # isoformat pads the year (strftime("%Y") gives "999") and truncates to the millisecond.
    text = value.isoformat(timespec="milliseconds")
    return text + "Z" if zoned else text


def _truncate_max(s: str) -> str:
    if len(s) <= STRING_PREFIX:
        return s
    return s[:STRING_PREFIX] + ("\x7f" if ord(s[STRING_PREFIX]) < 0x7F else "\U0010ffff")


def has_bounds(t: pa.DataType) -> bool:
    """Whether min/max stats are written for a column of this type."""
    return bool(
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_decimal(t)
        or pa.types.is_date(t)
        or pa.types.is_timestamp(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
    )


def json_bounds(t: pa.DataType, lo: Any, hi: Any) -> tuple[Any, Any] | None:
    """(min, max) of a column of type `t` as stats JSON values; None when they cannot bound soundly."""
    if lo is None or hi is None or not has_bounds(t):
        return None
    if pa.types.is_floating(t):
        lo, hi = float(lo), float(hi)
        return None if math.isnan(lo) or math.isnan(hi) else (lo, hi)
    if pa.types.is_integer(t):
        return int(lo), int(hi)
    if pa.types.is_decimal(t):
        if not isinstance(lo, decimal.Decimal) or not isinstance(hi, decimal.Decimal):
            return None
        # Exact text, plain notation: a float could fall inside the data's range, and `0E-10`
        # makes delta-rs skip the file for `dec = 0`.
        return orjson.Fragment(format(lo, "f").encode()), orjson.Fragment(format(hi, "f").encode())
    if pa.types.is_date(t):
        return lo.isoformat(), hi.isoformat()
    if pa.types.is_timestamp(t):
        return format_timestamp(lo, t.tz is not None), format_timestamp(hi, t.tz is not None)
    try:
        lo_s = lo if isinstance(lo, str) else bytes(lo).decode()
        hi_s = hi if isinstance(hi, str) else bytes(hi).decode()
    except (UnicodeDecodeError, TypeError):
        return None
    return lo_s[:STRING_PREFIX], _truncate_max(hi_s)


def stats_json(num_records: int, leaves: Iterable[LeafStats]) -> str:
    """The `add.stats` string: entries nested by their paths; None counts or bounds are left out."""
    doc: dict[str, dict[str, Any]] = {"minValues": {}, "maxValues": {}, "nullCount": {}}
    for path, nulls, bounds in leaves:
        if nulls is not None:
            _put(doc["nullCount"], path, nulls)
        if bounds is not None:
            _put(doc["minValues"], path, bounds[0])
            _put(doc["maxValues"], path, bounds[1])
    return orjson.dumps({"numRecords": num_records, **doc}).decode()


def _put(target: dict[str, Any], path: LeafPath, value: Any) -> None:
    for name in path[:-1]:
        target = target.setdefault(name, {})
    target[path[-1]] = value


# ---------------------------------------------------------------- stats of data in memory
_UNBOUNDED = "unbounded"  # (a leaf whose bounds cannot be known: NaN, out-of-range years)
Bounds = tuple[Any, Any] | str | None  # (min, max) as Python values, _UNBOUNDED, or None: no value


def _raw_min_max(arr: pa.ChunkedArray | pa.Array) -> Bounds:
    """The leaf's (min, max) as Python values; None: no value (all null, or no bounds for the type);
    _UNBOUNDED: values whose bounds cannot be written."""
    t = arr.type
    if not has_bounds(t) or arr.null_count == len(arr):
        return None
    if pa.types.is_floating(t) and pc.any(pc.is_nan(arr)).as_py():
        return _UNBOUNDED  # min_max skips NaN, but Spark orders NaN above every number: no safe bounds
    try:
        mm = pc.min_max(arr).as_py()
    except (ValueError, OverflowError):
        return _UNBOUNDED  # a date or timestamp beyond Python's years 1..9999
    return mm["min"], mm["max"]


class StatsAccumulator:
    """The stats of a file written piece by piece (a rewrite streaming a bin): `add` each piece as
    it is written, `json()` at the end gives what `compute_stats` gives for all the pieces at once
    (null counts summed, bounds the min of the minima and the max of the maxima, truncated once)."""

    def __init__(
        self,
        schema: pa.Schema,
        *,
        num_indexed_cols: int = 32,
        stats_columns: Sequence[LeafPath] | None = None,
    ) -> None:
        leaves = indexed_leaves(schema, num_indexed_cols=num_indexed_cols, stats_columns=stats_columns)
        self.leaves = [(path, f.type) for path, f in leaves]
        self.rows = 0
        self.nulls: dict[LeafPath, int] = dict.fromkeys((p for p, _ in self.leaves), 0)
        self.bounds: dict[LeafPath, Bounds] = dict.fromkeys(self.nulls)

    def add(self, data: pa.Table) -> None:
        cache: dict[LeafPath, Any] = {}
        self.rows += data.num_rows
        for path, _ in self.leaves:
            arr = _leaf_array(data, path, cache)
            self.nulls[path] += arr.null_count
            self.bounds[path] = _merged(self.bounds[path], _raw_min_max(arr))

    def json(self) -> str:
        entries: list[LeafStats] = []
        for path, t in self.leaves:
            raw = self.bounds[path]
            bounds = json_bounds(t, *raw) if isinstance(raw, tuple) else None
            entries.append((path, self.nulls[path], bounds))
        return stats_json(self.rows, entries)


def _merged(a: Bounds, b: Bounds) -> Bounds:
    if isinstance(a, str) or isinstance(b, str):  # (_UNBOUNDED: one piece had no safe bounds)
        return _UNBOUNDED
    if not isinstance(a, tuple) or not isinstance(b, tuple):
        return a if isinstance(a, tuple) else b
    return min(a[0], b[0]), max(a[1], b[1])


def _leaf_array(data: pa.Table, path: LeafPath, cache: dict[LeafPath, Any]) -> Any:
    """The values of leaf `path`; a null struct makes its fields null (as parquet's levels do)."""
    if path in cache:
        return cache[path]
    if len(path) == 1:
        arr = data.column(path[0])
    else:
        parent = _leaf_array(data, path[:-1], cache)
        combined = parent.combine_chunks() if isinstance(parent, pa.ChunkedArray) else parent
        arr = combined.flatten()[combined.type.get_field_index(path[-1])]
    cache[path] = arr
    return arr


def compute_stats(
    data: pa.Table, *, num_indexed_cols: int = 32, stats_columns: Sequence[LeafPath] | None = None
) -> str:
    """The stats JSON string for a data file holding exactly `data` (partition columns excluded)."""
    acc = StatsAccumulator(data.schema, num_indexed_cols=num_indexed_cols, stats_columns=stats_columns)
    acc.add(data)
    return acc.json()
