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
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from airflow_txnlog.engine import properties as props
from airflow_txnlog.engine.errors import LogCorruptedError
from airflow_txnlog.engine.log.actions import Metadata
from airflow_txnlog.engine.schema import is_variant, schema_from_json, schema_to_json

MODE = props.COLUMN_MAPPING_MODE
PHYSICAL_NAME = "delta.columnMapping.physicalName"
FIELD_ID = "delta.columnMapping.id"
MAX_COLUMN_ID = props.MAX_COLUMN_ID
NESTED_IDS = "delta.columnMapping.nested.ids"
PARQUET_FIELD_ID = b"PARQUET:field_id"  # pyarrow's metadata key for a parquet field id


def mode(conf: Mapping[str, str]) -> str:
    """`none`, `name` or `id` (`TableProperties.column_mapping_mode`)."""
    return props.TableProperties(conf).column_mapping_mode


def _meta(f: pa.Field, key: str) -> object | None:
    raw = (f.metadata or {}).get(key.encode())
    return None if raw is None else orjson.loads(raw)


def physical_name(f: pa.Field) -> str:
    name = _meta(f, PHYSICAL_NAME)
    if not isinstance(name, str) or not name:
        raise LogCorruptedError(f"column {f.name!r} has no {PHYSICAL_NAME} although column mapping is on")
    return name


def _physical_type(t: pa.DataType) -> pa.DataType:
    if is_variant(t):  # a primitive in Delta's schema: its two fields have no names to map
        return t
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


def logical_view(arr: pa.Array | pa.ChunkedArray, logical: pa.DataType) -> pa.Array | pa.ChunkedArray:
    """`arr` (physical names) as `logical` (the same shape with logical names), without copying."""
    if arr.type == logical:
        return arr
    if isinstance(arr, pa.ChunkedArray):  # (the parsed stats of a checkpoint: a chunk per batch)
        return pa.chunked_array([chunk.view(logical) for chunk in arr.chunks], type=logical)
    return arr.view(logical)


def rename_map_keys(values: pa.MapArray, renames: Mapping[str, str]) -> pa.MapArray:
    """A string map (`partitionValues`) with its keys renamed (keys not in `renames` kept)."""
    if len(values) == 0 or not renames:
        return values
    if values.offset:  # (a slice: from_arrays takes no null bitmap with sliced offsets; copy it)
        values = pa.concat_arrays([values])
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
    if is_variant(t):
        return
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

    def file_schema(self, id_key: bytes = PARQUET_FIELD_ID) -> pa.Schema:
        """The physical schema with parquet field ids under `id_key` (see `field_id_schema`)."""
        return field_id_schema(self.physical, id_key)

    def to_files(self, table: pa.Table) -> pa.Table:
        """`table` (columns in logical names and the table's types) as a data file stores it: physical
        names and parquet field ids at every level, without copying. Columns the schema does not
        have (a change file's `_change_type`) are kept as they are."""
        ids = self.file_schema()
        fields, arrays = [], []
        for name, col in zip(table.column_names, table.columns, strict=True):
            i = self.logical.get_field_index(name)
            f = table.schema.field(name) if i < 0 else ids.field(i)
            fields.append(f)
            arrays.append(_view_chunks(col, f.type))
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields))

    def physical_path(self, path: tuple[str, ...]) -> tuple[str, ...]:
        """A leaf path in logical names (`delta.dataSkippingStatsColumns`) in physical names; `()`
        (which names no leaf) for a path the schema does not have."""
        logical: Any = self.logical
        physical: Any = self.physical
        out = []
        for part in path:
            if not isinstance(logical, pa.Schema | pa.StructType):
                return ()
            lowered = [f.name.lower() for f in logical]
            if part.lower() not in lowered:
                return ()
            i = lowered.index(part.lower())  # stats columns are matched ignoring case
            out.append(str(physical.field(i).name))
            logical, physical = logical.field(i).type, physical.field(i).type
        return tuple(out)


def _with_ids(f: pa.Field, key: bytes) -> pa.Field:
    fid = _meta(f, FIELD_ID)
    nested = _meta(f, NESTED_IDS)  # (icebergCompatV2: ids of list elements and map keys / values)
    levels = nested if isinstance(nested, dict) else {}
    return pa.field(
        f.name,
        _ids_type(f.type, key, f.name, levels),
        f.nullable,
        {key: str(fid).encode()} if isinstance(fid, int) else None,
    )


def _level_ids(f: pa.Field, key: bytes, path: str, levels: Mapping[str, Any]) -> pa.Field:
    fid = levels.get(path)
    t = _ids_type(f.type, key, path, levels)
    return pa.field(f.name, t, f.nullable, {key: str(fid).encode()} if isinstance(fid, int) else None)


