"""Checkpoint stats in both of the protocol's forms: the JSON string `add.stats` and the typed struct
`add.stats_parsed`.

- `add_stats_json` gives each checkpoint add row's JSON stats, rendering `stats_parsed` (column-wise,
  in Arrow) where another writer left `stats` null, so stats never fall out of a later checkpoint,
  a savepoint manifest or a restore. Rendering matches the engine's stats writer: timestamps floored
  to milliseconds with four-digit years (`Z` only for zoned columns), decimals in plain notation,
  NaN/infinity dropped, strings JSON-escaped.
- `stats_parsed_type(metadata)` is the struct a checkpoint writes under
  `delta.checkpoint.writeStatsAsStruct=true`: numRecords, minValues/maxValues in each stats column's
  own type, nullCount with long leaves, tightBounds; partition columns, arrays and maps are left out,
  and the columns follow `delta.dataSkippingStatsColumns` or `dataSkippingNumIndexedCols`.
- `parse_stats` builds that struct from the JSON strings in bulk (`stats_decode`: arrow-rs's JSON
  decoder, Arrow C++'s where it refuses), falling back row by row (dropping only values that do not
  fit) when the bulk read refuses a line. The
  decoder gets the strings' own values buffer, no copy (`_document`), when its objects can only be the
  lines, one each: every line starts with `{` and ends with `}` (JSON whitespace around them is
  trimmed first, a copy), none holds a `}` followed before any quote by a `{` (two objects), and the
  reader finds exactly as many objects as lines (an object spread over two lines makes one less).
  Anything else is parsed line by line: a line can never take another line's stats. More lines than
  two pieces of `_PIECE_ROWS` are decoded piece by piece on two threads (the decoder runs on one).
"""

from __future__ import annotations

import decimal
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from airflow_txnlog.engine import properties as props
from airflow_txnlog.engine.errors import InvalidArgumentError
from airflow_txnlog.engine.log.actions import STATS_PARSED, Metadata
from airflow_txnlog.engine.log.stats import LeafPath, has_bounds, indexed_leaves, stats_columns
from airflow_txnlog.engine.log.stats_decode import decode
from airflow_txnlog.engine.log.thread_pools import stats_decodes
from airflow_txnlog.engine.schema import is_variant, schema_from_json


def may_contain(strings: pa.Array, *needles: bytes) -> bool:
    """False only if no value of a string array contains any of `needles`: a scan per needle of the
    values buffer in place (no copy), the whole of it (bytes outside a slice can only make this say
    True)."""
    if len(strings) == 0:
        return False
    if not (pa.types.is_string(strings.type) or pa.types.is_large_string(strings.type)):
        return True
    data = strings.buffers()[2]
    if data is None:
        return False
    view = np.frombuffer(data, np.uint8)  # (in place: `bytes.find` would need a copy)
    for needle in needles:
        # A needle's last byte is scanned for (vectorized, ~6x `re` on a million paths); only if
        # it occurs is the needle itself searched for.
        if _has_byte(view, needle[-1]) and (
            len(needle) == 1 or re.search(re.escape(needle), memoryview(data)) is not None
        ):
            return True
    return False


# Bytes compared at a time, into one temporary reused for every chunk: a fresh process pays a page
# fault per 4 KB of new memory, and a 4 MB temporary cost a 100k-file open ~3 ms. (Smaller chunks
# are slower on a million paths: 256 KB took 15 ms for two needles where 1 MB takes 9.7 ms.)
_SCAN_CHUNK = 1 << 20


def _has_byte(view: np.ndarray, byte: int) -> bool:
    hits = np.empty(min(len(view), _SCAN_CHUNK), np.bool_)
    for i in range(0, len(view), _SCAN_CHUNK):
        chunk = view[i : i + _SCAN_CHUNK]
        if np.equal(chunk, byte, out=hits[: len(chunk)]).any():
            return True
    return False


def field_names(t: pa.StructType) -> set[str]:
    return {t.field(i).name for i in range(t.num_fields)}


_NULL_TEXT = pa.nulls(1, pa.string())[0]  # (pa.scalar would import pandas, via pyarrow)


