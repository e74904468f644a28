"""Restore: bring a table back to an earlier version, a timestamp or a savepoint, as a forward commit.

Plan (Delta's RESTORE semantics), comparing files by (path, deletion-vector id):
- re-add every file of the target that is not live now (dataChange=true, original stats kept);
- remove every live file that the target does not have (dataChange=true, extended metadata);
- restore the target's metaData (same table id); keep the current protocol (never downgrade).
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
it, or keep its files in a state that claims to be the target's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from airflow_txnlog.engine.actions import ADD, COMMIT_INFO, METADATA, REMOVE, AddFile, Metadata
from airflow_txnlog.engine.errors import (
    CommitConflictError,
    ForeignCommitsError,
    InvalidArgumentError,
    RestoreFilesMissingError,
)
from airflow_txnlog.engine.log_paths import LOG_DIR
from airflow_txnlog.engine.log_segment import LogListing
from airflow_txnlog.engine.replay import LogState, file_key, parse_commit
from airflow_txnlog.engine.savepoints import create_savepoint, delete_savepoint, missing_files
from airflow_txnlog.engine.snapshot import Snapshot
from airflow_txnlog.engine.storage import Storage
from airflow_txnlog.engine.transaction import ENGINE_INFO, Transaction

FOREIGN_POLICIES = ("fail", "force")
OWNER_TAG = "owner"
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


def _target_files(state: LogState) -> list[AddFile]:
    base = state.live_base_adds()
    out = [AddFile.from_wire(r) for r in base.to_pylist()] if base is not None else []
    return out + [AddFile.from_wire(d) for d in state.tail_adds()]


def plan(current: Snapshot, target: RestoreTarget) -> _Plan:
    now_files = {file_key(f.path, f.deletion_vector): f for f in current.files()}
    want = {file_key(f.path, f.deletion_vector): f for f in _target_files(target.state)}
    adds = [f for k, f in want.items() if k not in now_files]
    removes = [f for k, f in now_files.items() if k not in want]
    md = target.state.metadata
    assert md is not None
    # The table keeps its identity: only schema, partitioning and properties come from the target.
    md = dataclasses.replace(md, id=current.metadata.id)
    metadata = None if md == current.metadata else md
    size_after = sum(f.size for f in want.values())
    metrics = {
        "numRestoredFiles": len(adds),
        "numRemovedFiles": len(removes),
        "restoredFilesSize": sum(f.size for f in adds),
        "removedFilesSize": sum(f.size for f in removes),
        "tableSizeAfterRestore": size_after,
        "numOfFilesAfterRestore": len(want),
    }
    return _Plan(adds, removes, metadata, metrics)


def foreign_versions(storage: Storage, after: int, until: int, owner: str | None) -> list[int]:
    """Versions in (after, until] that changed data or metadata and are not tagged with `owner`."""
    if owner is None or until <= after:
        return []
    listing = LogListing.build(storage.list_log(f"{after:020d}.json"), complete=False)
    out = []
    for v in range(after + 1, until + 1):
        f = listing.commits.get(v)
        if f is None:
            continue  # cleaned up: nothing to inspect
        actions = parse_commit(storage.read(f"{LOG_DIR}/{f.name}"), name=f.name)
        info: dict[str, Any] = next((a[COMMIT_INFO] for a in actions if COMMIT_INFO in a), {})
        tags = info.get("tags") or {}
        changes = any(
            (k in (ADD, REMOVE) and body.get("dataChange", True)) or k == METADATA
            for a in actions
            for k, body in a.items()
        )
        if changes and tags.get(OWNER_TAG) != owner:
            out.append(v)
    return out


def restore(
    storage: Storage,
    latest: Callable[[], Snapshot],
    new_txn: Callable[[Snapshot, str, dict[str, Any]], Transaction],
    target: RestoreTarget,
    *,
    dry_run: bool,
    on_foreign_commits: str,
    owner: str | None,
    find_txn_commit: Callable[[str], int | None],
) -> RestoreResult:
    """Plan and (unless dry_run) commit a restore; re-plans after a conflicting concurrent commit."""
    if on_foreign_commits not in FOREIGN_POLICIES:
        raise InvalidArgumentError(
            f"on_foreign_commits must be one of {FOREIGN_POLICIES}, got {on_foreign_commits!r}"
        )
    for attempt in range(MAX_REPLANS):
        current = latest()
        p = plan(current, target)
        foreign = foreign_versions(storage, target.version, current.version, owner)
        gone = missing_files(storage, [f.path for f in p.adds])
        base = dict(
            target_version=target.version,
            files_to_add=[f.path for f in p.adds],
            files_to_remove=[f.path for f in p.removes],
            missing_files=gone,
            foreign_versions=foreign,
            metrics=p.metrics,
        )
        if not p.adds and not p.removes and p.metadata is None:
            done = find_txn_commit(target.app_id) or current.version
            return RestoreResult(version=done, committed=False, dry_run=dry_run, **base)  # type: ignore[arg-type]
        if dry_run:
            return RestoreResult(version=None, committed=False, dry_run=True, **base)  # type: ignore[arg-type]
        _check_safe(target, gone, foreign, on_foreign_commits)
        try:
            version = _commit(new_txn(current, "RESTORE", target.parameters), target, p, foreign, owner)
        except CommitConflictError:
            low, high = REPLAN_BACKOFF_S
            time.sleep(random.uniform(0, min(high, low * 2**attempt)))  # noqa: S311 - jitter, not a secret
            continue  # someone committed meanwhile: plan again against the new latest version
        return RestoreResult(version=version, committed=True, dry_run=False, **base)  # type: ignore[arg-type]
    raise ForeignCommitsError(
        f"the table kept changing during {MAX_REPLANS} restore attempts. Help: pause writers and retry",
        versions=[],
    )


def _check_safe(target: RestoreTarget, gone: list[str], foreign: list[int], policy: str) -> None:
    if gone:
        raise RestoreFilesMissingError(
            f"cannot restore version {target.version}: {len(gone)} files to re-add are missing "
            f"(vacuumed or deleted): {gone[:20]}. The table is unchanged.",
            missing=gone,
        )
    if foreign and policy == "fail":
        raise ForeignCommitsError(
            f"versions {foreign} were committed by other writers after version {target.version}; restoring "
            "would discard their changes. The table is unchanged. Help: use on_foreign_commits='force' to "
            "restore anyway.",
            versions=foreign,
        )


def _commit(txn: Transaction, target: RestoreTarget, p: _Plan, foreign: list[int], owner: str | None) -> int:
    # `txn` reads the snapshot the plan was made from: a transaction on a newer snapshot would not
    # conflict with a file added in between, and the plan would silently keep it.
    txn.read_files()  # the restore depends on the whole current state
    now = int(time.time() * 1000)
    for f in p.removes:
        txn.remove(f.remove(deletion_timestamp=now))
    for f in p.adds:
        txn.add(dataclasses.replace(f, data_change=True))
    if p.metadata is not None:
        txn.update_metadata(p.metadata)
    txn.set_app_transaction(target.app_id, target.version)
    extra: dict[str, Any] = {"discardedVersions": foreign} if foreign else {}
    if owner is not None:
        extra["tags"] = {OWNER_TAG: owner}
    return txn.commit(metrics=p.metrics, extra=extra)


@contextlib.contextmanager
def pinned(storage: Storage, target: Snapshot | None, latest: Callable[[], Snapshot]) -> Iterator[None]:
    """Hold a short-lived savepoint of `target` (None: nothing to pin), so that no vacuum deletes the
    files a restore re-adds between its existence check and its commit (engine.fence). It expires by
    itself after PIN_TTL_MS if the process dies before removing it."""
    if target is None:
        yield
        return
    name = f"restore-pin-{uuid.uuid4().hex}"
    try:
        create_savepoint(
            storage,
            target,
            name,
            created_by=ENGINE_INFO,
            reason="pins the files of a restore in progress",
            expires_at=int(time.time() * 1000) + PIN_TTL_MS,
            latest=latest,
        )
    except RestoreFilesMissingError as exc:
        raise RestoreFilesMissingError(
            f"cannot restore version {target.version}: {len(exc.missing)} of its files are missing "
            f"(vacuumed or deleted): {exc.missing[:20]}. The table is unchanged.",
            missing=exc.missing,
        ) from exc
    try:
        yield
    finally:
        delete_savepoint(storage, name)