def _ids_type(
    t: pa.DataType, key: bytes, path: str = "", levels: Mapping[str, Any] | None = None
) -> pa.DataType:
    """`t` with field ids on its struct fields (their own) and on its list / map levels (from the
    enclosing field's nested ids, by `path`: `<physical name>.element`, `.key`, `.value`)."""
    levels = levels or {}
    if is_variant(t):
        return t
    if pa.types.is_struct(t):
        return pa.struct([_with_ids(f, key) for f in t])
    if pa.types.is_list(t):
        return pa.list_(_level_ids(t.value_field, key, f"{path}.element", levels))
    if pa.types.is_large_list(t):
        return pa.large_list(_level_ids(t.value_field, key, f"{path}.element", levels))
    if pa.types.is_map(t):
        return pa.map_(
            _level_ids(t.key_field, key, f"{path}.key", levels),
            _level_ids(t.item_field, key, f"{path}.value", levels),
        )
    return t


def field_id_schema(physical: pa.Schema, key: bytes = PARQUET_FIELD_ID) -> pa.Schema:
    """The physical schema as data files are written: every field's only metadata is its parquet
    field id (under `key`: pyarrow's or Spark's), at every level. Delta writes the ids in both
    modes; `id` mode readers match columns by them."""
    return pa.schema([_with_ids(f, key) for f in physical])


def _view_chunks(arr: pa.ChunkedArray, t: pa.DataType) -> pa.ChunkedArray:
    return arr if arr.type == t else pa.chunked_array([c.view(t) for c in arr.chunks], t)


def to_logical(arr: pa.ChunkedArray, logical: pa.DataType) -> pa.ChunkedArray:
    """A column in the table's physical type as the logical type (names only differ)."""
    return _view_chunks(arr, logical)


# ----------------------------------------------------------------- giving fields ids and names
def _number(f: pa.Field, counter: list[int], fresh: bool) -> pa.Field:
    """`f` and its nested struct fields with an id and a physical name where they have none (ids from
    `counter`; physical name `col-<uuid>` when `fresh`, else the field's own name)."""
    extra: dict[str, Any] = {}
    if not isinstance(_meta(f, FIELD_ID), int):  # a parent's id comes before its children's, as Delta's
        counter[0] += 1
        extra[FIELD_ID] = counter[0]
    if not isinstance(_meta(f, PHYSICAL_NAME), str):
        extra[PHYSICAL_NAME] = f"col-{uuid.uuid4()}" if fresh else f.name
    meta = dict(f.metadata or {})
    meta.update({k.encode(): orjson.dumps(v) for k, v in extra.items()})
    return pa.field(f.name, _number_type(f.type, counter, fresh), f.nullable, meta)


def _number_type(t: pa.DataType, counter: list[int], fresh: bool) -> pa.DataType:
    """`t` with the struct fields at any depth below it numbered (through lists and maps too; a
    list's element and a map's key / value are not fields of their own here, only `nested.ids` of
    icebergCompat would number them)."""
    if is_variant(t):
        return t
    if pa.types.is_struct(t):
        return pa.struct([_number(c, counter, fresh) for c in t])
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        inner = t.value_field.with_type(_number_type(t.value_type, counter, fresh))
        return pa.list_(inner) if pa.types.is_list(t) else pa.large_list(inner)
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(_number_type(t.key_type, counter, fresh)),
            t.item_field.with_type(_number_type(t.item_type, counter, fresh)),
        )
    return t


def mapped_schema(schema: pa.Schema, *, start: int = 0, fresh: bool = False) -> tuple[pa.Schema, int]:
    """`schema` with column mapping metadata on every field that lacks it (ids after `start`;
    physical names `col-<uuid>` when `fresh`, as Delta gives new tables and new columns, else the
    current name, as when mapping is turned on for existing files), and the highest id given."""
    counter = [start]
    fields = [_number(f, counter, fresh) for f in schema]
    return pa.schema(fields, metadata=schema.metadata), counter[0]


def children(t: pa.DataType) -> list[pa.Field]:
    if is_variant(t):
        return []
    if pa.types.is_struct(t):
        return list(t)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [t.value_field]
    if pa.types.is_map(t):
        return [t.key_field, t.item_field]
    return []


def _max_id(fields: list[pa.Field]) -> int:
    best = 0
    for f in fields:
        fid = _meta(f, FIELD_ID)
        best = max(best, fid if isinstance(fid, int) else 0, _max_id(children(f.type)))
    return best


_MAPPING_KEYS = (FIELD_ID.encode(), PHYSICAL_NAME.encode(), NESTED_IDS.encode())


def _unmapped_field(f: pa.Field) -> pa.Field:
    meta = {k: v for k, v in (f.metadata or {}).items() if k not in _MAPPING_KEYS}
    return pa.field(f.name, _unmapped_type(f.type), f.nullable, meta or None)