def _with_python(text: pa.Array, mask: pa.Array, source: pa.Array, fix: Callable[[Any], str]) -> pa.Array:
    """`text` with the (few) rows in `mask` replaced by `fix` of the same row of `source`."""
    mask = pc.fill_null(mask, False)
    if not pc.any(mask).as_py():
        return text
    fixed = [fix(v) for v in source.filter(mask).to_pylist()]
    return pc.replace_with_mask(text, mask, pa.array(fixed, pa.string()))


def _string_text(arr: pa.Array) -> pa.Array:
    s = arr.cast(pa.string())
    escaped = pc.replace_substring(pc.replace_substring(s, "\\", "\\\\"), '"', '\\"')
    text = pc.binary_join_element_wise('"', escaped, '"', "")
    # Control characters need \u escapes: rare in bounds, so orjson writes those rows.
    odd = pc.match_substring_regex(s, r"[\x00-\x1f]")
    return _with_python(text, odd, s, lambda v: orjson.dumps(v).decode())


def _plain_decimal(text: str) -> str:
    return format(decimal.Decimal(text), "f")


def _leaf_text(arr: pa.Array) -> pa.Array | None:
    """JSON text of each value of a stats leaf (null where null), None for a type stats do not hold."""
    t = arr.type
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        return arr.cast(pa.string())
    if pa.types.is_floating(t):  # a NaN or infinite bound bounds nothing
        # A float32 as its exact double value (1.100000023841858, not 1.1), as our stats writer does.
        return pc.if_else(pc.is_finite(arr), arr.cast(pa.float64()).cast(pa.string()), _NULL_TEXT)
    if pa.types.is_decimal(t):  # the exact value, in plain notation (Arrow writes 0E-10 for 0 at scale 10)
        text = arr.cast(pa.string())
        plain = _with_python(
            text, pc.match_substring(text, "E"), text, lambda v: format(decimal.Decimal(v), "f")
        )
        return plain
    if pa.types.is_date(t):
        return pc.binary_join_element_wise('"', arr.cast(pa.string()), '"', "")
    if pa.types.is_timestamp(t):  # milliseconds, as Delta writes them (readers widen a max by 1 ms)
        if t.tz is not None:
            arr = arr.cast(pa.timestamp(t.unit, "UTC"))
        ms = pc.floor_temporal(arr, unit="millisecond").cast(pa.timestamp("ms", arr.type.tz))
        text = pc.strftime(ms, format="%Y-%m-%dT%H:%M:%S")
        return pc.binary_join_element_wise('"', text, 'Z"' if t.tz is not None else '"', "")
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return _string_text(arr)
    return None


def struct_json(arr: pa.StructArray) -> pa.Array:
    """The JSON object text of each row of a struct array (the `add.stats` form of `add.stats_parsed`)."""
    members = []
    for i, child in enumerate(arr.flatten()):  # (flatten: a null parent makes its children null)
        text = struct_json(child) if pa.types.is_struct(child.type) else _leaf_text(child)
        if text is not None:
            key = "," + orjson.dumps(arr.type.field(i).name).decode() + ":"
            members.append(pc.fill_null(pc.binary_join_element_wise(key, text, ""), ""))
    if not members:
        return pa.nulls(len(arr), pa.string())
    body = pc.binary_join_element_wise(*members, "") if len(members) > 1 else members[0]
    text = pc.binary_join_element_wise("{", pc.utf8_slice_codeunits(body, 1), "}", "")
    return pc.if_else(pc.equal(body, ""), _NULL_TEXT, text)


def add_stats_json(adds: pa.StructArray) -> pa.Array:
    """Per checkpoint add row its stats JSON: `stats`, or where a writer left only `stats_parsed`, that."""
    names = field_names(adds.type)
    stats = adds.field("stats").cast(pa.string()) if "stats" in names else pa.nulls(len(adds), pa.string())
    if STATS_PARSED not in names:
        return stats
    parsed = adds.field(STATS_PARSED)
    missing = pc.and_(pc.is_null(stats), pc.is_valid(parsed))
    if not pc.any(missing).as_py():
        return stats
    return pc.replace_with_mask(stats, missing, struct_json(parsed.filter(missing)))


