"""The files of a checkpoint that hold its rows, written as streams of row groups in bounded memory:
the part files of a classic checkpoint (its schema: `checkpoint_schema`) and the sidecar files of a
V2 one.

`PartWriters(storage, version, parts, schema)` takes a checkpoint's rows table by table (a batch of
add actions at a time) and sends each row to its part: with one part every row; with more, the part
the protocol requires, Spark's hash partitioning of the file path (`spark_hash.part_numbers`: a row
without a path, protocol / metaData / txn / domainMetadata, lands where Spark puts a null key,
pmod(42, parts) + 1). Inside a part the rows keep the order they came in. Each part is written by its
own thread (pyarrow's `ParquetWriter`, snappy; dictionary encoding only where values repeat), which
buffers about `ROW_GROUP_ROWS` rows and writes them as row groups of at most that many, so memory
holds a row group per part and the batches in flight, never the whole checkpoint.

Where the bytes go: on a local filesystem (`LocalStorage`) each part streams into a temporary file
under `_delta_log/.tmp/`, named `.<final name>.<uuid hex>.tmp` as `LocalStorage.write` names its
own, whose writeback to disk is started after each row group (`writeback.SyncedFile`, so the disk
writes while the next row group is encoded), which is fsynced and renamed over the final name when
`publish` runs; elsewhere (object stores) a part's bytes collect in memory and go out in one
`Storage.write` (one object put), since `Storage` has no streamed upload.

`SidecarWriters(storage, count, schema)` writes the file actions (add / remove columns only) of a V2
checkpoint into `count` sidecars `_delta_log/_sidecars/<uuid>.parquet` (`sidecar_count`: one per
`SIDECAR_ROWS` live files, at most `MAX_SIDECARS`). The protocol sets no order or clustering for
sidecars, so rows are dealt to them in turn, `DEAL_ROWS` at a time (slices: no copy, no hash), and
each sidecar is written by its own thread as a part is: a V2 checkpoint of a big table encodes on
several threads, where a classic one, a single file, encodes on one. A sidecar dealt no rows is
dropped, never published.

Invariants:
- nothing is published before every part is complete; parts are then published in part order on a
  local filesystem, side by side (one put each) on an object store (a crash in between leaves an
  incomplete multi-part set, which readers ignore; sidecars left by a crash are named by no
  checkpoint, and log cleanup reclaims them);
- a failure (or leaving the `with` block without `publish`) removes the temporary files;
- an empty part is still written, with the schema and no rows (an empty sidecar is not).
"""

from __future__ import annotations

import contextlib
import io
import os
import queue
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import wait
from types import TracebackType
from typing import Any, Self

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from airflow_txnlog.engine.log.actions import (
    ADD,
    DOMAIN_METADATA,
    METADATA,
    PROTOCOL,
    REMOVE,
    STATS_PARSED,
    TXN,
)
from airflow_txnlog.engine.log.checkpoint_v2 import SIDECAR_DIR
from airflow_txnlog.engine.log.log_paths import checkpoint_name
from airflow_txnlog.engine.log.replay import REMOVE_TYPE, STR_MAP
from airflow_txnlog.engine.log.spark_hash import part_numbers
from airflow_txnlog.engine.log.thread_pools import object_puts
from airflow_txnlog.engine.storage import LOG_DIR, LocalStorage, Storage
from airflow_txnlog.engine.writeback import SyncedFile