def _unmapped_type(t: pa.DataType) -> pa.DataType:
    if is_variant(t):
        return t
    if pa.types.is_struct(t):
        return pa.struct([_unmapped_field(c) for c in t])
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        inner = _unmapped_field(t.value_field)
        return pa.list_(inner) if pa.types.is_list(t) else pa.large_list(inner)
    if pa.types.is_map(t):
        return pa.map_(_unmapped_field(t.key_field), _unmapped_field(t.item_field))
    return t


def without_mapping(schema: pa.Schema) -> pa.Schema:
    """`schema` without any column mapping metadata, at every depth: what users see (and what a
    DataFrame read from a mapped table must not carry back into a new column's definition)."""
    return pa.schema([_unmapped_field(f) for f in schema], metadata=schema.metadata)


def with_new_fields(metadata: Metadata, schema: pa.Schema) -> Metadata:
    """`metadata` with `schema` (the table's schema plus new fields, as schema evolution adds them):
    on a column-mapped table the new fields get fresh ids and physical names, and
    `delta.columnMapping.maxColumnId` grows (ids are never reused, even of dropped columns)."""
    if mode(metadata.configuration) == "none":
        return dataclasses.replace(metadata, schema_string=schema_to_json(schema))
    start = props.TableProperties(metadata.configuration).max_column_id
    current = set(schema_from_json(metadata.schema_string).names)
    # a new column never keeps ids or names it brought along (a copy of a mapped column would
    # otherwise reuse that column's ids and physical names)
    schema = pa.schema(
        [f if f.name in current else _unmapped_field(f) for f in schema], metadata=schema.metadata
    )
    start = max(start, _max_id(list(schema)), max_nested_id(schema))
    mapped, top = mapped_schema(schema, start=start, fresh=True)
    if props.TableProperties(metadata.configuration).iceberg_compat_v2:  # (new lists / maps: their ids)
        mapped, top = with_nested_ids(mapped, top)
    conf = {**metadata.configuration, MAX_COLUMN_ID: str(top)}
    return dataclasses.replace(metadata, schema_string=schema_to_json(mapped), configuration=conf)


# ------------------------------------------------------------------ icebergCompatV2's nested ids
def _nest(t: pa.DataType, path: str, ids: dict[str, int], counter: list[int]) -> pa.DataType:
    """`t` with ids for its list / map levels in `ids` (paths from `path`), structs below numbered
    on their own fields."""
    if is_variant(t):
        return t
    if pa.types.is_struct(t):
        return pa.struct([_with_nested(f, counter) for f in t])
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        inner = _level(t.value_field, f"{path}.element", ids, counter)
        return pa.list_(inner) if pa.types.is_list(t) else pa.large_list(inner)
    if pa.types.is_map(t):
        key = _level(t.key_field, f"{path}.key", ids, counter)
        return pa.map_(key, _level(t.item_field, f"{path}.value", ids, counter))
    return t


def _level(f: pa.Field, path: str, ids: dict[str, int], counter: list[int]) -> pa.Field:
    if path not in ids:
        counter[0] += 1
        ids[path] = counter[0]
    return f.with_type(_nest(f.type, path, ids, counter))


def _nested_of(f: pa.Field) -> dict[str, int]:
    raw = _meta(f, NESTED_IDS)
    return {str(k): int(v) for k, v in raw.items()} if isinstance(raw, dict) else {}


def _with_nested(f: pa.Field, counter: list[int]) -> pa.Field:
    ids = _nested_of(f)
    t = _nest(f.type, physical_name(f), ids, counter)
    meta = {**(f.metadata or {}), NESTED_IDS.encode(): orjson.dumps(ids)}
    return pa.field(f.name, t, f.nullable, meta)


def with_nested_ids(schema: pa.Schema, start: int) -> tuple[pa.Schema, int]:
    """A column-mapped schema with `delta.columnMapping.nested.ids` on every struct field (ids after
    `start` for paths that have none), and the highest id given (or `start`): Delta's
    `rewriteFieldIdsForIceberg`, which icebergCompatV2 needs. The object maps paths to ids; a path
    starts with the field's physical name and adds `element`, `key` or `value` per list / map level
    (`col-1.value.element`); a struct below a list or map starts its own paths at its own fields.
    Ids share the columns' id space (`maxColumnId` counts them) and an id once given never changes."""
    counter = [start]
    fields = [_with_nested(f, counter) for f in schema]
    return pa.schema(fields, metadata=schema.metadata), counter[0]


def max_nested_id(schema: pa.Schema) -> int:
    """The highest id in any field's nested ids (0 without any)."""
    best = 0

    def walk(fields: Iterable[pa.Field]) -> None:
        nonlocal best
        for f in fields:
            best = max(best, *_nested_of(f).values(), 0)
            walk(children(f.type))

    walk(schema)
    return best
