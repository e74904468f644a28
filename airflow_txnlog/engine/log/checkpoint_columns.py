"""Checkpoint file actions read column by column, only when asked for.

A checkpoint of a million-file table is mostly `add.stats` text (about 200 bytes a file) that opening
a table, listing its paths or planning a vacuum never looks at. So loading reads only the columns
that reconciliation needs (`add.path`, `remove.path` and the deletion vectors that are part of a
file's key); every other field of the `add` / `remove` rows is read from the same files the first
time a caller asks for it (`CheckpointColumns.read`), and kept.

Invariants:
- Row order is the files' own: parts in order, rows in order, only the rows where the action column
  is non-null. Every read of the same action yields the same rows in the same order, so arrays read
  at different times line up with the keys computed at load.
- Parts may disagree on schema (another writer, an older version): a field absent from one part is
  null in its rows; the field's type is the first part's that has it.
- A part where loading found no row of an action (a checkpoint without tombstones) is not opened
  for that action's fields again: they are empty there, where decoding them would give a null per
  row of the part (~67 ms for the `remove` fields of a million-file checkpoint written by delta-rs).
- The checkpoint files are immutable but may be cleaned up later (log retention); a read after that
  raises `LogCorruptedError` saying so, and the caller reloads the table.
- Fields read are kept (a snapshot asks again), except `add.stats` when `add.stats_parsed` exists
  (UNCACHED_WITH_STRUCT): the bulk of the bytes, and rarely needed then.
- A field may be asked for in part, as dotted paths inside it (`stats_parsed.minValues.id`): only
  those parquet leaves are read, and the field comes back as a struct with just those children (its
  own nulls intact: a leaf's definition levels carry its parents'). Data skipping reads the stats of
  the predicate's columns this way, a few percent of `stats_parsed`'s bytes. A part where none of
  the paths exists gives the whole field.
- A big field can also be streamed instead of read whole: `derive` turns it into something small
  batch by batch (the JSON stats into parsed stats), `iter_read` gives the rows batch by batch (a
  checkpoint written from this one). `ordered_map` runs the work on each batch on worker threads
  while the next batch is decoded, results in the rows' order. Neither keeps what it read, except
  `derive` for a `KeepField` (a snapshot's file table): the field is then kept as `read` would keep
  it, but compressed batch by batch (zstd: JSON stats shrink ~6x), so that `take` (a few `AddFile`s)
  restores only the batches it needs and a whole `read` restores it once, to keep it plain. A batch
  whose derived result holds all the field says (JSON stats parsed with no key the struct lacks) is
  not kept at all: `take` renders its rows from the result, and a whole `read` reads the files again.
"""

from __future__ import annotations

import contextlib
import functools
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from airflow_txnlog.engine.errors import LogCorruptedError
from airflow_txnlog.engine.log.actions import STATS_PARSED
from airflow_txnlog.engine.log.bulk_memory import open_parquet
from airflow_txnlog.engine.log.kept_fields import KeepField, Rendered, packed, take_packed, unpacked
from airflow_txnlog.engine.log.parquet_counts import all_null, small_action_rows
from airflow_txnlog.engine.log.stats_struct import conform_struct
from airflow_txnlog.engine.log.thread_pools import part_reads, shared
from airflow_txnlog.engine.storage import LocalStorage, Storage


def _valid_rows(table: pa.Table, column: str) -> pa.StructArray:
    """The non-null rows of a struct column as one array (chunk by chunk: no ChunkedArray kernels)."""
    chunks = [_valid(c) for c in table.column(column).chunks]
    if not chunks:
        return pa.array([], type=table.schema.field(column).type)
    return chunks[0] if len(chunks) == 1 else pa.concat_arrays(chunks)