ROW_GROUP_ROWS = 65_536  # rows a part buffers before writing them as a row group
SIDECAR_ROWS = 262_144  # live files per sidecar of a V2 checkpoint (each sidecar has its own thread)
MAX_SIDECARS = 8
DEAL_ROWS = ROW_GROUP_ROWS // 2  # rows dealt to one sidecar at a time (a bigger table is sliced)
_QUEUED = 2  # tables waiting for a part's writer thread
# Fields whose values are (nearly) unique per file: written plain, as dictionary encoding of them
# costs time and bytes (it is tried, and given up, in every row group). All others (partition
# values, flags, tags, the small actions) keep pyarrow's dictionary encoding.
_PLAIN = (
    f"{ADD}.path",
    f"{ADD}.stats",
    f"{ADD}.size",
    f"{ADD}.modificationTime",
    f"{ADD}.deletionVector",
    f"{ADD}.baseRowId",
    f"{ADD}.defaultRowCommitVersion",
    f"{ADD}.{STATS_PARSED}",
    f"{REMOVE}.path",
    f"{REMOVE}.deletionTimestamp",
    f"{REMOVE}.size",
    f"{REMOVE}.deletionVector",
    f"{REMOVE}.baseRowId",
    f"{REMOVE}.defaultRowCommitVersion",
)


def _leaves(t: pa.DataType, path: str) -> Iterator[str]:
    """Parquet column paths of the leaves of a field of type `t` at `path` (pyarrow's naming)."""
    if pa.types.is_struct(t):
        for f in t:
            yield from _leaves(f.type, f"{path}.{f.name}")
    elif pa.types.is_map(t):
        yield from _leaves(t.key_type, f"{path}.key_value.key")
        yield from _leaves(t.item_type, f"{path}.key_value.value")
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        yield from _leaves(t.value_type, f"{path}.list.element")
    else:
        yield path


def dictionary_columns(schema: pa.Schema) -> list[str]:
    """The leaf columns of a checkpoint schema written with dictionary encoding (see `_PLAIN`)."""
    leaves = (leaf for f in schema for leaf in _leaves(f.type, f.name))
    return [leaf for leaf in leaves if not any(leaf == p or leaf.startswith(p + ".") for p in _PLAIN)]


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


def checkpoint_schema(add_type: pa.StructType) -> pa.Schema:
    """A classic checkpoint's columns, one per action (the `add` struct as the writer decided it)."""
    return pa.schema(
        [
            (TXN, TXN_TYPE),
            (ADD, add_type),
            (REMOVE, REMOVE_TYPE),
            (METADATA, METADATA_TYPE),
            (PROTOCOL, PROTOCOL_TYPE),
            (DOMAIN_METADATA, DOMAIN_METADATA_TYPE),
        ]
    )


def column_table(schema: pa.Schema, column: str, arr: pa.Array) -> pa.Table:
    """Checkpoint rows of one action: `arr` in its column, nulls in every other."""
    cols = [arr if f.name == column else pa.nulls(len(arr), f.type) for f in schema]
    return pa.Table.from_arrays(cols, schema=schema)


