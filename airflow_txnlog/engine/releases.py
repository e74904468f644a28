"""Multi-table releases: several tables published, read and rolled back as one cut.

Each table's log is linear and every write is visible at once; a release log adds what a set of
tables lacks: the versions, one per table, that readers may use together. Writers commit as usual;
an audit reads the new versions; `publish({uri: version, ...})` records them as the next release;
readers that follow the release log (`Releases.current().snapshot(uri)`, `Table.snapshot(release=)`)
read every table at the release's version and so never see one table's new data with another's
old. Layout and holds: engine.maintenance.release_records.

Publish, with no lock (only put-if-absent and ordered writes on a strongly consistent store):
1. the versions are checked (each exists; none goes back from the current release: a release moves
   forward, except by a rollback record) and each table gets a hold naming its version (vacuum and
   log cleanup keep held versions from now on); the files of a version that are no longer live are
   checked to exist after running vacuums are waited for (the savepoint fence protocol);
2. the record `releases/<current + 1>.json` is created with put-if-absent. A publisher that loses the
   race reads the winner, checks its versions again against it (a table may not go back past the
   winner's) and tries the next sequence, so racing publishers get a total order and none is lost;
3. an id marker `ids/<publish id>.json` lets a retry of the same publish return the first record;
   holds of releases older than the log's rollback window are deleted.
A publisher killed anywhere leaves the old current release or the new one: the record is one object.

A record carries every table of the cut (the previous release's versions with the published ones
replaced) and each table's Delta id: a table deleted and created again under the same path is a
`ReleaseError` for publishers and readers, not a silent switch to another table's data.

Rollback (`rollback(to=sequence)`): each table whose latest state is not the target release's is
restored to its version there (the engine's restore, as a new commit; commits after the *current*
release's version are another writer's and make it refuse, unless tagged with `owner`), then a
record of kind "rollback" names the restored versions. Until it exists readers stay on the current
release; a rollback killed half-way is run again and converges (a restore that is already done commits
nothing; the record's publish id is fixed by the two sequences).
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import orjson

from airflow_txnlog._shown import shown
from airflow_txnlog.engine.errors import (
    ForeignCommitsError,
    InvalidArgumentError,
    ReleaseError,
    ReleaseNotFoundError,
    TableNotFoundError,
    VersionNotFoundError,
)
from airflow_txnlog.engine.maintenance import restore as restore_mod
from airflow_txnlog.engine.maintenance.fence import wait_for_vacuums
from airflow_txnlog.engine.maintenance.release_records import (
    LOG_FILE,
    ORPHAN_TTL_MS,
    PUBLISH,
    ROLLBACK,
    ReleaseRecord,
    current_release,
    hold_key,
    holds,
    normalize,
    read_release,
    record_key,
    sequences,
    write_hold,
)
from airflow_txnlog.engine.maintenance.savepoints import files_at_risk, missing_files
from airflow_txnlog.engine.state.snapshot import Snapshot
from airflow_txnlog.engine.storage import Storage, storage_for
from airflow_txnlog.engine.table import Table
from airflow_txnlog.engine.validate import SAFE_NAME_RE, ForeignCommitsPolicy
from airflow_txnlog.engine.write.provenance import current as current_provenance

DEFAULT_ROLLBACK_WINDOW = 5  # releases besides the current one whose versions stay (holds)
MAX_RACES = 50  # sequences a publisher tries before giving up (each lost to another publisher)
_FIND_DEPTH = 20  # newest records searched for a publish id whose marker a killed publisher never wrote
IDS_DIR = "ids"
MAX_ID = 128


@dataclass(frozen=True)
class Release(ReleaseRecord):
    """A release as `Releases` returns it: `snapshot(table_uri)` reads a table at its version."""

    table_storage_options: Mapping[str, Any] | None = None

    def snapshot(self, table_uri: str) -> Snapshot:
        """`table_uri` at its version in this release (`ReleaseError` when the table is not in it, or
        was replaced under the same path since)."""
        return release_snapshot(self, table_uri, storage_options=self.table_storage_options)


def release_snapshot(
    release: ReleaseRecord, table_uri: str, *, storage_options: Mapping[str, Any] | None = None
) -> Snapshot:
    """`table_uri`'s Snapshot at its version in `release` (see `Release.snapshot`)."""
    return Table.open(table_uri, storage_options=storage_options).snapshot(release=release)