# The JSON stats text is most of a checkpoint's bytes; where the checkpoint also has `stats_parsed`
# it is needed rarely (the few `AddFile`s whose JSON is not rendered from the struct), so it is read
# each time rather than kept. Without `stats_parsed` it is the only source of stats: kept.
UNCACHED_WITH_STRUCT = frozenset({"stats"})
# Optional file-action fields where a null means what an absent value means: a part whose statistics
# show one null in every row gets nulls without decoding it (a million nulls decode to ~20 MB).
# (Not `tags`: a map, and the statistics cannot tell an empty map from a null one.)
NULL_ALIKE = frozenset({"deletionVector", "baseRowId", "defaultRowCommitVersion", "clusteringProvider"})
_BATCH_ROWS = 32_768  # rows decoded at a time by `derive` (at most)
_MIN_BATCH_ROWS = 4_096  # (and at least, unless a part is smaller)
WORKERS = max(1, min(4, pa.cpu_count()))  # threads of `ordered_map` (derive, checkpoint writes)
WAITING = 1  # items per worker `ordered_map` lets wait beside the running ones
# Column chunks are streamed through a buffer per column, without pre-buffering (pyarrow's defaults
# read a whole chunk at once: the stats text of a million-file checkpoint written as one row group is
# ~200 MB of bytes in memory before a batch is decoded). On an object store a refill is one ranged
# read (fsspec's read-ahead follows one position, which the columns' interleaved reads keep moving),
# so the buffer is large; a local file's refill is a copy from the page cache, and the ~25 columns a
# checkpoint write streams filled 8 MB at a time cost more than they save: with 1 MB, in alternating
# processes at 1M files, S6S's median went from 1106 to 1084 ms and S2S's from 560 to 468 ms.
_READ_BUFFER = 8 << 20
_LOCAL_READ_BUFFER = 1 << 20
# From this many rows a part's small actions are read on another thread while its keys decode (a
# second open of the file: worth ~40 ms at 1M rows, a needless request pair on an object store for a
# small part, whose small actions take a few ms). A local second open costs no request: there the
# side read starts lower (a 100k-row checkpoint written by delta-rs, its small actions last, takes
# 10-15 ms to read them, as long as its keys).
_SIDE_READ_ROWS = 200_000
_LOCAL_SIDE_READ_ROWS = 20_000
_T = TypeVar("_T")
_I = TypeVar("_I")


