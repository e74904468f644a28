"""Delta `add.stats` of a file Spark wrote, from its parquet footer (no data is read).

Parquet keeps per row group and per leaf column the min, max and null count. Folding them over the
row groups gives the file's numRecords / minValues / maxValues / nullCount, which this module writes
exactly as the engine's `compute_stats` does for data in memory:

- the first `delta.dataSkippingNumIndexedCols` (32) leaf columns of the data file (partition
  columns excluded), depth first through structs; arrays and maps get nothing;
- nullCount for every indexed leaf; min/max for numbers, dates, timestamps and strings only;
- strings truncated to 32 characters, the max then followed by a successor character;
- timestamps in milliseconds (`...T01:02:03.456Z` for zoned columns, no zone for TIMESTAMP_NTZ);
- decimals as exact JSON numbers.

A bound is written only when every row group that holds values has one; otherwise it is left out
(unknown = "the file may match"), which keeps data skipping sound. Floating-point columns: parquet
writers order NaN above every number, so a file holding a NaN has a NaN bound; such bounds are left
out, as the engine does (a predicate such as `x > 1` is true for NaN in Spark SQL). Timestamps need
`spark.sql.parquet.outputTimestampType=TIMESTAMP_MICROS` when written: INT96 has no statistics.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import uuid
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_txnlog.engine import STRING_PREFIX


@dataclass(frozen=True)
class _Exact:
    """A number to write into the JSON exactly as `text` (decimals must not pass through float)."""

    text: str


@dataclass
class _Leaf:
    """A leaf column folded over the row groups."""

    lo: Any = None
    hi: Any = None
    bounded: bool = True  # every row group with values had min/max
    nulls: int | None = 0
    seen: bool = field(default=False)


def _fold(md: pq.FileMetaData) -> dict[str, _Leaf]:
    leaves: dict[str, _Leaf] = {}
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        for i in range(rg.num_columns):
            chunk = rg.column(i)
            leaf = leaves.setdefault(chunk.path_in_schema, _Leaf())
            s = chunk.statistics
            if s is None or not s.has_null_count:
                leaf.nulls = None
            elif leaf.nulls is not None:
                leaf.nulls += s.null_count
            if s is not None and s.has_null_count and s.null_count >= rg.num_rows:
                continue  # only nulls in this row group: it bounds nothing
            if s is None or not s.has_min_max:
                leaf.bounded = False
                continue
            lo, hi = s.min, s.max
            if _is_nan(lo) or _is_nan(hi):
                leaf.bounded = False  # NaN orders above every number: no usable bound
                continue
            leaf.lo = lo if not leaf.seen or lo < leaf.lo else leaf.lo
            leaf.hi = hi if not leaf.seen or hi > leaf.hi else leaf.hi
            leaf.seen = True
    return leaves


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


def _truncate_max(s: str) -> str:
    if len(s) <= STRING_PREFIX:
        return s
    return s[:STRING_PREFIX] + ("\x7f" if ord(s[STRING_PREFIX]) < 0x7F else "\U0010ffff")


def _fmt_ts(value: dt.datetime, zoned: bool) -> str:
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    text = value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}"
    return text + "Z" if zoned else text


def _bounds(t: pa.DataType, lo: Any, hi: Any) -> tuple[Any, Any] | None:
    """The JSON bounds of one column (None when the type has none or they are unusable)."""
    if pa.types.is_floating(t):
        return float(lo), float(hi)
    if pa.types.is_integer(t):
        return int(lo), int(hi)
    if pa.types.is_decimal(t):
        if not isinstance(lo, decimal.Decimal) or not isinstance(hi, decimal.Decimal):
            return None
        return _Exact(str(lo)), _Exact(str(hi))
    if pa.types.is_date(t):
        return lo.isoformat(), hi.isoformat()
    if pa.types.is_timestamp(t):
        return _fmt_ts(lo, t.tz is not None), _fmt_ts(hi, t.tz is not None)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        try:
            lo_s = lo if isinstance(lo, str) else bytes(lo).decode()
            hi_s = hi if isinstance(hi, str) else bytes(hi).decode()
        except (UnicodeDecodeError, TypeError):
            return None
        return lo_s[:STRING_PREFIX], _truncate_max(hi_s)
    return None


def _collect(
    f: pa.Field, path: str, leaves: dict[str, _Leaf], budget: list[int], out: dict[str, dict[str, Any]]
) -> None:
    if pa.types.is_struct(f.type):
        nested: dict[str, dict[str, Any]] = {"min": {}, "max": {}, "null": {}}
        for i in range(f.type.num_fields):
            if budget[0] <= 0:
                break
            child = f.type.field(i)
            _collect(child, f"{path}.{child.name}", leaves, budget, nested)
        for key in ("min", "max", "null"):
            if nested[key]:
                out[key][f.name] = nested[key]
        return
    if pa.types.is_list(f.type) or pa.types.is_large_list(f.type) or pa.types.is_map(f.type):
        return
    budget[0] -= 1
    leaf = leaves.get(path)
    if leaf is None:
        return
    if leaf.nulls is not None:
        out["null"][f.name] = leaf.nulls
    if leaf.bounded and leaf.seen:
        b = _bounds(f.type, leaf.lo, leaf.hi)
        if b is not None:
            out["min"][f.name], out["max"][f.name] = b


def footer_stats(md: pq.FileMetaData, file_schema: pa.Schema, *, num_indexed_cols: int = 32) -> str:
    """The stats JSON of a data file from its footer; `file_schema` is the table schema minus the
    partition columns (its leaf names are the footer's column paths)."""
    leaves = _fold(md)
    out: dict[str, dict[str, Any]] = {"min": {}, "max": {}, "null": {}}
    budget = [num_indexed_cols if num_indexed_cols >= 0 else 1 << 30]
    for f in file_schema:
        if budget[0] <= 0:
            break
        _collect(f, f.name, leaves, budget, out)
    doc = {
        "numRecords": md.num_rows,
        "minValues": out["min"],
        "maxValues": out["max"],
        "nullCount": out["null"],
    }
    return _dumps(doc)


def _dumps(doc: dict[str, Any]) -> str:
    """Compact JSON (as the engine writes it) with `_Exact` numbers spliced in verbatim."""
    token = uuid.uuid4().hex
    exact: list[str] = []

    def placeholder(o: object) -> str:
        if isinstance(o, _Exact):
            exact.append(o.text)
            return f"{token}:{len(exact) - 1}"
        raise TypeError(f"cannot write {type(o).__name__} into stats")

    text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=placeholder)
    for i, number in enumerate(exact):
        text = text.replace(f'"{token}:{i}"', number, 1)
    return text
