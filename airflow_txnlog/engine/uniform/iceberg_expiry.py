"""Deleting UniForm's Iceberg files that the newest metadata no longer needs (log cleanup asks).

A sync expires snapshots from the metadata (engine.uniform.iceberg_sync) but deletes nothing: a
reader may be reading the metadata it replaced. Log cleanup then deletes, past a grace period, what
the newest metadata does not name: manifest lists of expired snapshots, manifests none of its
snapshots lists, metadata files older than its metadata log. A metadata file newer than the one
read is a concurrent sync's and is never deleted.
"""

from __future__ import annotations

from pyiceberg.table.metadata import TableMetadata, TableMetadataUtil, TableMetadataV2

from airflow_txnlog.engine.errors import InvalidArgumentError
from airflow_txnlog.engine.storage import Storage
from airflow_txnlog.engine.uniform.iceberg_io import StorageIO
from airflow_txnlog.engine.uniform.iceberg_sync import current
from airflow_txnlog.engine.uniform.layout import HINT, METADATA_DIR, listed, metadata_key, number_of


def expired_files(storage: Storage, *, older_than_ms: int, dry_run: bool) -> list[str]:
    """Delete (or with `dry_run`, list) the files under `metadata/` that no kept metadata file needs,
    by name inside that folder. Kept: the newest metadata file, the hint, the files of its metadata
    log; with, for each of those, its snapshots' manifest lists and the manifests they name (so
    every kept metadata file stays readable). Of the rest, only files last written before
    `older_than_ms` go (a sync under way writes files no metadata names yet), never a metadata file
    newer than the newest read (a concurrent sync's). Nothing when the metadata names another
    location (a table copied elsewhere: its paths are not this folder's)."""
    found = current(storage)
    if found is None:
        return []
    number, meta = found
    if meta is None:
        return []
    io = StorageIO(storage, storage.root)
    try:
        keep = _needed(io, meta, number)
    except InvalidArgumentError:
        return []
    stale = [
        f"{METADATA_DIR}/{f.name}"
        for f in listed(storage)
        if f"{METADATA_DIR}/{f.name}" not in keep
        and f.mtime_ms < older_than_ms
        and (number_of(f.name) or 0) <= number
    ]
    if not dry_run:
        storage.delete_many(stale)
    return [k[len(METADATA_DIR) + 1 :] for k in stale]


def _needed(io: StorageIO, meta: TableMetadataV2, number: int) -> set[str]:
    """The keys every kept metadata file (the newest and its metadata log) needs to be read."""
    keep = {HINT, metadata_key(number)}
    kept: list[TableMetadata] = [meta]
    for entry in meta.metadata_log:
        key = io.key(entry.metadata_file)
        try:
            older = TableMetadataUtil.parse_raw(io.storage.read(key).decode())
        except FileNotFoundError:
            continue
        keep.add(key)
        kept.append(older)
    lists = {s.manifest_list: s for m in kept for s in m.snapshots}
    for location, snap in lists.items():
        keep.add(io.key(location))
        try:
            keep.update(io.key(m.manifest_path) for m in snap.manifests(io))
        except FileNotFoundError:  # (a list deleted by an earlier cleanup: its snapshot is unreadable)
            continue
    return keep
