"""Vacuum: delete data files that no live version, unexpired tombstone or savepoint needs.

Algorithm (Delta's VACUUM, plus savepoints):
1. cutoff = now - retention (`delta.deletedFileRetentionDuration`, 7 days by default; a shorter
   retention needs `enforce_retention=False`);
2. list every file under the table root, skipping `_`/`.`-prefixed folders and files except partition
   folders (`_col=value` of a partition column) and `_change_data/` (change data files are never
   live: like orphans, they go once older than the retention); never look outside the root
   (symlinked folders are not entered; a symlinked file is removed as a link, never its target).
   On an object store the root is listed once with a delimiter and its visible folders (partition
   values) are listed in parallel, LIST_WORKERS at a time; hidden folders are not listed at all;
3. keep: live files of the latest snapshot, tombstones deleted after the cutoff, every file of every
   unexpired savepoint manifest, every file live at a publication channel's current version
   (engine.maintenance.publications: readers following the channel read that version, however old), and the
   deletion vector files of all of these;
4. delete the rest if it is an expired tombstone, or, for files the log does not know (orphans of
   failed writes), if its modification time is older than the cutoff (an in-flight writer's fresh
   file is never taken);
5. with `dry_run=False`: commit VACUUM START (metrics numFilesToDelete, sizeOfDataToDelete), raise a
   vacuum fence (engine.maintenance.fence: savepoints made from now on wait for our deletes, then check their
   files), re-read the latest snapshot and the savepoints and drop from the plan anything they now
   need, delete, take the fence down, commit VACUUM END (numDeletedFiles, numVacuumedDirectories).
`dry_run=True` is the default: it only reports.
"""

from __future__ import annotations

import os
import time
from collections.abc import Set as AbstractSet
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_txnlog.engine import properties as props
from airflow_txnlog.engine.errors import InvalidArgumentError, RetentionTooShortError
from airflow_txnlog.engine.features import iceberg_compat
from airflow_txnlog.engine.features.deletion_vectors import dv_file_paths
from airflow_txnlog.engine.log.log_segment import list_log
from airflow_txnlog.engine.log.replay import key_paths
from airflow_txnlog.engine.maintenance.fence import VacuumFence
from airflow_txnlog.engine.maintenance.maintenance_table import MaintenanceTable
from airflow_txnlog.engine.maintenance.publications import published_keys
from airflow_txnlog.engine.maintenance.savepoints import protected_paths
from airflow_txnlog.engine.maintenance.vacuum_log import vacuum_history
from airflow_txnlog.engine.state.snapshot import Snapshot, load_snapshot
from airflow_txnlog.engine.storage import DELETE_BATCH, LocalStorage, Storage, has_scheme
from airflow_txnlog.engine.uniform import layout
from airflow_txnlog.engine.validate import flag, number

HOUR_MS = 3_600_000
LIST_WORKERS = 8  # folders listed at once on an object store (bounded: stores throttle a burst)


@dataclass(frozen=True)
class VacuumResult:
    """Files (relative paths) deleted, or that would be deleted with dry_run=True."""

    files: list[str]
    bytes: int
    dry_run: bool
    retention_hours: float
    deleted: int = 0
    start_version: int | None = None
    end_version: int | None = None
    metrics: dict[str, int] = field(default_factory=dict)


def retention_ms(snap: Snapshot, retention_hours: float | None, enforce: bool) -> int:
    number("retention_hours", retention_hours, minimum=0, none_means="the table's delete retention")
    default = snap.table_properties.deleted_file_retention_ms
    if retention_hours is None:
        return default
    wanted = round(retention_hours * HOUR_MS)  # (round: ms -> hours -> ms must come back equal)
    if enforce and wanted < default:
        raise RetentionTooShortError(
            f"retention of {retention_hours} hours is below the table's delete retention of "
            f"{default / HOUR_MS:g} hours: files still needed by time travel or by running readers and "
            "writers could be deleted. Help: pass enforce_retention=False only if no reader or writer "
            "is using older versions."
        )
    return wanted


CHANGE_DATA_DIR = "_change_data"  # change data files: past the retention, vacuum deletes them too


def _hidden(rel: str, partition_columns: set[str]) -> bool:
    if rel == CHANGE_DATA_DIR or rel.startswith(CHANGE_DATA_DIR + "/"):
        rel = rel[len(CHANGE_DATA_DIR) + 1 :]
    for part in rel.split("/"):
        if part.startswith("."):
            return True
        if part.startswith("_") and part.split("=", 1)[0] not in partition_columns:
            return True
    return False


def _relative_key(storage: Storage, key: str) -> str:
    root = storage.fs_root.rstrip("/") + "/"
    return key[len(root) :] if key.startswith(root) else key


