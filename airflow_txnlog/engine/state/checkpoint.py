"""Checkpoints written: a state as a Delta checkpoint, and then the hint file.

Write path (classic checkpoint, optionally split into parts; memory holds a few batches of rows
and a row group per part, never the whole checkpoint):
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
   never fall out of a checkpoint. The struct is taken from the previous checkpoint's own
   `stats_parsed` where a row has it beside its JSON and it has every field of the table's struct
   (read as data skipping reads it, `add_actions.as_json_says`), else taken from what an
   `add_actions()` of the same snapshot parsed (`Snapshot.parsed_base_stats`), else parsed from
   the JSON in bulk by Arrow's JSON reader; `partitionValues_parsed` is typed batch by batch as
   the rows are written, and one value not of its column's type (another writer's) drops the column
   from every row: the files written so far are discarded and the checkpoint written again without
   it;
4. the rows are streamed: the live adds are read `BATCH_ROWS` at a time (the previous checkpoint's
   columns batch by batch, never all at once; in-memory rows sliced), converted on worker threads
   while the next batch is read (`ordered_map`, order kept), and handed to
   `checkpoint_parts.PartWriters`, which writes `%020d.checkpoint.parquet`, or, when asked for a
   `part_size` and with more rows, the parts `%020d.checkpoint.%010d.%010d.parquet`, in row groups.
   Parts are clustered as the protocol requires, by Spark's hash partitioning of the file path: part
   = pmod(murmur3_32(path, seed 42), parts) + 1, with Spark's variant of murmur3 (trailing bytes
   mixed one by one); a non-file action has no path and lands where Spark puts a null key, part
   pmod(42, parts) + 1. So every action of a path is in one part, and two writers that race to write
   the same parts write the same rows into each. A part appears whole (temp + rename, or one object
   put), after every part is done. On a table with `v2Checkpoint` and `delta.checkpointPolicy=v2`
   the same stream of file actions goes to the sidecars of a UUID-named V2 checkpoint instead
   (`checkpoint_parts.SidecarWriters`, one per 262,144 live files, each on its own thread), and the
   main file (`checkpoint_v2.write_main`: the non-file actions, checkpointMetadata, a sidecar action
   per sidecar) is written after them; never multi-part. Without the policy (Delta's default
   `classic`) such a table gets a classic single-file checkpoint, as Delta writes it;
5. only then overwrite `_last_checkpoint` with {version, size, parts?, sizeInBytes, numOfAddFiles,
   v2Checkpoint?}.
A crash between 4 and 5 leaves a stale hint, which readers tolerate; a crash during 4 leaves an
incomplete multi-part set, which readers ignore, or sidecars no main file names, which log cleanup
reclaims.

Reading a checkpoint into a `LogState` is `checkpoint_read`'s.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, TypeVar

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from airflow_txnlog.engine.errors import TxnLogError
from airflow_txnlog.engine.features import column_mapping
from airflow_txnlog.engine.features.table_features import require_checkpoint_supported, v2_checkpoints
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
)
from airflow_txnlog.engine.log.checkpoint_columns import ordered_map
from airflow_txnlog.engine.log.log_paths import LAST_CHECKPOINT
from airflow_txnlog.engine.log.log_reader import read_last_checkpoint
from airflow_txnlog.engine.log.replay import ADD_TYPE, REMOVE_TYPE, LogState
from airflow_txnlog.engine.log.stats_struct import (
    add_stats_json,
    conform_struct,
    parse_stats,
    stats_parsed_type,
)
from airflow_txnlog.engine.log.thread_pools import side_reads
from airflow_txnlog.engine.properties import TableProperties
from airflow_txnlog.engine.schema import schema_from_json
from airflow_txnlog.engine.state.add_actions import parsed_base, partition_lookup, typed_partition
from airflow_txnlog.engine.state.checkpoint_parts import (
    PartWriters,
    SidecarWriters,
    checkpoint_schema,
    column_table,
    sidecar_count,
)
from airflow_txnlog.engine.state.tail_actions import tail_adds_array, tail_removes_array
from airflow_txnlog.engine.storage import LOG_DIR, Storage

# None: one classic checkpoint file however many actions (Delta on Spark's default: its
# `checkpoint.partSize` is unset unless asked for). PROTOCOL.md deprecates multi-part checkpoints
# ("writers should avoid creating them"); the streamed writer's memory does not grow with the rows.
DEFAULT_PART_SIZE: int | None = None
BATCH_ROWS = 32_768  # add rows converted (stats parsed) at a time when a checkpoint is written
_NO_TEXT = pa.nulls(1, pa.string())[0]
_T = TypeVar("_T")
Split = Callable[
    [str, pa.Array], list[pa.Table]
]  # one action's rows -> each part's rows (`PartWriters.split`)


class _UntypedPartitionValue(Exception):
    """A partition value not of its column's type (another writer's): the checkpoint is written
    again without `partitionValues_parsed` (readers have the strings in `partitionValues`)."""


def _partition_values_parsed(values: pa.Array, fields: Sequence[pa.Field]) -> pa.StructArray:
    """`add.partitionValues_parsed` for the `partitionValues` maps `values`: each partition column's
    values in the column's type (`fields`); `_UntypedPartitionValue` for a value not of its type."""
    try:
        cols = [typed_partition(partition_lookup(values, f.name), f.type) for f in fields]
    except (pa.ArrowException, ValueError, TxnLogError) as exc:
        raise _UntypedPartitionValue(str(exc)) from exc
    return pa.StructArray.from_arrays(cols, fields=list(fields))


