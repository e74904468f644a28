"""A layout rewrite (Z-order, Hilbert clustering) of a group larger than the rewrite memory budget:
an external sort, range-partitioned then sorted per range, as Spark's `repartitionByRange` +
`sortWithinPartitions` does, holding one input file and then one range at a time.

    cuts     per key column, the cut points of the curve (engine.maintenance.curves.boundaries)
             from a sample of the group's key values: all of them up to SAMPLE_ROWS non-null
             values (then the same cuts as the in-memory path), else a uniform sample of each
             input file in proportion to its rows; only the key columns are read for it
    ranges   `outputs` ranges of (key, position): a row's position is its input file's place in the
             group and its place in that file (the order the in-memory path sorts stably in), so
             rows of one key (a skewed or low-cardinality column) still spread over the ranges; the
             bounds are the sampled rows' (key, position) at the quantiles i / outputs
    spill    each input file read alone (deletion vectors applied, row ids kept when tracked), the
             keys of its rows computed with the group's cuts, its rows split by range and appended
             to one Arrow IPC file per range (a temporary folder on local disk, with their keys)
    write    each range read back (memory-mapped), sorted by (key, position), written as one data
             file (engine.write.streamed); the spill folder is removed, and a sort that fails
             deletes the files it wrote

The files, taken in range order, hold the group's rows in the same order as the in-memory path's
(a stable sort of all the rows by key, whenever both draw the same cuts); only where one file ends
and the next begins differs: by sampled quantiles here, by equal row counts there. At most MAX_OPEN_RANGES
spill files are open at once: a group of more outputs is spilled in passes over its inputs.
Memory: one input file, then one range (about the group / outputs); a group written as one file
(outputs 1) is one range, held whole to sort it.
"""

from __future__ import annotations

import math
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_txnlog.engine.features import row_tracking
from airflow_txnlog.engine.log.actions import AddFile
from airflow_txnlog.engine.maintenance.curves import SAMPLE_ROWS, bits_per_column, boundaries, layout_keys
from airflow_txnlog.engine.maintenance.rewrite_layout import RewriteLayout
from airflow_txnlog.engine.state.scan import read_files
from airflow_txnlog.engine.state.snapshot import Snapshot, read_for_rewrite
from airflow_txnlog.engine.storage import Storage
from airflow_txnlog.engine.write.streamed import write_streamed
from airflow_txnlog.engine.write.writer import delete_files

KEY, POSITION = "__txnlog_sort_key", "__txnlog_sort_position"
MAX_OPEN_RANGES = 256


def write_sorted(
    storage: Storage, snap: Snapshot, group: Sequence[AddFile], outputs: int, layout: RewriteLayout
) -> list[AddFile]:
    """`group` rewritten in `layout`'s key order as up to `outputs` files (module docstring)."""
    columns, curve = list(layout.columns), str(layout.curve)
    sample, positions = _sample(storage, snap, group, columns)
    bits = bits_per_column(len(columns))
    cuts = [boundaries(sample.column(c), bits) for c in columns]
    bounds = _bounds(layout_keys(sample, columns, curve, cuts), positions, outputs)
    spill = Path(tempfile.mkdtemp(prefix="txnlog-sort-"))
    adds: list[AddFile] = []
    try:
        for first in range(0, len(bounds[0]) + 1, MAX_OPEN_RANGES):
            ranges = range(first, min(len(bounds[0]) + 1, first + MAX_OPEN_RANGES))
            _spill(storage, snap, group, (columns, curve, cuts), bounds, ranges=ranges, folder=spill)
            for r in ranges:
                if (add := _write_range(storage, snap, group, spill / f"{r}.arrow")) is not None:
                    adds.append(add)
    except BaseException:
        delete_files(storage, adds)  # (a sort that fails leaves none of its files)
        raise
    finally:
        shutil.rmtree(spill, ignore_errors=True)
    return adds


def _sample(
    storage: Storage, snap: Snapshot, group: Sequence[AddFile], columns: list[str]
) -> tuple[pa.Table, np.ndarray]:
    """The group's key values and their rows' positions: all of them up to SAMPLE_ROWS rows, else a
    uniform sample of each file in proportion to its rows (only the key columns are read)."""
    deleted = [int((f.deletion_vector or {}).get("cardinality") or 0) for f in group]
    rows = sum(max(0, (f.num_records or 0) - d) for f, d in zip(group, deleted, strict=True))
    share = min(1.0, SAMPLE_ROWS / max(rows, 1)) if all(f.num_records for f in group) else 1.0
    rng = np.random.default_rng(0)
    parts: list[pa.Table] = []
    where: list[np.ndarray] = []
    for ordinal, f in enumerate(group):
        keys = read_files(
            storage, [f], snap.schema, snap.partition_columns, columns=columns, names=snap.column_names
        )
        picks = np.arange(keys.num_rows, dtype=np.int64)
        if share < 1.0 and keys.num_rows:
            picks = np.sort(rng.integers(0, keys.num_rows, size=math.ceil(keys.num_rows * share)))
            keys = keys.take(pa.array(picks))
        parts.append(keys)
        where.append(_positions(ordinal, picks))
    return pa.concat_tables(parts), np.concatenate(where) if where else np.empty(0, dtype=np.uint64)


