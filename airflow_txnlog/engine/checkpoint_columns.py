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
- The checkpoint files are immutable but may be cleaned up later (log retention); a read after that
  raises `LogCorruptedError` saying so, and the caller reloads the table.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from airflow_txnlog.engine.errors import LogCorruptedError
from airflow_txnlog.engine.stats_struct import conform_struct
from airflow_txnlog.engine.storage import Storage


def _valid_rows(table: pa.Table, column: str) -> pa.StructArray:
    """The non-null rows of a struct column as one array (chunk by chunk: no ChunkedArray kernels)."""
    chunks = [_valid(c) for c in table.column(column).chunks]
    if not chunks:
        return pa.array([], type=table.schema.field(column).type)
    return chunks[0] if len(chunks) == 1 else pa.concat_arrays(chunks)


class CheckpointColumns:
    """Lazy access to the `add` / `remove` rows of one checkpoint (its part files in order)."""

    def __init__(self, storage: Storage, folder: str, part_names: Sequence[str]):
        self._storage = storage
        self._paths = [f"{folder}/{name}" for name in part_names]
        self._schemas: list[pa.Schema] = []
        self._cache: dict[tuple[str, str], pa.Array] = {}

    def _open(self, path: str) -> pq.ParquetFile:
        try:
            return pq.ParquetFile(self._storage.open_input(path))
        except FileNotFoundError as exc:
            if self._schemas:  # read before: it was there when the snapshot loaded
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
        tables = []
        for path in self._paths:
            f = self._open(path)
            schema = f.schema_arrow
            self._schemas.append(schema)
            wanted = [c for c in whole if c in schema.names]
            for column, fields in parts.items():
                wanted += [f"{column}.{n}" for n in fields if _has(schema, column, n)]
            tables.append(_read(f, path, wanted))
        out: dict[str, pa.Array] = {}
        for column in [*whole, *parts]:
            arrays = [_valid_rows(t, column) for t in tables if column in t.column_names]
            if arrays:
                out[column] = _concat(arrays)
        for column in parts:
            if column in out:
                for i, child in enumerate(out[column].flatten()):
                    self._cache[(column, out[column].type.field(i).name)] = child
        return out

    def field_names(self, column: str) -> list[str]:
        """Fields of `column` in any part, first-seen order."""
        seen: dict[str, None] = {}
        for schema in self._schemas:
            if column in schema.names:
                seen.update((f.name, None) for f in schema.field(column).type)
        return list(seen)

    def read(self, column: str, fields: Sequence[str] | None = None) -> pa.StructArray:
        """The non-null rows of `column` with `fields` (all when None; unknown names are left out)."""
        known = self.field_names(column)
        names = [n for n in (known if fields is None else fields) if n in known] or ["path"]
        missing = [n for n in names if (column, n) not in self._cache]
        if missing:
            self._fetch(column, missing)
        children = [self._cache[(column, n)] for n in names]
        return pa.StructArray.from_arrays(children, names=names)

    def _fetch(self, column: str, names: list[str]) -> None:
        per_part = []
        for path, schema in zip(self._paths, self._schemas, strict=True):
            if column not in schema.names:
                continue
            present = [n for n in names if _has(schema, column, n)]
            rows = _valid_rows(_read(self._open(path), path, [f"{column}.{n}" for n in present]), column)
            per_part.append(rows)
        for n in names:
            t = _unified(s.field(column).type.field(n).type for s in self._schemas if _has(s, column, n))
            parts = [_child(rows, n, t) for rows in per_part]
            self._cache[(column, n)] = _concat(parts) if parts else pa.array([], type=t)


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


def _has(schema: pa.Schema, column: str, name: str) -> bool:
    return column in schema.names and schema.field(column).type.get_field_index(name) >= 0


def _read(f: pq.ParquetFile, path: str, columns: list[str]) -> pa.Table:
    try:
        return f.read(columns=columns)  # (read_table would import pandas)
    except (OSError, pa.ArrowException) as exc:
        raise LogCorruptedError(f"checkpoint file {path} is unreadable: {exc}") from exc


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


def _concat(arrays: list[pa.Array]) -> pa.Array:
    if len(arrays) == 1:
        return arrays[0]
    t = _unified(a.type for a in arrays)
    return pa.concat_arrays([_conform(a, t) for a in arrays])