@dataclass(frozen=True)
class _Plan:
    """What the checkpoint of a state holds, decided before any row is written: the stats formats,
    whether `partitionValues_parsed` is written (`values_fields`: the partition columns, typed batch
    by batch; one value not of its type restarts the checkpoint without it), the schema. The
    tombstones kept are found when they are written, after the adds (`removes`)."""

    state: LogState
    as_json: bool
    parsed_type: pa.StructType | None
    values_fields: tuple[pa.Field, ...] | None
    min_tombstone_ts: int
    schema: pa.Schema
    loaded: pa.Array | pa.ChunkedArray | None = None  # the live base rows' `stats_parsed`, if parsed

    @property
    def num_adds(self) -> int:
        return self.state.num_files()

    @property
    def num_rows(self) -> int:
        return sum(len(rows) for rows in _small_rows(self.state).values()) + self.num_adds + len(self.removes)

    @cached_property
    def removes(self) -> pa.StructArray:
        """The tombstones newer than `min_tombstone_ts`, base rows then tail."""
        state = self.state
        removes = pa.concat_arrays(
            [
                conform_struct(state.live_base_removes(), REMOVE_TYPE),
                tail_removes_array(state.tail_removes()),
            ]
        )
        if len(removes):
            ts = pc.fill_null(removes.field("deletionTimestamp"), 0)
            removes = removes.filter(pc.greater(ts, self.min_tombstone_ts))
        return removes


def _plan(
    state: LogState,
    min_tombstone_ts: int,
    stats_as_json: bool | None,
    stats_as_struct: bool | None,
    *,
    typed_values: bool = True,
    loaded: pa.Array | pa.ChunkedArray | None = None,
) -> _Plan:
    state.require_complete()
    assert state.protocol is not None and state.metadata is not None
    require_checkpoint_supported(state.protocol, "write a checkpoint")
    table = TableProperties(state.metadata.configuration)  # (`delta.checkpoint.writeStatsAs*`, default true)
    as_json = table.write_stats_as_json if stats_as_json is None else stats_as_json
    as_struct = table.write_stats_as_struct if stats_as_struct is None else stats_as_struct
    # stats_parsed and partitionValues_parsed use the names in the files: physical ones under
    # column mapping, as the JSON stats and partitionValues do
    meta = column_mapping.physical_metadata(state.metadata) or state.metadata
    parsed_type = stats_parsed_type(meta) if as_struct else None
    values_fields = None
    add_fields = list(ADD_TYPE)
    if parsed_type is not None and meta.partition_columns and typed_values:
        schema = schema_from_json(meta.schema_string)
        values_fields = tuple(schema.field(c) for c in meta.partition_columns)
        add_fields.append(pa.field(PARTITION_VALUES_PARSED, pa.struct(values_fields)))
    if parsed_type is not None:
        add_fields.append(pa.field(STATS_PARSED, parsed_type))
    schema = checkpoint_schema(pa.struct(add_fields))
    if loaded is not None and (loaded.type != parsed_type or len(loaded) != state.num_base_files()):
        loaded = None  # (stats parsed for another struct or another state: parsed again here)
    return _Plan(state, as_json, parsed_type, values_fields, min_tombstone_ts, schema, loaded)


