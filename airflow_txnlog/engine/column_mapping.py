"""Column mapping (Delta PROTOCOL.md "Column Mapping"): logical names for users, physical names in files.

With `delta.columnMapping.mode` = `name` or `id`, every field of the schema (nested ones too)
carries `delta.columnMapping.physicalName` and `delta.columnMapping.id` in its metadata. Users see
the logical names (the `name` of each field); everything stored uses the physical ones: parquet
columns, the keys of `partitionValues`, the stats (`minValues`, ...), `stats_parsed` and
`partitionValues_parsed`. A rename or drop changes only the schema, never the files.

This module keeps the two name spaces apart at the edges: the log layer works in physical names
(`physical_metadata`: the same metadata with the schema's names replaced), and results are turned
back into logical names by position (`logical_view`: Arrow's zero-copy `view`, the types differ
only in field names). In `id` mode a data file's columns are matched by parquet field id
(`PARQUET:field_id`) rather than by name, as the protocol requires (`by_field_id`).

Invariant: `physical_schema(s)` has exactly the shape of `s` (same fields in the same order, same
types) with only the names changed, so a view between the two is always valid.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from airflow_txnlog.engine.actions import Metadata
from airflow_txnlog.engine.errors import LogCorruptedError
from airflow_txnlog.engine.schema import schema_from_json, schema_to_json

MODE = "delta.columnMapping.mode"
PHYSICAL_NAME = "delta.columnMapping.physicalName"
FIELD_ID = "delta.columnMapping.id"
PARQUET_FIELD_ID = b"PARQUET:field_id"


def mode(conf: Mapping[str, str]) -> str:
    """`none`, `name` or `id`."""
    return str(conf.get(MODE, "none")).strip().lower() or "none"


def _meta(f: pa.Field, key: str) -> object | None:
    raw = (f.metadata or {}).get(key.encode())
    return None if raw is None else orjson.loads(raw)


def physical_name(f: pa.Field) -> str:
    name = _meta(f, PHYSICAL_NAME)
    if not isinstance(name, str) or not name:
        raise LogCorruptedError(f"column {f.name!r} has no {PHYSICAL_NAME} although column mapping is on")
    return name


def _physical_type(t: pa.DataType) -> pa.DataType:
    if pa.types.is_struct(t):
        return pa.struct([physical_field(f) for f in t])
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_physical_type(t.value_type)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_physical_type(t.value_type)))
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(_physical_type(t.key_type)),
            t.item_field.with_type(_physical_type(t.item_type)),
        )
    return t


def physical_field(f: pa.Field) -> pa.Field:
    """`f` with its physical name, at every level."""
    return pa.field(physical_name(f), _physical_type(f.type), f.nullable, f.metadata)


def physical_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([physical_field(f) for f in schema])


def physical_names(schema: pa.Schema) -> dict[str, str]:
    """Top-level logical name -> physical name."""
    return {f.name: physical_name(f) for f in schema}


def physical_metadata(metadata: Metadata) -> Metadata | None:
    """`metadata` with the schema and partition columns in physical names; None when names are not
    mapped (mode `none`): then logical and physical names are the same."""
    if mode(metadata.configuration) == "none":
        return None
    schema = schema_from_json(metadata.schema_string)
    names = physical_names(schema)
    return dataclasses.replace(
        metadata,
        schema_string=schema_to_json(physical_schema(schema)),
        partition_columns=tuple(names[c] for c in metadata.partition_columns),
    )


def logical_view(arr: pa.Array, logical: pa.DataType) -> pa.Array:
    """`arr` (physical names) as `logical` (the same shape with logical names), without copying."""
    return arr if arr.type == logical else arr.view(logical)


def rename_map_keys(values: pa.MapArray, renames: Mapping[str, str]) -> pa.MapArray:
    """A string map (`partitionValues`) with its keys renamed (keys not in `renames` kept)."""
    if len(values) == 0 or not renames:
        return values
    old = pa.array(list(renames), pa.string())
    new = pa.array(list(renames.values()), pa.string())
    keys = values.keys.cast(pa.string())
    at = pc.index_in(keys, value_set=old)
    renamed = pc.if_else(pc.is_null(at), keys, new.take(pc.fill_null(at, 0)))
    return pa.MapArray.from_arrays(
        values.offsets, renamed, values.items, type=values.type, mask=pc.invert(values.is_valid())
    )


def _ids(t: pa.DataType, path: tuple[str, ...], out: dict[int, tuple[str, ...]]) -> None:
    """Field id -> path of physical names, for every struct field below `t`."""
    if pa.types.is_struct(t):
        for f in t:
            _collect(f, path, out)
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        _ids(t.value_type, path, out)
    elif pa.types.is_map(t):
        _ids(t.item_type, path, out)


def _collect(f: pa.Field, path: tuple[str, ...], out: dict[int, tuple[str, ...]]) -> None:
    fid = _meta(f, FIELD_ID)
    here = (*path, f.name)
    if isinstance(fid, int):
        out[fid] = here
    _ids(f.type, here, out)


def _renamed_by_id(f: pa.Field, ids: Mapping[int, tuple[str, ...]]) -> pa.Field:
    raw = (f.metadata or {}).get(PARQUET_FIELD_ID)
    name = ids[int(raw)][-1] if raw is not None and int(raw) in ids else f.name
    t = f.type
    if pa.types.is_struct(t):
        t = pa.struct([_renamed_by_id(c, ids) for c in t])
    elif pa.types.is_list(t):
        t = pa.list_(_renamed_by_id(t.value_field, ids))
    elif pa.types.is_large_list(t):
        t = pa.large_list(_renamed_by_id(t.value_field, ids))
    elif pa.types.is_map(t):
        t = pa.map_(_renamed_by_id(t.key_field, ids), _renamed_by_id(t.item_field, ids))
    return pa.field(name, t, f.nullable, f.metadata)


def by_field_id(file_schema: pa.Schema, table_physical: pa.Schema) -> pa.Schema:
    """`file_schema` with every field that has a parquet field id renamed to the physical name the
    table gives that id (`id` mode: a file's names need not match; fields without an id keep theirs)."""
    ids: dict[int, tuple[str, ...]] = {}
    for f in table_physical:
        _collect(f, (), ids)
    return pa.schema([_renamed_by_id(f, ids) for f in file_schema])


@dataclass(frozen=True)
class Names:
    """How a column-mapped table's logical schema maps to its files."""

    logical: pa.Schema
    physical: pa.Schema  # `physical_schema(logical)`: the same shape, physical names
    by_id: bool  # `id` mode: match a file's columns by parquet field id

    @classmethod
    def of(cls, metadata: Metadata) -> Names | None:
        """None for a table whose names are not mapped."""
        m = mode(metadata.configuration)
        if m == "none":
            return None
        logical = schema_from_json(metadata.schema_string)
        return cls(logical, physical_schema(logical), by_id=m == "id")

    def physical_of(self, column: str) -> str:
        return str(self.physical.field(self.logical.get_field_index(column)).name)

    def field(self, column: str) -> pa.Field:
        """The physical field of logical top-level `column`."""
        return self.physical.field(self.logical.get_field_index(column))

    def file_columns(self, file_schema: pa.Schema) -> dict[str, str]:
        """Physical name -> the file's own column name, for the file's top-level columns."""
        if not self.by_id:
            return {n: n for n in file_schema.names}
        renamed = by_field_id(file_schema, self.physical)
        return {r.name: f.name for r, f in zip(renamed, file_schema, strict=True)}

    def as_physical(self, table: pa.Table, file_schema: pa.Schema) -> pa.Table:
        """A table read from a file, its columns named (and nested fields renamed) as the table's
        physical schema says (only `id` mode renames anything)."""
        if not self.by_id:
            return table
        renamed = {
            f.name: r for r, f in zip(by_field_id(file_schema, self.physical), file_schema, strict=True)
        }
        fields = [renamed[n] for n in table.column_names]
        arrays = [_view_chunks(table.column(i), f.type) for i, f in enumerate(fields)]
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _view_chunks(arr: pa.ChunkedArray, t: pa.DataType) -> pa.ChunkedArray:
    return arr if arr.type == t else pa.chunked_array([c.view(t) for c in arr.chunks], t)


def to_logical(arr: pa.ChunkedArray, logical: pa.DataType) -> pa.ChunkedArray:
    """A column in the table's physical type as the logical type (names only differ)."""
    return _view_chunks(arr, logical)


# ----------------------------------------------------------------- turning mapping on
def _with_meta(f: pa.Field, extra: dict[str, Any]) -> pa.Field:
    meta = dict(f.metadata or {})
    meta.update({k.encode(): orjson.dumps(v) for k, v in extra.items()})
    return f.with_metadata(meta)


def _number(f: pa.Field, counter: list[int]) -> pa.Field:
    counter[0] += 1
    here = counter[0]
    t = f.type
    if pa.types.is_struct(t):
        t = pa.struct([_number(c, counter) for c in t])
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        inner = _renumber_type(t.value_type, counter)
        t = pa.list_(t.value_field.with_type(inner)) if pa.types.is_list(t) else pa.large_list(inner)
    elif pa.types.is_map(t):
        t = pa.map_(
            t.key_field.with_type(_renumber_type(t.key_type, counter)),
            t.item_field.with_type(_renumber_type(t.item_type, counter)),
        )
    extra = {FIELD_ID: here, PHYSICAL_NAME: f.name}
    return _with_meta(f.with_type(t), extra)


def _renumber_type(t: pa.DataType, counter: list[int]) -> pa.DataType:
    if pa.types.is_struct(t):
        return pa.struct([_number(c, counter) for c in t])
    return t


def mapped_schema(schema: pa.Schema) -> tuple[pa.Schema, int]:
    """`schema` with column mapping metadata on every field (physical name = current name), and the
    highest id given."""
    counter = [0]
    fields = [_number(f, counter) for f in schema]
    return pa.schema(fields, metadata=schema.metadata), counter[0]
