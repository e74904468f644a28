"""The live files of a snapshot as one Arrow table, in delta-rs's `get_add_actions(flatten=True)` layout.

`file_table(base, tail, metadata)` builds it in bulk from the replayed state: the checkpoint's live add
rows (an Arrow struct array) and the JSON commits' adds (dicts, converted to Arrow once by pyarrow's
C++ converter). Columns, one row per live file, base rows first then tail adds (the order of
`Snapshot.files()`):

    path (decoded) | size_bytes | modification_time | data_change | num_records
    | null_count.<col> | min.<col> | max.<col>     (nested leaves dotted: min.s.x)
    | partitionValues (the raw string map; `typed_partitions` turns it into partition.<col>)

The stats columns follow `stats_struct.stats_parsed_type(metadata)` (each column's own type; the
columns the table's stats settings index). A row's stats come from the checkpoint's `stats_parsed`
where the writer left it (read as its JSON rendering says: non-finite floats dropped, timestamps
floored to ms), else from its JSON `stats`, parsed in bulk (`stats_struct.parse_stats_exact`).
Partition values are typed per distinct value with `schema.parse_partition_value` (hive null,
dates, timestamps, binary as UTF-8 as everywhere else), then spread to the rows with `take`: a table
has few distinct partition values, so this is the only Python work per value, never per file.
The one per-file Python step is decoding the rare percent-encoded path (`urllib.parse.unquote`).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc

from airflow_txnlog.engine.actions import STATS_PARSED, Metadata
from airflow_txnlog.engine.schema import parse_partition_value
from airflow_txnlog.engine.stats_struct import (
    conform_struct,
    field_names,
    parse_stats_exact,
    stats_parsed_type,
)

PARTITION_VALUES = "partitionValues"  # internal column: the raw partition value strings
_STR_MAP = pa.map_(pa.string(), pa.string())
_CORE = pa.struct(
    [
        ("path", pa.string()),
        (PARTITION_VALUES, _STR_MAP),
        ("size", pa.int64()),
        ("modificationTime", pa.int64()),
        ("dataChange", pa.bool_()),
        ("stats", pa.string()),
    ]
)
_STATS_PARTS = (("null_count", "nullCount"), ("min", "minValues"), ("max", "maxValues"))


def _core(base: pa.StructArray | None, tail: list[dict[str, Any]]) -> pa.StructArray:
    parts = [] if base is None else [conform_struct(base, _CORE)]
    # (missing keys become nulls, extra keys are ignored: pyarrow converts the dicts in C++)
    parts.append(pa.array(tail, type=_CORE))
    return pa.concat_arrays(parts) if len(parts) > 1 else parts[0]


def _decoded(paths: pa.Array) -> pa.Array:
    encoded = pc.fill_null(pc.match_substring(paths, "%"), False)
    if not pc.any(encoded).as_py():
        return paths
    fixed = [unquote(p) for p in paths.filter(encoded).to_pylist()]
    return pc.replace_with_mask(paths, encoded, pa.array(fixed, pa.string()))


def _as_json_says(arr: pa.Array) -> pa.Array:
    """A `stats_parsed` leaf as its JSON rendering (`stats_struct.struct_json`) says it: infinite or
    NaN floats dropped, timestamps floored to milliseconds, so both forms of stats bound alike."""
    t = arr.type
    if pa.types.is_struct(t):
        children = [_as_json_says(c) for c in arr.flatten()]
        return pa.StructArray.from_arrays(children, fields=list(t), mask=pc.invert(arr.is_valid()))
    if pa.types.is_floating(t):
        return pc.if_else(pc.is_finite(arr), arr, pa.nulls(1, t)[0])
    if pa.types.is_timestamp(t):
        return pc.floor_temporal(arr, unit="millisecond")
    return arr


def _stats(core: pa.StructArray, base: pa.StructArray | None, target: pa.StructType) -> pa.StructArray:
    """Typed stats per row: the checkpoint's `stats_parsed` where present, else the JSON parsed in bulk."""
    text = core.field("stats")
    parsed = None
    if base is not None and STATS_PARSED in field_names(base.type):
        try:
            typed = _as_json_says(conform_struct(base.field(STATS_PARSED), target))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            typed = None  # a writer's struct we cannot cast: its JSON stats are used instead
        if typed is not None:
            tail_nulls = pa.nulls(len(core) - len(base), target)
            parsed = pa.concat_arrays([typed, tail_nulls]) if len(tail_nulls) else typed
            text = pc.if_else(parsed.is_valid(), pa.nulls(1, pa.string())[0], text)
    from_json = parse_stats_exact(text, target)
    return from_json if parsed is None else pc.if_else(parsed.is_valid(), parsed, from_json)


