"""Restore: bring a table back to an earlier version, a timestamp or a savepoint, as a forward commit.

Plan (Delta's RESTORE semantics), comparing files by (path, deletion-vector id):
- re-add every file of the target that is not live now (dataChange=true, original stats kept);
- remove every live file that the target does not have (dataChange=true, extended metadata);
- restore the target's metaData (same table id); keep the current protocol (never downgrade), with
  the target's features added when it had some the table dropped since (drop_feature; Delta's RESTORE
  brings them back too, `feature_drop.normalized` as Delta's protocol merge), and the table's
  checkpointProtection version kept when higher than the target's (Delta lets it go: we keep it).
Safety, all checked before anything is written:
- every file to re-add must exist, else `RestoreFilesMissingError` listing them;
- "foreign" commits since the target (data or metadata changes not tagged with the caller's
  `owner`) make `on_foreign_commits="fail"` refuse with `ForeignCommitsError`; "force" restores
  anyway and records the discarded versions in commitInfo.
Idempotency: when the live files and metaData already equal the target, nothing is committed and the
version of the restore that got it there (found by its `txn` app id `restore:<target>`) is returned.
The commit's transaction reads exactly the snapshot the plan was made from and the whole table, so
any commit after that snapshot makes it fail with a conflict; the restore then re-plans from the new
latest version (where that commit is a foreign one) instead of retrying blindly, which could discard
it, or keep its files in a state that claims to be the target's. After `MAX_REPLANS` plans that all
lost a race, `RestoreRetriesExceededError` (the table is unchanged). A re-plan reads only what is
new: the foreign-commit verdict of each version is kept (commits never change), and so is each file
found to exist (the target's files are pinned for the whole restore: a savepoint, or `pinned`), so on
a busy object store a re-plan costs one listing and the new commits, not a GET per commit since the
target and a HEAD per file to re-add.
The table is reached through `MaintenanceTable` (its latest snapshot, a transaction on a given
snapshot, the txn lookup), the commits since the target through `engine.log.log_reader`.
Metadata domains (domainMetadata) are kept as the latest version has them, as Delta's RESTORE keeps
them: a restore brings back files, schema and properties, not domains.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import random
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow.compute as pc

from airflow_txnlog.engine.errors import (
    CommitConflictError,
    ForeignCommitsError,
    RestoreError,
    RestoreFilesMissingError,
    RestoreRetriesExceededError,
    SavepointFilesMissingError,
    VersionNotFoundError,
)
from airflow_txnlog.engine.features import iceberg_compat, identity
from airflow_txnlog.engine.features.checkpoint_protection import protected_before
from airflow_txnlog.engine.features.deletion_vectors import dv_file_paths
from airflow_txnlog.engine.features.feature_drop import normalized
from airflow_txnlog.engine.features.table_features import implied_features
from airflow_txnlog.engine.log.actions import ADD, METADATA, REMOVE, AddFile, Metadata
from airflow_txnlog.engine.log.log_reader import list_after, read_commits
from airflow_txnlog.engine.log.replay import LogState, positions_not_in
from airflow_txnlog.engine.maintenance.maintenance_table import MaintenanceTable
from airflow_txnlog.engine.maintenance.savepoints import (
    create_savepoint,
    delete_savepoint,
    existing_savepoints,
    get_savepoint,
    missing_files,
    read_manifest,
    savepoints_for_message,
)
from airflow_txnlog.engine.properties import CHECKPOINT_PROTECTION_VERSION
from airflow_txnlog.engine.state.add_files import select_adds
from airflow_txnlog.engine.state.snapshot import Snapshot
from airflow_txnlog.engine.storage import Storage
from airflow_txnlog.engine.validate import ForeignCommitsPolicy, flag, one_of, text
from airflow_txnlog.engine.write.provenance import OWNER_TAG
from airflow_txnlog.engine.write.transaction import ENGINE_INFO, Transaction

MAX_REPLANS = 25
# Back off between re-plans (jittered, doubling up to 1 s): a restore reads the whole table, so on a
# busy table it must leave a gap between other writers' commits instead of racing them head-on.
REPLAN_BACKOFF_S = (0.01, 1.0)
PIN_TTL_MS = 24 * 3_600_000


@dataclass(frozen=True)
class RestoreTarget:
    """What to restore to: a version's state (from the log or a savepoint manifest) and its label."""

    version: int
    state: LogState
    app_id: str  # txn app id making the restore idempotent
    parameters: dict[str, Any]


