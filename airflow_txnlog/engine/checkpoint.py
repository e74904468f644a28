"""Checkpoints: read them into a `LogState`, write a state as a Delta checkpoint and then the hint file.

Write path (classic checkpoint, optionally split into parts):
1. rows = protocol, metaData, every txn, every live add (dataChange=false), every tombstone newer
   than now - `delta.deletedFileRetentionDuration`; one row per action, exactly one of the top-level
   struct columns `txn, add, remove, metaData, protocol` is non-null in each row;
2. write `%020d.checkpoint.parquet`, or parts `%020d.checkpoint.%010d.%010d.parquet` when there are
   more rows than `part_size`; each file is written whole (temp + rename, or one object put);
3. only then overwrite `_last_checkpoint` with {version, size, parts?, sizeInBytes, numOfAddFiles}.
A crash between 2 and 3 leaves a stale hint, which readers tolerate; a crash during 2 leaves an
incomplete multi-part set, which readers ignore.

Read path: the parts are read with pyarrow and the file actions kept as Arrow struct arrays; only
protocol / metaData / txn / domainMetadata rows become Python objects.
"""

from __future__ import annotations

import io
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from airflow_txnlog.engine.actions import ADD, DOMAIN_METADATA, METADATA, PROTOCOL, REMOVE, TXN, decode_path
from airflow_txnlog.engine.errors import LogCorruptedError
from airflow_txnlog.engine.log_paths import LAST_CHECKPOINT, LOG_DIR, checkpoint_name
from airflow_txnlog.engine.log_reader import read_last_checkpoint
from airflow_txnlog.engine.replay import LogState, file_key
from airflow_txnlog.engine.storage import Storage

