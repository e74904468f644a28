"""UniForm: Iceberg v2 metadata that mirrors a Delta table's latest version, written incrementally.

Layout (under the table, as Delta's converter and Iceberg's Hadoop tables have it; no catalog needed):

    metadata/v<N>.metadata.json      table metadata N (written once, put-if-absent: a concurrent sync
                                     loses cleanly and leaves nothing half-made)
    metadata/version-hint.text       N of the newest (a hint: readers given the folder use it; the
                                     newest is also found by probing v<N+1>...)
    metadata/snap-<id>-<uuid>.avro   one manifest list per Iceberg snapshot
    metadata/<uuid>-m<k>.avro        manifests (pyiceberg's writers: Avro, deflate)

The Delta version a metadata file reflects is its table property `delta-version` (with
`delta-timestamp` and `base-delta-version`, as Delta records them). Data files are the Delta table's
own parquet files, never copied.

`sync(storage, snapshot)` brings the metadata to `snapshot` (the table's latest version):

1. nothing to do when the newest metadata already reflects that version (or a later one);
2. incremental, from the newest metadata at Delta version d, when commits d+1..v are all in the log,
   there are at most MAX_PENDING of them (Delta's converter's bound) and the partition columns are
   the same: the net adds and removes of those commits (a file added and removed in between is
   neither). Removes rewrite only the manifests that list a removed file (its entry DELETED, the
   others EXISTING); adds go to one new manifest. So a commit adding 10 files writes 10 new
   entries, a manifest list and a metadata file, whatever the table's size;
3. else a full conversion: every live file of `snapshot` in manifests of MANIFEST_ENTRIES entries.

Then: when a snapshot would list more than MERGE_AFTER manifests, those under SMALL_MANIFEST entries
are merged into one (Iceberg's own manifest merging: the list stays short, each entry is rewritten
O(log) times); a new schema is added when the Delta schema changed (same field ids);
snapshots older than the Delta log retention (and the deleted-file retention: vacuum may remove
their files) are expired from the metadata, and at most MAX_SNAPSHOTS are kept; the metadata log
keeps the last MAX_METADATA_LOG files. Old Iceberg files are left for `expire_files`.

Invariants: metadata N+1 is written after every file it names; it always reflects exactly one Delta
version, whose live files are its live data files; a failure leaves the previous metadata newest.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from collections.abc import Sequence
from typing import Final

import pyarrow as pa
from pyiceberg.manifest import (
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    write_manifest,
    write_manifest_list,
)
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadataUtil, TableMetadataV2
from pyiceberg.table.refs import SnapshotRef
from pyiceberg.table.snapshots import (
    MetadataLogEntry,
    Operation,
    SnapshotLogEntry,
    Summary,
)
from pyiceberg.table.snapshots import (
    Snapshot as IcebergSnapshot,
)

from airflow_txnlog.engine import properties as props
from airflow_txnlog.engine.errors import InvalidArgumentError, TxnLogError
from airflow_txnlog.engine.features import iceberg_compat
from airflow_txnlog.engine.log.actions import AddFile, RemoveFile
from airflow_txnlog.engine.log.log_reader import list_after, read_commits
from airflow_txnlog.engine.schema import schema_from_json
from airflow_txnlog.engine.state.snapshot import Snapshot
from airflow_txnlog.engine.storage import Storage
from airflow_txnlog.engine.uniform import iceberg_schema
from airflow_txnlog.engine.uniform.iceberg_io import StorageIO

log = logging.getLogger(__name__)

METADATA_DIR = iceberg_compat.METADATA_DIR
HINT = f"{METADATA_DIR}/version-hint.text"
DELTA_VERSION, DELTA_TIMESTAMP, BASE_DELTA_VERSION = "delta-version", "delta-timestamp", "base-delta-version"
MAX_PENDING = 100
MANIFEST_ENTRIES = 50_000
MERGE_AFTER, SMALL_MANIFEST = 100, 10_000
MAX_SNAPSHOTS, MAX_METADATA_LOG = 100, 100
_CODEC: Final = "deflate"


class UniformSyncConflictError(TxnLogError):
    """Another writer wrote the next Iceberg metadata first; syncing again continues from it."""


@dataclasses.dataclass(frozen=True)
class SyncResult:
    """What a sync did: `mode` "none" (already current), "incremental" or "full"; the Delta version
    the newest metadata reflects, its location, the files it added / removed, the bytes written."""

    delta_version: int
    metadata_location: str | None
    mode: str
    files_added: int = 0
    files_removed: int = 0
    bytes_written: int = 0


def metadata_key(number: int) -> str:
    return f"{METADATA_DIR}/v{number}.metadata.json"


def current(storage: Storage) -> tuple[int, TableMetadataV2] | None:
    """(N, metadata N) of the newest Iceberg metadata, or None when the table has none."""
    number = _hinted(storage)
    if number is None:
        return None
    while storage.exists(metadata_key(number + 1)):  # (a sync that died before the hint)
        number += 1
    meta = TableMetadataUtil.parse_raw(storage.read(metadata_key(number)).decode())
    if not isinstance(meta, TableMetadataV2):
        raise InvalidArgumentError(f"{metadata_key(number)} is not Iceberg format version 2")
    return number, meta


def _hinted(storage: Storage) -> int | None:
    try:
        return int(storage.read(HINT).decode().strip())
    except FileNotFoundError:
        pass
    except ValueError:
        pass
    numbers = [
        int(f.name[1 : -len(".metadata.json")])
        for f in _listed(storage)
        if f.name.startswith("v") and f.name.endswith(".metadata.json") and f.name[1:-14].isdigit()
    ]
    return max(numbers) if numbers else None


def _listed(storage: Storage) -> list:  # type: ignore[type-arg]
    try:
        return storage.list_dir(METADATA_DIR)
    except FileNotFoundError:
        return []


def reflected_version(storage: Storage) -> int | None:
    """The Delta version the newest Iceberg metadata reflects (None without any)."""
    found = current(storage)
    return None if found is None else int(found[1].properties.get(DELTA_VERSION, "-1"))


def sync(storage: Storage, snapshot: Snapshot) -> SyncResult:
    """Bring the Iceberg metadata to `snapshot` (see the module docstring)."""
    conf = snapshot.metadata.configuration
    if not iceberg_compat.uniform_iceberg(conf):
        raise InvalidArgumentError(
            f"the table is not UniForm: it needs {iceberg_compat.FORMATS_KEY}=iceberg and "
            f"{iceberg_compat.KEY}=true"
        )
    found = current(storage)
    if found is not None and int(found[1].properties.get(DELTA_VERSION, "-1")) >= snapshot.version:
        location = f"{found[1].location}/{metadata_key(found[0])}"
        return SyncResult(int(found[1].properties[DELTA_VERSION]), location, "none")
    return _Sync(storage, snapshot, found).run()


class _Sync:
    """One sync: the pieces of the next metadata, written in order."""

    def __init__(
        self, storage: Storage, snapshot: Snapshot, found: tuple[int, TableMetadataV2] | None
    ) -> None:
        self.storage, self.snapshot = storage, snapshot
        self.number = found[0] if found else 0
        self.base: TableMetadataV2 | None = found[1] if found else None
        self.io = StorageIO(storage, storage.root)
        meta = snapshot.metadata
        self.logical = schema_from_json(meta.schema_string)
        self.entries = iceberg_schema.FileEntries(self.io.location, self.logical, meta.partition_columns)
        self.spec = iceberg_schema.partition_spec(self.logical, meta.partition_columns)
        self.schemas, self.schema = _schemas(self.base, self.logical)
        self.snapshot_id = uuid.uuid4().int & ((1 << 63) - 1)
        self.sequence = (self.base.last_sequence_number if self.base else 0) + 1
        self.manifest_count = 0

    def run(self) -> SyncResult:
        changes = self._pending()
        if changes is None:
            files = self.snapshot.files()
            manifests = self._added(files)
            added, removed, mode = len(files), 0, "full"
        else:
            adds, removes = changes
            manifests = self._incremental(adds, removes)
            added, removed, mode = len(adds), len(removes), "incremental"
        op = _operation(changes)
        location = self._write_list(manifests, op, added, removed)
        written = self._write_metadata(location, op)
        return SyncResult(
            self.snapshot.version, f"{self.io.location}/{metadata_key(self.number + 1)}", mode,
            added, removed, written,
        )  # fmt: skip

    # -------------------------------------------------------------------------- what changed
    def _pending(self) -> tuple[list[AddFile], set[str]] | None:
        """The net adds and removed locations since the base's Delta version, or None when a full
        conversion is needed (no base, partitioning changed, commits missing or too many)."""
        if self.base is None or self.base.spec().fields != self.spec.fields:
            return None
        if not self.base.current_snapshot_id or self.base.current_snapshot() is None:
            return None
        done = int(self.base.properties.get(DELTA_VERSION, "-1"))
        want = self.snapshot.version - done
        if done < 0 or want > MAX_PENDING:
            return None
        run = list_after(self.storage, done).run_from(done + 1, self.snapshot.version)
        if len(run) != want:
            return None
        added: dict[str, AddFile] = {}
        removed: set[str] = set()
        for commit in read_commits(self.storage, run):
            for action in commit.actions:
                if "add" in action:
                    add = AddFile.from_wire(action["add"])
                    added[self.entries.path(add.path)] = add
                elif "remove" in action:
                    path = self.entries.path(RemoveFile.from_wire(action["remove"]).path)
                    if added.pop(path, None) is None or path in removed:
                        removed.add(path)
        return list(added.values()), removed

    # -------------------------------------------------------------------------- manifests
    def _new_manifest(self, entries: list[tuple[ManifestEntryStatus, ManifestEntry]]) -> ManifestFile | None:
        """A manifest of `entries` (None for none: Iceberg has no empty manifests)."""
        if not entries:
            return None
        location = f"{self.io.location}/{METADATA_DIR}/{uuid.uuid4()}-m{self.manifest_count}.avro"
        self.manifest_count += 1
        output = self.io.new_output(location)
        with write_manifest(2, self.spec, self.schema, output, self.snapshot_id, _CODEC) as writer:
            for status, entry in entries:
                if status == ManifestEntryStatus.ADDED:
                    writer.add(entry)
                elif status == ManifestEntryStatus.EXISTING:
                    writer.existing(entry)
                else:
                    writer.delete(entry)
        return writer.to_manifest_file()

    def _added(self, adds: Sequence[AddFile]) -> list[ManifestFile]:
        out = []
        for start in range(0, len(adds), MANIFEST_ENTRIES):
            chunk = adds[start : start + MANIFEST_ENTRIES]
            entries = [
                (ManifestEntryStatus.ADDED, ManifestEntry.from_args(
                    status=ManifestEntryStatus.ADDED, snapshot_id=self.snapshot_id,
                    data_file=self.entries.data_file(a),
                ))
                for a in chunk
            ]  # fmt: skip
            if (m := self._new_manifest(entries)) is not None:
                out.append(m)
        return out

    def _incremental(self, adds: list[AddFile], removed: set[str]) -> list[ManifestFile]:
        assert self.base is not None
        previous = list(self.base.current_snapshot().manifests(self.io))  # type: ignore[union-attr]
        kept: list[ManifestFile] = []
        for manifest in previous:
            if not removed:
                kept.append(manifest)
                continue
            live = manifest.fetch_manifest_entry(self.io, discard_deleted=True)
            if not any(e.data_file.file_path in removed for e in live):
                kept.append(manifest)
                continue
            rewritten = self._new_manifest(
                [
                    (
                        ManifestEntryStatus.DELETED
                        if e.data_file.file_path in removed
                        else ManifestEntryStatus.EXISTING,
                        e,
                    )
                    for e in live
                ]
            )
            if rewritten is not None:
                kept.append(rewritten)
        return self._merged(kept) + self._added(adds)

    def _merged(self, manifests: list[ManifestFile]) -> list[ManifestFile]:
        """Small manifests merged into one once there are more than MERGE_AFTER (Iceberg's rule)."""
        if len(manifests) <= MERGE_AFTER:
            return manifests
        small = [m for m in manifests if _live_files(m) < SMALL_MANIFEST]
        if len(small) < 2:
            return manifests
        entries = [
            (ManifestEntryStatus.EXISTING, e)
            for m in small
            for e in m.fetch_manifest_entry(self.io, discard_deleted=True)
        ]
        merged = self._new_manifest(entries)
        rest = [m for m in manifests if _live_files(m) >= SMALL_MANIFEST]
        return rest + ([merged] if merged is not None else [])

    # -------------------------------------------------------------------------- snapshot, metadata
    def _write_list(self, manifests: list[ManifestFile], op: Operation, added: int, removed: int) -> str:
        location = f"{self.io.location}/{METADATA_DIR}/snap-{self.snapshot_id}-1-{uuid.uuid4()}.avro"
        parent = self.base.current_snapshot_id if self.base else None
        with write_manifest_list(
            2, self.io.new_output(location), self.snapshot_id, parent, self.sequence, _CODEC
        ) as w:
            w.add_manifests(manifests)
        records = sum((m.added_rows_count or 0) + (m.existing_rows_count or 0) for m in manifests)
        files = sum(_live_files(m) for m in manifests)
        self.summary = Summary(
            operation=op,
            **{
                "added-data-files": str(added), "deleted-data-files": str(removed),
                "total-data-files": str(files), "total-records": str(records),
                DELTA_VERSION: str(self.snapshot.version),
            },
        )  # fmt: skip
        return location

    def _write_metadata(self, list_location: str, op: Operation) -> int:
        now = int(time.time() * 1000)
        snap = IcebergSnapshot.model_validate({
            "snapshot-id": self.snapshot_id, "parent-snapshot-id": self._parent(),
            "sequence-number": self.sequence, "timestamp-ms": now, "manifest-list": list_location,
            "summary": self.summary, "schema-id": self.schema.schema_id,
        })  # fmt: skip
        data = self._next(snap, now).model_dump_json(by_alias=True, exclude_none=True).encode()
        try:
            self.storage.put_if_absent(metadata_key(self.number + 1), data)
        except FileExistsError as exc:
            raise UniformSyncConflictError(
                f"Iceberg metadata {metadata_key(self.number + 1)} was written by another sync; nothing "
                "of this one is live. Help: sync again (it continues from the newer metadata)"
            ) from exc
        self.storage.write(HINT, str(self.number + 1).encode())
        return sum(self.io.written.values()) + len(data)

    def _parent(self) -> int | None:
        return self.base.current_snapshot_id if self.base else None

    def _kept(self, snap: IcebergSnapshot, now: int) -> tuple[list[IcebergSnapshot], list[SnapshotLogEntry]]:
        """The snapshots (and their log) left after expiry: younger than the Delta retentions, at
        most MAX_SNAPSHOTS, the new one always."""
        conf = self.snapshot.metadata.configuration
        keep_ms = min(props.log_retention_ms(conf), props.deleted_file_retention_ms(conf))
        snapshots = [*(self.base.snapshots if self.base else []), snap]
        snapshots = [s for s in snapshots if s.timestamp_ms >= now - keep_ms or s is snap][-MAX_SNAPSHOTS:]
        ids = {s.snapshot_id for s in snapshots}
        log = [e for e in (self.base.snapshot_log if self.base else []) if e.snapshot_id in ids]
        log.append(SnapshotLogEntry.model_validate({"snapshot-id": snap.snapshot_id, "timestamp-ms": now}))
        return snapshots, log

    def _next(self, snap: IcebergSnapshot, now: int) -> TableMetadataV2:
        snapshots, snapshot_log = self._kept(snap, now)
        metadata_log = list(self.base.metadata_log) if self.base else []
        if self.base is not None:
            previous = f"{self.io.location}/{metadata_key(self.number)}"
            entry = {"metadata-file": previous, "timestamp-ms": self.base.last_updated_ms}
            metadata_log.append(MetadataLogEntry.model_validate(entry))
        base_version = self.base.properties.get(DELTA_VERSION, "-1") if self.base else "-1"
        spec_ids = [f.field_id for f in self.spec.fields]
        return TableMetadataV2.model_validate({
            "location": self.io.location, "table-uuid": uuid.UUID(self.snapshot.metadata.id),
            "last-updated-ms": now, "last-column-id": max(s.highest_field_id for s in self.schemas),
            "schemas": self.schemas, "current-schema-id": self.schema.schema_id,
            "partition-specs": [self.spec], "default-spec-id": self.spec.spec_id,
            "last-partition-id": max(spec_ids, default=iceberg_schema.PARTITION_ID_START - 1),
            "properties": {
                DELTA_VERSION: str(self.snapshot.version), DELTA_TIMESTAMP: str(self.snapshot.timestamp),
                BASE_DELTA_VERSION: base_version,
            },
            "current-snapshot-id": snap.snapshot_id, "snapshots": snapshots, "snapshot-log": snapshot_log,
            "metadata-log": metadata_log[-MAX_METADATA_LOG:],
            "refs": {"main": SnapshotRef.model_validate({"snapshot-id": snap.snapshot_id, "type": "branch"})},
            "last-sequence-number": self.sequence,
        })  # fmt: skip


def _operation(changes: tuple[list[AddFile], set[str]] | None) -> Operation:
    if changes is None:
        return Operation.OVERWRITE
    adds, removes = changes
    if not removes:
        return Operation.APPEND
    if not adds:
        return Operation.DELETE
    return Operation.OVERWRITE


def _live_files(m: ManifestFile) -> int:
    return (m.added_files_count or 0) + (m.existing_files_count or 0)


def _schemas(base: TableMetadataV2 | None, logical: pa.Schema) -> tuple[list[Schema], Schema]:
    """The schemas of the next metadata and its current one (a new schema only when it changed)."""
    if base is None:
        s = iceberg_schema.schema(logical, 0)
        return [s], s
    latest = base.schema()
    s = iceberg_schema.schema(logical, latest.schema_id)
    if s.fields == latest.fields:
        return list(base.schemas), latest
    s = iceberg_schema.schema(logical, max(x.schema_id for x in base.schemas) + 1)
    return [*base.schemas, s], s


def _last_column_id(schemas: list[Schema]) -> int:
    return max(s.highest_field_id for s in schemas)


def after_commit(storage: Storage, snapshot: Snapshot) -> SyncResult | None:
    """The sync a commit runs when its table is UniForm (None when it is not): never fails the
    commit, which has landed. A failure is logged; the next commit, `Table.uniform_sync()` or the
    planner's `uniform_sync` action catches up (the metadata stays at its last version meanwhile)."""
    if not iceberg_compat.uniform_iceberg(snapshot.metadata.configuration):
        return None
    try:
        return sync(storage, snapshot)
    except (TxnLogError, OSError, ValueError) as exc:  # (pyiceberg's own errors are ValueErrors)
        log.warning("UniForm: Iceberg metadata not brought to version %s (the commit itself succeeded): %s",
                    snapshot.version, exc)  # fmt: skip
        return None