def savepoint_target(table: MaintenanceTable, name: str) -> RestoreTarget:
    """The target of a restore to savepoint `name` (its manifest holds the state)."""
    sp = get_savepoint(table.storage, name)
    if sp.table_id != table.snapshot().metadata.id:
        raise RestoreError(f"savepoint {name!r} belongs to another table (id {sp.table_id})")
    state = read_manifest(table.storage, sp)
    return RestoreTarget(sp.version, state, f"restore:{name}", {"savepoint": name, "version": sp.version})


def version_target(
    snapshot_of: Callable[..., Snapshot],
    storage: Storage,
    *,
    version: int | None,
    timestamp: dt.datetime | str | int | None,
) -> tuple[RestoreTarget, Snapshot]:
    """The target of a restore to `version` or `timestamp`, and its snapshot (`snapshot_of`: the
    table's `snapshot`). A version whose commits log cleanup removed names the way out."""
    try:
        snap = snapshot_of(version=version, timestamp=timestamp)
    except VersionNotFoundError as exc:
        if version is None or version > snapshot_of().version:
            raise
        raise VersionNotFoundError(f"{exc}. {_savepoint_way_out(storage, version)}") from exc
    params = {"version": snap.version, "timestamp": str(timestamp) if timestamp is not None else None}
    params = {k: v for k, v in params.items() if v is not None}
    return RestoreTarget(snap.version, snap.state, f"restore:v{snap.version}", params), snap


def _savepoint_way_out(storage: Storage, version: int) -> str:
    """What can still restore a version whose commits log cleanup removed: a savepoint taken of it."""
    found = savepoints_for_message(storage)  # one listing for both answers
    holding = [s.name for s in found or [] if s.version == version]
    if holding:
        return f"Help: savepoint {holding[0]!r} holds version {version}: restore(savepoint={holding[0]!r})"
    return (
        f"No savepoint holds version {version} ({existing_savepoints(storage, found)}); a version stays "
        "restorable after log cleanup only through a savepoint taken of it (create_savepoint)"
    )


@dataclass(frozen=True)
class RestoreResult:
    """Outcome (or, with dry_run, plan) of a restore."""

    version: int | None  # the version that holds the restored state (None for a dry run that would commit)
    target_version: int
    committed: bool
    dry_run: bool
    files_to_add: list[str] = field(default_factory=list)
    files_to_remove: list[str] = field(default_factory=list)
    missing_files: list[str] = field(default_factory=list)
    foreign_versions: list[int] = field(default_factory=list)
    metrics: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class _Plan:
    adds: list[AddFile]
    removes: list[AddFile]
    metadata: Metadata | None
    metrics: dict[str, int]


def plan(current: Snapshot, target: RestoreTarget) -> _Plan:
    """The file diff between the current and the target state, by key in Arrow: only the files that
    change become objects (a restore of a million-file table to a near version makes a handful)."""
    now_keys, want_keys = current.file_keys(), target.state.live_add_keys()
    adds = select_adds(target.state, positions_not_in(want_keys, now_keys))
    removes = current.files_at(positions_not_in(now_keys, want_keys))
    md = target.state.metadata
    assert md is not None
    # The table keeps its identity (its id, and identity columns' marks, which never go back): only
    # schema, partitioning and properties come from the target.
    md = identity.merged_marks(dataclasses.replace(md, id=current.metadata.id), current.metadata)
    metadata = None if md == current.metadata else md
    metrics = {
        "numRestoredFiles": len(adds),
        "numRemovedFiles": len(removes),
        "restoredFilesSize": sum(f.size for f in adds),
        "removedFilesSize": sum(f.size for f in removes),
        "tableSizeAfterRestore": int(pc.sum(target.state.live_add_sizes()).as_py() or 0),
        "numOfFilesAfterRestore": len(want_keys),
    }
    return _Plan(adds, removes, metadata, metrics)