class _Part:
    """One part file being written by its own thread: the writer, the sink, the rows not yet in a
    row group. The thread takes tables from a queue; an error is kept and raised by `finish`."""

    def __init__(self, storage: Storage, key: str, schema: pa.Schema) -> None:
        self.key = key
        self.temp: str | None = None
        self.memory: io.BytesIO | None = None
        sink: str | io.BytesIO
        if isinstance(storage, LocalStorage):
            folder = os.path.join(storage.fs_root, LOG_DIR, ".tmp")
            os.makedirs(folder, exist_ok=True)
            sink = self.temp = os.path.join(folder, f".{os.path.basename(key)}.{uuid.uuid4().hex}.tmp")
        else:
            sink = self.memory = io.BytesIO()
        self.writer = pq.ParquetWriter(
            sink, schema, compression="snappy", use_dictionary=dictionary_columns(schema)
        )
        self.synced: SyncedFile | None = None
        if self.temp is not None:
            try:
                self.synced = SyncedFile(self.temp)
            except OSError:
                with contextlib.suppress(OSError, pa.ArrowException):  # (keep the first error)
                    self.writer.close()
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.temp)
                raise
        self.queue: queue.Queue[pa.Table | None] = queue.Queue(_QUEUED)
        self.ended = False  # (the end of the rows is queued)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name=f"checkpoint {key}", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        pending: list[pa.Table] = []
        rows = 0
        # (the first row group is half as big: the writer, the slowest stage, starts a batch sooner)
        group = ROW_GROUP_ROWS // 2
        while (table := self.queue.get()) is not None:
            if self.error is not None:
                continue  # (failed: drain the queue, so that the producer never blocks)
            pending.append(table)
            rows += table.num_rows
            if rows >= group:
                pending, rows, group = self._flush(pending), 0, ROW_GROUP_ROWS
        if self.error is None:
            self._flush(pending)
            self._close()

    def _flush(self, pending: list[pa.Table]) -> list[pa.Table]:
        try:
            if pending:
                self.writer.write_table(pa.concat_tables(pending), row_group_size=ROW_GROUP_ROWS)
            if self.synced is not None:
                self.synced.advance()  # (the disk writes this row group while the next is encoded)
        except BaseException as exc:  # (kept: `finish` raises it in the caller's thread)
            self.error = exc
        return []

    def _close(self) -> None:
        try:
            self.writer.close()
        except BaseException as exc:  # (as in `_flush`)
            self.error = exc

    def add(self, table: pa.Table) -> None:
        if self.error is not None:
            raise self.error
        if table.num_rows:
            self.queue.put(table)

    def end(self) -> None:
        """No more rows: the thread writes what is left and closes the file (`finish` waits)."""
        if not self.ended:
            self.queue.put(None)
            # (set only once the marker is queued: an interrupt during a blocked `put` leaves it
            # False, so `discard` queues one and its join cannot wait forever)
            self.ended = True

    def finish(self) -> int:
        """Write what is left and close the file (fsynced when local); its size in bytes."""
        self.end()
        self.thread.join()
        if self.error is not None:
            raise self.error
        if self.memory is not None:
            return len(self.memory.getbuffer())
        assert self.synced is not None
        try:
            return self.synced.sync()
        finally:
            self.synced.close()

    def publish(self, storage: Storage) -> None:
        memory = self.memory
        if memory is not None:
            storage.write(self.key, memory.getvalue())
            return
        if self.temp is None:  # (discarded: a put still queued when the checkpoint was given up)
            raise RuntimeError(f"checkpoint part {self.key} was discarded")
        final = storage.full_path(self.key)
        os.makedirs(os.path.dirname(final), exist_ok=True)
        os.replace(self.temp, final)
        self.temp = None

    def discard(self) -> None:
        if self.thread.is_alive():
            self.error = self.error or RuntimeError("checkpoint part abandoned")
            self.end()
            self.thread.join()
        self.memory = None
        if self.synced is not None:
            self.synced.close()
            self.synced = None
        if self.temp is not None:
            with contextlib.suppress(OSError, pa.ArrowException):  # (already failing: keep that error)
                self.writer.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.temp)
            self.temp = None


class _Files:
    """A set of `_Part`s written together: removed unless published (leaving the `with` block)."""

    def __init__(self, storage: Storage, keys: list[str], schema: pa.Schema) -> None:
        self._storage = storage
        self._schema = schema
        self._parts: list[_Part] = []
        try:
            for key in keys:
                self._parts.append(_Part(storage, key, schema))
        except BaseException:
            self._discard()
            raise

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._discard()  # (after `publish` nothing is left to discard)

    def _finish(self) -> list[int]:
        """Every part's size once all are written: each is told the rows ended before any is
        waited for, so their last row groups are encoded (and fsynced) side by side."""
        for part in self._parts:
            part.end()
        return [part.finish() for part in self._parts]

    def _publish(self, parts: list[_Part]) -> None:
        """Put `parts` in place: on a local filesystem renamed one by one, in order; on an object
        store each is one put, issued side by side (`thread_pools.object_puts`), and every put is
        waited for before the first error, if any, is raised."""
        if len(parts) < 2 or isinstance(self._storage, LocalStorage):
            for part in parts:
                part.publish(self._storage)
            return
        puts = [object_puts().submit(part.publish, self._storage) for part in parts]
        try:
            wait(puts)
        finally:
            for put in puts:  # (interrupted: what has not started will not)
                put.cancel()
        for put in puts:
            put.result()

    def _discard(self) -> None:
        for part in self._parts:
            part.discard()
        self._parts = []


