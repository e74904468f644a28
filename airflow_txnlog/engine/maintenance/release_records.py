"""Release records: the on-disk layout of a release log and of the holds it keeps in each table.

Light on purpose (orjson + the storage layer, no pyarrow), as publication records are: sensors and
triggers poll a release log with these functions. What a release means, publishing and rolling
back, are in `engine.releases`.

A release log lives at a location of its own (any store the engine supports):
    release_log.json              {"id": ..., "createdAt": ...}, created once with put_if_absent
    releases/<sequence:020d>.json one record per release, created with put_if_absent, never rewritten
The current release is the greatest sequence with a record; sequences start at 0 and have no gaps
(a publisher writes current + 1 and, on losing that race, reads the winner and tries the next).

A record names the whole cut, every table the log releases: `versions` {table URI: version} (the
previous release's with the published tables replaced), `tableIds` {table URI: Delta table id},
`kind` "publish" or "rollback" (`rollbackTo`: the sequence whose versions it restored), the
publisher's `publishId` (a retry with the same id returns the first record), `note`, `publishedAt`
and `publishedBy` (DAG / task / run inside Airflow: engine.write.provenance).

Holds, in each released table, under `<table>/_releases/<log id>/<publish id>.json` ({"version",
"createdAt", "log": the release log's URI, so a table tells which logs release it}): a publisher
writes them *before* its record, so a record never names a version that no hold keeps; vacuum and
log cleanup keep every held version (`held_versions`, honoured through
`publications.protected_versions`). Holds of records that fell out of the log's rollback window are
deleted by later publishes; a hold whose record never appeared (its publisher died) is deleted once
it is older than ORPHAN_TTL_MS, so it may keep files longer than needed, never shorter.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson

from airflow_txnlog.engine.errors import (
    InvalidArgumentError,
    LogCorruptedError,
    ReleaseError,
    VersionNotFoundError,
)
from airflow_txnlog.engine.storage import Storage

LOG_FILE = "release_log.json"
RECORDS_DIR = "releases"
HOLDS_DIR = "_releases"  # in each table: `_` keeps it out of other engines' vacuum, as `_delta_log/`
PUBLISH = "publish"
ROLLBACK = "rollback"
ORPHAN_TTL_MS = 2 * 3_600_000  # far longer than a publish takes (its vacuum fence wait is at most 10 min)
_RECORD_RE = re.compile(r"^(\d{20})\.json$")
_HOLD_RE = re.compile(r"^([A-Za-z0-9_.:\-]+)\.json$")
R = TypeVar("R", bound="ReleaseRecord")


@dataclass(frozen=True)
class ReleaseRecord:
    """One release: every table of the log at one version (times in ms since the epoch). The public
    `engine.Release` adds `snapshot(table_uri)`."""

    sequence: int
    versions: dict[str, int]
    table_ids: dict[str, str]
    publish_id: str
    kind: str = PUBLISH
    rollback_to: int | None = None
    note: str | None = None
    published_at: int = 0
    published_by: dict[str, str] | None = None
    log_id: str = ""

    def version_of(self, table_uri: str) -> int:
        """`table_uri`'s version in this release (KeyError naming the tables when it has none)."""
        key = normalize(table_uri)
        for uri, version in self.versions.items():
            if normalize(uri) == key:
                return version
        raise KeyError(
            f"{table_uri!r} is not in release {self.sequence} (its tables: {sorted(self.versions)})"
        )

    def table_id_of(self, table_uri: str) -> str:
        key = normalize(table_uri)
        return next(i for uri, i in self.table_ids.items() if normalize(uri) == key)

    def to_json(self) -> dict[str, Any]:
        return {
            "sequence": self.sequence,
            "versions": self.versions,
            "tableIds": self.table_ids,
            "publishId": self.publish_id,
            "kind": self.kind,
            "rollbackTo": self.rollback_to,
            "note": self.note,
            "publishedAt": self.published_at,
            "publishedBy": self.published_by,
            "logId": self.log_id,
        }

    @classmethod
    def from_json(cls: type[R], d: Mapping[str, Any]) -> R:
        back = d.get("rollbackTo")
        return cls(
            sequence=int(d["sequence"]),
            versions={str(k): int(v) for k, v in dict(d["versions"]).items()},
            table_ids={str(k): str(v) for k, v in dict(d["tableIds"]).items()},
            publish_id=str(d["publishId"]),
            kind=str(d.get("kind") or PUBLISH),
            rollback_to=None if back is None else int(back),
            note=None if d.get("note") is None else str(d["note"]),
            published_at=int(d.get("publishedAt") or 0),
            published_by=d.get("publishedBy"),
            log_id=str(d.get("logId") or ""),
        )


def normalize(uri: str) -> str:
    """A table URI as releases name and compare them: no trailing slash, `file://` paths as plain
    paths, a local path absolute (as the engine's storage names a table: `Table.uri`)."""
    text = uri.strip().rstrip("/") or uri
    if text.startswith("file:///"):
        text = text[len("file://") :]
    return text if "://" in text else os.path.abspath(text)


def record_key(sequence: int) -> str:
    return f"{RECORDS_DIR}/{sequence:020d}.json"