def foreign_versions(
    storage: Storage,
    after: int,
    until: int,
    owner: str | None,
    *,
    known: dict[int, bool] | None = None,
    strict: bool = False,
) -> list[int]:
    """Versions in (after, until] that changed data or metadata and are not tagged with `owner`
    (without an owner: none, or with `strict` every such version). `known` (version -> foreign) is
    read first and filled in, so a caller asking again reads only the commits it has not seen."""
    if (owner is None and not strict) or until <= after:
        return []
    verdicts = {} if known is None else known
    listing = list_after(storage, after)
    since = sorted((v, f) for v, f in listing.commits.items() if v <= until)  # cleaned-up ones are gone
    for commit in read_commits(storage, [(v, f) for v, f in since if v not in verdicts]):
        tags = commit.info.get("tags") or {}
        changes = any(
            (k in (ADD, REMOVE) and body.get("dataChange", True)) or k == METADATA
            for a in commit.actions
            for k, body in a.items()
        )
        verdicts[commit.version] = changes and (owner is None or tags.get(OWNER_TAG) != owner)
    return [v for v, _ in since if verdicts[v]]


def _outcome(
    target: RestoreTarget,
    p: _Plan,
    gone: list[str],
    foreign: list[int],
    *,
    version: int | None,
    committed: bool,
    dry_run: bool,
) -> RestoreResult:
    return RestoreResult(
        version=version,
        target_version=target.version,
        committed=committed,
        dry_run=dry_run,
        files_to_add=[f.path for f in p.adds],
        files_to_remove=[f.path for f in p.removes],
        missing_files=gone,
        foreign_versions=foreign,
        metrics=p.metrics,
    )


def check_options(*, dry_run: object, on_foreign_commits: object, owner: object) -> None:
    """InvalidArgumentError for a bad option, before anything (a pin included) is written."""
    flag("dry_run", dry_run)
    one_of("on_foreign_commits", on_foreign_commits, ForeignCommitsPolicy)
    text("owner", owner, empty_ok=False)


def restore(
    table: MaintenanceTable,
    target: RestoreTarget,
    *,
    dry_run: bool,
    on_foreign_commits: ForeignCommitsPolicy,
    owner: str | None,
    foreign_after: int | None = None,
) -> RestoreResult:
    """Plan and (unless dry_run) commit a restore; re-plans after a conflicting concurrent commit.
    `foreign_after`: only commits after this version can be foreign, and without an owner every
    data-changing one is (a release rollback: the released versions up to it are the rollback's to
    discard, any later commit is another writer's)."""
    check_options(dry_run=dry_run, on_foreign_commits=on_foreign_commits, owner=owner)
    verdicts: dict[int, bool] = {}  # version -> foreign, for the versions read so far
    present: set[str] = set()  # files found to exist (pinned: they stay)
    for attempt in range(MAX_REPLANS):
        current = table.snapshot()
        p = plan(current, target)
        after = target.version if foreign_after is None else max(target.version, foreign_after)
        strict = foreign_after is not None
        foreign = foreign_versions(
            table.storage, after, current.version, owner, known=verdicts, strict=strict
        )
        dvs = [f.deletion_vector for f in p.adds if f.deletion_vector]
        unchecked = [x for x in [f.path for f in p.adds] + sorted(dv_file_paths(dvs)) if x not in present]
        gone = missing_files(table.storage, unchecked)
        present.update(set(unchecked) - set(gone))
        if not p.adds and not p.removes and p.metadata is None:
            done = table.txn_commit_version(target.app_id, target.version) or current.version
            return _outcome(target, p, gone, foreign, version=done, committed=False, dry_run=dry_run)
        _keeps_uniform(current, p.metadata, target.version)
        if dry_run:
            return _outcome(target, p, gone, foreign, version=None, committed=False, dry_run=True)
        check_safe(target, gone, foreign, on_foreign_commits)
        txn = table.transaction("RESTORE", target.parameters, snapshot=current)
        try:
            version = _commit(txn, target, p, foreign, owner)
        except CommitConflictError:
            low, high = REPLAN_BACKOFF_S
            time.sleep(random.uniform(0, min(high, low * 2**attempt)))  # noqa: S311 - jitter, not a secret
            continue  # someone committed meanwhile: plan again against the new latest version
        return _outcome(target, p, gone, foreign, version=version, committed=True, dry_run=False)
    raise RestoreRetriesExceededError(
        f"other writers committed during each of {MAX_REPLANS} restore attempts, so the restore never "
        "got to commit; the table is unchanged. Help: pause the writers of this table (or wait for a "
        "quiet moment) and run the restore again."
    )


