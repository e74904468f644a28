"""Table health: the figures a maintenance DAG decides on, computed from the log (no data listing).

- small files: live files below `small_file_bytes` (default a quarter of `delta.targetFileSize`,
  itself 100 MiB by default) - candidates for OPTIMIZE;
- commits since the newest checkpoint - a CHECKPOINT is due when this grows;
- tombstones and reclaimable bytes: tombstones whose retention has passed (what VACUUM would delete
  of the files the log knows; orphans of failed writes are only found by a vacuum dry run);
- the oldest version restorable by time travel: older versions may miss files vacuum was allowed to
  delete, and versions below the oldest checkpoint may have lost their commits to log cleanup;
  savepointed versions stay restorable whatever their age;
- deletion vectors: live files with one, the rows they delete (their cardinalities) and that
  share of the live files' rows (`numRecords` counts a file's rows before its DV) - an OPTIMIZE
  rewrites small files; many deleted rows make reads slower until files are rewritten;
- the version checksum (`<version>.crc`) validated against the replayed state: None when the version
  has none, else the fields it gets wrong (readers that trust it, e.g. `Table.summary`, would be
  misled; the next commit of this engine does not build on a checksum that contradicts its snapshot).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_txnlog.engine.log.log_segment import list_log, monotonic_timestamps
from airflow_txnlog.engine.log.replay import key_path, key_paths
from airflow_txnlog.engine.maintenance.maintenance_table import MaintenanceTable
from airflow_txnlog.engine.maintenance.savepoints import list_savepoints
from airflow_txnlog.engine.state.checksums import checksum_problems
from airflow_txnlog.engine.validate import number


@dataclass(frozen=True)
class TableHealth:
    version: int
    num_files: int
    size_bytes: int
    small_files: int
    small_file_bytes: int
    last_checkpoint_version: int | None
    commits_since_checkpoint: int
    tombstones: int
    reclaimable_bytes: int
    savepoints: list[str]
    expired_savepoints: list[str]
    oldest_log_version: int
    oldest_restorable_version: int
    files_with_deletion_vectors: int = 0
    deleted_rows: int = 0
    deleted_row_share: float | None = None  # of the live files' rows; None without stats
    checksum_problems: list[str] | None = None  # the version's `.crc` against replay; None: no file

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def table_health(table: MaintenanceTable, *, small_file_bytes: int | None = None) -> TableHealth:
    """The figures of the module docstring, for the table's latest snapshot."""
    number(
        "small_file_bytes", small_file_bytes, minimum=0, integer=True, none_means="a quarter of the target"
    )
    storage, snap = table.storage, table.snapshot()
    table_properties = snap.table_properties
    small = small_file_bytes if small_file_bytes is not None else table_properties.target_file_size // 4
    sizes = snap.file_sizes()
    now = int(time.time() * 1000)
    cutoff = now - table_properties.deleted_file_retention_ms
    tombstones = snap.tombstone_table()
    old = tombstones.filter(pc.less_equal(tombstones.column("deletion_timestamp"), cutoff))
    # Only what vacuum can still delete: expired tombstones whose file is still there and not live
    # (a tombstone of a file whose deletion vector changed names a live path).
    if old.num_rows and snap.state.deletion_vectors():  # a tombstone may name a live path
        live = pc.is_in(key_paths(old.column("key").combine_chunks()), value_set=key_paths(snap.file_keys()))
        old = old.filter(pc.invert(live))
    reclaimable = sum(
        size or 0
        for key, size in zip(old.column("key").to_pylist(), old.column("size").to_pylist(), strict=True)
        if storage.exists(key_path(key))
    )
    listing = list_log(storage)
    cps = [v for v in listing.checkpoints if v <= snap.version]
    last_cp = max(cps) if cps else None
    oldest_log = 0 if 0 in listing.commits else min(listing.checkpoints, default=snap.version)
    stamps = monotonic_timestamps(listing.commits)
    aged = [v for v, ts in stamps.items() if ts <= cutoff and v >= oldest_log]
    savepoints = list_savepoints(storage)
    live_sp = [s for s in savepoints if not s.expired(now)]
    oldest = max([oldest_log, *aged])
    dvs = snap.state.deletion_vectors()
    deleted = sum(int(d.get("cardinality") or 0) for d in dvs)
    return TableHealth(
        version=snap.version,
        num_files=len(sizes),
        size_bytes=int(pc.sum(sizes).as_py() or 0),
        small_files=int(pc.sum(pc.less(sizes, small)).as_py() or 0),
        small_file_bytes=small,
        last_checkpoint_version=last_cp,
        commits_since_checkpoint=snap.version - last_cp if last_cp is not None else snap.version + 1,
        tombstones=tombstones.num_rows,
        reclaimable_bytes=reclaimable,
        savepoints=[s.name for s in live_sp],
        expired_savepoints=[s.name for s in savepoints if s.expired(now)],
        oldest_log_version=oldest_log,
        oldest_restorable_version=min([oldest, *(s.version for s in live_sp)]),
        files_with_deletion_vectors=len(dvs),
        deleted_rows=deleted,
        deleted_row_share=_share(snap.add_actions(), deleted) if dvs else 0.0,
        checksum_problems=checksum_problems(snap, sizes=sizes, dvs=dvs),  # (not counted again)
    )


def _share(files: pa.Table, deleted: int) -> float | None:
    """`deleted` as a share of the files' rows by their stats (None when a file has no numRecords)."""
    records = files.column("num_records")
    if records.null_count:
        return None
    total = int(pc.sum(records).as_py() or 0)
    return round(deleted / total, 6) if total else None
