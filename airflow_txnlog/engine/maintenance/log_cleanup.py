"""Log cleanup: delete old commits and checkpoints that no reader needs any more.

Rule (Delta's metadata cleanup): with cutoff = now - `delta.logRetentionDuration` (30 days), find the
newest complete checkpoint C whose commit is at or before the cutoff; delete every commit, checkpoint,
`.crc` file and log compaction (`x.y.compacted.json`, y < C) of a version below C (all of them
older than the cutoff, since commit times increase).
Versions >= C stay reconstructable from C. Files are deleted oldest first, so a crash midway leaves a
contiguous log.

checkpointProtection (Delta 4's DROP FEATURE, engine.features.checkpoint_protection): with V =
`delta.requireCheckpointProtectionBeforeVersion`, nothing is deleted until C >= V, so that all
history below V goes in one cleanup, and then commits, checksums and compactions go before the
checkpoints (a crash midway leaves every checkpoint, as the feature requires).

Cleanup refuses (`UnsupportedFeatureError`) a table with a writer feature this engine's checkpoints
cannot carry (`engine.features.table_features.require_checkpoint_supported`): the checkpoint it
would keep might be a lossy one, and deleting the commits below it would make the loss permanent.

Publications hold it back: a reader following a channel (engine.maintenance.publications) loads the channel's
current version from the log, so C is also at most the oldest channel's current version.

Savepoints do not hold the log back: each savepoint's manifest holds the full state of its version,
so a restore needs only the manifest and the data files (which vacuum keeps). This avoids Hudi's
problem of a timeline that grows without bound behind an old savepoint.

Sidecars: a v2 checkpoint's file actions may live in `_delta_log/_sidecars/`; once no remaining
checkpoint names a sidecar and it is older than the log retention, it is deleted too (`sidecar_files`).
Whatever the retention asked for, an unnamed sidecar younger than `SIDECAR_GRACE_MS` (a day) stays:
a checkpoint being written puts its sidecars in place before the main file that names them, and
PROTOCOL.md's metadata cleanup keeps sidecars less than a day old "to not break in-progress
checkpoints".

Temp files: the local backend writes each commit/checkpoint to `_delta_log/.tmp/` before linking it
into place; a writer killed in between leaves its temp file behind. Cleanup deletes temp files older
than `TEMP_MAX_AGE_MS` (1 hour: a live write holds its temp file for milliseconds, and a temp file is
never the commit itself, so deleting a stale one cannot lose data). They are listed in `temp_files`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from airflow_txnlog.engine.errors import RetentionTooShortError
from airflow_txnlog.engine.features import iceberg_compat
from airflow_txnlog.engine.features.checkpoint_protection import (
    cleanup_allowed,
    deletion_waves,
    protected_before,
)
from airflow_txnlog.engine.features.table_features import require_checkpoint_supported
from airflow_txnlog.engine.log import checkpoint_v2
from airflow_txnlog.engine.log.log_paths import parse_name
from airflow_txnlog.engine.log.log_segment import LogListing, monotonic_timestamps
from airflow_txnlog.engine.maintenance.maintenance_table import MaintenanceTable
from airflow_txnlog.engine.maintenance.publications import protected_versions
from airflow_txnlog.engine.state.snapshot import Snapshot
from airflow_txnlog.engine.storage import LOG_DIR, ListedFile, Storage
from airflow_txnlog.engine.validate import flag, number

TEMP_DIR = f"{LOG_DIR}/.tmp"
TEMP_MAX_AGE_MS = 3_600_000
SIDECARS = f"{LOG_DIR}/{checkpoint_v2.SIDECAR_DIR}"


@dataclass(frozen=True)
class CleanupResult:
    files: list[str]  # names inside _delta_log/
    dry_run: bool
    checkpoint_version: int | None  # the checkpoint everything below was removed for
    oldest_version_kept: int | None
    temp_files: list[str] = field(default_factory=list)  # stale names inside _delta_log/.tmp/
    sidecar_files: list[str] = field(default_factory=list)  # names inside _delta_log/_sidecars/
    iceberg_files: list[str] = field(default_factory=list)  # names inside metadata/ (UniForm)


def cleanup_log(
    table: MaintenanceTable,
    *,
    retention_hours: float | None,
    dry_run: bool,
    enforce_retention: bool = False,
    listed: Sequence[ListedFile] | None = None,
    snap: Snapshot | None = None,
) -> CleanupResult:
    """Delete (or with `dry_run`, list) what the module docstring says, as of the latest snapshot;
    `enforce_retention` refuses a retention below the table's `delta.logRetentionDuration` (what a
    planned cleanup uses: a plan never shortens it). `listed`: the log's listing, taken after that
    snapshot (the planner's: one listing per plan), instead of listing it here; `snap`: that snapshot
    (the planner's), instead of refreshing the table's."""
    number("retention_hours", retention_hours, minimum=0, none_means="the table's log retention")
    flag("dry_run", dry_run)
    flag("enforce_retention", enforce_retention)
    storage = table.storage
    snap = table.snapshot() if snap is None else snap
    require_checkpoint_supported(snap.protocol, "clean up the log")
    # one listing: it classifies the versions and names what to delete
    files = storage.list_log() if listed is None else list(listed)
    keep_ms = _retention_ms(snap, retention_hours, enforce_retention)
    result = _cleanup_versions(storage, snap, files, keep_ms=keep_ms, dry_run=dry_run)
    gone = set(result.files)
    kept = [f.name for f in files if f.name not in gone]
    return dataclasses.replace(
        result,
        temp_files=_cleanup_temp(storage, dry_run=dry_run),
        sidecar_files=_cleanup_sidecars(storage, kept, keep_ms=keep_ms, dry_run=dry_run),
        iceberg_files=_cleanup_iceberg(storage, snap, keep_ms=keep_ms, dry_run=dry_run),
    )


SIDECAR_GRACE_MS = 86_400_000  # an unnamed sidecar is kept this long at least (a checkpoint under way)
ICEBERG_GRACE_MS = 3_600_000  # an Iceberg file no metadata names is kept this long (a sync under way)


def _cleanup_iceberg(storage: Storage, snap: Snapshot, *, keep_ms: int, dry_run: bool) -> list[str]:
    """UniForm's Iceberg files the newest Iceberg metadata no longer needs (engine.uniform): its
    expired snapshots' manifest lists and manifests, metadata files past its metadata log."""
    if not iceberg_compat.uniform_iceberg(snap.metadata.configuration):
        return []
    from airflow_txnlog.engine.uniform import iceberg_expiry  # noqa: PLC0415 (pyiceberg: UniForm only)

    cutoff = int(time.time() * 1000) - min(keep_ms, ICEBERG_GRACE_MS)
    return iceberg_expiry.expired_files(storage, older_than_ms=cutoff, dry_run=dry_run)


def _retention_ms(snap: Snapshot, retention_hours: float | None, enforce: bool) -> int:
    table_ms = snap.table_properties.log_retention_ms
    if retention_hours is None:
        return table_ms
    wanted = round(retention_hours * 3_600_000)
    if enforce and wanted < table_ms:
        raise RetentionTooShortError(
            f"a log retention of {retention_hours:g} hours is below the table's ({table_ms / 3_600_000:g} "
            "hours, delta.logRetentionDuration): time travel to versions the table keeps would end. "
            "Help: use the table's retention, or lower the property."
        )
    return wanted


def _cleanup_sidecars(storage: Storage, kept: list[str], *, keep_ms: int, dry_run: bool) -> list[str]:
    """Sidecars (v2 checkpoints' file actions) no remaining checkpoint names, older than the log
    retention and than `SIDECAR_GRACE_MS`: a checkpoint being written has its sidecars before its
    main file, and they are new."""
    try:
        sidecars = storage.list_dir(SIDECARS)
    except (FileNotFoundError, NotADirectoryError):
        return []
    named: set[str] = set()
    for name in kept:  # the log files that stay: their v2 checkpoints name the sidecars to keep
        if checkpoint_v2.is_v2_name(name):
            named.update(p.rsplit("/", 1)[-1] for p in checkpoint_v2.plan(storage, name)[0][1:])
    cutoff = int(time.time() * 1000) - max(keep_ms, SIDECAR_GRACE_MS)
    stale = [f.name for f in sidecars if f.name not in named and f.mtime_ms < cutoff]
    if not dry_run:
        storage.delete_many([f"{SIDECARS}/{name}" for name in stale])
    return stale


def _cleanup_temp(storage: Storage, *, dry_run: bool) -> list[str]:
    try:
        temps = storage.list_dir(TEMP_DIR)
    except (FileNotFoundError, NotADirectoryError):
        return []
    cutoff = int(time.time() * 1000) - TEMP_MAX_AGE_MS
    stale = [f.name for f in temps if f.mtime_ms < cutoff]
    if not dry_run:
        storage.delete_many([f"{TEMP_DIR}/{name}" for name in stale])
    return stale


def _cleanup_versions(
    storage: Storage, snap: Snapshot, files: list[ListedFile], *, keep_ms: int, dry_run: bool
) -> CleanupResult:
    cutoff = int(time.time() * 1000) - keep_ms
    listing = LogListing.build(files, complete=True)
    stamps = monotonic_timestamps(listing.commits)
    old_enough = [v for v in listing.checkpoints if v in stamps and stamps[v] <= cutoff]
    cp = _newest_at_or_below(old_enough, min([snap.version, *protected_versions(storage)]))
    protected = protected_before(snap.protocol, snap.metadata)
    if cp is None or not cleanup_allowed(protected, cp):  # (checkpointProtection: all below V or nothing)
        return CleanupResult([], dry_run, None, min(listing.commits, default=None))
    marked: list[tuple[int, str, bool]] = []
    for f in files:
        parsed = parse_name(f.name)  # a log compaction's version is its last one
        if parsed is not None and parsed.version < cp:
            marked.append((parsed.version, f.name, parsed.kind in ("checkpoint", "v2checkpoint")))
    waves = deletion_waves(protected, marked)
    # A publish of an old version may have started since: its marker holds the log back too.
    again = _newest_at_or_below(old_enough, min([snap.version, *protected_versions(storage)]))
    if again != cp:
        waves = [[(v, n) for v, n in wave if again is not None and v < again] for wave in waves]
        cp = again
    if cp is None or not cleanup_allowed(protected, cp):
        return CleanupResult([], dry_run, None, min(listing.commits, default=None))
    for wave in [] if dry_run else waves:  # (oldest first, batch by batch; checkpoints last if protected)
        storage.delete_many([f"{LOG_DIR}/{name}" for _, name in wave])
    return CleanupResult([n for wave in waves for _, n in wave], dry_run, cp, cp)


def _newest_at_or_below(checkpoints: list[int], ceiling: int) -> int | None:
    """The newest checkpoint version at or below `ceiling` (None: none is)."""
    return max((v for v in checkpoints if v <= ceiling), default=None)