def _flatten(arr: pa.StructArray, prefix: str) -> list[tuple[str, pa.Array]]:
    out: list[tuple[str, pa.Array]] = []
    for i, child in enumerate(arr.flatten()):  # flatten: a null parent makes its children null
        name = f"{prefix}.{arr.type.field(i).name}"
        out.extend(_flatten(child, name) if pa.types.is_struct(child.type) else [(name, child)])
    return out


def file_table(base: pa.StructArray | None, tail: list[dict[str, Any]], metadata: Metadata) -> pa.Table:
    """The live files as one table (see the module doc); `partitionValues` still raw strings."""
    core = _core(base, tail)
    target = stats_parsed_type(metadata)
    stats = _stats(core, base, target)
    by_name = dict(
        zip([target.field(i).name for i in range(target.num_fields)], stats.flatten(), strict=True)
    )
    cols: list[tuple[str, pa.Array]] = [
        ("path", _decoded(core.field("path"))),
        ("size_bytes", pc.fill_null(core.field("size"), 0)),
        ("modification_time", pc.fill_null(core.field("modificationTime"), 0)),
        ("data_change", pc.fill_null(core.field("dataChange"), True)),
        ("num_records", by_name["numRecords"]),
    ]
    for prefix, key in _STATS_PARTS:
        if key in by_name:
            cols.extend(_flatten(by_name[key], prefix))
    cols.append((PARTITION_VALUES, core.field(PARTITION_VALUES)))
    return pa.table(dict(cols))


def raw_partition(table: pa.Table, column: str) -> pa.Array:
    """Per file the partition value string of `column` (null where absent)."""
    values = table.column(PARTITION_VALUES)
    arr = values.chunk(0) if values.num_chunks == 1 else values.combine_chunks()
    if len(arr) == 0:
        return pa.array([], pa.string())
    return pc.map_lookup(arr, column, "first")


def parsed_partition(raw: pa.Array, t: pa.DataType) -> tuple[list[Any], pa.Array]:
    """(distinct values parsed with `parse_partition_value`, per-file index into them)."""
    encoded = raw.dictionary_encode()
    return [parse_partition_value(v, t) for v in encoded.dictionary.to_pylist()], encoded.indices


def typed_partition(raw: pa.Array, t: pa.DataType) -> pa.Array:
    """The partition values of one column in its type (raises for a value that is not of the type)."""
    if pa.types.is_string(t):
        return pc.if_else(pc.equal(raw, ""), pa.nulls(1, pa.string())[0], raw)
    values, indices = parsed_partition(raw, t)
    if pa.types.is_floating(t):  # a double rounded to the column's type, as a C cast does
        return pa.array(values, pa.float64()).cast(t).take(indices)
    return pa.array(values, t).take(indices)


def add_actions_table(files: pa.Table, schema: pa.Schema, partition_columns: list[str]) -> pa.Table:
    """`files` (a `file_table`) with `partitionValues` replaced by typed `partition.<col>` columns."""
    out = files.drop_columns([PARTITION_VALUES])
    for c in partition_columns:
        out = out.append_column(
            f"partition.{c}", typed_partition(raw_partition(files, c), schema.field(c).type)
        )
    return out