_STR_MAP = pa.map_(pa.string(), pa.string())
ADD_TYPE = pa.struct(
    [
        ("path", pa.string()),
        ("partitionValues", _STR_MAP),
        ("size", pa.int64()),
        ("modificationTime", pa.int64()),
        ("dataChange", pa.bool_()),
        ("stats", pa.string()),
        ("tags", _STR_MAP),
    ]
)
REMOVE_TYPE = pa.struct(
    [
        ("path", pa.string()),
        ("deletionTimestamp", pa.int64()),
        ("dataChange", pa.bool_()),
        ("extendedFileMetadata", pa.bool_()),
        ("partitionValues", _STR_MAP),
        ("size", pa.int64()),
        ("tags", _STR_MAP),
    ]
)
METADATA_TYPE = pa.struct(
    [
        ("id", pa.string()),
        ("name", pa.string()),
        ("description", pa.string()),
        ("format", pa.struct([("provider", pa.string()), ("options", _STR_MAP)])),
        ("schemaString", pa.string()),
        ("partitionColumns", pa.list_(pa.string())),
        ("configuration", _STR_MAP),
        ("createdTime", pa.int64()),
    ]
)
PROTOCOL_TYPE = pa.struct(
    [
        ("minReaderVersion", pa.int32()),
        ("minWriterVersion", pa.int32()),
        ("readerFeatures", pa.list_(pa.string())),
        ("writerFeatures", pa.list_(pa.string())),
    ]
)
TXN_TYPE = pa.struct([("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())])
CHECKPOINT_SCHEMA = pa.schema(
    [
        (TXN, TXN_TYPE),
        (ADD, ADD_TYPE),
        (REMOVE, REMOVE_TYPE),
        (METADATA, METADATA_TYPE),
        (PROTOCOL, PROTOCOL_TYPE),
    ]
)
DEFAULT_PART_SIZE = 1_000_000


# ----------------------------------------------------------------------------- read
def _decoded_keys(arr: pa.StructArray) -> pa.Array:
    path_col = arr.field("path").cast(pa.string())
    has_dv = arr.type.get_field_index("deletionVector") >= 0 and arr.field("deletionVector").null_count < len(
        arr
    )
    # Fast path (the common case): nothing to decode or canonicalise, the column is the key.
    needs_work = pc.any(pc.match_substring_regex(path_col, r"%|^file:")).as_py()
    if not has_dv and not needs_work:
        return path_col
    paths = path_col.to_pylist()
    dvs: list[Any] = arr.field("deletionVector").to_pylist() if has_dv else [None] * len(paths)
    keys = [file_key(decode_path(p), dv) for p, dv in zip(paths, dvs, strict=True)]
    return pa.array(keys, type=pa.string())


def _rows(table: pa.Table, column: str) -> pa.StructArray | None:
    if column not in table.column_names:
        return None
    col = table.column(column)
    arr = col.filter(pc.is_valid(col)).combine_chunks()
    if isinstance(arr, pa.ChunkedArray):  # no chunks at all
        arr = pa.concat_arrays(arr.chunks) if arr.chunks else pa.array([], type=col.type)
    return arr


def _to_wire(value: Any) -> Any:
    """pyarrow's to_pylist gives maps as lists of pairs; the log has JSON objects."""
    if isinstance(value, dict):
        return {k: _to_wire(v) for k, v in value.items()}
    if isinstance(value, list) and value and all(isinstance(x, tuple) and len(x) == 2 for x in value):
        return {k: _to_wire(v) for k, v in value}
    if isinstance(value, list):
        return [_to_wire(v) for v in value]
    return value


def read_checkpoint(
    storage: Storage, version: int, part_names: list[str], *, folder: str = LOG_DIR
) -> LogState:
    """State at `version` from checkpoint-format files in `folder` (LogCorruptedError naming a bad file)."""
    tables = []
    for name in part_names:
        try:
            with storage.open_input(f"{folder}/{name}") as f:
                tables.append(pq.ParquetFile(f).read())  # (read_table would import pandas)
        except (OSError, pa.ArrowException) as exc:
            raise LogCorruptedError(f"checkpoint file {name} is unreadable: {exc}") from exc
    try:
        table = pa.concat_tables(tables, promote_options="permissive")
    except pa.ArrowException as exc:
        raise LogCorruptedError(f"checkpoint parts of version {version} have incompatible schemas") from exc
    small: list[dict[str, Any]] = []
    for column in (PROTOCOL, METADATA, TXN, DOMAIN_METADATA):
        rows = _rows(table, column)
        if rows is not None:
            small.extend({column: _to_wire(r)} for r in rows.to_pylist())
    adds, removes = _rows(table, ADD), _rows(table, REMOVE)
    state = LogState(
        version=version,
        base_adds=adds,
        base_add_keys=_decoded_keys(adds) if adds is not None else None,
        base_removes=removes,
        base_remove_keys=_decoded_keys(removes) if removes is not None else None,
    )
    # The small actions go through the same reconciliation code as JSON commits.
    state = state.apply(version, small, name=part_names[0])
    try:
        state.require_complete()
    except LogCorruptedError as exc:
        raise LogCorruptedError(f"checkpoint {part_names[0]} is incomplete: {exc}") from exc
    return state


# ----------------------------------------------------------------------------- write
def _conform(arr: pa.StructArray | None, target: pa.StructType) -> pa.StructArray:
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
            out.append(_conform(child, f.type))
        else:
            out.append(child if child.type == f.type else child.cast(f.type))
    return pa.StructArray.from_arrays(out, fields=fields, mask=pc.invert(arr.is_valid()))


def _map_array(maps: list[dict[str, Any] | None]) -> pa.Array:
    """A map<string,string> column built from offsets (much faster than from Python pairs)."""
    if all(m is None for m in maps):
        return pa.nulls(len(maps), _STR_MAP)
    offsets: list[int] = [0]
    keys: list[str] = []
    values: list[Any] = []
    mask: list[bool] = []
    for m in maps:
        mask.append(m is None)
        if m:
            keys.extend(m.keys())
            values.extend(m.values())
        offsets.append(len(keys))
    return pa.MapArray.from_arrays(
        pa.array(offsets, pa.int32()),
        pa.array(keys, pa.string()),
        pa.array(values, pa.string()),
        mask=pa.array(mask, pa.bool_()) if any(mask) else None,
    )


def _pairs(m: dict[str, Any] | None) -> list[tuple[str, Any]] | None:
    return list(m.items()) if m is not None else None


def _tail_adds_array(adds: list[dict[str, Any]]) -> pa.StructArray:
    cols = [
        pa.array([d["path"] for d in adds], pa.string()),
        _map_array([d.get("partitionValues") or {} for d in adds]),
        pa.array([d.get("size") for d in adds], pa.int64()),
        pa.array([d.get("modificationTime") for d in adds], pa.int64()),
        pa.array([False] * len(adds), pa.bool_()),
        pa.array([d.get("stats") for d in adds], pa.string()),
        _map_array([d.get("tags") for d in adds]),
    ]
    return pa.StructArray.from_arrays(cols, fields=list(ADD_TYPE))


def _tail_removes_array(removes: list[dict[str, Any]]) -> pa.StructArray:
    cols = [
        pa.array([d["path"] for d in removes], pa.string()),
        pa.array([d.get("deletionTimestamp") for d in removes], pa.int64()),
        pa.array([bool(d.get("dataChange", True)) for d in removes], pa.bool_()),
        pa.array([d.get("extendedFileMetadata") for d in removes], pa.bool_()),
        pa.array([_pairs(d.get("partitionValues")) for d in removes], _STR_MAP),
        pa.array([d.get("size") for d in removes], pa.int64()),
        pa.array([_pairs(d.get("tags")) for d in removes], _STR_MAP),
    ]
    return pa.StructArray.from_arrays(cols, fields=list(REMOVE_TYPE))


def _column_table(column: str, arr: pa.Array) -> pa.Table:
    cols = [arr if f.name == column else pa.nulls(len(arr), f.type) for f in CHECKPOINT_SCHEMA]
    return pa.Table.from_arrays(cols, schema=CHECKPOINT_SCHEMA)


def checkpoint_table(state: LogState, *, min_tombstone_ts: int) -> tuple[pa.Table, int]:
    """The checkpoint rows of a state, and the number of add rows."""
    state.require_complete()
    assert state.protocol is not None and state.metadata is not None
    small = [state.protocol.to_wire(), state.metadata.to_wire()] + [t.to_wire() for t in state.txns.values()]
    parts = [
        _column_table(col, pa.array([a[col]], type=CHECKPOINT_SCHEMA.field(col).type))
        for a in small
        for col in a
    ]
    base_adds = _conform(state.live_base_adds(), ADD_TYPE)
    if len(base_adds):  # checkpointed adds carry dataChange=false, as Spark writes them
        flat = base_adds.flatten()
        flat[4] = pa.array([False] * len(base_adds), pa.bool_())
        base_adds = pa.StructArray.from_arrays(flat, fields=list(ADD_TYPE))
    adds = pa.concat_arrays([base_adds, _tail_adds_array(state.tail_adds())])
    removes = pa.concat_arrays(
        [_conform(state.live_base_removes(), REMOVE_TYPE), _tail_removes_array(state.tail_removes())]
    )
    if len(removes):
        ts = pc.fill_null(removes.field("deletionTimestamp"), 0)
        removes = removes.filter(pc.greater(ts, min_tombstone_ts))
    parts += [_column_table(ADD, adds), _column_table(REMOVE, removes)]
    return pa.concat_tables(parts), len(adds)


def parquet_bytes(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="snappy")
    return buf.getvalue()


def write_checkpoint(
    storage: Storage, state: LogState, *, min_tombstone_ts: int, part_size: int = DEFAULT_PART_SIZE
) -> dict[str, Any]:
    """Write the checkpoint of `state` and then `_last_checkpoint`; returns the hint written."""
    table, num_adds = checkpoint_table(state, min_tombstone_ts=min_tombstone_ts)
    n_parts = max(1, -(-table.num_rows // max(1, part_size)))
    total = 0
    for i in range(n_parts):
        chunk = table.slice(i * part_size, part_size) if n_parts > 1 else table
        data = parquet_bytes(chunk)
        name = (
            checkpoint_name(state.version, i + 1, n_parts) if n_parts > 1 else checkpoint_name(state.version)
        )
        storage.write(f"{LOG_DIR}/{name}", data)
        total += len(data)
    hint: dict[str, Any] = {"version": state.version, "size": table.num_rows}
    if n_parts > 1:
        hint["parts"] = n_parts
    hint.update({"sizeInBytes": total, "numOfAddFiles": num_adds})
    current = read_last_checkpoint(storage)
    if current is None or current.version <= state.version:  # the hint never moves backwards
        storage.write(f"{LOG_DIR}/{LAST_CHECKPOINT}", orjson.dumps(hint))
    return hint