def _add_rows(plan: _Plan, adds: pa.StructArray, parsed: pa.StructArray | None = None) -> pa.StructArray:
    """Add rows in ADD_TYPE as the checkpoint writes them: `stats` kept or nulled, and
    `partitionValues_parsed` / `stats_parsed` appended as the plan says, `stats_parsed` from
    `parsed` where given, else parsed from the JSON stats (thread-safe: no state)."""
    fields, children = list(ADD_TYPE), adds.flatten()
    stats_at = ADD_TYPE.get_field_index("stats")
    if plan.parsed_type is not None:
        if plan.values_fields is not None:
            values = _partition_values_parsed(adds.field("partitionValues"), plan.values_fields)
            fields.append(pa.field(PARTITION_VALUES_PARSED, values.type))
            children.append(values)
        fields.append(pa.field(STATS_PARSED, plan.parsed_type))
        children.append(parsed if parsed is not None else parse_stats(children[stats_at], plan.parsed_type))
    if not plan.as_json:
        children[stats_at] = pa.nulls(len(adds), pa.string())
    return pa.StructArray.from_arrays(children, fields=fields)


def _kept_stats(target: pa.StructType, raw: pa.StructArray, text: pa.Array) -> pa.StructArray | None:
    """`stats_parsed` of checkpoint rows that carry both forms: their own struct where it has every
    field of `target`, read as its JSON says it (`add_actions.as_json_says`, as data skipping reads
    it), instead of parsing the JSON again; the other rows' `text` (JSON rendered from a lone
    struct, or a row without struct) parsed. None when the struct cannot serve."""
    kept = parsed_base(raw, target, complete=True)
    if kept is None or raw.type.get_field_index("stats") < 0:
        return None
    use = pc.and_(kept.is_valid(), raw.field("stats").is_valid())
    if pc.all(use).as_py():
        return kept
    if not pc.any(use).as_py():
        return None
    return pc.if_else(use, kept, parse_stats(pc.if_else(use, _NO_TEXT, text), target))


def _base_add_rows(plan: _Plan, raw: pa.StructArray, loaded: pa.StructArray | None) -> pa.StructArray:
    """`_add_rows` of checkpoint (base) add rows read with any writer's fields: checkpointed adds
    carry dataChange=false, as Spark writes them, and JSON stats rendered from `stats_parsed` where
    that is all a row has; a complete `stats_parsed` (or `loaded`, the rows' stats a snapshot
    parsed already) is kept rather than parsed again."""
    base = conform_struct(raw, ADD_TYPE)
    flat = base.flatten()
    flat[ADD_TYPE.get_field_index("dataChange")] = pa.repeat(False, len(base))
    text = flat[ADD_TYPE.get_field_index("stats")] = add_stats_json(raw)
    parsed = loaded
    if parsed is None and plan.parsed_type is not None:
        parsed = _kept_stats(plan.parsed_type, raw, text)
    return _add_rows(plan, pa.StructArray.from_arrays(flat, fields=list(ADD_TYPE)), parsed)


