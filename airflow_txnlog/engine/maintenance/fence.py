"""Vacuum fences: a savepoint (or a restore) made while a vacuum deletes files never loses a file.

The race they close: vacuum decides what to keep from the savepoints and the latest snapshot it reads
at one moment (T1), then deletes. A savepoint whose record appears after T1 is invisible to that
vacuum. If the savepoint's version holds files the vacuum planned to delete — files no longer live,
tombstoned longer ago than the retention: savepoints of old versions, restores to old versions — the
vacuum may delete them right after the savepoint checked that they exist.

Protocol (no lock: only ordered writes and listings on a strongly consistent store, which S3, GCS,
Azure and local disks are):
- a vacuum that deletes writes a fence `_savepoints/_fences/<uuid>.json` *before* it reads the
  savepoints, rewrites it at least every `FENCE_REFRESH_MS` while deleting, and removes it *after*
  its last delete;
- a savepoint, *after* its record exists, takes the files of its version that are not live in the
  latest snapshot (the only ones a vacuum can delete), and if there are any, waits until no live
  fence is left, then checks those files again; a missing one fails the creation (the record is
  removed again).
Why that is enough: a vacuum that read the savepoints before the record existed had written its fence
even earlier, so after the record exists that fence is either still there (we wait for it) or
already removed (its deletes are over); either way the second check runs after the vacuum's last
delete. A vacuum that reads the savepoints after the record exists keeps the files. Files live in the
latest snapshot are never vacuumed, so the usual savepoint — of the latest version — never waits.

A fence not rewritten for `FENCE_STALE_MS` belongs to a vacuum that crashed and is ignored.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from types import TracebackType

import orjson

from airflow_txnlog.engine.errors import VacuumInProgressError
from airflow_txnlog.engine.storage import ListedFile, Storage

FENCE_DIR = "_savepoints/_fences"
FENCE_REFRESH_MS = 2 * 60 * 1000
FENCE_STALE_MS = 20 * 60 * 1000
DEFAULT_WAIT_S = 10 * 60.0


def _now_ms() -> int:
    return int(time.time() * 1000)


class VacuumFence:
    """Context manager held by a vacuum from before it reads the savepoints until its last delete."""

    def __init__(self, storage: Storage) -> None:
        self._storage = storage
        self.key = f"{FENCE_DIR}/{uuid.uuid4().hex}.json"
        self._written = 0

    def _write(self) -> None:
        self._written = _now_ms()
        self._storage.write(self.key, orjson.dumps({"vacuumFence": True, "writtenAt": self._written}))

    def refresh(self) -> None:
        """Rewrite the fence if it is getting old (call it between deletes)."""
        if _now_ms() - self._written >= FENCE_REFRESH_MS:
            self._write()

    def __enter__(self) -> VacuumFence:
        self._write()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._storage.delete(self.key)


def live_fences(storage: Storage, now_ms: int | None = None) -> list[ListedFile]:
    """Fences of vacuums that may still be deleting (stale ones excluded)."""
    now = _now_ms() if now_ms is None else now_ms
    try:
        fences = storage.list_dir(FENCE_DIR)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [f for f in fences if f.name.endswith(".json") and now - f.mtime_ms < FENCE_STALE_MS]


def wait_for_vacuums(
    storage: Storage,
    *,
    timeout_s: float = DEFAULT_WAIT_S,
    poll_s: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Return once no vacuum is deleting; VacuumInProgressError after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        fences = live_fences(storage)
        if not fences:
            return
        if time.monotonic() >= deadline:
            raise VacuumInProgressError([f"{FENCE_DIR}/{f.name}" for f in fences], timeout_s)
        sleep(poll_s)
