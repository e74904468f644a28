"""Publication records: the on-disk layout of publication channels, and reading them.

Light on purpose (orjson + the storage layer, no pyarrow): the Airflow triggers and sensors poll
channels with these functions, and a triggerer must not load pyarrow on its event loop. What a
channel means, and publishing, are in `engine.maintenance.publications`.

Layout, under `<table>/_published/<channel>/`: `<version:020d>.json`, one record per publication,
created with put_if_absent and never rewritten; the channel's current version is the greatest
version with a record.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

from airflow_txnlog.engine.errors import LogCorruptedError
from airflow_txnlog.engine.storage import Storage
from airflow_txnlog.engine.validate import safe_name

PUBLISH_DIR = "_published"
DEFAULT_CHANNEL = "published"
_RECORD_RE = re.compile(r"^(\d{20})\.json$")


@dataclass(frozen=True)
class Publication:
    """One publication record (times in ms since the epoch)."""

    channel: str
    version: int
    table_id: str
    commit_timestamp: int
    published_at: int
    previous_version: int | None  # the channel's version before this one (None: the first)
    published_by: dict[str, str] | None = None  # Delta's commitInfo.job shape (engine.write.provenance)

    def to_json(self) -> dict[str, Any]:
        return {
            "channel": self.channel,
            "version": self.version,
            "tableId": self.table_id,
            "commitTimestamp": self.commit_timestamp,
            "publishedAt": self.published_at,
            "previousVersion": self.previous_version,
            "publishedBy": self.published_by,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Publication:
        prev = d.get("previousVersion")
        return cls(
            channel=str(d["channel"]),
            version=int(d["version"]),
            table_id=str(d["tableId"]),
            commit_timestamp=int(d["commitTimestamp"]),
            published_at=int(d["publishedAt"]),
            previous_version=None if prev is None else int(prev),
            published_by=d.get("publishedBy"),
        )


def validate_channel(channel: object) -> str:
    """`channel` if it is a valid channel name (one safe path segment), else InvalidArgumentError."""
    return safe_name("publication channel", channel)


def channel_dir(channel: str) -> str:
    return f"{PUBLISH_DIR}/{validate_channel(channel)}"


def record_key(channel: str, version: int) -> str:
    return f"{channel_dir(channel)}/{version:020d}.json"


def published_version_list(storage: Storage, channel: str, *, after: int = -1) -> list[int]:
    """Versions with a record on `channel` newer than `after`, oldest first (one listing, no reads)."""
    try:
        start = f"{after:020d}.json" if after >= 0 else None
        files = storage.list_dir(channel_dir(channel), start_after=start)
    except (FileNotFoundError, NotADirectoryError):
        return []
    found = (_RECORD_RE.match(f.name) for f in files)
    return sorted(v for v in (int(m.group(1)) for m in found if m) if v > after)


def read_publication(storage: Storage, channel: str, version: int) -> Publication:
    key = record_key(channel, version)
    data = storage.read(key)
    try:
        return Publication.from_json(orjson.loads(data))
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise LogCorruptedError(
            f"publication record {key} is unreadable ({exc}). Help: delete it; the channel then "
            "falls back to its previous record"
        ) from exc


def current_publication(storage: Storage, channel: str = DEFAULT_CHANNEL) -> Publication | None:
    """The channel's current publication (its greatest version), or None when nothing is published."""
    for version in reversed(published_version_list(storage, channel)):
        try:
            return read_publication(storage, channel, version)
        except FileNotFoundError:
            continue  # pruned between the listing and the read: an older one cannot be current
    return None
