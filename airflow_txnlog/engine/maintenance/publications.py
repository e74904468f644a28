"""Publications: a named pointer to the newest version readers may trust (write-audit-publish).

Iceberg's write-audit-publish stages a snapshot on a branch and fast-forwards `main` once the audit
passed. Delta has one linear log and no branches: every write is visible as the latest version at once,
audited or not. A *publication channel* adds what the log lacks: the newest version an audit approved.
Writers commit as usual; an audit reads the new version; a publish step records it on the channel;
readers, sensors and asset watchers that follow the channel never see a version nobody approved. A
failed audit publishes nothing (and `restore` puts the table back), so the channel never names it.

Layout, under `<table>/_published/<channel>/` (readers and other engines' vacuum skip `_` folders):
    <version:020d>.json    one record per publication, created with put_if_absent, never rewritten

The channel's current version is the greatest version with a record, so a channel only moves forward:
publishing a version older than the current one is refused (readers may already have read the newer
one; to go back, restore the old version and publish the restore's commit). Two publishers racing
each create their own record and the higher version wins whatever the order -- no compare-and-swap
is needed, which is why the records are one file per version rather than one file rewritten.
Re-publishing the current version returns its record (idempotent task retries). Records more than
`KEEP_RECORDS` behind the current one are deleted by `publish`, so a poll lists a short folder.

What the destructive operations keep (the reason a channel is more than a note in a file):
- vacuum keeps every file live at each channel's current version (`published_keys`);
- log cleanup keeps the checkpoint and commits needed to load each channel's current version
  (`protected_versions` caps the checkpoint it may clean below).
A publish first writes a pending marker `_published/_pending/<channel>.<version>.<uuid>.json`, which
both honour like a publication (markers older than PENDING_TTL_MS were left by a dead publisher and
hold nothing). Then it takes the version's files that are not live in the latest snapshot (only those
can be vacuumed), waits for running vacuums (`engine.maintenance.fence`: one that planned before the
marker may still delete them) and checks them; only then does the record appear, and the marker goes. So a
reader never sees a record whose files a vacuum may take, and a publish that fails or is killed
half-way leaves no record (a missing file means nothing is published).
"""

from __future__ import annotations

import re
import time
import uuid

import orjson

from airflow_txnlog._shown import shown
from airflow_txnlog.engine.errors import InvalidArgumentError, NotPublishedError, PublicationError
from airflow_txnlog.engine.features.deletion_vectors import dv_file_paths
from airflow_txnlog.engine.maintenance.fence import DEFAULT_WAIT_S, wait_for_vacuums
from airflow_txnlog.engine.maintenance.maintenance_table import MaintenanceTable
from airflow_txnlog.engine.maintenance.publication_records import (
    DEFAULT_CHANNEL,
    PUBLISH_DIR,
    Publication,
    current_publication,
    published_version_list,
    read_publication,
    record_key,
    validate_channel,
)
from airflow_txnlog.engine.maintenance.release_records import held_versions
from airflow_txnlog.engine.maintenance.savepoints import files_at_risk, missing_files
from airflow_txnlog.engine.state.snapshot import Snapshot, load_snapshot
from airflow_txnlog.engine.storage import Storage
from airflow_txnlog.engine.validate import SAFE_NAME_RE
from airflow_txnlog.engine.write.provenance import current as current_provenance

__all__ = [  # the record layer's names, re-exported: callers of publishing need them too
    "DEFAULT_CHANNEL",
    "PUBLISH_DIR",
    "Publication",
    "current_publication",
    "published_version_list",
    "read_publication",
    "validate_channel",
]
KEEP_RECORDS = 20
PENDING_DIR = f"{PUBLISH_DIR}/_pending"  # `_`: never a channel name (SAFE_NAME_RE)
PENDING_TTL_MS = 2 * 3_600_000  # far longer than a publish (its fence wait is at most 10 minutes)
_PENDING_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*\.(\d{20})\.[0-9a-f]{32}\.json$")


def published_versions(storage: Storage) -> dict[str, int]:
    """The current version of every channel of the table (for vacuum and log cleanup)."""
    try:
        entries = storage.fs.ls(storage.full_path(PUBLISH_DIR), detail=True)
    except (FileNotFoundError, NotADirectoryError):
        return {}
    out: dict[str, int] = {}
    for entry in entries:
        name = str(entry["name"]).rstrip("/").rsplit("/", 1)[-1]
        if entry.get("type") == "directory" and SAFE_NAME_RE.match(name):
            versions = published_version_list(storage, name)
            if versions:
                out[name] = versions[-1]
    return out


def pending_versions(storage: Storage, *, now_ms: int | None = None) -> set[int]:
    """Versions held by publishes in progress (markers younger than PENDING_TTL_MS; older ones
    were left by a publisher that died, and hold nothing)."""
    try:
        files = storage.list_dir(PENDING_DIR)
    except (FileNotFoundError, NotADirectoryError):
        return set()
    cutoff = (int(time.time() * 1000) if now_ms is None else now_ms) - PENDING_TTL_MS
    found = (_PENDING_RE.match(f.name) for f in files if f.mtime_ms >= cutoff)
    return {int(m.group(1)) for m in found if m}


