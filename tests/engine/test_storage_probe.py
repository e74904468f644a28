"""Stores that take `If-None-Match: *` and ignore it are detected before the first commit.

The fake store is fsspec's in-memory filesystem with exclusive creates turned into plain writes:
what an S3-compatible server that ignores the condition does. A store that honors it (the in-memory
one as it is; moto and local disks elsewhere in the suite) passes the probe, once per process."""

from __future__ import annotations

import uuid
from typing import Any

import pyarrow as pa
import pytest
from fsspec.implementations.memory import MemoryFileSystem

from airflow_txnlog.engine import StorageError, Table
from airflow_txnlog.engine import storage as storage_mod
from airflow_txnlog.engine.storage import PROBE_DIR, FsspecStorage


class IgnoresConditions(MemoryFileSystem):
    protocol = "ignoring"

    def _open(self, path: str, mode: str = "rb", **kwargs: Any) -> Any:
        return super()._open(path, "wb" if mode == "xb" else mode, **kwargs)


def _storage(fs: MemoryFileSystem, *, single_writer: bool = False) -> FsspecStorage:
    root = f"/bucket-{uuid.uuid4().hex}/t"
    return FsspecStorage(
        f"{fs.protocol}://{root.lstrip('/')}", fs, root, atomic=True, single_writer=single_writer
    )


def test_a_store_that_ignores_conditional_writes_is_refused_before_any_commit(monkeypatch) -> None:
    fs = IgnoresConditions()
    store = _storage(fs)
    monkeypatch.setattr("airflow_txnlog.engine.table.storage_for", lambda *a, **k: store)
    with pytest.raises(StorageError, match="ignores conditional writes") as info:
        Table.create("ignoring://bucket/t", schema=pa.schema([("id", pa.int64())]))
    assert "single_writer=True" in str(info.value)
    assert not fs.exists(store.full_path("_delta_log/00000000000000000000.json"))  # nothing written
    assert fs.find(store.full_path(PROBE_DIR)) == []  # the probe cleaned up after itself


def test_single_writer_skips_the_probe() -> None:
    fs = IgnoresConditions()
    store = _storage(fs, single_writer=True)
    store.put_if_absent("_delta_log/00000000000000000000.json", b"{}\n")
    assert fs.exists(store.full_path("_delta_log/00000000000000000000.json"))


def test_a_store_that_honors_them_is_probed_once(monkeypatch) -> None:
    fs = MemoryFileSystem()
    calls: list[str] = []
    original = FsspecStorage.check_conditional_writes

    def counted(self: FsspecStorage) -> None:
        calls.append(self.root)
        original(self)

    monkeypatch.setattr(FsspecStorage, "check_conditional_writes", counted)
    monkeypatch.setattr(storage_mod, "_PROBED", {})
    store = _storage(fs)
    for v in range(3):
        store.put_if_absent(f"_delta_log/{v:020d}.json", b"{}\n")
    with pytest.raises(FileExistsError):
        store.put_if_absent("_delta_log/00000000000000000000.json", b"{}\n")
    assert len(calls) == 4 and len(storage_mod._PROBED) == 1  # asked each time, probed once
    assert fs.find(store.full_path(PROBE_DIR)) == []
