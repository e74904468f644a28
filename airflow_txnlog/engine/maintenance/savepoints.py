"""Savepoints: named, durable references to a table version that vacuum and restore honour.

Layout, under `<table>/_savepoints/` (never `_delta_log/`; readers and other engines' vacuum skip
`_`-prefixed folders):
    <name>.json                      the record: the commit point of the savepoint
    <name>.<uuid>.manifest.parquet   protocol, metaData, txns, domainMetadata and every live file of
                                     the version, in the checkpoint format (`engine.state.checkpoint`), with
                                     every add field and always the JSON stats (whatever the table's
                                     `delta.checkpoint.writeStats*`): a restore re-adds files as they were
Creating one: load the version (it must exist), refuse a table whose checkpoints this engine cannot
write without loss (`require_checkpoint_supported`), check that its files not live in the latest
snapshot are present (`files_at_risk`: a live file is never vacuumed, and a table missing one cannot
be read anyway, so a savepoint of the latest version checks nothing, where checking every file cost
a storage call per file: hours on a million-file table in an object store), write the manifest,
then create the record with `put_if_absent`; then, for the files a running vacuum could still delete
(those not live in the latest snapshot, again), wait for vacuum fences and check them again (see
`engine.maintenance.fence`; a missing file removes the record again). A crash before the record leaves an
orphan manifest, which is not a savepoint (listing only reads records). Deleting one removes the
record first, then the manifest. Because the manifest holds the full file list, a savepoint stays
restorable after the log has been cleaned (by us or another engine), as long as its data files
exist, which our vacuum guarantees for unexpired savepoints.
Expiry is measured from creation (`expires_at` is absolute); an expired savepoint no longer protects
files from vacuum and is reported as expired.
`create_savepoint` works through a `MaintenanceTable` (it needs the table's latest snapshot); listing,
reading and deleting savepoints need only the `Storage`.
"""

from __future__ import annotations

import datetime as dt
import time
import uuid
from dataclasses import dataclass
from typing import Any

import orjson

from airflow_txnlog.engine.errors import (
    InvalidArgumentError,
    LogCorruptedError,
    SavepointExistsError,
    SavepointFilesMissingError,
    SavepointNotFoundError,
)
from airflow_txnlog.engine.features.deletion_vectors import dv_file_paths
from airflow_txnlog.engine.features.table_features import require_checkpoint_supported
from airflow_txnlog.engine.log.replay import LogState, key_path
from airflow_txnlog.engine.maintenance.fence import DEFAULT_WAIT_S, wait_for_vacuums
from airflow_txnlog.engine.maintenance.maintenance_table import MaintenanceTable
from airflow_txnlog.engine.state.checkpoint import checkpoint_table, parquet_bytes
from airflow_txnlog.engine.state.checkpoint_read import read_checkpoint
from airflow_txnlog.engine.state.snapshot import Snapshot, to_epoch_ms
from airflow_txnlog.engine.storage import Storage
from airflow_txnlog.engine.validate import safe_name, text

SAVEPOINT_DIR = "_savepoints"


@dataclass(frozen=True)
class Savepoint:
    """A savepoint record (times in ms since the epoch)."""

    name: str
    table_id: str
    version: int
    commit_timestamp: int
    created_at: int
    manifest: str
    num_files: int
    size_bytes: int
    created_by: str | None = None
    reason: str | None = None
    expires_at: int | None = None

    def expired(self, now_ms: int | None = None) -> bool:
        now = int(time.time() * 1000) if now_ms is None else now_ms
        return self.expires_at is not None and self.expires_at <= now

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "tableId": self.table_id,
            "version": self.version,
            "commitTimestamp": self.commit_timestamp,
            "createdAt": self.created_at,
            "createdBy": self.created_by,
            "reason": self.reason,
            "expiresAt": self.expires_at,
            "manifest": self.manifest,
            "numFiles": self.num_files,
            "sizeInBytes": self.size_bytes,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Savepoint:
        return cls(
            name=d["name"],
            table_id=d["tableId"],
            version=int(d["version"]),
            commit_timestamp=int(d["commitTimestamp"]),
            created_at=int(d["createdAt"]),
            manifest=d["manifest"],
            num_files=int(d.get("numFiles", 0)),
            size_bytes=int(d.get("sizeInBytes", 0)),
            created_by=d.get("createdBy"),
            reason=d.get("reason"),
            expires_at=d.get("expiresAt"),
        )