def sequences(storage: Storage, *, after: int = -1) -> list[int]:
    """Sequences with a record newer than `after`, oldest first (one listing, no reads)."""
    try:
        start = f"{after:020d}.json" if after >= 0 else None
        files = storage.list_dir(RECORDS_DIR, start_after=start)
    except (FileNotFoundError, NotADirectoryError):
        return []
    found = (_RECORD_RE.match(f.name) for f in files)
    return sorted(s for s in (int(m.group(1)) for m in found if m) if s > after)


def read_release(storage: Storage, sequence: int, *, cls: type[R] = ReleaseRecord) -> R:  # type: ignore[assignment]
    """Record `sequence` (FileNotFoundError when there is none; LogCorruptedError when unreadable)."""
    key = record_key(sequence)
    data = storage.read(key)
    try:
        release = cls.from_json(orjson.loads(data))
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise LogCorruptedError(f"release record {storage.root}/{key} is unreadable ({exc})") from exc
    if release.sequence != sequence:
        raise LogCorruptedError(f"release record {storage.root}/{key} says it is release {release.sequence}")
    return release


def current_release(storage: Storage, *, cls: type[R] = ReleaseRecord) -> R | None:  # type: ignore[assignment]
    """The log's current release (its greatest sequence), None before the first."""
    found = sequences(storage)
    return read_release(storage, found[-1], cls=cls) if found else None


def released_snapshot(
    release: object, table_uri: str, snapshot_of: Callable[[int], Any], latest: Callable[[], Any]
) -> Any:
    """The snapshot (`snapshot_of(version)`) of `table_uri` at its version in `release`;
    ReleaseError when the table is not in it, or is another table than the release names (replaced
    under the same path: `latest()` tells when that version does not exist in the new one)."""
    if not isinstance(release, ReleaseRecord):
        raise InvalidArgumentError(f"release must be a Release (from Releases), got {release!r}")
    try:
        version, table_id = release.version_of(table_uri), release.table_id_of(table_uri)
    except KeyError as exc:
        raise ReleaseError(str(exc.args[0])) from None
    try:
        snap = snapshot_of(version)
    except VersionNotFoundError:
        snap = latest()
        if snap.metadata.id == table_id:
            raise
    if snap.metadata.id != table_id:
        raise ReleaseError(
            f"{table_uri!r} is another table than release {release.sequence} names (table id "
            f"{snap.metadata.id}, not {table_id}): it was replaced under the same path"
        )
    return snap


def hold_key(log_id: str, publish_id: str) -> str:
    return f"{HOLDS_DIR}/{log_id}/{publish_id}.json"


def write_hold(
    table: Storage, log_id: str, publish_id: str, *, version: int, now_ms: int, log_uri: str
) -> None:
    body = {"version": version, "createdAt": now_ms, "log": log_uri}
    table.write(hold_key(log_id, publish_id), orjson.dumps(body))


def holds(table: Storage) -> dict[tuple[str, str], tuple[int, int]]:
    """(log id, publish id) -> (version, createdAt) of every release hold in the table."""
    out: dict[tuple[str, str], tuple[int, int]] = {}
    try:
        logs = [
            f for f in table.fs.ls(table.full_path(HOLDS_DIR), detail=True) if f.get("type") == "directory"
        ]
    except (FileNotFoundError, NotADirectoryError):
        return out
    for entry in logs:
        log_id = str(entry["name"]).rstrip("/").rsplit("/", 1)[-1]
        for f in _hold_files(table, log_id):
            match = _HOLD_RE.match(f.name)
            if not match:
                continue
            try:
                body = orjson.loads(table.read(f"{HOLDS_DIR}/{log_id}/{f.name}"))
                out[(log_id, match.group(1))] = (int(body["version"]), int(body.get("createdAt") or 0))
            except FileNotFoundError:
                continue  # (pruned between the listing and the read)
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                raise LogCorruptedError(
                    f"release hold {table.root}/{HOLDS_DIR}/{log_id}/{f.name} is unreadable ({exc}); "
                    "nothing was deleted. Help: delete it once no release of that log names the table"
                ) from exc
    return out


def _hold_files(table: Storage, log_id: str) -> list[Any]:
    """The files of a log's hold folder; none when the folder went away since the outer listing (its
    last hold pruned meanwhile: an object store has no empty folders)."""
    try:
        return table.list_dir(f"{HOLDS_DIR}/{log_id}")
    except (FileNotFoundError, NotADirectoryError):
        return []


def release_logs(table: Storage) -> dict[str, str]:
    """{log id: log URI} of the release logs holding a version of this table (the Tables view)."""
    out: dict[str, str] = {}
    try:
        entries = table.fs.ls(table.full_path(HOLDS_DIR), detail=True)
    except (FileNotFoundError, NotADirectoryError):
        return out
    for entry in (e for e in entries if e.get("type") == "directory"):
        log_id = str(entry["name"]).rstrip("/").rsplit("/", 1)[-1]
        for f in _hold_files(table, log_id):
            try:
                uri = orjson.loads(table.read(f"{HOLDS_DIR}/{log_id}/{f.name}")).get("log")
            except (FileNotFoundError, orjson.JSONDecodeError, AttributeError):
                continue
            if isinstance(uri, str):
                out[log_id] = uri
                break
    return out


def held_versions(table: Storage) -> set[int]:
    """Every version a release log holds in this table (vacuum and log cleanup keep them)."""
    return {version for version, _ in holds(table).values()}