def _relative_keys(storage: Storage, keys: pa.Array) -> list[str]:
    """`_relative_key` of each file key, in Arrow; a key's deletion-vector id is dropped (vacuum
    deletes paths: a file is needed while any of its keys is)."""
    if len(keys) == 0:
        return []
    root = storage.fs_root.rstrip("/") + "/"
    paths = key_paths(keys)
    inside = pc.starts_with(paths, root)
    return pc.if_else(inside, pc.utf8_slice_codeunits(paths, len(root)), paths).to_pylist()  # type: ignore[no-any-return]


def _list_local(root: str, partition_columns: set[str], skip: AbstractSet[str]) -> dict[str, tuple[int, int]]:
    """os.scandir walk that never enters symlinked folders and prunes hidden ones early; files in
    `skip` are left out before their `stat` (on a big table almost every file is referenced: the
    stat calls were most of the walk)."""
    out: dict[str, tuple[int, int]] = {}
    stack = [("", root)]
    while stack:
        rel_dir, path = stack.pop()
        with os.scandir(path) as it:
            for e in it:
                rel = f"{rel_dir}{e.name}"
                if rel != CHANGE_DATA_DIR and _hidden(e.name, partition_columns):
                    continue
                if e.is_dir(follow_symlinks=False):
                    stack.append((rel + "/", e.path))
                elif rel in skip:
                    continue
                elif e.is_file(follow_symlinks=False) or e.is_symlink():
                    st = e.stat(follow_symlinks=False)  # a link is removed, never its target
                    out[rel] = (st.st_size, st.st_mtime_ns // 1_000_000)
    return out


def list_files(
    storage: Storage, partition_columns: set[str], skip: AbstractSet[str] = frozenset()
) -> dict[str, tuple[int, int]]:
    """Relative path -> (size, mtime ms) of every visible file under the root but those in `skip`."""
    if isinstance(storage, LocalStorage):
        return _list_local(storage.fs_root, partition_columns, skip)
    root = storage.fs_root.rstrip("/")
    out: dict[str, tuple[int, int]] = {}
    for path, info in _list_store(storage, root, partition_columns).items():
        rel = str(path)[len(root) + 1 :]
        if not rel or rel in skip or _hidden(rel, partition_columns):
            continue
        mtime = info.get("mtime") or info.get("LastModified") or info.get("updated") or 0
        ts = int(mtime.timestamp() * 1000) if hasattr(mtime, "timestamp") else int(float(mtime) * 1000)
        out[rel] = (int(info.get("size") or 0), ts)
    return out


def _list_store(storage: Storage, root: str, partition_columns: set[str]) -> dict[str, dict[str, Any]]:
    """Path -> info of every file under `root` of an object store, listed by prefix in parallel: one
    delimited listing of the root (its files and its folders), then each visible folder (a partition
    value, `_change_data`) listed whole by up to LIST_WORKERS threads at once; hidden folders (the
    log, savepoints, publications) are never listed."""
    fs = storage.fs
    fs.invalidate_cache(root)  # (a listing cached by an earlier call could miss a new file)
    found: dict[str, dict[str, Any]] = {}
    folders: list[str] = []
    for info in fs.ls(root, detail=True):
        name = str(info["name"]).rstrip("/")
        if info.get("type") == "directory":
            if not _hidden(name[len(root) + 1 :], partition_columns):
                folders.append(name)
        else:
            found[name] = info
    if folders:
        with ThreadPoolExecutor(max_workers=min(LIST_WORKERS, len(folders))) as pool:
            for listed in pool.map(lambda f: fs.find(f, detail=True, withdirs=False), folders):
                found.update(listed)
    return found


def _needed(storage: Storage, snap: Snapshot, cutoff: int, now: int) -> tuple[set[str], set[str]]:
    """(keys to keep, keys of expired tombstones)."""
    keep = set(_relative_keys(storage, snap.file_keys()))
    tombstones = snap.tombstone_table()
    keys = tombstones.column("key").combine_chunks()
    recent = pc.greater(tombstones.column("deletion_timestamp").combine_chunks(), cutoff)
    keep.update(_relative_keys(storage, keys.filter(recent)))
    expired = set(_relative_keys(storage, keys.filter(pc.invert(recent))))
    # deletion vector files of the live files and of the tombstones kept above (a DV file is often
    # shared by several files' DVs: kept while any of them is)
    dvs = snap.state.deletion_vectors() + snap.state.deletion_vectors(removed_after=cutoff)
    keep |= {_relative_key(storage, storage.resolve(p)) for p in dv_file_paths(dvs)}
    needed = (
        protected_paths(storage, now_ms=now) | published_keys(storage, snap) | _iceberg_live(storage, snap)
    )
    keep |= {_relative_key(storage, storage.resolve(k) if has_scheme(k) else k) for k in needed}
    return keep, expired - keep


def _iceberg_live(storage: Storage, snap: Snapshot) -> set[str]:
    """The files of the Delta version UniForm's live Iceberg snapshot reflects, when it lags behind
    the latest (a failed sync): an Iceberg reader still reads them."""
    if not iceberg_compat.uniform_iceberg(snap.metadata.configuration):
        return set()
    version = layout.reflected_version(storage)
    if version is None or version < 0 or version >= snap.version:
        return set()
    return set(load_snapshot(storage, version).file_paths())


def plan_vacuum(storage: Storage, snap: Snapshot, cutoff: int, now: int) -> dict[str, int]:
    """Relative path -> size of the files vacuum would delete."""
    keep, expired = _needed(storage, snap, cutoff, now)
    files = list_files(storage, set(snap.partition_columns), skip=keep)
    if iceberg_compat.uniform_iceberg(snap.metadata.configuration):  # (UniForm's folder: Delta's rule)
        files = {rel: f for rel, f in files.items() if not rel.startswith(iceberg_compat.METADATA_DIR + "/")}
    return {rel: size for rel, (size, mtime) in files.items() if rel in expired or mtime < cutoff}


def plan_vacuum_lite(storage: Storage, snap: Snapshot, cutoff: int, now: int) -> dict[str, int]:
    """Relative path -> size of the files a LITE vacuum would delete: the files removed in the log
    since the last completed vacuum's cutoff, past the retention, that nothing keeps
    (engine.maintenance.vacuum_log; no listing: orphans of failed writes wait for a full vacuum).
    A path outside the table root (a shallow clone's) is never a candidate."""
    conf = snap.metadata.configuration
    history = vacuum_history(
        storage,
        list_log(storage),
        now_ms=now,
        retention_ms=props.deleted_file_retention_ms(conf),
        full_days=0,
    )
    if not history.complete:
        raise InvalidArgumentError(
            "VACUUM LITE cannot see every removed file: the commits since the last vacuum are no longer "
            "in the log (log cleanup). Nothing was deleted. Help: run a full vacuum (lite=False) once"
        )
    keep, _ = _needed(storage, snap, cutoff, now)
    since = history.covered_before
    out: dict[str, int] = {}
    for path, rm in history.removes.items():
        if has_scheme(path) or path.startswith("/") or rm.deletion_timestamp > cutoff:
            continue
        if (since is None or rm.deletion_timestamp > since) and path not in keep:
            out[path] = rm.size
    return out


def vacuum(
    table: MaintenanceTable,
    *,
    retention_hours: float | None,
    dry_run: bool,
    enforce_retention: bool,
    lite: bool = False,
) -> VacuumResult:
    """Plan (and unless `dry_run`, carry out) a vacuum of `table` (see the module docstring);
    `lite`: Delta's VACUUM LITE, candidates from the log's tombstones only, no listing."""
    flag("dry_run", dry_run)
    flag("enforce_retention", enforce_retention)
    flag("lite", lite)
    storage = table.storage
    snap = table.snapshot()
    keep_ms = retention_ms(snap, retention_hours, enforce_retention)
    now = int(time.time() * 1000)
    cutoff = now - keep_ms
    todo = (plan_vacuum_lite if lite else plan_vacuum)(storage, snap, cutoff, now)
    hours = keep_ms / HOUR_MS
    if dry_run:
        return VacuumResult(files=sorted(todo), bytes=sum(todo.values()), dry_run=True, retention_hours=hours)
    params = {
        "vacuumType": "LITE" if lite else "FULL",
        "retentionCheckEnabled": enforce_retention,
        "defaultRetentionMillis": snap.table_properties.deleted_file_retention_ms,
        "specifiedRetentionMillis": keep_ms,
    }
    start = table.transaction("VACUUM START", params).commit(
        metrics={"numFilesToDelete": len(todo), "sizeOfDataToDelete": sum(todo.values())}
    )
    # The fence goes up before the re-read, so a savepoint whose record we do not see waits for our
    # last delete and then checks its files (engine.maintenance.fence). Re-read right before deleting: a
    # restore or a new savepoint may need a planned file now.
    deleted = 0
    with VacuumFence(storage) as fence:
        keep, _ = _needed(storage, table.snapshot(), cutoff, int(time.time() * 1000))
        final = {rel: size for rel, size in todo.items() if rel not in keep}
        ordered = sorted(final)
        for first in range(0, len(ordered), DELETE_BATCH):  # (batch deletes; the fence kept fresh)
            batch = ordered[first : first + DELETE_BATCH]
            storage.delete_many(batch)  # (a file an older vacuum took is no error: a lite plan is the log's)
            deleted += len(batch)
            fence.refresh()
    metrics = {"numDeletedFiles": deleted, "numVacuumedDirectories": 0}
    end = table.transaction("VACUUM END", {"status": "COMPLETED"}).commit(metrics=metrics)
    return VacuumResult(
        files=sorted(final),
        bytes=sum(final.values()),
        dry_run=False,
        retention_hours=hours,
        deleted=deleted,
        start_version=start,
        end_version=end,
        metrics=metrics,
    )
