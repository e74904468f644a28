"""Vacuum fences (engine/maintenance/fence.py): a savepoint made while a vacuum deletes never keeps a
lost file.

The race test drives the interleaving the fence exists for, deterministically: the vacuum has
re-read the savepoints (none) and is about to delete expired tombstones when another handle
savepoints the old version that holds them.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from airflow_txnlog.engine import SavepointFilesMissingError, Table, VacuumInProgressError
from airflow_txnlog.engine.maintenance import fence as fence_mod
from airflow_txnlog.engine.maintenance.fence import FENCE_DIR, VacuumFence, live_fences, wait_for_vacuums
from airflow_txnlog.engine.maintenance.savepoints import create_savepoint
from tests.conftest import SCHEMA, rows


def _old_version_table(uri: str) -> Table:
    """v1 has the only file of partition a; v2 overwrites it (a tombstone, expired at retention 0)."""
    t = Table.create(uri, schema=SCHEMA, partition_by=["part"])
    t.write(rows([1], "a"))
    t.write(rows([2], "b"), mode="overwrite")
    return t


def test_fence_is_up_while_held_and_refreshed_when_old(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = _old_version_table(str(tmp_path / "t"))
    with VacuumFence(t.storage) as f:
        (only,) = live_fences(t.storage)
        assert f.key == f"{FENCE_DIR}/{only.name}"
        first = t.storage.read(f.key)
        f.refresh()  # young: not rewritten
        assert t.storage.read(f.key) == first
        later = fence_mod._now_ms() + fence_mod.FENCE_REFRESH_MS
        monkeypatch.setattr(fence_mod, "_now_ms", lambda: later)
        f.refresh()
        assert t.storage.read(f.key) != first
    assert live_fences(t.storage) == []


def test_stale_fence_of_a_crashed_vacuum_is_ignored(tmp_path: Path) -> None:
    t = _old_version_table(str(tmp_path / "t"))
    VacuumFence(t.storage).__enter__()  # never taken down: the vacuum "crashed"
    (fence,) = list((tmp_path / "t" / FENCE_DIR).iterdir())
    assert len(live_fences(t.storage)) == 1
    old = time.time() - fence_mod.FENCE_STALE_MS / 1000 - 60
    os.utime(fence, (old, old))
    assert live_fences(t.storage) == []
    wait_for_vacuums(t.storage, timeout_s=0)  # returns at once


def test_wait_returns_when_the_vacuum_ends_and_times_out_otherwise(tmp_path: Path) -> None:
    t = _old_version_table(str(tmp_path / "t"))
    f = VacuumFence(t.storage).__enter__()
    slept: list[float] = []

    def sleep(s: float) -> None:  # the vacuum finishes during our first wait
        slept.append(s)
        f.__exit__(None, None, None)

    wait_for_vacuums(t.storage, timeout_s=60, poll_s=0.5, sleep=sleep)
    assert slept == [0.5]
    VacuumFence(t.storage).__enter__()
    with pytest.raises(VacuumInProgressError, match="still deleting") as err:
        wait_for_vacuums(t.storage, timeout_s=0)
    assert err.value.fences[0].startswith(FENCE_DIR)


def test_savepoint_of_an_old_version_waits_out_a_running_vacuum_and_fails_cleanly(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    t = _old_version_table(uri)
    other = Table.open(uri)
    recorded = threading.Event()
    outcome: dict[str, Any] = {}
    real_put, real_delete = other.storage.put_if_absent, t.storage.delete

    def put(key: str, data: bytes) -> None:
        real_put(key, data)
        recorded.set()  # the savepoint record exists now

    def savepoint_old_version() -> None:
        try:
            outcome["sp"] = other.create_savepoint("old", version=1)
        except Exception as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=savepoint_old_version)

    def delete(key: str) -> None:
        if not worker.is_alive() and not recorded.is_set():  # the vacuum's first delete
            worker.start()
            assert recorded.wait(30), "the savepoint never got to its record"
        real_delete(key)

    other.storage.put_if_absent = put  # type: ignore[method-assign]
    t.storage.delete = delete  # type: ignore[method-assign]
    result = t.vacuum(retention_hours=0, enforce_retention=False, dry_run=False)
    worker.join(60)
    assert result.deleted == 1  # the vacuum had planned it before the savepoint existed
    assert isinstance(outcome.get("error"), SavepointFilesMissingError), outcome
    assert "a concurrent vacuum deleted 1 of its files" in str(outcome["error"])
    assert Table.open(uri).savepoints() == []  # no savepoint claims a file that is gone
    assert [p.name for p in (tmp_path / "t" / "_savepoints").iterdir() if p.is_file()] == []


def test_savepoint_of_the_latest_version_never_waits(tmp_path: Path) -> None:
    """Its files are live: no vacuum deletes them, so a live fence does not delay it."""
    t = _old_version_table(str(tmp_path / "t"))
    VacuumFence(t.storage).__enter__()
    sp = create_savepoint(
        t, t.snapshot(), "now", created_by=None, reason=None, expires_at=None, fence_wait_s=0
    )
    assert sp.version == 2


def test_savepoint_gives_up_when_a_vacuum_keeps_running(tmp_path: Path) -> None:
    t = _old_version_table(str(tmp_path / "t"))
    VacuumFence(t.storage).__enter__()
    with pytest.raises(VacuumInProgressError):
        create_savepoint(
            t, t.snapshot(1), "old", created_by=None, reason=None, expires_at=None, fence_wait_s=0
        )
    assert t.savepoints() == []


def test_restore_to_a_version_pins_its_files_until_committed(tmp_path: Path) -> None:
    from airflow_txnlog.engine.maintenance import restore as restore_mod  # noqa: PLC0415

    t = _old_version_table(str(tmp_path / "t"))
    seen: list[list[str]] = []
    real_commit = restore_mod._commit

    def commit(*a: Any, **kw: Any) -> int:
        seen.append([sp.name for sp in t.savepoints()])
        return real_commit(*a, **kw)  # type: ignore[no-any-return]

    restore_mod._commit = commit  # type: ignore[attr-defined]
    try:
        res = t.restore(version=1)
    finally:
        restore_mod._commit = real_commit  # type: ignore[attr-defined]
    assert res.committed and sorted(t.snapshot().to_arrow().column("id").to_pylist()) == [1]
    assert len(seen) == 1 and len(seen[0]) == 1 and seen[0][0].startswith("restore-pin-")
    assert t.savepoints() == []  # the pin is gone after the commit
