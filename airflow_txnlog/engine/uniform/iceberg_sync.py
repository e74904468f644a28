"""UniForm: Iceberg v2 metadata that mirrors a Delta table's latest version, written incrementally.

Layout, and which metadata is the newest: engine.uniform.layout. Data files are the Delta table's
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

Then: small manifests are merged in tiers (`_merged`: MERGE_FANOUT manifests of one order of
magnitude become one of the next, so the list stays short and an entry is rewritten at most
log10(MERGE_LIMIT) times); a new schema is added when the Delta schema changed (same field ids);
snapshots older than the Delta log retention (and the deleted-file retention: vacuum may remove
their files) are expired from the metadata, and at most MAX_SNAPSHOTS are kept (Iceberg time travel
reaches back that far; the Delta log is the table's history); the metadata log keeps the last
MAX_METADATA_LOG files. Iceberg files no kept metadata needs are deleted by log cleanup
(engine.uniform.iceberg_expiry).

Cost of a commit's sync: the process keeps the newest metadata and its manifests (`_LAST`), so an
incremental sync reads the new commits by name (no listing), checks that no newer metadata exists,
and writes a manifest, a manifest list, the metadata file and the hint.

Invariants: metadata N+1 is written after every file it names; it always reflects exactly one Delta
version, whose live files are its live data files; a failure leaves the previous metadata newest.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import time
import uuid
from collections.abc import Sequence
from typing import Any, Final

from pyiceberg.manifest import (
    UNASSIGNED_SEQ,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
)
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
from pyiceberg.types import IcebergType

from airflow_txnlog.engine import properties as props
from airflow_txnlog.engine.errors import InvalidArgumentError, TxnLogError
from airflow_txnlog.engine.features import iceberg_compat
from airflow_txnlog.engine.log.actions import AddFile, RemoveFile
from airflow_txnlog.engine.log.log_paths import commit_name
from airflow_txnlog.engine.log.log_reader import parse_commit
from airflow_txnlog.engine.state.snapshot import Snapshot
from airflow_txnlog.engine.storage import LOG_DIR, Storage
from airflow_txnlog.engine.uniform import iceberg_schema, manifest_pruning, manifest_reads
from airflow_txnlog.engine.uniform.avro_writers import ManifestListWriter, ManifestWriter
from airflow_txnlog.engine.uniform.commit_target import CommitTarget
from airflow_txnlog.engine.uniform.iceberg_io import StorageIO
from airflow_txnlog.engine.uniform.layout import (
    BASE_DELTA_VERSION,
    DELTA_TIMESTAMP,
    DELTA_VERSION,
    HINT,
    METADATA_DIR,
    listed,
    metadata_key,
    newest_number,
    number_of,
)
from airflow_txnlog.engine.uniform.manifest_pruning import Partition

log = logging.getLogger(__name__)

MAX_PENDING = 100
MANIFEST_ENTRIES = 50_000
MERGE_FANOUT, MERGE_LIMIT = 10, 5_000
MAX_SNAPSHOTS, MAX_METADATA_LOG = 10, 10
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


# The newest metadata this process wrote or read, per table (root): (N, metadata N, its current
# snapshot's manifests). A commit's sync then reads nothing but one existence check of N+1.
_LAST: dict[str, tuple[int, TableMetadataV2, list[ManifestFile] | None]] = {}


def current(storage: Storage, table_id: str | None = None) -> tuple[int, TableMetadataV2 | None] | None:
    """(N, metadata N) of the newest Iceberg metadata, or None when the table has none; (N, None)
    when file N is gone (deleted by hand, or by a vacuum while UniForm was off): a sync then starts
    over as N+1. `table_id` (the Delta table's id) lets the metadata this process last saw stand."""
    cached = _LAST.get(storage.root)
    same = (
        cached is not None
        and table_id is not None
        and str(cached[1].table_uuid) == str(iceberg_schema.table_uuid(table_id))
    )  # (a Delta id that is not a uuid is derived to one: compared as the metadata holds it)
    # (still the newest, and still there: metadata/ may have been deleted meanwhile)
    if cached is not None and same and not storage.exists(metadata_key(cached[0] + 1)):  # noqa: SIM102
        if storage.exists(metadata_key(cached[0])):
            return cached[0], cached[1]
    number = newest_number(storage)
    if number is None:
        return None
    try:
        raw = storage.read(metadata_key(number))
    except FileNotFoundError:
        return max([number, *(n for f in listed(storage) if (n := number_of(f.name)) is not None)]), None
    meta = TableMetadataUtil.parse_raw(raw.decode())
    if not isinstance(meta, TableMetadataV2):
        raise InvalidArgumentError(f"{metadata_key(number)} is not Iceberg format version 2")
    _LAST[storage.root] = (number, meta, None)
    return number, meta


def sync(storage: Storage, snapshot: Snapshot | CommitTarget) -> SyncResult:
    """Bring the Iceberg metadata to `snapshot` (see the module docstring)."""
    conf = snapshot.metadata.configuration
    if not iceberg_compat.uniform_iceberg(conf):
        raise InvalidArgumentError(
            f"the table is not UniForm: it needs {iceberg_compat.FORMATS_KEY}=iceberg and "
            f"{iceberg_compat.KEY}=true"
        )
    found = current(storage, snapshot.metadata.id)
    if found is None:
        return _Sync(storage, snapshot, 0, None).run()
    number, base = found
    if base is None or str(base.table_uuid) != str(iceberg_schema.table_uuid(snapshot.metadata.id)):
        return _Sync(storage, snapshot, number, None).run()  # (gone, or another table's: start over)
    if int(base.properties.get(DELTA_VERSION, "-1")) >= snapshot.version:
        location = f"{base.location}/{metadata_key(number)}"
        return SyncResult(int(base.properties[DELTA_VERSION]), location, "none")
    return _Sync(storage, snapshot, number, base).run()


class _Sync:
    """One sync: the pieces of the next metadata, written in order."""

    def __init__(
        self, storage: Storage, snapshot: Snapshot | CommitTarget, number: int, base: TableMetadataV2 | None
    ) -> None:
        """`number`: N of the newest metadata (0: none); `base`: metadata N when this sync builds on
        it (None: a full conversion written as N+1)."""
        self.storage, self.snapshot = storage, snapshot
        self.number, self.base = number, base
        self.io = StorageIO(storage, storage.root)
        meta = snapshot.metadata
        self.logical = iceberg_schema.logical(meta.schema_string)
        self.entries = iceberg_schema.FileEntries(self.io.location, self.logical, meta.partition_columns)
        self.spec = iceberg_schema.spec_of(meta.schema_string, meta.partition_columns)
        self.schemas, self.schema = iceberg_schema.schemas(self.base, self.logical)
        self.snapshot_id = uuid.uuid4().int & ((1 << 63) - 1)
        self.sequence = (self.base.last_sequence_number if self.base else 0) + 1
        self.manifest_count = 0

    def run(self) -> SyncResult:
        changes = self._pending()
        if changes is not None:
            try:
                manifests = self._incremental(*changes)
            except FileNotFoundError:  # (the base's manifests were deleted: start over)
                changes = None
        if changes is None:
            files = self.snapshot.files()
            manifests = self._added(files)
            added, removed, mode = len(files), 0, "full"
        else:
            added, removed, mode = len(changes[0]), len(changes[1]), "incremental"
        op = _operation(changes)
        self.manifests = manifests
        location = self._write_list(manifests, op, added, removed)
        written = self._write_metadata(location, op)
        return SyncResult(
            self.snapshot.version, f"{self.io.location}/{metadata_key(self.number + 1)}", mode,
            added, removed, written,
        )  # fmt: skip

    # -------------------------------------------------------------------------- what changed
    def _pending(self) -> tuple[list[AddFile], dict[str, Partition]] | None:
        """The net adds and removed locations since the base's Delta version, or None when a full
        conversion is needed (no base, partitioning changed, commits missing or too many, a commit
        in between without UniForm: the metadata may name files vacuum deleted since)."""
        if self.base is None or self.base.spec().fields != self.spec.fields:
            return None
        if not self.base.current_snapshot_id or self.base.current_snapshot() is None:
            return None
        done = int(self.base.properties.get(DELTA_VERSION, "-1"))
        if done < 0 or self.snapshot.version - done > MAX_PENDING:
            return None
        commits = self._commits_after(done)
        if commits is None:
            return None
        added: dict[str, AddFile] = {}
        removed: dict[str, Partition] = {}
        for actions in commits:
            for action in actions:
                if "metaData" in action and not iceberg_compat.uniform_iceberg(
                    action["metaData"].get("configuration") or {}
                ):
                    return None
                self._net(action, added, removed)
        return list(added.values()), removed

    def _commits_after(self, done: int) -> list[list[dict[str, Any]]] | None:
        """The parsed commits after version `done` (the target's own when it read them), read by
        name: no listing of the log; None when one is gone (log cleanup: a full conversion)."""
        if (
            isinstance(self.snapshot, CommitTarget)
            and (held := self.snapshot.actions_after(done)) is not None
        ):
            return held
        names = [f"{LOG_DIR}/{commit_name(v)}" for v in range(done + 1, self.snapshot.version + 1)]
        try:
            blobs = self.storage.read_many(names)
        except FileNotFoundError:
            return None
        return [parse_commit(blob, name=name) for name, blob in zip(names, blobs, strict=True)]

    def _net(self, action: dict[str, Any], added: dict[str, AddFile], removed: dict[str, Partition]) -> None:
        """Fold one action into the net change: a file added then removed is neither; a file added
        again without data change (row ids, stats) may be live in the base: its old entry goes.
        A removed file keeps its partition when known (engine.uniform.manifest_pruning)."""
        if "add" in action:
            add = AddFile.from_wire(action["add"])
            path = self.entries.path(add.path)
            added[path] = add
            if not add.data_change:
                removed[path] = self.entries.known_partition(add.partition_values)
        elif "remove" in action:
            remove = RemoveFile.from_wire(action["remove"])
            path = self.entries.path(remove.path)
            if added.pop(path, None) is None or path in removed:
                removed[path] = self.entries.known_partition(remove.partition_values)

    # -------------------------------------------------------------------------- manifests
    def _new_manifest(self, entries: list[tuple[ManifestEntryStatus, ManifestEntry]]) -> ManifestFile | None:
        """A manifest of `entries` (None for none: Iceberg has no empty manifests)."""
        if not entries:
            return None
        location = f"{self.io.location}/{METADATA_DIR}/{uuid.uuid4()}-m{self.manifest_count}.avro"
        self.manifest_count += 1
        output = self.io.new_output(location)
        with ManifestWriter(self.spec, self.schema, output, self.snapshot_id, _CODEC) as writer:
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

    def _incremental(self, adds: list[AddFile], removed: dict[str, Partition]) -> list[ManifestFile]:
        assert self.base is not None
        previous = self._previous_manifests()
        partitions = set(removed.values())
        types = self._partition_types() if removed else []
        kept: list[ManifestFile] = []
        for manifest in previous:
            if not removed or not manifest_pruning.may_list(manifest, types, partitions):
                kept.append(manifest)
                continue
            live = manifest_reads.live_entries(self.io, manifest, types)
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

    def _partition_types(self) -> list[IcebergType]:
        return [f.field_type for f in self.spec.partition_type(self.schema).fields]

    def _previous_manifests(self) -> list[ManifestFile]:
        cached = _LAST.get(self.storage.root)
        if cached is not None and cached[0] == self.number and cached[2] is not None:
            return cached[2]
        assert self.base is not None
        return list(self.base.current_snapshot().manifests(self.io))  # type: ignore[union-attr]

    def _merged(self, manifests: list[ManifestFile]) -> list[ManifestFile]:
        """Tiered merging: manifests under MERGE_LIMIT live entries are grouped by the order of
        magnitude of their entry count; MERGE_FANOUT of one order are merged into one of the next.
        So a snapshot lists at most MERGE_FANOUT - 1 small manifests per order (besides the full
        ones) and an entry is rewritten at most once per order, log10(MERGE_LIMIT) times in all."""
        while True:
            tiers: dict[int, list[ManifestFile]] = {}
            for m in manifests:
                if _live_files(m) < MERGE_LIMIT:
                    tiers.setdefault(len(str(_live_files(m))), []).append(m)
            full = next((group for _, group in sorted(tiers.items()) if len(group) >= MERGE_FANOUT), None)
            if full is None:
                return manifests
            types = self._partition_types()
            entries = [
                (ManifestEntryStatus.EXISTING, e)
                for m in full
                for e in manifest_reads.live_entries(self.io, m, types)
            ]
            merged = self._new_manifest(entries)
            manifests = [m for m in manifests if m not in full] + ([merged] if merged is not None else [])

    # -------------------------------------------------------------------------- snapshot, metadata
    def _write_list(self, manifests: list[ManifestFile], op: Operation, added: int, removed: int) -> str:
        location = f"{self.io.location}/{METADATA_DIR}/snap-{self.snapshot_id}-1-{uuid.uuid4()}.avro"
        parent = self.base.current_snapshot_id if self.base else None
        output = self.io.new_output(location)
        with ManifestListWriter(output, self.snapshot_id, parent, self.sequence, _CODEC) as w:
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
        meta = self._next(snap, now)
        data = meta.model_dump_json(by_alias=True, exclude_none=True).encode()
        try:
            self.storage.put_if_absent(metadata_key(self.number + 1), data)
        except FileExistsError as exc:
            raise UniformSyncConflictError(
                f"Iceberg metadata {metadata_key(self.number + 1)} was written by another sync; nothing "
                "of this one is live. Help: sync again (it continues from the newer metadata)"
            ) from exc
        self.storage.write(HINT, str(self.number + 1).encode())
        _LAST[self.storage.root] = (self.number + 1, meta, [self._as_listed(m) for m in self.manifests])
        return sum(self.io.written.values()) + len(data)

    def _as_listed(self, m: ManifestFile) -> ManifestFile:
        """`m` as the manifest list holds it: a manifest of this snapshot gets its sequence number
        (what pyiceberg's list writer does to its copy)."""
        if UNASSIGNED_SEQ not in (m.sequence_number, m.min_sequence_number):
            return m
        listed = copy.copy(m)
        if listed.sequence_number == UNASSIGNED_SEQ:
            listed.sequence_number = self.sequence
        if listed.min_sequence_number == UNASSIGNED_SEQ:
            listed.min_sequence_number = self.sequence
        return listed

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
            "location": self.io.location, "table-uuid": iceberg_schema.table_uuid(self.snapshot.metadata.id),
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


def _operation(changes: tuple[list[AddFile], dict[str, Partition]] | None) -> Operation:
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


def after_commit(storage: Storage, snapshot: Snapshot | CommitTarget) -> SyncResult | None:
    """The sync a commit runs when its table is UniForm (None when it is not): never fails the
    commit, which has landed. A failure is logged; the next commit or `Table.uniform_sync()` catches
    up (the metadata stays at its last version meanwhile; vacuum keeps the files it reads)."""
    if not iceberg_compat.uniform_iceberg(snapshot.metadata.configuration):
        return None
    try:
        return sync(storage, snapshot)
    except (TxnLogError, OSError, ValueError) as exc:  # (pyiceberg's own errors are ValueErrors)
        log.warning("UniForm: Iceberg metadata not brought to version %s (the commit itself succeeded): %s",
                    snapshot.version, exc)  # fmt: skip
        return None


def after_commit_from(storage: Storage, base: Snapshot, version: int) -> SyncResult | None:
    """`after_commit` for version `version` seen from `base`, the snapshot before the commit
    (engine.uniform.commit_target: no listing, no replay); only for a UniForm `base`."""
    if not iceberg_compat.uniform_iceberg(base.metadata.configuration):
        return None
    try:
        target: Snapshot | CommitTarget = CommitTarget(storage, base, version)
    except FileNotFoundError:  # (`base` older than the log: a commit after it was cleaned up)
        target = base.update(until=version)
    except (TxnLogError, OSError, ValueError) as exc:
        log.warning(
            "UniForm: version %s not read for its Iceberg metadata (the commit succeeded): %s", version, exc
        )
        return None
    return after_commit(storage, target)
