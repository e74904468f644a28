"""Deleting UniForm's Iceberg files that the newest metadata no longer needs (log cleanup asks).

A sync expires snapshots from the metadata (engine.uniform.iceberg_sync) but deletes nothing: a
reader may be reading the metadata it replaced. Log cleanup then deletes, past a grace period, what
the newest metadata does not name: manifest lists of expired snapshots, manifests none of its
snapshots lists, metadata files older than its metadata log. A metadata file newer than the one
read is a concurrent sync's and is never deleted.
"""

from __future__ import annotations

from airflow_txnlog.engine.errors import InvalidArgumentError
from airflow_txnlog.engine.storage import Storage
from airflow_txnlog.engine.uniform.iceberg_io import StorageIO
from airflow_txnlog.engine.uniform.iceberg_sync import current
from airflow_txnlog.engine.uniform.layout import HINT, METADATA_DIR, listed, metadata_key, number_of


def expired_files(storage: Storage, *, older_than_ms: int, dry_run: bool) -> list[str]:
    """Delete (or with `dry_run`, list) the files under `metadata/` that the newest metadata no
    longer needs, by name inside that folder: not it, the hint or a file of its metadata log, not a
    manifest list of a snapshot it keeps nor a manifest such a list names, and last written before
    `older_than_ms` (a sync under way writes files no metadata names yet). Nothing when the metadata
    names another location (a table copied elsewhere: its paths are not this folder's)."""
    found = current(storage)
    if found is None:
        return []
    number, meta = found
    io = StorageIO(storage, storage.root)
    try:
        keep = {HINT, metadata_key(number), *(io.key(e.metadata_file) for e in meta.metadata_log)}
        for snap in meta.snapshots:
            keep.add(io.key(snap.manifest_list))
            keep.update(io.key(m.manifest_path) for m in snap.manifests(io))
    except InvalidArgumentError:
        return []
    stale = [
        f"{METADATA_DIR}/{f.name}"
        for f in listed(storage)
        if f"{METADATA_DIR}/{f.name}" not in keep
        and f.mtime_ms < older_than_ms
        and (number_of(f.name) or 0) <= number  # (a newer one is a concurrent sync's)
    ]
    if not dry_run:
        storage.delete_many(stale)
    return [k[len(METADATA_DIR) + 1 :] for k in stale]