# ----------------------------------------------------------------------------- stats: JSON -> struct
def _stats_leaves(data: list[pa.Field], conf: Mapping[str, str]) -> set[LeafPath]:
    """The leaf paths the stats writer collects stats for (engine.log.stats.indexed_leaves, same rule)."""
    try:
        count, named = props.num_indexed_cols(conf), stats_columns(conf)
    except InvalidArgumentError:
        count, named = -1, None  # a malformed value: a superset of the stats any writer collected
    return {path for path, _ in indexed_leaves(pa.schema(data), num_indexed_cols=count, stats_columns=named)}


def _stats_fields(
    fields: list[pa.Field], path: LeafPath, picked: set[LeafPath]
) -> tuple[list[pa.Field], list[pa.Field]]:
    """(minValues/maxValues fields, nullCount fields) of the stats columns among `fields`."""
    bounds: list[pa.Field] = []
    nulls: list[pa.Field] = []
    for f in fields:
        p = (*path, f.name)
        if pa.types.is_struct(f.type) and not is_variant(f.type):
            b, n = _stats_fields([f.type.field(i) for i in range(f.type.num_fields)], p, picked)
            if b:  # (parquet has no empty structs)
                bounds.append(pa.field(f.name, pa.struct(b)))
            if n:
                nulls.append(pa.field(f.name, pa.struct(n)))
        elif p in picked:
            nulls.append(pa.field(f.name, pa.int64()))
            if has_bounds(f.type):
                bounds.append(pa.field(f.name, f.type))
    return bounds, nulls


def stats_parsed_type(metadata: Metadata) -> pa.StructType:
    """The type of `add.stats_parsed` for a table: numRecords, then minValues / maxValues with each stats
    column's own type and nullCount with long leaves (nested like the schema), then tightBounds."""
    schema = schema_from_json(metadata.schema_string)
    parts = set(metadata.partition_columns)
    data = [f for f in schema if f.name not in parts]
    bounds, nulls = _stats_fields(data, (), _stats_leaves(data, metadata.configuration))
    fields = [pa.field("numRecords", pa.int64())]
    if bounds:
        fields += [pa.field("minValues", pa.struct(bounds)), pa.field("maxValues", pa.struct(bounds))]
    if nulls:
        fields.append(pa.field("nullCount", pa.struct(nulls)))
    fields.append(pa.field("tightBounds", pa.bool_()))
    return pa.struct(fields)


def _json_readable(t: pa.DataType) -> pa.DataType:
    """`t` with date leaves as strings: Arrow's JSON reader converts strings to timestamps, not dates."""
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _json_readable(f.type)) for f in t])
    return pa.string() if pa.types.is_date(t) else t


# Between two top-level objects Arrow's JSON reader accepts only whitespace, so a line that holds
# two objects has a `}` followed, before any quote, by a `{`.
_TWO_OBJECTS = r'\}[^"]*\{'


def _document(lines: pa.Array) -> pa.Buffer | None:
    """The values buffer of `lines` as one JSON document, without a copy, when the objects Arrow's
    reader finds there can only be the non-null lines, one each, in order; None otherwise.

    Conditions: null lines hold no bytes, every other line starts with `{` and ends with `}`, and
    none matches `_TWO_OBJECTS`. Then an object can start only at the start of a line (anywhere
    else it follows a `}` and whitespace of the same line), so k lines give at most k objects; with
    exactly k (the caller checks the count) every line starts one, and it must end at the end of
    its line (a `}` after it, before the next object, would be a syntax error)."""
    n, data = len(lines), lines.buffers()[2]
    if n == lines.null_count or data is None or lines.type != pa.string():
        return None
    offsets = np.frombuffer(lines.buffers()[1], np.int32, n + 1, lines.offset * 4)
    starts, ends = offsets[:-1], offsets[1:]
    if lines.null_count:
        valid = lines.is_valid().to_numpy(zero_copy_only=False)
        if (ends[~valid] != starts[~valid]).any():
            return None
        starts, ends = starts[valid], ends[valid]
    raw = np.frombuffer(data, np.uint8)
    if not (ends > starts).all() or (raw[starts] != ord("{")).any() or (raw[ends - 1] != ord("}")).any():
        return None
    if pc.any(pc.match_substring_regex(lines, _TWO_OBJECTS)).as_py():
        return None
    return data.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))