def validate_name(name: str) -> str:
    return safe_name("savepoint name", name)


def _record_key(name: str) -> str:
    return f"{SAVEPOINT_DIR}/{name}.json"


def missing_files(storage: Storage, paths: list[str]) -> list[str]:
    """Which of `paths` (as in the log) do not exist, in their order."""
    return [p for p in paths if not storage.fs.exists(storage.resolve(p))]


def files_at_risk(snap: Snapshot, latest: Snapshot) -> list[str]:
    """The data and deletion-vector files of `snap` that a vacuum may delete: those of its files that
    are not live in `latest` (vacuum keeps live files)."""
    if snap.version == latest.version:
        return []
    files = snap.files_not_in(latest)
    dvs = sorted(dv_file_paths(f.deletion_vector for f in files if f.deletion_vector))
    return [f.path for f in files] + dvs


def create_savepoint(
    table: MaintenanceTable,
    snap: Snapshot,
    name: str,
    *,
    created_by: str | None,
    reason: str | None,
    expires_at: dt.datetime | str | int | None,
    fence_wait_s: float = DEFAULT_WAIT_S,
) -> Savepoint:
    """Write the manifest of `snap`, then the record (put-if-absent: the commit point), then make sure
    no concurrent vacuum deleted what it needs (checked against the table's latest snapshot)."""
    now = int(time.time() * 1000)
    expires = _checked_options(name, created_by, reason, expires_at, now)
    storage = table.storage
    if storage.exists(_record_key(name)):
        raise SavepointExistsError(f"savepoint {name!r} already exists. Help: pick another name or delete it")
    require_checkpoint_supported(snap.protocol, "create a savepoint")
    gone = missing_files(storage, files_at_risk(snap, table.snapshot()))
    if gone:
        raise SavepointFilesMissingError(
            f"cannot savepoint version {snap.version}: {len(gone)} of its files are missing: {gone[:10]}. "
            "Nothing was created. Help: savepoint a newer version, whose files still exist.",
            missing=gone,
        )
    manifest = f"{name}.{uuid.uuid4().hex}.manifest.parquet"
    # No tombstones; JSON stats whatever the table's checkpoint settings: the manifest is ours to read.
    rows, _ = checkpoint_table(
        snap.state, min_tombstone_ts=1 << 62, stats_as_json=True, stats_as_struct=False
    )
    storage.write(f"{SAVEPOINT_DIR}/{manifest}", parquet_bytes(rows))
    sp = Savepoint(
        name=name,
        table_id=snap.metadata.id,
        version=snap.version,
        commit_timestamp=snap.timestamp,
        created_at=now,
        manifest=manifest,
        num_files=snap.num_files,
        size_bytes=snap.size_bytes,
        created_by=created_by,
        reason=reason,
        expires_at=expires,
    )
    _create_record(storage, sp)
    try:
        _confirm_after_vacuums(storage, snap, table.snapshot(), fence_wait_s)
    except BaseException:
        storage.delete(_record_key(name))
        storage.delete(f"{SAVEPOINT_DIR}/{manifest}")
        raise
    return sp


def _checked_options(
    name: str, created_by: object, reason: object, expires_at: dt.datetime | str | int | None, now: int
) -> int | None:
    """The expiry in epoch ms (None: never), once every option of a new savepoint is checked."""
    validate_name(name)
    text("created_by", created_by)
    text("reason", reason)
    expires = to_epoch_ms(expires_at) if expires_at is not None else None
    if expires is not None and expires <= now:
        raise InvalidArgumentError(f"expires_at {expires_at!r} is not in the future")
    return expires


def _create_record(storage: Storage, sp: Savepoint) -> None:
    """Create the record, the savepoint's commit point; a writer that loses the race drops its manifest."""
    try:
        storage.put_if_absent(_record_key(sp.name), orjson.dumps(sp.to_json()))
    except FileExistsError as exc:
        storage.delete(f"{SAVEPOINT_DIR}/{sp.manifest}")
        raise SavepointExistsError(
            f"savepoint {sp.name!r} was created concurrently. Help: pick another name, or use the one created"
        ) from exc