class CheckpointColumns:
    """Lazy access to the `add` / `remove` rows of one checkpoint (its part files in order)."""

    def __init__(self, storage: Storage, folder: str, part_names: Sequence[str]):
        self._storage = storage
        local = isinstance(storage, LocalStorage)
        self._buffer = _LOCAL_READ_BUFFER if local else _READ_BUFFER
        self._side_rows = _LOCAL_SIDE_READ_ROWS if local else _SIDE_READ_ROWS
        self._paths = [f"{folder}/{name}" for name in part_names]
        self._schemas: list[pa.Schema] = []
        self._loaded = False
        self._cache: dict[tuple[str, str], pa.Array] = {}
        # kept by `derive`: per batch its field compressed, or None where `_rendered` gives it back
        self._packed: dict[tuple[str, str], list[tuple[pa.Buffer | None, int]]] = {}
        self._rendered: dict[tuple[str, str], Rendered] = {}
        self._rows_in: dict[tuple[str, str], int] = {}  # (part path, column) -> its rows, from `load`

    def _read(self, path: str, columns: Callable[[pa.Schema], list[str]]) -> tuple[pa.Schema, pa.Table]:
        """(the file's schema, the columns `columns(schema)` names), in one open of the file."""
        return self._guarded(path, lambda f: (f.schema_arrow, self._decode(f, columns(f.schema_arrow))))

    def _decode(self, f: pq.ParquetFile, columns: list[str]) -> pa.Table:
        return f.read(columns=columns)

    def _guarded(self, path: str, use: Callable[[pq.ParquetFile], _T]) -> _T:
        """`use` applied to the part file at `path`; a missing or broken file is a LogCorruptedError."""
        with self._errors(path), self._storage.open_input(path) as fh:
            # (ParquetFile.read, not read_table, which would import pandas)
            return use(open_parquet(fh, buffer_size=self._buffer, pre_buffer=False))

    def _part_batches(self, path: str, columns: list[str], rows: int | None) -> Iterator[pa.RecordBatch]:
        """The `columns` of the part file at `path`, `rows` rows at a time (errors as `_guarded`);
        None: batches of at most `_BATCH_ROWS` rows, and at least `2 * WORKERS` of them per part
        when it has more than `_MIN_BATCH_ROWS` rows, so that a smaller table keeps every worker busy."""
        with self._errors(path), self._storage.open_input(path) as fh:
            f = open_parquet(fh, buffer_size=self._buffer, pre_buffer=False)
            if rows is None:
                rows = max(_MIN_BATCH_ROWS, min(_BATCH_ROWS, -(-f.metadata.num_rows // (2 * WORKERS))))
            yield from f.iter_batches(batch_size=rows, columns=columns)

    @contextlib.contextmanager
    def _errors(self, path: str) -> Iterator[None]:
        try:
            yield
        except FileNotFoundError as exc:
            if self._loaded:  # it was there when the snapshot loaded
                raise LogCorruptedError(
                    f"checkpoint file {path} was removed after this snapshot was loaded (log cleanup?); "
                    "Help: open the table again"
                ) from exc
            raise LogCorruptedError(f"checkpoint file {path} is unreadable: {exc}") from exc
        except (OSError, pa.ArrowException) as exc:
            raise LogCorruptedError(f"checkpoint file {path} is unreadable: {exc}") from exc

    def load(self, whole: Sequence[str], parts: dict[str, Sequence[str]]) -> dict[str, pa.Array]:
        """First read: the `whole` columns (small actions) and the given fields of each `parts`
        column; returns the non-null rows of each, and keeps the fields for later reads."""

        def read_part(f: pq.ParquetFile, path: str) -> tuple[pa.Schema, dict[str, pa.Array]]:
            schema = f.schema_arrow
            keys = [
                key
                for column, fields in parts.items()
                for key in _decoded(f.metadata, schema, column, fields)
            ]
            small = functools.partial(small_action_rows, columns=[c for c in whole if c in schema.names])
            # (a big part's small actions meanwhile, through their own open of the file: a reader is
            # not shared between threads; Arrow's decode releases the GIL, so the two run in parallel)
            big = f.metadata.num_rows >= self._side_rows
            pending = part_reads().submit(self._guarded, path, small) if big else None
            table = self._decode(f, keys)
            rows = {c: _valid_rows(table, c) for c in parts if c in table.column_names}
            return schema, rows | (pending.result() if pending is not None else small(f))

        found: dict[str, list[pa.Array]] = {}
        for path in self._paths:
            schema, rows = self._guarded(path, functools.partial(read_part, path=path))
            self._schemas.append(schema)
            for column, arr in rows.items():
                found.setdefault(column, []).append(arr)
                self._rows_in[(path, column)] = len(arr)
        self._loaded = True
        out = {column: _concat(found[column]) for column in [*whole, *parts] if column in found}
        for column, fields in parts.items():
            if column in out:
                for i, child in enumerate(out[column].flatten()):
                    self._cache[(column, out[column].type.field(i).name)] = child
                for n in fields:  # (skipped in every part: null in every row, kept so)
                    types = [s.field(column).type.field(n).type for s in self._schemas if _has(s, column, n)]
                    if types and (column, n) not in self._cache:
                        self._cache[(column, n)] = pa.nulls(len(out[column]), _unified(types))
        return out

    def derive(
        self, column: str, name: str, fn: Callable[[pa.Array], pa.Array]
    ) -> pa.Array | pa.ChunkedArray:
        """`fn` over field `name` of `column`'s rows (the rows and order of `read`), read batch by
        batch: a big field (`add.stats` text) becomes a small result without all of it in memory at
        once. `fn` runs on worker threads while the next batches are decoded (`ordered_map`: it must
        be thread-safe). The field is not kept, unless `fn` is a `KeepField` and `read` would keep it:
        then each batch is kept compressed (zstd, by the same workers; ~1/6 of the JSON stats text),
        for `take` to pick rows from and a later `read` to restore. A kept copy is used if there is one.
        The result is chunked, a chunk per batch, when there are several (not copied into one)."""
        kept = self._cache.get((column, name))
        if kept is not None:
            return fn(kept)
        types = [s.field(column).type.field(name).type for s in self._schemas if _has(s, column, name)]
        t = _unified(types) if types else pa.string()  # (no part has it: its rows all null)
        keep = isinstance(fn, KeepField) and self._keeps(column, name) and (column, name) not in self._packed

        def batches() -> Iterator[pa.Array]:
            for path, schema in zip(self._paths, self._schemas, strict=True):
                if column in schema.names:
                    wanted = [f"{column}.{name}"] if _has(schema, column, name) else [f"{column}.path"]
                    for batch in self._part_batches(path, wanted, None):
                        yield _child(_valid(batch.column(column)), name, t)

        render = fn.render if keep and isinstance(fn, KeepField) and fn.exact is not None else None
        exact = fn.exact if render is not None and isinstance(fn, KeepField) else None

        def work(piece: pa.Array) -> tuple[pa.Array, tuple[pa.Buffer | None, int] | None]:
            if exact is not None:
                result, complete = exact(piece)
                return result, (None if complete else packed(piece), len(piece))
            return fn(piece), (packed(piece), len(piece)) if keep else None

        results = list(ordered_map(work, batches()))
        out = [r for r, _ in results]
        # (chunked: concatenating a million rows of parsed stats would copy ~90 MB on this thread)
        whole = _chunked(out) if out else fn(pa.array([], type=t))
        if keep:
            self._packed[(column, name)] = [p for _, p in results if p is not None]
            if render is not None:
                self._rendered[(column, name)] = Rendered(whole, render, t)
        return whole

    def _keeps(self, column: str, name: str) -> bool:
        """Does `read` keep this field (see UNCACHED_WITH_STRUCT)?"""
        return name not in UNCACHED_WITH_STRUCT or STATS_PARSED not in self.field_names(column)

    def iter_read(
        self, column: str, fields: Sequence[str], rows: int = _BATCH_ROWS
    ) -> Iterator[pa.StructArray]:
        """The rows of `read(column, fields)` (whole fields only), about `rows` at a time: kept fields
        sliced from memory, the others decoded batch by batch from the files and not kept, so a
        field bigger than memory allows can be streamed (a checkpoint written from this one)."""
        known = self.field_names(column)
        names = [n for n in fields if n in known] or ["path"]
        kept = {n: self._cache[(column, n)] for n in names if (column, n) in self._cache}
        types = {
            n: _unified(s.field(column).type.field(n).type for s in self._schemas if _has(s, column, n))
            for n in names
            if n not in kept
        }
        done = 0
        for path, schema in zip(self._paths, self._schemas, strict=True):
            if column not in schema.names:
                continue
            wanted = [f"{column}.{n}" for n in types if _has(schema, column, n)] or [f"{column}.path"]
            for batch in self._part_batches(path, wanted, rows):
                got = _valid(batch.column(column))
                children = [
                    kept[n].slice(done, len(got)) if n in kept else _child(got, n, types[n]) for n in names
                ]
                done += len(got)
                yield pa.StructArray.from_arrays(children, names=names)

    def field_names(self, column: str) -> list[str]:
        """Fields of `column` in any part, first-seen order."""
        seen: dict[str, None] = {}
        for schema in self._schemas:
            if column in schema.names:
                seen.update((f.name, None) for f in schema.field(column).type)
        return list(seen)

    def read(self, column: str, fields: Sequence[str] | None = None) -> pa.StructArray:
        """The non-null rows of `column` with `fields` (all when None; unknown names are left out;
        a dotted name reads part of a field, see the module doc)."""
        known = self.field_names(column)
        asked = known if fields is None else list(fields)
        names = [n for n in asked if n in known]
        partial: dict[str, list[str]] = {}
        for n in asked:
            top, _, rest = n.partition(".")
            if rest and top in known and top not in names:
                partial.setdefault(top, []).append(rest)
        names = names or ([] if partial else ["path"])
        for n in names:
            kept = self._packed.pop((column, n), None)
            self._rendered.pop((column, n), None)
            if kept is not None and all(b is not None for b, _ in kept):
                self._cache[(column, n)] = _concat([unpacked(b) for b, _ in kept if b is not None])
            # (else some batches were never kept: `_fetch` reads the field from the files)
        missing = [n for n in names if (column, n) not in self._cache]
        fetched = self._fetch(column, missing) if missing else {}
        children = [self._cache.get((column, n), fetched.get(n)) for n in names]
        for top, paths in partial.items():
            names.append(top)
            whole = self._cache.get((column, top))
            children.append(whole if whole is not None else self._fetch_paths(column, top, paths))
        return pa.StructArray.from_arrays(children, names=names)

    def take(self, column: str, fields: Sequence[str], rows: pa.Array) -> pa.StructArray:
        """The rows at positions `rows` (ascending, of `read`'s rows) with `fields` (whole fields;
        unknown names left out): as `read(...).take(rows)`, but a field `derive` kept compressed
        is restored only in the batches that hold those rows."""
        known = self.field_names(column)
        names = [n for n in fields if n in known] or ["path"]
        read = [n for n in names if (column, n) not in self._packed]
        whole = self.read(column, read) if read else None
        children = []
        for n in names:
            if n in read:
                assert whole is not None
                children.append(whole.field(read.index(n)).take(rows))
            else:
                t = _unified(s.field(column).type.field(n).type for s in self._schemas if _has(s, column, n))
                kept, rendered = self._packed[(column, n)], self._rendered.get((column, n))
                children.append(take_packed(kept, rows, t, rendered))
        return pa.StructArray.from_arrays(children, names=names)

    def _fetch_paths(self, column: str, top: str, paths: list[str]) -> pa.Array:
        """Field `top` of `column` with only the children at `paths` (dotted, below `top`)."""
        parts = []
        for path, schema in zip(self._paths, self._schemas, strict=True):
            if column not in schema.names:
                continue
            wanted = [f"{column}.{top}.{p}" for p in paths if _has_path(schema, [column, top, *p.split(".")])]
            if not wanted:
                wanted = [f"{column}.{top}"] if _has(schema, column, top) else [f"{column}.path"]
            rows = _valid_rows(self._read(path, functools.partial(_fixed, wanted))[1], column)
            parts.append(rows)
        types = [r.type.field(top).type for r in parts if r.type.get_field_index(top) >= 0]
        t = _unified(types) if types else pa.struct([])
        return _concat([_child(rows, top, t) for rows in parts]) if parts else pa.array([], type=t)

    def _fetch(self, column: str, names: list[str]) -> dict[str, pa.Array]:
        per_part: list[pa.StructArray | int] = []  # (a part's rows, or their count where none is read)
        for path, schema in zip(self._paths, self._schemas, strict=True):
            if column not in schema.names:
                continue
            if self._rows_in.get((path, column)) == 0:  # (`load` found no row of it here: not opened)
                per_part.append(0)
                continue

            def use(f: pq.ParquetFile, schema: pa.Schema = schema, path: str = path) -> pa.Table | None:
                wanted = _decoded(f.metadata, schema, column, names)
                if not wanted and (path, column) in self._rows_in:
                    return None  # (only fields null in every row, by the part's statistics: not decoded)
                return self._decode(f, wanted or [f"{column}.path"])

            table = self._guarded(path, use)
            per_part.append(self._rows_in[(path, column)] if table is None else _valid_rows(table, column))
        out: dict[str, pa.Array] = {}
        for n in names:
            t = _unified(s.field(column).type.field(n).type for s in self._schemas if _has(s, column, n))
            parts = [pa.nulls(rows, t) if isinstance(rows, int) else _child(rows, n, t) for rows in per_part]
            out[n] = _concat(parts) if parts else pa.array([], type=t)
            if self._keeps(column, n):
                self._cache[(column, n)] = out[n]
        return out


def _valid(arr: pa.Array) -> pa.Array:
    """The non-null rows; a slice (no copy) when they are contiguous, as writers group actions by kind."""
    if arr.null_count == 0:
        return arr
    where = pc.indices_nonzero(arr.is_valid())
    if len(where) == 0:
        return arr.slice(0, 0)
    first, last = where[0].as_py(), where[-1].as_py()
    if last - first + 1 == len(where):
        return arr.slice(first, len(where))
    return arr.take(where)


def ordered_map(fn: Callable[[_I], _T], items: Iterable[_I], workers: int = WORKERS) -> Iterator[_T]:
    """`fn` of each item on `workers` threads, yielded in the items' order. Items are drawn (here
    decoded from a file) while earlier ones are worked on, at most `WAITING` per worker waiting, so memory
    holds a few items at a time; pyarrow's kernels and readers release the GIL, so the work runs in
    parallel. `fn` must be thread-safe; its first error is raised here."""
    pool = _pool(workers)
    pending: deque[Future[_T]] = deque()
    try:
        for item in items:
            pending.append(pool.submit(fn, item))
            while len(pending) > WAITING * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for future in pending:  # (abandoned or failed: what has not started will not)
            future.cancel()


def _pool(workers: int) -> ThreadPoolExecutor:
    """The process's pool of `workers` threads for `ordered_map` (`thread_pools.shared`: kept, so
    its threads' allocator caches stay warm; renewed in a forked child). Its tasks never wait for
    other tasks of a pool, so sharing it cannot deadlock."""
    return shared("txnlog-batches", workers)


def _fixed(columns: list[str], schema: pa.Schema) -> list[str]:
    return columns


def _decoded(meta: pq.FileMetaData, schema: pa.Schema, column: str, names: Sequence[str]) -> list[str]:
    """The dotted fields of `names` a part has and must decode: not an optional one its statistics
    show null in every row (`NULL_ALIKE`; its nulls are made instead)."""
    return [
        f"{column}.{n}"
        for n in names
        if _has(schema, column, n) and not (n in NULL_ALIKE and all_null(meta, f"{column}.{n}"))
    ]


def _has(schema: pa.Schema, column: str, name: str) -> bool:
    return column in schema.names and schema.field(column).type.get_field_index(name) >= 0


def _has_path(schema: pa.Schema, names: list[str]) -> bool:
    """Does the nested field at `names` (column, field, ...) exist in `schema`?"""
    if names[0] not in schema.names:
        return False
    t = schema.field(names[0]).type
    for name in names[1:]:
        if not pa.types.is_struct(t) or t.get_field_index(name) < 0:
            return False
        t = t.field(name).type
    return True


def _child(rows: pa.StructArray, name: str, t: pa.DataType) -> pa.Array:
    i = rows.type.get_field_index(name)
    if i < 0:
        return pa.nulls(len(rows), t)
    return _conform(rows.field(i), t)


def _unified(types: Iterable[pa.DataType]) -> pa.DataType:
    """One type for a field that parts may type differently (struct fields united, as a permissive
    concat of the parts would)."""
    fields = [pa.field("f", t) for t in types]
    if all(f.type == fields[0].type for f in fields):
        return fields[0].type
    return pa.unify_schemas([pa.schema([f]) for f in fields], promote_options="permissive").field("f").type


def _conform(arr: pa.Array, t: pa.DataType) -> pa.Array:
    if arr.type == t:
        return arr
    return conform_struct(arr, t) if pa.types.is_struct(t) else arr.cast(t)


def _chunked(arrays: list[pa.Array]) -> pa.Array | pa.ChunkedArray:
    """The arrays as one (no copy): the array itself, or a chunked array of them."""
    if len(arrays) == 1:
        return arrays[0]
    t = _unified(a.type for a in arrays)
    return pa.chunked_array([_conform(a, t) for a in arrays], type=t)


def _concat(arrays: list[pa.Array]) -> pa.Array:
    if len(arrays) == 1:
        return arrays[0]
    t = _unified(a.type for a in arrays)
    return pa.concat_arrays([_conform(a, t) for a in arrays])