def _scattered(parsed: pa.StructArray, lines: pa.Array) -> pa.StructArray:
    """`parsed` (one row per non-null line) spread over the lines: null where the line is."""
    if not lines.null_count:
        return parsed
    valid = lines.is_valid().to_numpy(zero_copy_only=False)
    return parsed.take(pa.array(np.cumsum(valid) - 1, pa.int64(), mask=~valid))


# Lines per piece of a large parse: the decoder runs on its caller's thread only, so a parse of more
# lines than two pieces (a long tail of JSON commits) is cut into pieces decoded side by side.
_PIECE_ROWS = 32_768


def _parse_pieces(lines: pa.Array, target: pa.StructType, *, complete: bool) -> pa.StructArray:
    """`_parse_bulk` of `lines` piece by piece: the first on this thread, the rest on the decode pool
    (`thread_pools.stats_decodes`); a piece refused refuses the whole (the caller then parses line
    by line, as for a refused batch)."""
    pool = stats_decodes()
    starts = range(0, len(lines), _PIECE_ROWS)
    rest = [
        pool.submit(_parse_bulk, lines.slice(i, _PIECE_ROWS), target, complete=complete) for i in starts[1:]
    ]
    try:
        pieces = [_parse_bulk(lines.slice(0, _PIECE_ROWS), target, complete=complete)]
        pieces.extend(f.result() for f in rest)
    finally:
        for f in rest:
            f.cancel()  # (after a refusal: pieces not yet started are not decoded)
    return pa.concat_arrays(pieces)


def _parse_bulk(lines: pa.Array, target: pa.StructType, *, complete: bool = False) -> pa.StructArray:
    """`stats_decode.decode` (`complete`: the strict read) over the lines' own buffer (`_document`;
    lines with JSON whitespace around their object are trimmed first, a copy); ArrowInvalid when
    the objects cannot be shown to be the lines, one each (the caller then parses line by line)."""
    if lines.null_count == len(lines):
        return pa.nulls(len(lines), target)
    if len(lines) > 2 * _PIECE_ROWS:
        return _parse_pieces(lines, target, complete=complete)
    doc = _document(lines)
    if doc is None:
        lines = pc.utf8_trim(lines, characters=" \t\n\r")  # (JSON's whitespace, no other)
        doc = _document(lines)
    if doc is None:
        raise pa.ArrowInvalid("stats lines that are not one JSON object each")
    raw = _json_readable(target)
    table = decode(doc, pa.schema(list(raw)), complete=complete, lines=lines)
    if table.num_rows != len(lines) - lines.null_count:
        raise pa.ArrowInvalid(f"{table.num_rows} stats objects parsed from {len(lines)} lines")
    children = [c.combine_chunks() if c.num_chunks != 1 else c.chunk(0) for c in table.columns]
    return conform_struct(_scattered(pa.StructArray.from_arrays(children, fields=list(raw)), lines), target)


def _leaf(value: Any, t: pa.DataType) -> Any:
    """A JSON stats value as a value of type `t`, or None where it does not fit the column's type."""
    if value is None or isinstance(value, dict | list) or isinstance(value, bool) != pa.types.is_boolean(t):
        return None
    try:
        if pa.types.is_decimal(t):
            return pa.scalar(decimal.Decimal(str(value))).cast(t).as_py()
        if isinstance(value, decimal.Decimal) or (isinstance(value, int) and pa.types.is_floating(t)):
            value = float(value)  # (correctly rounded, as a float parse of the same text)
        out = pa.scalar(value).cast(t).as_py()
    except (pa.ArrowException, ArithmeticError, ValueError, TypeError):
        return None
    return None if isinstance(out, float) and not math.isfinite(out) else out


def _coerce(value: Any, t: pa.DataType) -> Any:
    if pa.types.is_struct(t):
        if not isinstance(value, dict):
            return None
        return {f.name: _coerce(value.get(f.name), f.type) for f in t}
    return _leaf(value, t)


def _wide_decimals(t: pa.DataType) -> bool:
    """Whether `t` has a decimal leaf with more digits than a double keeps."""
    if pa.types.is_struct(t):
        return any(_wide_decimals(f.type) for f in t)
    return bool(pa.types.is_decimal(t) and t.precision > 15)