def _confirm_after_vacuums(storage: Storage, snap: Snapshot, latest: Snapshot, wait_s: float) -> None:
    """Files of `snap` not live in `latest` may be in a running vacuum's plan: once no vacuum is
    deleting (the record is visible by now, so later vacuums keep them), they must still exist."""
    at_risk = files_at_risk(snap, latest)
    if not at_risk:
        return
    wait_for_vacuums(storage, timeout_s=wait_s)
    gone = missing_files(storage, at_risk)
    if gone:
        raise SavepointFilesMissingError(
            f"cannot savepoint version {snap.version}: a concurrent vacuum deleted {len(gone)} of its "
            f"files: {gone[:10]}. Nothing was created. Help: savepoint a newer version.",
            missing=gone,
        )


def list_savepoints(storage: Storage) -> list[Savepoint]:
    """Every savepoint record, oldest version first."""
    try:
        names = [f.name for f in storage.list_dir(SAVEPOINT_DIR)]
    except FileNotFoundError:
        return []
    out = []
    for n in names:
        if n.endswith(".json"):
            try:
                out.append(_load_record(storage, f"{SAVEPOINT_DIR}/{n}", n[: -len(".json")]))
            except FileNotFoundError:
                continue  # deleted while listing
    return sorted(out, key=lambda s: (s.version, s.name))


def _load_record(storage: Storage, key: str, name: str) -> Savepoint:
    data = storage.read(key)
    try:
        return Savepoint.from_json(orjson.loads(data))
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise LogCorruptedError(
            f"savepoint record {key} is unreadable ({exc}); vacuum and restore refuse to guess what it "
            f"protects. Help: delete it with delete_savepoint({name!r}) / `txnlog savepoint delete`"
        ) from exc


def get_savepoint(storage: Storage, name: str) -> Savepoint:
    validate_name(name)
    try:
        return _load_record(storage, _record_key(name), name)
    except FileNotFoundError as exc:
        raise SavepointNotFoundError(f"no savepoint named {name!r}; {existing_savepoints(storage)}") from exc


def savepoints_for_message(storage: Storage) -> list[Savepoint] | None:
    """The table's savepoints for an error message; None when they cannot be read (an unreadable
    record must not hide the error being reported)."""
    try:
        return list_savepoints(storage)
    except (LogCorruptedError, OSError):
        return None


def existing_savepoints(storage: Storage, found: list[Savepoint] | None = None) -> str:
    """ "savepoints of this table: 'a' (version 3), ..." for an error message (`found`: already listed)."""
    found = savepoints_for_message(storage) if found is None else found
    if found is None:
        return "the table's savepoints could not be listed"
    if not found:
        return "this table has no savepoints"
    return "savepoints of this table: " + ", ".join(f"{s.name!r} (version {s.version})" for s in found)


def delete_savepoint(storage: Storage, name: str) -> Savepoint | None:
    """Delete a savepoint (record first, then manifest); None when only a corrupt record was found."""
    try:
        sp = get_savepoint(storage, name)
    except LogCorruptedError:
        storage.delete(_record_key(name))  # its manifest name is unknown: vacuum ignores orphan manifests
        return None
    storage.delete(_record_key(name))  # the record goes first: no half-deleted savepoint is listed
    storage.delete(f"{SAVEPOINT_DIR}/{sp.manifest}")
    return sp


def read_manifest(storage: Storage, sp: Savepoint) -> LogState:
    """The state recorded by a savepoint (protocol, metaData, txns, domains, live files)."""
    try:
        return read_checkpoint(storage, sp.version, [sp.manifest], folder=SAVEPOINT_DIR)
    except LogCorruptedError as exc:
        raise LogCorruptedError(
            f"savepoint {sp.name!r}: {exc}. Help: the savepoint cannot be used; delete it with "
            f"delete_savepoint({sp.name!r})"
        ) from exc


def protected_paths(storage: Storage, *, now_ms: int) -> set[str]:
    """Decoded paths of every file referenced by an unexpired savepoint: its data files and the
    files holding their deletion vectors."""
    keep: set[str] = set()
    for sp in list_savepoints(storage):
        if not sp.expired(now_ms):
            state = read_manifest(storage, sp)
            keep.update(key_path(k) for k in state.live_base_add_keys())
            keep.update(dv_file_paths(state.deletion_vectors()))
    return keep