class Releases:
    """A release log (see the module docstring). `storage_options`: the log's store;
    `table_storage_options`: the tables' (one mapping for every table of the log)."""

    def __init__(
        self, storage: Storage, header: Mapping[str, Any], table_storage_options: Mapping[str, Any] | None
    ) -> None:
        self._storage = storage
        self.id = str(header["id"])
        self.rollback_window = int(header.get("rollbackWindow", DEFAULT_ROLLBACK_WINDOW))
        self._table_options = table_storage_options

    @classmethod
    def create(
        cls,
        uri: str,
        *,
        storage_options: Mapping[str, Any] | None = None,
        table_storage_options: Mapping[str, Any] | None = None,
        rollback_window: int = DEFAULT_ROLLBACK_WINDOW,
    ) -> Releases:
        """A new release log at `uri` (`ReleaseError` when one is there already)."""
        if isinstance(rollback_window, bool) or not isinstance(rollback_window, int) or rollback_window < 0:
            raise InvalidArgumentError(
                f"rollback_window must be an integer >= 0, got {shown(rollback_window)}"
            )
        storage = storage_for(uri, storage_options)
        header = {"id": uuid.uuid4().hex, "createdAt": _now(), "rollbackWindow": rollback_window}
        try:
            storage.put_if_absent(LOG_FILE, orjson.dumps(header))
        except FileExistsError:
            raise ReleaseError(f"a release log exists at {uri!r} already. Help: Releases.open(uri)") from None
        return cls(storage, header, table_storage_options)

    @classmethod
    def open(
        cls,
        uri: str,
        *,
        storage_options: Mapping[str, Any] | None = None,
        table_storage_options: Mapping[str, Any] | None = None,
    ) -> Releases:
        """The release log at `uri` (`ReleaseNotFoundError` when there is none)."""
        storage = storage_for(uri, storage_options)
        try:
            header = orjson.loads(storage.read(LOG_FILE))
        except FileNotFoundError:
            raise ReleaseNotFoundError(
                f"no release log at {uri!r}. Help: Releases.create(uri) makes one"
            ) from None
        return cls(storage, header, table_storage_options)

    @property
    def uri(self) -> str:
        return self._storage.root

    # ------------------------------------------------------------------ reading
    def current(self) -> Release | None:
        """The current release, None before the first (one listing, one read)."""
        return self._attached(current_release(self._storage, cls=Release))

    def get(self, sequence: int) -> Release:
        """Release `sequence` (`ReleaseNotFoundError` when there is none)."""
        if isinstance(sequence, bool) or not isinstance(sequence, int) or sequence < 0:
            raise InvalidArgumentError(f"sequence must be a non-negative integer, got {shown(sequence)}")
        try:
            release = read_release(self._storage, sequence, cls=Release)
        except FileNotFoundError:
            raise ReleaseNotFoundError(f"release {sequence} does not exist in {self.uri!r}") from None
        return replace(release, table_storage_options=self._table_options)

    def history(self, limit: int | None = None) -> list[Release]:
        """The releases, newest first (`limit`: at most that many)."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise InvalidArgumentError(f"limit must be a non-negative integer or None, got {shown(limit)}")
        found = sequences(self._storage)[::-1]
        return [self.get(s) for s in (found if limit is None else found[:limit])]

    def _attached(self, release: Release | None) -> Release | None:
        return None if release is None else replace(release, table_storage_options=self._table_options)

    # ------------------------------------------------------------------ publishing
    def publish(
        self, versions: Mapping[str, int], *, note: str | None = None, publish_id: str | None = None
    ) -> Release:
        """Release `versions` ({table URI: version}) as the next cut (see the module docstring);
        the other tables of the current release keep their versions. A retry with the same
        `publish_id` returns the first record."""
        wanted, fresh = _checked_versions(versions), publish_id is None
        return self._publish(
            wanted, note=_checked_note(note), publish_id=_checked_id(publish_id), kind=PUBLISH, fresh=fresh
        )

    def _publish(
        self,
        wanted: dict[str, int],
        *,
        note: str | None,
        publish_id: str,
        kind: str,
        rollback_to: int | None = None,
        fresh: bool = False,
    ) -> Release:
        """`fresh`: the id was made here (no earlier try can have published it: no search)."""
        done = None if fresh else self._find(publish_id)
        if done is not None:
            return done
        found = {uri: self._table_at(uri, version) for uri, version in wanted.items()}
        opened = {uri: table for uri, (table, _) in found.items()}
        snaps = {uri: snap for uri, (_, snap) in found.items()}
        tables = {uri: snap.storage for uri, snap in snaps.items()}
        for storage, snap in zip(tables.values(), snaps.values(), strict=True):
            write_hold(storage, self.id, publish_id, version=snap.version, now_ms=_now(), log_uri=self.uri)
        try:
            _check_files(snaps, opened)
            record = self._append(snaps, note=note, publish_id=publish_id, kind=kind, rollback_to=rollback_to)
        except BaseException:
            if self._find(publish_id) is None:  # (no record: the holds keep nothing anyone reads)
                for storage in tables.values():
                    storage.delete(hold_key(self.id, publish_id))
            raise
        self._storage.write(f"{IDS_DIR}/{publish_id}.json", orjson.dumps({"sequence": record.sequence}))
        self._prune(record)
        return record

    def _append(
        self,
        snaps: dict[str, Snapshot],
        *,
        note: str | None,
        publish_id: str,
        kind: str,
        rollback_to: int | None,
    ) -> Release:
        """Create the next record, re-based on each winner of a lost race (module docstring, step 2)."""
        for attempt in range(MAX_RACES):
            current = self.current()
            if current is not None and current.publish_id == publish_id:
                return current  # (a retry of this publish won the race)
            if kind == PUBLISH:
                _check_forward(current, snaps)
            record = _record(current, snaps, self.id, note=note, publish_id=publish_id, kind=kind)
            record = replace(record, rollback_to=rollback_to, table_storage_options=self._table_options)
            try:
                self._storage.put_if_absent(record_key(record.sequence), orjson.dumps(record.to_json()))
            except FileExistsError:
                time.sleep(random.uniform(0, min(0.5, 0.01 * 2**attempt)))  # noqa: S311 - jitter
                continue
            return record
        raise ReleaseError(
            f"other publishers won the next release {MAX_RACES} times in a row; nothing was published. "
            "Help: publish again"
        )

    def _find(self, publish_id: str) -> Release | None:
        """The record of `publish_id`, when it was published already (its marker, else the newest records)."""
        try:
            marker = orjson.loads(self._storage.read(f"{IDS_DIR}/{publish_id}.json"))
            return self.get(int(marker["sequence"]))
        except FileNotFoundError:
            pass
        for sequence in sequences(self._storage)[::-1][:_FIND_DEPTH]:
            release = self.get(sequence)
            if release.publish_id == publish_id:
                return release
        return None

    def _table_at(self, uri: str, version: int) -> tuple[Table, Snapshot]:
        """The table, opened once for the whole publish, and its snapshot at `version`."""
        try:
            table = Table.open(uri, storage_options=self._table_options)
            return table, table.snapshot(version)
        except (TableNotFoundError, VersionNotFoundError) as exc:
            raise ReleaseError(
                f"cannot release {uri!r} at version {version}: {exc}. Nothing was published"
            ) from exc

    def _prune(self, record: Release) -> None:
        """Delete this log's holds, in the record's tables, of versions that no release in the window
        names (a version carried forward by later records keeps its hold). Order matters against
        racing publishers: the holds are listed, then a hold counts as done only when its publish
        has its marker (so its record exists) or it is an orphan older than ORPHAN_TTL_MS, and only
        then are the records read, so a newer record of a racing publisher is among them."""
        cutoff = _now() - ORPHAN_TTL_MS
        done: dict[str, dict[str, int]] = {}  # table -> {publish id: version} that may go
        for uri in record.versions:
            found = holds(storage_for(uri, self._table_options))
            done[uri] = {
                pid: version
                for (log_id, pid), (version, created) in found.items()
                if log_id == self.id and (created < cutoff or self._storage.exists(f"{IDS_DIR}/{pid}.json"))
            }
        if not any(done.values()):
            return
        newest = sequences(self._storage)[-1]
        window = [self.get(s) for s in range(max(0, newest - self.rollback_window), newest + 1)]
        for uri, candidates in done.items():
            named = {r.versions.get(uri) for r in window}
            storage = storage_for(uri, self._table_options)
            for pid, version in candidates.items():
                if version not in named:
                    storage.delete(hold_key(self.id, pid))

    # ------------------------------------------------------------------ rollback
    def rollback(
        self,
        to: int,
        *,
        on_foreign_commits: ForeignCommitsPolicy = "fail",
        owner: str | None = None,
        note: str | None = None,
    ) -> Release:
        """Restore every table to its version in release `to` and publish that as a new release of
        kind "rollback" (see the module docstring). `owner`: commits tagged {"owner": owner} after the
        current release are this caller's own; any other commit after it makes the rollback refuse
        (`ForeignCommitsError`, nothing restored) unless `on_foreign_commits="force"`."""
        restore_mod.check_options(dry_run=False, on_foreign_commits=on_foreign_commits, owner=owner)
        target, current = self.get(to), self.current()
        assert current is not None  # (`to` exists, so some release does)
        if current.kind == ROLLBACK and current.rollback_to == to:
            return current  # (run again after it finished)
        released = current.versions
        for uri, version in target.versions.items():  # (all checked before any table is restored)
            self._restore(uri, version, released.get(uri), on_foreign_commits, owner, dry_run=True)
        restored = {
            uri: self._restore(uri, version, released.get(uri), on_foreign_commits, owner, dry_run=False)
            for uri, version in target.versions.items()
        }
        pid = f"rollback-{to}-from-{current.sequence}"
        return self._publish(
            restored, note=_checked_note(note), publish_id=pid, kind=ROLLBACK, rollback_to=to
        )

    def _restore(
        self,
        uri: str,
        version: int,
        released: int | None,
        policy: ForeignCommitsPolicy,
        owner: str | None,
        *,
        dry_run: bool,
    ) -> int:
        """Restore `uri` to `version` (commits after `released` are foreign); the version holding it.
        A refusal names the table and the release version the foreign commits came after."""
        table = Table.open(uri, storage_options=self._table_options)
        target, snap = restore_mod.version_target(
            table.snapshot, table.storage, version=version, timestamp=None
        )
        after = version if released is None else released
        try:
            with restore_mod.pinned(table, None if dry_run else snap):
                result = restore_mod.restore(
                    table, target, dry_run=dry_run, on_foreign_commits=policy, owner=owner,
                    foreign_after=after,
                )  # fmt: skip
            if dry_run and result.version is None:  # (None: it would commit; a restored table need not)
                restore_mod.check_safe(target, result.missing_files, result.foreign_versions, policy)
        except ForeignCommitsError as exc:
            state = (
                "Nothing was restored"
                if dry_run
                else "The tables restored before it stay restored: run the rollback again once settled"
            )
            raise ForeignCommitsError(
                f"cannot roll back {uri!r} to version {version}: versions {exc.versions} were committed "
                f"by other writers after its version {after} in the current release, and rolling back "
                f"would discard them. {state}. "
                "Help: if those commits are yours, pass owner=<their owner tag>; "
                "on_foreign_commits='force' discards them",
                versions=exc.versions,
            ) from None
        if dry_run:
            return version
        assert result.version is not None
        return result.version


def _checked_versions(versions: object) -> dict[str, int]:
    if not isinstance(versions, Mapping) or not versions:
        raise InvalidArgumentError(
            f"versions must be a non-empty mapping of table URI to version, got {shown(versions)}"
        )
    out: dict[str, int] = {}
    for uri, version in versions.items():
        if not isinstance(uri, str) or not uri.strip():
            raise InvalidArgumentError(f"a table URI must be a non-empty string, got {shown(uri)}")
        if isinstance(version, bool) or not isinstance(version, int) or version < 0:
            raise InvalidArgumentError(
                f"the version of {uri!r} must be a non-negative integer, got {shown(version)}"
            )
        key = normalize(uri)
        if key in out:
            raise InvalidArgumentError(f"{uri!r} is named twice in versions")
        out[key] = version
    return out


def _checked_note(note: object) -> str | None:
    if note is not None and not isinstance(note, str):
        raise InvalidArgumentError(f"note must be a string or None, got {shown(note)}")
    return note


def _checked_id(publish_id: object) -> str:
    if publish_id is None:
        return uuid.uuid4().hex
    if not isinstance(publish_id, str) or not SAFE_NAME_RE.match(publish_id) or ".." in publish_id:
        raise InvalidArgumentError(
            f"publish_id must be letters, digits, '_', '-' or '.' (at most {MAX_ID}, a letter or digit "
            f"first), got {shown(publish_id)}"
        )
    return publish_id


def _check_forward(current: ReleaseRecord | None, snaps: Mapping[str, Snapshot]) -> None:
    """ReleaseError when a table would go back from `current`, or is another table than it names."""
    if current is None:
        return
    for uri, snap in snaps.items():
        if uri not in current.versions:
            continue
        if current.table_ids.get(uri) != snap.metadata.id:
            raise ReleaseError(
                f"{uri!r} is another table than release {current.sequence} names (table id "
                f"{snap.metadata.id}, not {current.table_ids.get(uri)}): it was replaced under the same "
                "path. Nothing was published. Help: release it under a new URI, or start a new release log"
            )
        if snap.version < current.versions[uri]:
            raise ReleaseError(
                f"cannot release {uri!r} at version {snap.version}: release {current.sequence} has "
                f"version {current.versions[uri]} and a release never moves a table back (readers may have "
                "read it). Nothing was published. Help: roll back (Releases.rollback), or publish a newer "
                "version"
            )


def _record(
    current: ReleaseRecord | None,
    snaps: Mapping[str, Snapshot],
    log_id: str,
    *,
    note: str | None,
    publish_id: str,
    kind: str,
) -> Release:
    versions = dict(current.versions) if current is not None else {}
    ids = dict(current.table_ids) if current is not None else {}
    versions.update({uri: snap.version for uri, snap in snaps.items()})
    ids.update({uri: snap.metadata.id for uri, snap in snaps.items()})
    prov = current_provenance()
    return Release(
        sequence=0 if current is None else current.sequence + 1, versions=versions, table_ids=ids,
        publish_id=publish_id, kind=kind, note=note, published_at=_now(),
        published_by=None if prov is None else prov.job(), log_id=log_id,
    )  # fmt: skip


def _check_files(snaps: Mapping[str, Snapshot], tables: Mapping[str, Table]) -> None:
    """ReleaseError when a released version's files that are no longer live are gone, checked again
    after any running vacuum finished (it may have planned before the hold existed). The latest
    snapshot is the publish's own table refreshed after the hold (a listing, no second load)."""
    for uri, snap in snaps.items():
        latest = tables[uri].snapshot()
        at_risk = files_at_risk(snap, latest)
        if not at_risk:
            continue
        wait_for_vacuums(snap.storage)
        gone = missing_files(snap.storage, at_risk)
        if gone:
            raise ReleaseError(
                f"cannot release {uri!r} at version {snap.version}: {len(gone)} of its files are gone "
                f"(vacuumed): {gone[:10]}. Nothing was published. Help: release a newer version"
            )


def _now() -> int:
    return int(time.time() * 1000)
