"""Checkpoints: read them into a `LogState`, write a state as a Delta checkpoint and then the hint file.

Write path (classic checkpoint, optionally split into parts):
1. refuse (`UnsupportedFeatureError`) a table whose protocol has a writer feature outside
   `CHECKPOINT_WRITER_FEATURES` (engine.features.table_features): such a feature may keep state in
   actions or fields this writer does not know, and a checkpoint without them loses that state for
   good once the log is cleaned;
2. rows = protocol, metaData, every txn, every live domainMetadata (removed=false), every live add
   (dataChange=false), every tombstone newer than now - `delta.deletedFileRetentionDuration`; one row
   per action, exactly one of the top-level struct columns is non-null in each row. Adds carry every
   field of the protocol's checkpoint schema (deletionVector, baseRowId, defaultRowCommitVersion,
   clusteringProvider); removes carry no `tags` (and no `stats`), as the protocol says;
3. stats follow `delta.checkpoint.writeStatsAsJson` (default true: `add.stats` is the JSON string,
   else null) and `delta.checkpoint.writeStatsAsStruct` (default true, as in Delta's DeltaConfigs:
   `add.stats_parsed` is a typed struct built from the table schema and, for a partitioned table,
   `add.partitionValues_parsed` holds the partition values in their column types). A file whose stats
   another writer left only in `stats_parsed` gets its JSON rendered from that struct first, so stats
   never fall out of a checkpoint; the struct is parsed from the JSON in bulk by Arrow's JSON reader;
4. on a table with `v2Checkpoint`: a UUID-named V2 checkpoint, its file actions in a sidecar
   (`checkpoint_v2.write`, never multi-part). Otherwise:
   write `%020d.checkpoint.parquet`, or, with more than `part_size` rows, the parts
   `%020d.checkpoint.%010d.%010d.parquet`. Parts are clustered as the protocol requires, by Spark's
   hash partitioning of the file path: part = pmod(murmur3_32(path, seed 42), parts) + 1, with Spark's
   variant of murmur3 (trailing bytes mixed one by one); a non-file action has no path and lands where
   Spark puts a null key, part pmod(42, parts) + 1. So every action of a path is in one part, and two
   writers that race to write the same parts write the same content into each. Each file is written
   whole (temp + rename, or one object put);
5. only then overwrite `_last_checkpoint` with {version, size, parts?, sizeInBytes, numOfAddFiles,
   v2Checkpoint?}.
A crash between 4 and 5 leaves a stale hint, which readers tolerate; a crash during 4 leaves an
incomplete multi-part set, which readers ignore.

Read path: the parts are read with pyarrow, only the columns needed (`checkpoint_columns`): the small
actions whole, of `add` / `remove` only the fields of the file key; the file actions stay Arrow struct
arrays whose other fields (whatever the writer put there: `remove.tags`, `add.stats_parsed`, ...) are
read when first asked for. Only protocol / metaData / txn / domainMetadata rows become Python
objects. `add_stats_json` gives the JSON stats of checkpoint add rows, rendering `stats_parsed` where
`stats` is null.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from airflow_txnlog.engine.errors import LogCorruptedError, TxnLogError
from airflow_txnlog.engine.features import column_mapping
from airflow_txnlog.engine.features.table_features import require_checkpoint_supported
from airflow_txnlog.engine.log import checkpoint_v2
from airflow_txnlog.engine.log.actions import (
    ADD,
    DOMAIN_METADATA,
    METADATA,
    PARTITION_VALUES_PARSED,
    PROTOCOL,
    REMOVE,
    STATS_PARSED,
    TXN,
    Metadata,
)
from airflow_txnlog.engine.log.checkpoint_columns import CheckpointColumns
from airflow_txnlog.engine.log.log_paths import LAST_CHECKPOINT, checkpoint_name
from airflow_txnlog.engine.log.log_reader import read_last_checkpoint
from airflow_txnlog.engine.log.replay import ADD_TYPE, DV_TYPE, REMOVE_TYPE, STR_MAP, LogState, struct_keys
from airflow_txnlog.engine.log.spark_hash import part_numbers
from airflow_txnlog.engine.log.stats_struct import (
    add_stats_json,
    conform_struct,
    parse_stats,
    stats_parsed_type,
)
from airflow_txnlog.engine.properties import TableProperties
from airflow_txnlog.engine.schema import schema_from_json
from airflow_txnlog.engine.state.add_actions import partition_lookup, typed_partition
from airflow_txnlog.engine.storage import LOG_DIR, Storage

METADATA_TYPE = pa.struct(
    [
        ("id", pa.string()),
        ("name", pa.string()),
        ("description", pa.string()),
        ("format", pa.struct([("provider", pa.string()), ("options", STR_MAP)])),
        ("schemaString", pa.string()),
        ("partitionColumns", pa.list_(pa.string())),
        ("configuration", STR_MAP),
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
DOMAIN_METADATA_TYPE = pa.struct(
    [("domain", pa.string()), ("configuration", pa.string()), ("removed", pa.bool_())]
)
DEFAULT_PART_SIZE = 1_000_000


# ----------------------------------------------------------------------------- read
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
    """State at `version` from checkpoint-format files in `folder` (LogCorruptedError naming a bad file).

    Reads the small actions whole and of the file actions only what their keys need (path and
    deletion vector); the rest is read on demand through `LogState.source` (`CheckpointColumns`).
    """
    extra: list[dict[str, Any]] = []
    if len(part_names) == 1 and checkpoint_v2.is_v2_name(part_names[0]) and folder == LOG_DIR:
        name = part_names[0]
        part_names, extra = checkpoint_v2.plan(storage, name)
        if not part_names:  # a JSON checkpoint holding everything itself
            state = LogState(version=-1).apply(version, extra, name=name)
            return _complete(state, name)
    source = CheckpointColumns(storage, folder, part_names)
    key_fields = ("path", "deletionVector")
    try:
        rows = source.load((PROTOCOL, METADATA, TXN, DOMAIN_METADATA), {ADD: key_fields, REMOVE: key_fields})
    except pa.ArrowException as exc:
        raise LogCorruptedError(
            f"checkpoint parts of version {version} cannot be read together: {exc}"
        ) from exc
    small: list[dict[str, Any]] = []
    for column in (PROTOCOL, METADATA, TXN, DOMAIN_METADATA):
        if column in rows:
            small.extend({column: _to_wire(r)} for r in rows[column].to_pylist())
    adds, removes = rows.get(ADD), rows.get(REMOVE)
    state = LogState(
        version=version,
        base_adds=adds,
        base_add_keys=struct_keys(adds) if adds is not None else None,
        base_removes=removes,
        base_remove_keys=struct_keys(removes) if removes is not None else None,
        source=source,
    )
    # The small actions go through the same reconciliation code as JSON commits (with a JSON v2
    # checkpoint, its actions besides the sidecars' rows too).
    state = state.apply(version, small + extra, name=part_names[0])
    return _complete(state, part_names[0])


def _complete(state: LogState, name: str) -> LogState:
    try:
        state.require_complete()
    except LogCorruptedError as exc:
        raise LogCorruptedError(f"checkpoint {name} is incomplete: {exc}") from exc
    return state


# ----------------------------------------------------------------------------- stats: struct -> JSON
# `stats_parsed` is rendered as JSON text column by column with Arrow kernels (a Python value per row
# costs ~50 us a file in datetimes alone). Each struct becomes `{"name":value,...}` over its non-null
# fields; a struct with none is null, so it drops out of its parent like a null value.
def _map_array(maps: list[dict[str, Any] | None]) -> pa.Array:
    """A map<string,string> column built from offsets (much faster than from Python pairs)."""
    if all(m is None for m in maps):
        return pa.nulls(len(maps), STR_MAP)
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
        pa.array([d.get("deletionVector") for d in adds], DV_TYPE),
        pa.array([d.get("baseRowId") for d in adds], pa.int64()),
        pa.array([d.get("defaultRowCommitVersion") for d in adds], pa.int64()),
        pa.array([d.get("clusteringProvider") for d in adds], pa.string()),
    ]
    return pa.StructArray.from_arrays(cols, fields=list(ADD_TYPE))


def _tail_removes_array(removes: list[dict[str, Any]]) -> pa.StructArray:
    cols = [
        pa.array([d["path"] for d in removes], pa.string()),
        pa.array([d.get("deletionTimestamp") for d in removes], pa.int64()),
        pa.array([bool(d.get("dataChange", True)) for d in removes], pa.bool_()),
        pa.array([d.get("extendedFileMetadata") for d in removes], pa.bool_()),
        pa.array([_pairs(d.get("partitionValues")) for d in removes], STR_MAP),
        pa.array([d.get("size") for d in removes], pa.int64()),
        pa.array([d.get("deletionVector") for d in removes], DV_TYPE),
        pa.array([d.get("baseRowId") for d in removes], pa.int64()),
        pa.array([d.get("defaultRowCommitVersion") for d in removes], pa.int64()),
    ]
    return pa.StructArray.from_arrays(cols, fields=list(REMOVE_TYPE))


def _adds_array(state: LogState) -> pa.StructArray:
    """Every live add in ADD_TYPE, with JSON stats rendered from `stats_parsed` where that is all there is."""
    raw = state.live_base_adds()
    base = conform_struct(raw, ADD_TYPE)
    if raw is not None and len(base):
        flat = base.flatten()
        # Checkpointed adds carry dataChange=false, as Spark writes them.
        flat[ADD_TYPE.get_field_index("dataChange")] = pa.repeat(False, len(base))
        flat[ADD_TYPE.get_field_index("stats")] = add_stats_json(raw)
        base = pa.StructArray.from_arrays(flat, fields=list(ADD_TYPE))
    return pa.concat_arrays([base, _tail_adds_array(state.tail_adds())])


def _partition_values_parsed(adds: pa.StructArray, metadata: Metadata) -> pa.StructArray:
    """`add.partitionValues_parsed`: each partition column's values in the column's type."""
    schema = schema_from_json(metadata.schema_string)
    values = adds.field("partitionValues")
    parts = [schema.field(c) for c in metadata.partition_columns]
    cols = [typed_partition(partition_lookup(values, f.name), f.type) for f in parts]
    return pa.StructArray.from_arrays(cols, fields=parts)


def _with_stats_format(
    adds: pa.StructArray, *, as_json: bool, parsed_type: pa.StructType | None, metadata: Metadata
) -> pa.StructArray:
    """`adds` with `stats` kept or nulled, and `stats_parsed` (plus `partitionValues_parsed` for a
    partitioned table) appended when asked for."""
    fields, children = list(ADD_TYPE), adds.flatten()
    stats_at = ADD_TYPE.get_field_index("stats")
    if parsed_type is not None:
        if metadata.partition_columns:
            try:
                parsed = _partition_values_parsed(adds, metadata)
            except (pa.ArrowException, ValueError, TxnLogError):  # a value not of its type (another writer's)
                parsed = None  # readers have the strings in `partitionValues`; the checkpoint still helps
            if parsed is not None:
                fields.append(pa.field(PARTITION_VALUES_PARSED, parsed.type))
                children.append(parsed)
        fields.append(pa.field(STATS_PARSED, parsed_type))
        children.append(parse_stats(children[stats_at], parsed_type))
    if not as_json:
        children[stats_at] = pa.nulls(len(adds), pa.string())
    return pa.StructArray.from_arrays(children, fields=fields)


def _small_rows(state: LogState) -> dict[str, list[dict[str, Any]]]:
    """The non-file actions of a checkpoint, per column: protocol, metaData, txns, live domains."""
    assert state.protocol is not None and state.metadata is not None
    domains = [
        {"domain": name, "configuration": str(d.get("configuration") or ""), "removed": False}
        for name, d in sorted(state.domains.items())
    ]
    return {
        PROTOCOL: [state.protocol.to_wire()[PROTOCOL]],
        METADATA: [state.metadata.to_wire()[METADATA]],
        TXN: [t.to_wire()[TXN] for t in state.txns.values()],
        DOMAIN_METADATA: domains,
    }


def _column_table(schema: pa.Schema, column: str, arr: pa.Array) -> pa.Table:
    cols = [arr if f.name == column else pa.nulls(len(arr), f.type) for f in schema]
    return pa.Table.from_arrays(cols, schema=schema)


def checkpoint_table(
    state: LogState,
    *,
    min_tombstone_ts: int,
    stats_as_json: bool | None = None,
    stats_as_struct: bool | None = None,
) -> tuple[pa.Table, int]:
    """The checkpoint rows of a state, and the number of add rows.

    :param stats_as_json, stats_as_struct: the stats format; None follows the table's
        `delta.checkpoint.writeStatsAsJson` / `writeStatsAsStruct`.
    """
    state.require_complete()
    assert state.protocol is not None and state.metadata is not None
    require_checkpoint_supported(state.protocol, "write a checkpoint")
    conf = state.metadata.configuration
    table = TableProperties(conf)  # (`delta.checkpoint.writeStatsAs*`, default true)
    as_json = table.write_stats_as_json if stats_as_json is None else stats_as_json
    as_struct = table.write_stats_as_struct if stats_as_struct is None else stats_as_struct
    # stats_parsed and partitionValues_parsed use the names in the files: physical ones under
    # column mapping, as the JSON stats and partitionValues do
    meta = column_mapping.physical_metadata(state.metadata) or state.metadata
    parsed_type = stats_parsed_type(meta) if as_struct else None
    adds = _with_stats_format(_adds_array(state), as_json=as_json, parsed_type=parsed_type, metadata=meta)
    removes = pa.concat_arrays(
        [conform_struct(state.live_base_removes(), REMOVE_TYPE), _tail_removes_array(state.tail_removes())]
    )
    if len(removes):
        ts = pc.fill_null(removes.field("deletionTimestamp"), 0)
        removes = removes.filter(pc.greater(ts, min_tombstone_ts))
    schema = pa.schema(
        [
            (TXN, TXN_TYPE),
            (ADD, adds.type),
            (REMOVE, REMOVE_TYPE),
            (METADATA, METADATA_TYPE),
            (PROTOCOL, PROTOCOL_TYPE),
            (DOMAIN_METADATA, DOMAIN_METADATA_TYPE),
        ]
    )
    tables = [
        _column_table(schema, col, pa.array(rows, type=schema.field(col).type))
        for col, rows in _small_rows(state).items()
        if rows
    ]
    tables += [_column_table(schema, ADD, adds), _column_table(schema, REMOVE, removes)]
    return pa.concat_tables(tables), len(adds)


# ----------------------------------------------------------------------------- write: parts
def _split(table: pa.Table, parts: int) -> list[pa.Table]:
    """The rows of each part, in part order (a part may be empty: it is written all the same)."""
    if parts == 1:
        return [table]
    paths = pc.coalesce(pc.struct_field(table[ADD], "path"), pc.struct_field(table[REMOVE], "path"))
    numbers = part_numbers(paths.combine_chunks(), parts)
    ordered = table.take(pa.array(np.argsort(numbers, kind="stable")))
    counts = np.bincount(numbers, minlength=parts + 1)[1:].tolist()
    starts = np.concatenate([[0], np.cumsum(counts)]).tolist()
    return [ordered.slice(starts[i], counts[i]) for i in range(parts)]


def parquet_bytes(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="snappy")
    return buf.getvalue()


def _write_classic(
    storage: Storage, version: int, table: pa.Table, num_adds: int, part_size: int
) -> dict[str, Any]:
    n_parts = max(1, -(-table.num_rows // max(1, part_size)))
    total = 0
    for i, chunk in enumerate(_split(table, n_parts)):
        data = parquet_bytes(chunk)
        name = checkpoint_name(version, i + 1, n_parts) if n_parts > 1 else checkpoint_name(version)
        storage.write(f"{LOG_DIR}/{name}", data)
        total += len(data)
    hint: dict[str, Any] = {"version": version, "size": table.num_rows}
    if n_parts > 1:
        hint["parts"] = n_parts
    hint.update({"sizeInBytes": total, "numOfAddFiles": num_adds})
    return hint


def write_checkpoint(
    storage: Storage, state: LogState, *, min_tombstone_ts: int, part_size: int = DEFAULT_PART_SIZE
) -> dict[str, Any]:
    """Write the checkpoint of `state` and then `_last_checkpoint`; returns the hint written."""
    table, num_adds = checkpoint_table(state, min_tombstone_ts=min_tombstone_ts)
    if state.protocol is not None and "v2Checkpoint" in (state.protocol.writer_features or ()):
        v2 = checkpoint_v2.write(storage, state.version, table)
        size = sum(s["sizeInBytes"] for s in v2["sidecarFiles"]) + v2["sizeInBytes"]
        rows = table.num_rows + 1 + len(v2["sidecarFiles"])  # + checkpointMetadata + sidecar actions
        hint = {"version": state.version, "size": rows, "sizeInBytes": size, "numOfAddFiles": num_adds}
        hint["v2Checkpoint"] = v2
    else:
        hint = _write_classic(storage, state.version, table, num_adds, part_size)
    current = read_last_checkpoint(storage)
    if current is None or current.version <= state.version:  # the hint never moves backwards
        storage.write(f"{LOG_DIR}/{LAST_CHECKPOINT}", orjson.dumps(hint))
    return hint