def check_safe(
    target: RestoreTarget, gone: list[str], foreign: list[int], policy: ForeignCommitsPolicy
) -> None:
    if gone:
        raise RestoreFilesMissingError(
            f"cannot restore version {target.version}: {len(gone)} files to re-add are missing "
            f"(vacuumed or deleted): {gone[:20]}. The table is unchanged. Help: restore a newer version "
            "or a savepoint whose files still exist.",
            missing=gone,
        )
    if foreign and policy == "fail":
        raise ForeignCommitsError(
            f"versions {foreign} were committed by other writers after version {target.version}; restoring "
            "would discard their changes. The table is unchanged. Help: use on_foreign_commits='force' to "
            "restore anyway.",
            versions=foreign,
        )


def _keeps_uniform(current: Snapshot, metadata: Metadata | None, version: int) -> None:
    """A restore must not turn UniForm off by restoring older metadata: Iceberg readers would go on
    reading the metadata of the version before the restore, and vacuum would stop keeping it."""
    if metadata is None or not iceberg_compat.uniform_iceberg(current.metadata.configuration):
        return
    if not iceberg_compat.uniform_iceberg(metadata.configuration):
        raise RestoreError(
            f"cannot restore version {version}: its metadata has no UniForm ({iceberg_compat.KEY}, "
            f"{iceberg_compat.FORMATS_KEY}), so the restore would leave Iceberg readers on stale "
            "metadata. The table is unchanged. Help: drop_feature('icebergCompatV2') first if UniForm "
            "should end, then restore"
        )


def _keeping_protection(snap: Snapshot, metadata: Metadata) -> Metadata:
    """The target's metadata, keeping the table's checkpointProtection version when it is higher
    than the target's (a restore to before a DROP FEATURE must not lift the protection)."""
    key = CHECKPOINT_PROTECTION_VERSION
    now = protected_before(snap.protocol, snap.metadata)
    if now == 0 or now <= protected_before(snap.protocol, metadata):
        return metadata
    conf = {**metadata.configuration, key: snap.metadata.configuration[key]}
    return dataclasses.replace(metadata, configuration=conf)


def _commit(txn: Transaction, target: RestoreTarget, p: _Plan, foreign: list[int], owner: str | None) -> int:
    # `txn` reads the snapshot the plan was made from: a transaction on a newer snapshot would not
    # conflict with a file added in between, and the plan would silently keep it.
    txn.read_files()  # the restore depends on the whole current state
    now = int(time.time() * 1000)
    for f in p.removes:
        txn.remove(f.remove(deletion_timestamp=now))
    for f in p.adds:
        txn.add(dataclasses.replace(f, data_change=True))
    # (the files were live in the target version, which also gives the metadata: its rules held)
    txn.rows_checked()
    txn.existing_rows_checked()
    if p.metadata is not None:
        txn.update_metadata(_keeping_protection(txn.snapshot, p.metadata))
    if (wanted := target.state.protocol) is not None:  # (a feature dropped since comes back, as in Delta)
        now_readers, now_writers = implied_features(txn.snapshot.protocol)
        readers, writers = implied_features(wanted)
        if not (readers <= now_readers and writers <= now_writers):
            txn.update_protocol(normalized(now_readers | readers, now_writers | writers))
    txn.set_app_transaction(target.app_id, target.version)
    extra: dict[str, Any] = {"discardedVersions": foreign} if foreign else {}
    if owner is not None:
        extra["tags"] = {OWNER_TAG: owner}
    return txn.commit(metrics=p.metrics, extra=extra)


@contextlib.contextmanager
def pinned(table: MaintenanceTable, target: Snapshot | None) -> Iterator[None]:
    """Hold a short-lived savepoint of `target` (None: nothing to pin), so that no vacuum deletes the
    files a restore re-adds between its existence check and its commit (engine.maintenance.fence). It
    expires by itself after PIN_TTL_MS if the process dies before removing it."""
    if target is None:
        yield
        return
    name = f"restore-pin-{uuid.uuid4().hex}"
    try:
        create_savepoint(
            table,
            target,
            name,
            created_by=ENGINE_INFO,
            reason="pins the files of a restore in progress",
            expires_at=int(time.time() * 1000) + PIN_TTL_MS,
        )
    except SavepointFilesMissingError as exc:
        raise RestoreFilesMissingError(
            f"cannot restore version {target.version}: {len(exc.missing)} of its files are missing "
            f"(vacuumed or deleted): {exc.missing[:20]}. The table is unchanged.",
            missing=exc.missing,
        ) from exc
    try:
        yield
    finally:
        delete_savepoint(table.storage, name)
