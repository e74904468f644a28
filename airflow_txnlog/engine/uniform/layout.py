"""Where UniForm's Iceberg metadata lives under a table, and which metadata file is the newest.

    metadata/v<N>.metadata.json      table metadata N (written once, put-if-absent)
    metadata/version-hint.text       N of the newest (a hint: readers given the folder use it)
    metadata/snap-<id>-1-<uuid>.avro manifest lists; metadata/<uuid>-m<k>.avro manifests

The newest is the hint's N, or the highest N listed when there is no hint, then N+1, N+2, ... while
they exist (a sync that died between its metadata file and the hint). The Delta version a metadata
file reflects is its table property `delta-version`. Nothing here imports pyiceberg: vacuum and
the planner ask these questions of any table cheaply.
"""

from __future__ import annotations

import orjson

from airflow_txnlog.engine.features import iceberg_compat
from airflow_txnlog.engine.storage import ListedFile, Storage

METADATA_DIR = iceberg_compat.METADATA_DIR
HINT = f"{METADATA_DIR}/version-hint.text"
DELTA_VERSION, DELTA_TIMESTAMP, BASE_DELTA_VERSION = "delta-version", "delta-timestamp", "base-delta-version"
_SUFFIX = ".metadata.json"


def metadata_key(number: int) -> str:
    return f"{METADATA_DIR}/v{number}{_SUFFIX}"


def number_of(name: str) -> int | None:
    """N of a metadata file's name `v<N>.metadata.json` (None for another name)."""
    digits = name[1 : -len(_SUFFIX)] if name.startswith("v") and name.endswith(_SUFFIX) else ""
    return int(digits) if digits.isdigit() else None


def listed(storage: Storage) -> list[ListedFile]:
    """The files of `metadata/` (none when it does not exist)."""
    try:
        return storage.list_dir(METADATA_DIR)
    except FileNotFoundError:
        return []


def _hinted(storage: Storage) -> int | None:
    try:
        return int(storage.read(HINT).decode().strip())
    except (FileNotFoundError, ValueError):
        numbers = [n for f in listed(storage) if (n := number_of(f.name)) is not None]
        return max(numbers) if numbers else None


def newest_number(storage: Storage) -> int | None:
    """N of the newest metadata file (None when the table has none)."""
    number = _hinted(storage)
    if number is None:
        return None
    while storage.exists(metadata_key(number + 1)):
        number += 1
    return number


def reflected_version(storage: Storage) -> int | None:
    """The Delta version the newest Iceberg metadata reflects (None without any)."""
    number = newest_number(storage)
    if number is None:
        return None
    try:
        properties = orjson.loads(storage.read(metadata_key(number))).get("properties") or {}
    except FileNotFoundError:  # (deleted: no Iceberg reader can read it either)
        return None
    return int(properties.get(DELTA_VERSION, -1))