def _base_batches(state: LogState) -> Iterator[pa.StructArray]:
    """The live base add rows with every field a checkpoint keeps (and `stats_parsed`, to render
    missing JSON stats), `BATCH_ROWS` at a time: a checkpoint's rows read from its files batch by
    batch and not kept, in-memory rows (a bulk replay's) sliced."""
    if state.base_adds is None:
        return
    # (the live rows' mask, computed on another thread while the first batch is read)
    live_mask = side_reads().submit(state.live_base_add_mask)
    if state.source is not None:
        fields = [n for n in ADD_TYPE.names if n != "dataChange"] + [STATS_PARSED]  # (written false)
        batches: Iterable[pa.StructArray] = state.source.iter_read(ADD, fields, BATCH_ROWS)
    else:
        rows = state.base_adds
        batches = (rows.slice(i, BATCH_ROWS) for i in range(0, len(rows), BATCH_ROWS))
    done = 0
    for batch in batches:
        mask = live_mask.result()
        live = batch if mask is None else batch.filter(mask.slice(done, len(batch)))
        done += len(batch)
        yield live


def _add_tables(plan: _Plan, split: Split) -> Iterator[list[pa.Table]]:
    """The add rows, batch by batch, each converted and split into parts on worker threads while
    the next batch is read."""
    pairs = _with_loaded(_base_batches(plan.state), plan.loaded)
    yield from ordered_map(lambda pair: split(ADD, _base_add_rows(plan, *pair)), pairs)
    yield split(ADD, _add_rows(plan, tail_adds_array(plan.state.tail_adds())))


def _with_loaded(
    batches: Iterable[pa.StructArray], loaded: pa.Array | pa.ChunkedArray | None
) -> Iterator[tuple[pa.StructArray, pa.StructArray | None]]:
    """Each batch of live base rows with the same rows of `loaded` (None without)."""
    done = 0
    for batch in batches:
        part = None if loaded is None else loaded.slice(done, len(batch))
        if isinstance(part, pa.ChunkedArray):
            part = part.chunk(0) if part.num_chunks == 1 else part.combine_chunks()
        done += len(batch)
        yield batch, part


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


def _whole(plan: _Plan) -> pa.Table:
    """The checkpoint's rows as one table."""
    return pa.concat_tables(
        t for (t,) in _tables(plan, lambda column, arr: [column_table(plan.schema, column, arr)])
    )


def _tables(plan: _Plan, split: Split) -> Iterator[list[pa.Table]]:
    """The checkpoint's rows in order (protocol, metaData, txns, domains, adds, tombstones), each
    batch of one action's rows as `split` divides them into parts."""
    yield from _small_tables(plan, split)
    yield from _file_tables(plan, split)


def _small_tables(plan: _Plan, split: Split) -> Iterator[list[pa.Table]]:
    """The checkpoint's non-file rows (protocol, metaData, txns, domains), an action at a time."""
    for column, rows in _small_rows(plan.state).items():
        if rows:
            yield split(column, pa.array(rows, type=plan.schema.field(column).type))


def _file_tables(plan: _Plan, split: Split) -> Iterator[list[pa.Table]]:
    """The checkpoint's file-action rows in order: adds, then tombstones."""
    yield from _add_tables(plan, split)
    yield split(REMOVE, plan.removes)


def checkpoint_table(
    state: LogState,
    *,
    min_tombstone_ts: int,
    stats_as_json: bool | None = None,
    stats_as_struct: bool | None = None,
) -> tuple[pa.Table, int]:
    """The checkpoint rows of a state as one table, and the number of add rows (the rows
    `write_checkpoint` streams; for savepoint manifests).

    :param stats_as_json, stats_as_struct: the stats format; None follows the table's
        `delta.checkpoint.writeStatsAsJson` / `writeStatsAsStruct`.
    """
    return _planned(
        state, min_tombstone_ts, stats_as_json, stats_as_struct, lambda p: (_whole(p), p.num_adds)
    )


def _planned(
    state: LogState,
    min_tombstone_ts: int,
    stats_as_json: bool | None,
    stats_as_struct: bool | None,
    build: Callable[[_Plan], _T],
    *,
    loaded: pa.Array | pa.ChunkedArray | None = None,
) -> _T:
    """`build(plan)`; built again without `partitionValues_parsed` when a partition value turns out
    not to be of its column's type (`build` discards what its first attempt wrote)."""
    try:
        return build(_plan(state, min_tombstone_ts, stats_as_json, stats_as_struct, loaded=loaded))
    except _UntypedPartitionValue:
        return build(
            _plan(state, min_tombstone_ts, stats_as_json, stats_as_struct, typed_values=False, loaded=loaded)
        )


