"""Per-file statistics in the Delta `add.stats` format, and their typed reading for data skipping.

`{"numRecords": n, "minValues": {...}, "maxValues": {...}, "nullCount": {...}}`, nested like the
schema, for the first `delta.dataSkippingNumIndexedCols` (default 32) leaf columns. min/max only for
numbers, dates, timestamps and strings; strings are truncated to 32 characters (the max gets a
successor character so it still bounds the real max); timestamps are written in milliseconds, so a
reader must widen a timestamp max by 1 ms.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

STRING_PREFIX = 32


def _truncate_max(s: str) -> str:
    if len(s) <= STRING_PREFIX:
        return s
    nxt = s[STRING_PREFIX]
    return s[:STRING_PREFIX] + ("\x7f" if ord(nxt) < 0x7F else "\U0010ffff")


def _fmt_ts(value: dt.datetime, tz: bool) -> str:
    text = value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}"
    return text + "Z" if tz else text


def _min_max(arr: pa.ChunkedArray | pa.Array) -> tuple[Any, Any] | None:
    t = arr.type
    if not (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_decimal(t)
        or pa.types.is_date(t)
        or pa.types.is_timestamp(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
    ):
        return None
    if arr.null_count == len(arr):
        return None
    mm = pc.min_max(arr).as_py()
    lo, hi = mm["min"], mm["max"]
    if pa.types.is_floating(t) and (math.isnan(lo) or math.isnan(hi) or pc.any(pc.is_nan(arr)).as_py()):
        return None  # min_max skips NaN, but Spark orders NaN above every number: no safe bounds
    if pa.types.is_decimal(t):  # exact decimal text: a float could fall inside the data's range
        return orjson.Fragment(str(lo).encode()), orjson.Fragment(str(hi).encode())
    if pa.types.is_date(t):
        return lo.isoformat(), hi.isoformat()
    if pa.types.is_timestamp(t):
        if t.tz is not None:
            lo, hi = lo.astimezone(dt.UTC), hi.astimezone(dt.UTC)
        return _fmt_ts(lo, t.tz is not None), _fmt_ts(hi, t.tz is not None)
    if isinstance(lo, str):
        return lo[:STRING_PREFIX], _truncate_max(hi)
    return lo, hi


def _collect(arr: Any, f: pa.Field, budget: list[int], out: dict[str, dict[str, Any]]) -> None:
    if pa.types.is_struct(f.type):
        nested: dict[str, dict[str, Any]] = {"min": {}, "max": {}, "null": {}}
        combined = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
        children = combined.flatten()
        for i in range(f.type.num_fields):
            if budget[0] <= 0:
                break
            _collect(children[i], f.type.field(i), budget, nested)
        for key, target in (("min", "min"), ("max", "max"), ("null", "null")):
            if nested[key]:
                out[target][f.name] = nested[key]
        return
    if pa.types.is_list(f.type) or pa.types.is_large_list(f.type) or pa.types.is_map(f.type):
        return  # Delta collects no stats for arrays and maps
    budget[0] -= 1
    out["null"][f.name] = arr.null_count
    mm = _min_max(arr)
    if mm is not None:
        out["min"][f.name], out["max"][f.name] = mm


def compute_stats(data: pa.Table, *, num_indexed_cols: int = 32) -> str:
    """The stats JSON string for a data file holding exactly `data` (partition columns excluded)."""
    out: dict[str, dict[str, Any]] = {"min": {}, "max": {}, "null": {}}
    budget = [num_indexed_cols if num_indexed_cols >= 0 else 1 << 30]
    for i, f in enumerate(data.schema):
        if budget[0] <= 0:
            break
        _collect(data.column(i), f, budget, out)
    return orjson.dumps(
        {
            "numRecords": data.num_rows,
            "minValues": out["min"],
            "maxValues": out["max"],
            "nullCount": out["null"],
        }
    ).decode()