def _positions(ordinal: int, rows: np.ndarray) -> np.ndarray:
    """A row's place in the group: its file's ordinal in the high 32 bits, its row in the low."""
    return (np.uint64(ordinal) << np.uint64(32)) | rows.astype(np.uint64)


Bounds = tuple[np.ndarray, np.ndarray]  # (keys, positions) of the range bounds, in order


def _bounds(keys: np.ndarray, positions: np.ndarray, outputs: int) -> Bounds:
    """The range bounds: the sampled rows' (key, position) at the quantiles i / outputs."""
    if outputs <= 1 or not len(keys):
        return np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.uint64)
    order = np.lexsort((positions, keys))
    at = np.unique((np.arange(1, outputs) * len(order)) // outputs)
    return keys[order][at], positions[order][at]


def _ranges(keys: np.ndarray, positions: np.ndarray, bounds: Bounds) -> np.ndarray:
    """Each row's range: how many bounds (key, position) are at or before its own (a row equal to a
    bound, the sampled row itself, goes to the range above it)."""
    bound_keys, bound_positions = bounds
    if not len(bound_keys):
        return np.zeros(len(keys), dtype=np.int64)
    all_keys = np.concatenate([bound_keys, keys])
    all_positions = np.concatenate([bound_positions, positions])
    is_bound = np.concatenate([np.ones(len(bound_keys), dtype=np.int64), np.zeros(len(keys), dtype=np.int64)])
    order = np.lexsort((-is_bound, all_positions, all_keys))  # (a bound before an equal row)
    before = np.cumsum(is_bound[order])
    out = np.empty(len(all_keys), dtype=np.int64)
    out[order] = before
    return out[len(bound_keys) :]


def _spill(
    storage: Storage,
    snap: Snapshot,
    group: Sequence[AddFile],
    key: tuple[list[str], str, list[pa.Array]],
    bounds: Bounds,
    *,
    ranges: range,
    folder: Path,
) -> None:
    """Every input's rows of `ranges`, with their keys, appended to one IPC file per range: the
    file's rows ordered by range once (a stable argsort), then cut into runs."""
    columns, curve, cuts = key
    writers: dict[int, pa.ipc.RecordBatchFileWriter] = {}
    try:
        for ordinal, f in enumerate(group):
            data = read_for_rewrite(storage, snap, [f])  # (row ids kept, if tracked)
            if not data.num_rows:
                continue
            keys = layout_keys(data, columns, curve, cuts)
            positions = _positions(ordinal, np.arange(data.num_rows, dtype=np.int64))
            where = _ranges(keys, positions, bounds)
            order = np.argsort(where, kind="stable")
            keyed = data.append_column(KEY, pa.array(keys)).append_column(POSITION, pa.array(positions))
            keyed = keyed.take(pa.array(order))
            ends = np.cumsum(np.bincount(where, minlength=len(bounds[0]) + 1))
            for r in ranges:
                start, stop = (int(ends[r - 1]) if r else 0), int(ends[r])
                if stop > start:
                    rows = keyed.slice(start, stop - start)
                    if r not in writers:
                        writers[r] = pa.ipc.new_file(str(folder / f"{r}.arrow"), rows.schema)
                    writers[r].write_table(rows)
    finally:
        for w in writers.values():
            w.close()


def _write_range(storage: Storage, snap: Snapshot, group: Sequence[AddFile], path: Path) -> AddFile | None:
    """One range's rows, sorted by key (stable), as one data file; None for an empty range."""
    if not path.exists():
        return None
    with pa.memory_map(str(path)) as source:
        rows = pa.ipc.open_file(source).read_all()
        order = pc.sort_indices(rows, sort_keys=[(KEY, "ascending"), (POSITION, "ascending")])
        ordered = rows.take(order).drop_columns([KEY, POSITION])
    conf = dict(snap.properties)
    hidden = row_tracking.hidden_columns(conf) if row_tracking.enabled(conf) else []
    return write_streamed(
        storage, iter(_slices(ordered)), group[0].partition_values, snap.partition_columns, conf,
        names=snap.column_names, hidden=hidden,
    )  # fmt: skip


def _slices(table: pa.Table, rows: int = 1 << 20) -> Iterator[pa.Table]:
    for start in range(0, table.num_rows, rows):
        yield table.slice(start, rows)