# ----------------------------------------------------------------------------- write: parts
def parquet_bytes(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="snappy")
    return buf.getvalue()


def write_checkpoint(
    storage: Storage,
    state: LogState,
    *,
    min_tombstone_ts: int,
    part_size: int | None = DEFAULT_PART_SIZE,
    parsed_base_stats: pa.Array | pa.ChunkedArray | None = None,
) -> dict[str, Any]:
    """Write the checkpoint of `state` and then `_last_checkpoint`; returns the hint written. A
    checkpoint is streamed (`checkpoint_parts`), classic or V2. `parsed_base_stats`:
    the live checkpoint rows' stats a snapshot of `state` parsed already (`Snapshot.parsed_base_stats`),
    written as their `stats_parsed` instead of parsing their JSON again (ignored unless of its type)."""

    def build(plan: _Plan) -> dict[str, Any]:
        return _write_files(storage, plan, part_size)

    hint = _planned(state, min_tombstone_ts, None, None, build, loaded=parsed_base_stats)
    current = read_last_checkpoint(storage)
    if current is None or current.version <= state.version:  # the hint never moves backwards
        storage.write(f"{LOG_DIR}/{LAST_CHECKPOINT}", orjson.dumps(hint))
    return hint


def _write_files(storage: Storage, plan: _Plan, part_size: int | None) -> dict[str, Any]:
    """Write the checkpoint files of `plan`; the `_last_checkpoint` hint for them."""
    state = plan.state
    v2_listed = state.protocol is not None and "v2Checkpoint" in (state.protocol.writer_features or ())
    conf = state.metadata.configuration if state.metadata is not None else {}
    # (a v2Checkpoint table without policy `v2`: a classic V1-spec checkpoint, as Delta writes it, which
    # PROTOCOL.md always allows and DROP FEATURE v2Checkpoint needs; never multi-part while listed)
    if v2_listed and v2_checkpoints(conf):
        return _write_v2(storage, plan)
    # (the row count, which needs the tombstones, is asked for before writing only to size parts)
    n_parts = 1 if part_size is None or v2_listed else max(1, -(-plan.num_rows // max(1, part_size)))
    with PartWriters(storage, state.version, n_parts, plan.schema) as parts:
        for pieces in _tables(plan, parts.split):
            parts.add(pieces)
        sizes = parts.publish()
    hint = {"version": state.version, "size": plan.num_rows}
    if n_parts > 1:
        hint["parts"] = n_parts
    hint.update({"sizeInBytes": sum(sizes), "numOfAddFiles": plan.num_adds})
    return hint


def _write_v2(storage: Storage, plan: _Plan) -> dict[str, Any]:
    """Write the V2 checkpoint of `plan`: its file actions streamed into sidecars, written on a
    thread each, then the main file naming them; the `_last_checkpoint` hint for it."""
    state = plan.state
    files = pa.schema([plan.schema.field(ADD), plan.schema.field(REMOVE)])
    with SidecarWriters(storage, sidecar_count(plan.num_adds), files) as sidecars:
        for (rows,) in _file_tables(plan, lambda column, arr: [column_table(files, column, arr)]):
            sidecars.add(rows)
        entries = sidecars.publish()
    others = pa.schema([f for f in plan.schema if f.name not in (ADD, REMOVE)])
    small = pa.concat_tables(t for (t,) in _small_tables(plan, lambda c, arr: [column_table(others, c, arr)]))
    v2 = checkpoint_v2.write_main(storage, state.version, small, entries)
    size = sum(s["sizeInBytes"] for s in entries) + v2["sizeInBytes"]
    rows = plan.num_rows + 1 + len(entries)  # + checkpointMetadata + sidecar actions
    hint = {"version": state.version, "size": rows, "sizeInBytes": size, "numOfAddFiles": plan.num_adds}
    hint["v2Checkpoint"] = v2
    return hint
