"""One data file written from a stream of pieces: a rewrite (a planned compaction's bin, a deletion
vector purge) copies many files' rows into one file without holding them all.

    pieces      tables with the table's logical columns (partition columns included, as
                `read_for_rewrite` gives them; hidden row-tracking columns kept), every row of one
                partition, whose values (their log form) the caller gives: the inputs' own
    each piece  to the file's form (physical names and field ids on a column-mapped table, partition
                columns left out, variants as stored), written as the next row group(s) of one
                parquet file (pyarrow's ParquetWriter), its stats added to a StatsAccumulator
    the end     the file's add (size from the store, stats as `compute_stats` gives for the whole
                file), or None when no piece had a row (nothing is left behind)

Memory: one piece at a time, plus what the parquet writer buffers of one row group; the same file
and stats as `write_data_files` would write from the pieces concatenated, but for row-group
boundaries. A failure deletes the file being written.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_txnlog.engine import properties as props
from airflow_txnlog.engine.errors import StorageError
from airflow_txnlog.engine.features import column_mapping, iceberg_compat, variant
from airflow_txnlog.engine.log.actions import AddFile
from airflow_txnlog.engine.log.stats import LeafPath, StatsAccumulator, stats_columns
from airflow_txnlog.engine.schema import hive_escape
from airflow_txnlog.engine.storage import Storage
from airflow_txnlog.engine.store_errors import as_os_error


def write_streamed(
    storage: Storage,
    pieces: Iterable[pa.Table],
    partition_values: Mapping[str, str | None],
    parts: Sequence[str],
    conf: Mapping[str, str],
    *,
    names: column_mapping.Names | None = None,
    hidden: Sequence[str] = (),
) -> AddFile | None:
    """Write `pieces` as one data file (see the module docstring); its add, not committed.
    `partition_values`: the file's, in the log's form and names (physical on a mapped table);
    `parts`: the table's partition columns (logical names)."""
    files_parts = [names.physical_of(c) for c in parts] if names is not None else list(parts)
    folder = "".join(f"{c}={hive_escape(partition_values.get(c))}/" for c in files_parts)
    rel = f"{folder}part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    chosen = stats_columns(conf)
    if names is not None and chosen is not None:
        chosen = [names.physical_path(p) for p in chosen]
    iceberg = props.TableProperties(conf).iceberg_compat_v2  # (partition columns kept: no stats)
    unseen = [*hidden, *files_parts] if iceberg else hidden
    try:  # (a piece's own failure, reading an input say, propagates as it is; the sink's are named)
        with _FileSink(storage, rel, props.num_indexed_cols(conf), chosen, unseen) as sink:
            for piece in pieces:
                body = names.to_files(piece) if names is not None else piece
                sink.write(body if iceberg else body.drop_columns(files_parts))
        stats = sink.stats()
        size = sink.stored(storage.fs.size, storage.full_path(rel)) if stats is not None else 0
    except BaseException:
        with contextlib.suppress(OSError):
            storage.delete(rel)
        raise
    if stats is None:
        return None
    return AddFile(
        path=rel, partition_values=dict(partition_values), size=size,
        modification_time=int(time.time() * 1000), data_change=True, stats=stats,
        tags=iceberg_compat.TAGS if iceberg else None,
    )  # fmt: skip


# Rows gathered into one row group: pyarrow's own default (so a streamed file is laid out as
# `write_data_files` lays out the same rows), or fewer when they pass ROW_GROUP_BYTES in memory.
ROW_GROUP_ROWS = 1024 * 1024
ROW_GROUP_BYTES = 128 * 1024 * 1024


class _FileSink:
    """One parquet file opened at the first row written, its rows gathered into row groups of
    ROW_GROUP_ROWS (or ROW_GROUP_BYTES) before they are written; the stats of the rows written."""

    def __init__(
        self, storage: Storage, rel: str, n_cols: int, chosen: list[LeafPath] | None, hidden: Sequence[str]
    ) -> None:
        self.storage, self.rel, self.n_cols, self.chosen, self.hidden = storage, rel, n_cols, chosen, hidden
        self.stack = contextlib.ExitStack()
        self.writer: pq.ParquetWriter | None = None
        self.acc: StatsAccumulator | None = None
        self.held: list[pa.Table] = []

    def __enter__(self) -> _FileSink:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is not None:
            self.stack.close()
            return
        try:
            self.stored(self._flush)
        finally:  # (the file is closed, so uploaded, before the caller deletes it on a failure)
            self.stored(self.stack.close)

    def stored(self, call: Callable[..., Any], *args: Any) -> Any:
        """`call(*args)`, a store operation: its failure as the engine's StorageError."""
        try:
            return call(*args)
        except Exception as exc:
            err = _store_error(self.storage, self.rel, exc)
            if err is exc:
                raise
            raise err from exc

    def write(self, body: pa.Table) -> None:
        if body.num_rows == 0:
            return
        seen = body.drop_columns([h for h in self.hidden if h in body.column_names])
        if self.acc is None:
            self.acc = StatsAccumulator(seen.schema, num_indexed_cols=self.n_cols, stats_columns=self.chosen)
        self.acc.add(seen)
        self.held.append(variant.to_files(body))
        rows, size = sum(t.num_rows for t in self.held), sum(t.nbytes for t in self.held)
        if rows >= ROW_GROUP_ROWS or size >= ROW_GROUP_BYTES:
            self.stored(lambda: self._flush(whole=False))

    def _flush(self, *, whole: bool = True) -> None:
        """Write what is held: all of it, or (`whole=False`, by rows) its full row groups only, the
        rest held for the next (so row groups are ROW_GROUP_ROWS rows but the last)."""
        if not self.held:
            return
        # (one contiguous table: pyarrow's writer may end a row group where a chunk ends)
        rows = pa.concat_tables(self.held).combine_chunks()
        self.held = []
        if not whole and rows.nbytes < ROW_GROUP_BYTES:
            full = rows.num_rows - rows.num_rows % ROW_GROUP_ROWS
            if full < rows.num_rows:
                self.held = [rows.slice(full)]
            rows = rows.slice(0, full)
        if self.writer is None:
            path = self.storage.full_path(self.rel)
            self.storage.fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
            out = self.stack.enter_context(self.storage.fs.open(path, "wb"))
            self.writer = self.stack.enter_context(pq.ParquetWriter(out, rows.schema, compression="snappy"))
        self.writer.write_table(rows, row_group_size=ROW_GROUP_ROWS)

    def stats(self) -> str | None:
        """The stats JSON of what was written; None when no row was."""
        return None if self.acc is None else self.acc.json()


def _store_error(storage: Storage, rel: str, exc: BaseException) -> BaseException:
    """A store's failure as the engine's StorageError; anything else as it is."""
    if not isinstance(exc, Exception):
        return exc
    cause: Any = exc if isinstance(exc, OSError) else as_os_error(storage.root, rel, exc)
    if cause is None:
        return exc
    return StorageError(f"cannot write data file {rel!r} of {storage.root!r}: {cause}")
