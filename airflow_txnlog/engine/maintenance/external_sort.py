"""A layout rewrite (Z-order, Hilbert clustering) of a group larger than the rewrite memory budget:
an external sort, range-partitioned then sorted per range, as Spark's `repartitionByRange` +
`sortWithinPartitions` does, holding one input file and then one range at a time.

    cuts     per key column, the cut points of the curve (engine.maintenance.curves.boundaries)
             from a sample of the group's key values: all of them up to SAMPLE_ROWS non-null
             values (then the same cuts as the in-memory path), else a uniform sample of each
             input file in proportion to its rows; only the key columns are read for it
    ranges   `outputs` key ranges: the bounds are the keys of the sampled rows at the quantiles
             i / outputs; a key equal to a bound goes to the range above it
    spill    each input file read alone (deletion vectors applied, row ids kept when tracked), the
             keys of its rows computed with the group's cuts, its rows split by range and appended
             to one Arrow IPC file per range (a temporary folder on local disk, with their keys)
    write    each range read back (memory-mapped), sorted by key (stable: ties keep input order),
             written as one data file (engine.write.streamed); the spill folder is removed

The files, taken in range order, hold the group's rows in the same order as the in-memory path's
(a stable sort of all the rows by key, whenever both draw the same cuts); only where one file ends
and the next begins differs: by key range here, by equal row counts there. At most MAX_OPEN_RANGES
spill files are open at once: a group of more outputs is spilled in passes over its inputs.
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

KEY = "__txnlog_sort_key"
MAX_OPEN_RANGES = 256


def write_sorted(
    storage: Storage, snap: Snapshot, group: Sequence[AddFile], outputs: int, layout: RewriteLayout
) -> list[AddFile]:
    """`group` rewritten in `layout`'s key order as up to `outputs` files (module docstring)."""
    columns, curve = list(layout.columns), str(layout.curve)
    sample = _sample(storage, snap, group, columns)
    bits = bits_per_column(len(columns))
    cuts = [boundaries(sample.column(c), bits) for c in columns]
    bounds = _bounds(layout_keys(sample, columns, curve, cuts), outputs)
    spill = Path(tempfile.mkdtemp(prefix="txnlog-sort-"))
    adds: list[AddFile] = []
    try:
        for first in range(0, len(bounds) + 1, MAX_OPEN_RANGES):
            ranges = range(first, min(len(bounds) + 1, first + MAX_OPEN_RANGES))
            _spill(storage, snap, group, (columns, curve, cuts), bounds, ranges=ranges, folder=spill)
            adds += [a for r in ranges if (a := _write_range(storage, snap, group, spill / f"{r}.arrow"))]
    finally:
        shutil.rmtree(spill, ignore_errors=True)
    return adds


def _sample(storage: Storage, snap: Snapshot, group: Sequence[AddFile], columns: list[str]) -> pa.Table:
    """The group's key values: all of them up to SAMPLE_ROWS rows, else a uniform sample of each
    file in proportion to its rows (only the key columns are read)."""
    rows = sum(
        max(0, (f.num_records or 0) - int((f.deletion_vector or {}).get("cardinality") or 0)) for f in group
    )
    share = min(1.0, SAMPLE_ROWS / max(rows, 1)) if all(f.num_records for f in group) else 1.0
    rng = np.random.default_rng(0)
    parts: list[pa.Table] = []
    for f in group:
        keys = read_files(
            storage, [f], snap.schema, snap.partition_columns, columns=columns, names=snap.column_names
        )
        if share < 1.0 and keys.num_rows:
            keys = keys.take(pa.array(rng.integers(0, keys.num_rows, size=math.ceil(keys.num_rows * share))))
        parts.append(keys)
    return pa.concat_tables(parts)


def _bounds(keys: np.ndarray, outputs: int) -> np.ndarray:
    """The range bounds: the sampled rows' keys at the quantiles i / outputs (duplicates merged)."""
    if outputs <= 1 or not len(keys):
        return np.empty(0, dtype=np.uint64)
    ordered = np.sort(keys)
    return np.unique(ordered[(np.arange(1, outputs) * len(ordered)) // outputs])


def _spill(
    storage: Storage,
    snap: Snapshot,
    group: Sequence[AddFile],
    key: tuple[list[str], str, list[pa.Array]],
    bounds: np.ndarray,
    *,
    ranges: range,
    folder: Path,
) -> None:
    """Every input's rows of `ranges`, with their keys, appended to one IPC file per range: the
    file's rows ordered by range once (a stable argsort), then cut into runs."""
    columns, curve, cuts = key
    writers: dict[int, pa.ipc.RecordBatchFileWriter] = {}
    try:
        for f in group:
            data = read_for_rewrite(storage, snap, [f])  # (row ids kept, if tracked)
            if not data.num_rows:
                continue
            keys = layout_keys(data, columns, curve, cuts)
            where = np.searchsorted(bounds, keys, side="right")
            order = np.argsort(where, kind="stable")
            keyed = data.append_column(KEY, pa.array(keys)).take(pa.array(order))
            ends = np.cumsum(np.bincount(where, minlength=len(bounds) + 1))
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
        order = pc.sort_indices(rows, sort_keys=[(KEY, "ascending")])  # (a stable sort)
        ordered = rows.take(order).drop_columns([KEY])
    conf = dict(snap.properties)
    hidden = row_tracking.hidden_columns(conf) if row_tracking.enabled(conf) else []
    return write_streamed(
        storage, iter(_slices(ordered)), group[0].partition_values, snap.partition_columns, conf,
        names=snap.column_names, hidden=hidden,
    )  # fmt: skip


def _slices(table: pa.Table, rows: int = 1 << 20) -> Iterator[pa.Table]:
    for start in range(0, table.num_rows, rows):
        yield table.slice(start, rows)
