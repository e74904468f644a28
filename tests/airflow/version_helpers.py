"""Helpers of the version sensor and trigger tests: tables with many cheap commits, counting storage."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import fsspec
import orjson
import pyarrow as pa
from fsspec.implementations.memory import MemoryFileSystem

from airflow_txnlog.engine import Table
from airflow_txnlog.engine.storage import Storage, storage_for

SCHEMA = pa.schema([("id", pa.int64()), ("op", pa.string())])


def make_table(uri: str, commits: int = 1) -> Table:
    """A table with versions 0 .. commits-1: version 0 created by the engine, then cheap raw commits."""
    table = Table.create(uri, schema=SCHEMA)
    for v in range(1, commits):
        raw_commit(table.storage, v)
    return table


def raw_commit(storage: Storage, version: int, operation: str = "WRITE") -> None:
    """A commit holding only commitInfo: enough for pollers, which read nothing else."""
    info = {"timestamp": int(time.time() * 1000), "operation": operation, "operationParameters": {}}
    storage.put_if_absent(f"_delta_log/{version:020d}.json", orjson.dumps({"commitInfo": info}) + b"\n")


def append(uri: str, ids: list[int]) -> int:
    """A real engine write (a parquet file and an add action)."""
    data = pa.table({"id": ids, "op": ["w"] * len(ids)}, schema=SCHEMA)
    return Table.open(uri).write(data)


async def next_event(gen: AsyncIterator[Any], timeout: float = 10.0) -> Any:
    return await asyncio.wait_for(anext(gen), timeout)


class CountingMemoryFileSystem(MemoryFileSystem):
    """fsspec's memory filesystem (same store) under the protocol `countmem`, counting every call."""

    protocol = ("countmem",)
    calls: Counter[str] = Counter()
    _COUNTED = ("ls", "cat", "cat_file", "info", "exists", "find", "glob", "pipe_file", "open", "rm_file")

    @classmethod
    def _strip_protocol(cls, path: str) -> str:
        if path.startswith("countmem://"):
            path = "memory://" + path[len("countmem://") :]
        return str(MemoryFileSystem._strip_protocol(path))

    def __getattribute__(self, name: str) -> Any:
        if name in CountingMemoryFileSystem._COUNTED:
            CountingMemoryFileSystem.calls[name] += 1
        return super().__getattribute__(name)


fsspec.register_implementation("countmem", CountingMemoryFileSystem, clobber=True)


class CountingStorage(Storage):
    """Wraps any `Storage` and counts calls per method (for the local backend, whose listing is a scandir)."""

    def __init__(self, inner: Storage) -> None:
        super().__init__(inner.root, inner.fs, inner.fs_root)
        self.inner = inner
        self.calls: Counter[str] = Counter()

    def read(self, key: str) -> bytes:
        self.calls["read"] += 1
        return self.inner.read(key)

    def read_many(self, keys: list[str]) -> list[bytes]:
        self.calls["read_many"] += 1
        return self.inner.read_many(keys)

    def put_if_absent(self, key: str, data: bytes) -> None:
        self.calls["put_if_absent"] += 1
        self.inner.put_if_absent(key, data)

    def write(self, key: str, data: bytes) -> None:
        self.calls["write"] += 1
        self.inner.write(key, data)

    def list_dir(self, key_dir: str, start_after: str | None = None) -> list[Any]:
        self.calls["list_dir"] += 1
        return self.inner.list_dir(key_dir, start_after)

    def delete(self, key: str) -> None:
        self.calls["delete"] += 1
        self.inner.delete(key)

    def exists(self, key: str) -> bool:
        self.calls["exists"] += 1
        return self.inner.exists(key)


def memory_uri() -> str:
    return f"memory://txnlog-airflow-tests/{uuid.uuid4().hex}"


def local_counting_storage(uri: str) -> CountingStorage:
    return CountingStorage(storage_for(uri))