def protected_versions(storage: Storage) -> set[int]:
    """Every version readers of a channel or a release may load: each channel's current version,
    the versions of publishes in progress, and the versions release logs hold in the table
    (engine.maintenance.release_records). Vacuum keeps their files; log cleanup keeps their log."""
    return set(published_versions(storage).values()) | pending_versions(storage) | held_versions(storage)


def published_keys(storage: Storage, latest: Snapshot) -> set[str]:
    """Decoded keys of every file live at a protected version (vacuum keeps them)."""
    keep: set[str] = set()
    for version in sorted(protected_versions(storage)):
        if version == latest.version:
            continue  # its files are the latest snapshot's, which vacuum keeps anyway
        try:
            snap = load_snapshot(storage, version)
        except Exception as exc:
            raise PublicationError(
                f"cannot load version {version}, published (or being published) on a channel or held by "
                f"a release, to keep "
                f"its files: {exc}. Nothing was deleted. Help: publish a newer version on that channel"
            ) from exc
        keep.update(snap.file_paths())
        keep.update(dv_file_paths(snap.state.deletion_vectors()))
    return keep


def publish(
    table: MaintenanceTable, version: int | None, *, channel: str, fence_wait_s: float = DEFAULT_WAIT_S
) -> Publication:
    """Record `version` (None: the latest) as the channel's current version; see the module docstring."""
    validate_channel(channel)
    storage = table.storage
    latest = table.snapshot()
    if version is None:
        version = latest.version
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise InvalidArgumentError(f"version must be a non-negative integer, got {shown(version)}")
    if version > latest.version:
        raise InvalidArgumentError(
            f"cannot publish version {version}: the table's latest version is {latest.version}"
        )
    current = current_publication(storage, channel)
    if current is not None and current.version == version:
        return current
    if current is not None and current.version > version:
        raise PublicationError(
            f"cannot publish version {version} on channel {channel!r}: version {current.version} is "
            "already published and a channel never moves back (readers may have read it). Help: restore "
            f"the table to version {version} and publish the restore's version"
        )
    snap = latest if version == latest.version else load_snapshot(storage, version)
    marker = _hold(storage, channel, version)  # from here on vacuum and log cleanup keep the version
    try:
        # Against the latest snapshot read after the hold: a file it has live is kept by any vacuum.
        at_risk = files_at_risk(snap, table.snapshot())
        _require_files(storage, snap, at_risk, "are missing")
        if at_risk:  # a vacuum that planned before the hold may still delete them: let it finish
            wait_for_vacuums(storage, timeout_s=fence_wait_s)
            _require_files(storage, snap, at_risk, "were deleted by a concurrent vacuum")
        pub = _create_record(storage, snap, channel, current)
    finally:
        storage.delete(marker)
    _prune(storage, channel, version)
    return pub


def _hold(storage: Storage, channel: str, version: int) -> str:
    """Write a pending marker that vacuum and log cleanup honour like a publication (see
    `protected_versions`); the caller deletes it once the record exists or the publish failed."""
    key = f"{PENDING_DIR}/{channel}.{version:020d}.{uuid.uuid4().hex}.json"
    storage.write(key, orjson.dumps({"channel": channel, "version": version}))
    return key


def _require_files(storage: Storage, snap: Snapshot, paths: list[str], what: str) -> None:
    gone = missing_files(storage, paths)
    if gone:
        raise PublicationError(
            f"cannot publish version {snap.version}: {len(gone)} of its files {what}: {gone[:10]}. "
            "Nothing was published. Help: publish a newer version"
        )


def _create_record(
    storage: Storage, snap: Snapshot, channel: str, current: Publication | None
) -> Publication:
    prov = current_provenance()
    pub = Publication(
        channel=channel,
        version=snap.version,
        table_id=snap.metadata.id,
        commit_timestamp=snap.timestamp,
        published_at=int(time.time() * 1000),
        previous_version=None if current is None else current.version,
        published_by=None if prov is None else prov.job(),
    )
    try:
        storage.put_if_absent(record_key(channel, snap.version), orjson.dumps(pub.to_json()))
    except FileExistsError:
        return read_publication(storage, channel, snap.version)  # a concurrent retry published it
    return pub


def _prune(storage: Storage, channel: str, current: int) -> None:
    """Delete the records more than KEEP_RECORDS behind the current one (never the current one)."""
    versions = [v for v in published_version_list(storage, channel) if v < current]
    for old in versions[: max(0, len(versions) - KEEP_RECORDS)]:
        storage.delete(record_key(channel, old))


def require_publication(storage: Storage, channel: str) -> Publication:
    """The channel's current publication, or `NotPublishedError` saying what to do."""
    pub = current_publication(storage, channel)
    if pub is None:
        raise NotPublishedError(
            f"nothing is published on channel {channel!r} of {storage.root!r}. Help: publish an audited "
            "version (Table.publish(version), TxnLogPublishOperator, `txnlog publish`), or read the "
            "latest version instead"
        )
    return pub