class PartWriters(_Files):
    """The `parts` part files of the checkpoint of `version` (see the module docstring)."""

    def __init__(self, storage: Storage, version: int, parts: int, schema: pa.Schema) -> None:
        keys = [checkpoint_name(version, i + 1, parts) for i in range(parts)] if parts > 1 else None
        super().__init__(storage, [f"{LOG_DIR}/{key}" for key in keys or [checkpoint_name(version)]], schema)
        self._count = parts

    def split(self, column: str, arr: pa.Array) -> list[pa.Table]:
        """Rows of one action (`arr`, the values of `column`) as each part's rows of the checkpoint
        table, in order; a pure function of the rows, safe to call from any thread."""
        if self._count == 1:
            return [column_table(self._schema, column, arr)]
        if column in (ADD, REMOVE) and len(arr):
            numbers = pa.array(part_numbers(arr.field("path"), self._count))
            pieces = [
                arr.filter(pc.equal(numbers, pa.array([i], pa.int64())[0])) for i in range(1, self._count + 1)
            ]
        else:  # (no path: where Spark puts a null key)
            home = part_numbers(pa.nulls(1, pa.string()), self._count)[0]
            pieces = [arr if i == home else arr.slice(0, 0) for i in range(1, self._count + 1)]
        return [column_table(self._schema, column, piece) for piece in pieces]

    def add(self, pieces: list[pa.Table]) -> None:
        """Append each part's rows (`split`'s result) to that part."""
        for part, rows in zip(self._parts, pieces, strict=True):
            part.add(rows)

    def publish(self) -> list[int]:
        """Finish every part, then put them in place (`_publish`); the parts' sizes in bytes."""
        sizes = self._finish()
        self._publish(self._parts)
        self._parts = []
        return sizes


def sidecar_count(files: int) -> int:
    """The sidecars a V2 checkpoint of `files` live files is written in (at least one)."""
    return max(1, min(MAX_SIDECARS, -(-files // SIDECAR_ROWS)))


class SidecarWriters(_Files):
    """`count` sidecar files of a V2 checkpoint, with the add / remove columns of `schema` (see the
    module docstring)."""

    def __init__(self, storage: Storage, count: int, schema: pa.Schema) -> None:
        self._names = [f"{uuid.uuid4()}.parquet" for _ in range(count)]
        super().__init__(storage, [f"{LOG_DIR}/{SIDECAR_DIR}/{name}" for name in self._names], schema)
        self._rows = [0] * count
        self._next = 0

    def add(self, table: pa.Table) -> None:
        """Append a table of file-action rows to the sidecars in turn, `DEAL_ROWS` rows at a time."""
        for start in range(0, table.num_rows, DEAL_ROWS):
            piece = table.slice(start, DEAL_ROWS)  # (no copy)
            self._parts[self._next].add(piece)
            self._rows[self._next] += piece.num_rows
            self._next = (self._next + 1) % len(self._parts)

    def publish(self) -> list[dict[str, Any]]:
        """Finish every sidecar, put those holding rows in place; their `sidecar` actions
        ({path, sizeInBytes, modificationTime}), in order."""
        sizes = self._finish()
        held = [i for i, rows in enumerate(self._rows) if rows]
        for i, part in enumerate(self._parts):
            if i not in held:
                part.discard()
        self._publish([self._parts[i] for i in held])
        self._parts = []
        now = int(time.time() * 1000)
        return [{"path": self._names[i], "sizeInBytes": sizes[i], "modificationTime": now} for i in held]