def _loads_exact(line: str) -> Any:
    """A stats line with its fractions as decimals (as Arrow's reader and the per-file path read
    them): through a double, a decimal(20,2) bound would lose digits and be widened, so the two paths
    would prune differently."""
    return json.loads(line, parse_float=decimal.Decimal)


def _parse_rows(lines: list[str], target: pa.StructType) -> pa.StructArray:
    """The slow path, for stats that do not fit the schema's types (e.g. "NaN" for a double): each
    value that does not fit is dropped, the rest of the file's stats kept."""
    loads = _loads_exact if _wide_decimals(target) else orjson.loads
    rows = []
    for line in lines:
        try:
            rows.append(_coerce(loads(line), target))
        except (ValueError, RecursionError):  # (JSONDecodeErrors are ValueErrors; json.loads
            rows.append(None)  # raises RecursionError on deep nesting, where orjson refuses it)
    return pa.array(rows, type=target)


def parse_stats(stats: pa.Array, target: pa.StructType) -> pa.StructArray:
    """`stats_parsed` of type `target` for a column of stats JSON strings (null where the JSON is)."""
    text = stats.cast(pa.string())
    try:
        parsed = _parse_bulk(text, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        parsed = _parse_rows(pc.fill_null(text, "{}").to_pylist(), target)
    mask = pc.or_(pc.is_null(text), pc.is_null(parsed))  # (a row whose JSON is unreadable has no stats)
    return pa.StructArray.from_arrays(parsed.flatten(), fields=list(target), mask=mask)


# ----------------------------------------------------------------------------- write: rows
def conform_struct(arr: pa.StructArray | None, target: pa.StructType) -> pa.StructArray:
    """Project a struct array read from any writer onto our checkpoint struct type."""
    if arr is None:
        return pa.array([], type=target)
    children = {arr.type.field(i).name: child for i, child in enumerate(arr.flatten())}
    fields = [target.field(i) for i in range(target.num_fields)]
    out = []
    for f in fields:
        child = children.get(f.name)
        if child is None:
            out.append(pa.nulls(len(arr), f.type))
        elif pa.types.is_struct(f.type):
            out.append(conform_struct(child, f.type))
        else:
            out.append(child if child.type == f.type else child.cast(f.type))
    return pa.StructArray.from_arrays(out, fields=fields, mask=pc.invert(arr.is_valid()))


# ----------------------------------------------------------------------------- read: exact floats
def _widened(t: pa.DataType) -> pa.DataType:
    """`t` with float32 leaves as float64."""
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _widened(f.type)) for f in t])
    return pa.float64() if pa.types.is_floating(t) and t.bit_width < 64 else t


def reads_exactly(target: pa.StructType) -> bool:
    """Do `parse_stats` and `parse_stats_exact` give the same struct for `target`? (They differ only
    in float32 leaves, rounded once or twice.)"""
    return bool(_widened(target) == target)


def parse_stats_complete(stats: pa.Array, target: pa.StructType) -> pa.StructArray | None:
    """`parse_stats_exact` when the struct holds everything the JSON says: every line read in bulk,
    every value of its column's type, no key (at any depth) that `target` lacks; None otherwise. Then
    `struct_json` renders each line back to the same stats (as `add_stats_json` renders a
    checkpoint's `stats_parsed`: numbers in shortest form, timestamps floored to milliseconds)."""
    text = stats.cast(pa.string())
    wide = _widened(target)
    try:
        parsed = _parse_bulk(text, wide, complete=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    parsed = pa.StructArray.from_arrays(parsed.flatten(), fields=list(wide), mask=pc.is_null(text))
    return parsed if wide == target else conform_struct(parsed, target)


def parse_stats_exact(stats: pa.Array, target: pa.StructType) -> pa.StructArray:
    """`parse_stats`, with float32 bounds read as doubles and then rounded to float32: the rounding
    data skipping applies to a JSON bound (`predicates.stats_value`), which a direct float32 parse
    differs from in rare double-rounding cases."""
    wide = _widened(target)
    parsed = parse_stats(stats, wide)
    return parsed if wide == target else conform_struct(parsed, target)
