"""Corruption: every damaged log gives, for every version, the twin's snapshot or a LogCorruptedError
that names the damaged file; never wrong data. Local, S3 and Azure.

A 24-commit table (checkpoints at 10 and 20, a partition delete at version 15 so the checkpoint at 20
holds tombstones) is copied to an uncorrupted twin; the original is damaged; then each probed version
is loaded by a fresh handle and compared with the twin (version, live files, rows, schema, properties,
protocol, txns). `MUST_BE_CORRECT` says which versions have a fallback and must load correctly; the
others may instead raise `LogCorruptedError` naming the file. tests/engine/state/test_snapshot.py has the
single-backend basics; these add the twin comparison across versions and the object stores.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from airflow_txnlog.engine import LogCorruptedError, Table
from airflow_txnlog.engine.storage import LOG_DIR, Storage, storage_for
from tests.conftest import SCHEMA, rows
from tests.reliability._util import fingerprint
from tests.reliability.conftest import Backend

LATEST = 24
PROBED = (0, 4, 5, 9, 10, 15, 20, 22, 23, 24)


def cp(v: int) -> str:
    return f"{LOG_DIR}/{v:020d}.checkpoint.parquet"


def commit(v: int) -> str:
    return f"{LOG_DIR}/{v:020d}.json"


HINT = f"{LOG_DIR}/_last_checkpoint"


def _multipart_24(s: Storage, opts: dict[str, Any] | None, uri: str) -> list[str]:
    Table.open(uri, storage_options=opts, checkpoint_part_size=5).checkpoint()
    return sorted(f"{LOG_DIR}/{f.name}" for f in s.list_log() if f.name.startswith(f"{24:020d}.checkpoint."))


def _truncate(s: Storage, key: str) -> None:
    data = s.read(key)
    s.write(key, data[: len(data) // 2])


@dataclass(frozen=True)
class Case:
    damage: Callable[[Storage, dict[str, Any] | None, str], str]  # returns the file it damaged
    must_be_correct: Callable[[int], bool]


def _w(key: str, data: bytes) -> Callable[[Storage, Any, str], str]:
    def damage(s: Storage, opts: Any, uri: str) -> str:
        s.write(key, data)
        return key

    return damage


def _trunc(key: str) -> Callable[[Storage, Any, str], str]:
    def damage(s: Storage, opts: Any, uri: str) -> str:
        _truncate(s, key)
        return key

    return damage


def _rm(*keys: str) -> Callable[[Storage, Any, str], str]:
    def damage(s: Storage, opts: Any, uri: str) -> str:
        for k in keys:
            s.delete(k)
        return keys[0]

    return damage


def _then(*steps: Callable[[Storage, Any, str], str]) -> Callable[[Storage, Any, str], str]:
    def damage(s: Storage, opts: Any, uri: str) -> str:
        damaged = [step(s, opts, uri) for step in steps]  # every step runs
        return damaged[0]

    return damage


def _multipart_missing_part(s: Storage, opts: Any, uri: str) -> str:
    parts = _multipart_24(s, opts, uri)
    assert len(parts) >= 3
    s.delete(parts[1])
    return parts[1]


def _multipart_garbage_part(s: Storage, opts: Any, uri: str) -> str:
    parts = _multipart_24(s, opts, uri)
    s.write(parts[-1], b"PAR1 not really PAR1")
    return parts[-1]


ALL = lambda v: True  # noqa: E731
CASES: dict[str, Case] = {
    "checkpoint_truncated": Case(_trunc(cp(20)), ALL),
    "checkpoint_garbage": Case(_w(cp(20), b"\x00garbage" * 100), ALL),
    "checkpoint_zero_bytes": Case(_w(cp(20), b""), ALL),
    "both_checkpoints_garbage": Case(_then(_w(cp(20), b"x"), _w(cp(10), b"y")), ALL),
    "last_checkpoint_stale": Case(_w(HINT, b'{"version": 10, "size": 12}'), ALL),
    "last_checkpoint_garbage": Case(_w(HINT, b"\xff\xfe{{{"), ALL),
    "last_checkpoint_truncated": Case(_trunc(HINT), ALL),
    "last_checkpoint_wrong_types": Case(_w(HINT, b'{"version": "20", "size": []}'), ALL),
    "last_checkpoint_not_an_object": Case(_w(HINT, b"[20]"), ALL),
    "last_checkpoint_future": Case(_w(HINT, b'{"version": 99, "size": 3}'), ALL),
    "last_checkpoint_negative": Case(_w(HINT, b'{"version": -3, "size": 3}'), ALL),
    "last_checkpoint_missing": Case(_rm(HINT), ALL),
    "last_checkpoint_names_deleted_checkpoint": Case(_rm(cp(20)), ALL),
    "multipart_missing_part": Case(_multipart_missing_part, ALL),
    "multipart_garbage_part": Case(_multipart_garbage_part, ALL),
    "commit_truncated_latest": Case(_trunc(commit(22)), lambda v: v < 22),
    "commit_truncated_below_checkpoint": Case(_trunc(commit(5)), lambda v: not 5 <= v < 10),
    "commit_garbage": Case(_w(commit(23), b"\x89PNG\r\n\x1a\n"), lambda v: v < 23),
    "commit_missing": Case(_rm(commit(22)), lambda v: v < 22),
    "commit_missing_below_checkpoint": Case(_rm(commit(5)), lambda v: not 5 <= v < 10),
    "commit_zero_bytes": Case(_w(commit(22), b""), lambda v: v < 22),
    "commit_malformed_action": Case(_w(commit(22), b'{"add": {"size": 1}}\n'), lambda v: v < 22),
    "commit_not_an_object": Case(_w(commit(22), b"[1, 2]\n"), lambda v: v < 22),
}


_PRISTINE: dict[str, tuple[str, dict[int, dict[str, Any]]]] = {}


def _pristine(backend: Backend) -> tuple[str, dict[int, dict[str, Any]]]:
    """The uncorrupted twin (built once per backend and session) and its fingerprint per probed version."""
    if backend.name in _PRISTINE:
        return _PRISTINE[backend.name]
    uri = backend.new_uri("twin")
    t = Table.create(uri, schema=SCHEMA, partition_by=["part"], storage_options=backend.options)
    for i in range(LATEST):
        if i == 14:
            with t.transaction("DELETE", {"predicate": "part = 'p1'"}) as txn:
                for f in txn.read_files("part = 'p1'"):
                    txn.remove(f)
                txn.commit()
        else:
            t.write(rows([i], f"p{i % 3}"), txn=("load", i))
    assert t.latest_version() == LATEST
    assert Table.open(uri, storage_options=backend.options).snapshot().checkpoint_version == 20
    twin = Table.open(uri, storage_options=backend.options)
    _PRISTINE[backend.name] = uri, {v: fingerprint(twin.snapshot(version=v)) for v in PROBED}
    return _PRISTINE[backend.name]


def _copy(backend: Backend, src: str) -> str:
    dst = backend.new_uri("damaged")
    s = Table.open(src, storage_options=backend.options).storage
    if backend.name == "local":
        shutil.copytree(src, dst)
    else:
        s.fs.copy(s.fs_root, storage_for(dst, backend.options).fs_root, recursive=True)
    return dst


@pytest.mark.parametrize(
    "case",
    [n for n in CASES],
)
def test_corruption_gives_twin_snapshot_or_named_error(backend: Backend, case: str) -> None:
    twin_uri, expected = _pristine(backend)
    uri = _copy(backend, twin_uri)
    opts = backend.options
    storage = Table.open(uri, storage_options=opts).storage
    damaged = CASES[case].damage(storage, opts, uri).rsplit("/", 1)[-1]
    outcomes = {}
    for v in PROBED:
        try:
            got = fingerprint(Table.open(uri, storage_options=opts).snapshot(version=v))
        except LogCorruptedError as exc:
            assert damaged in str(exc), f"v{v}: error does not name {damaged}: {exc}"
            assert not CASES[case].must_be_correct(v), f"v{v} has a fallback but failed: {exc}"
            outcomes[v] = "error"
            continue
        assert got == expected[v], f"v{v}: WRONG DATA after {case}"
        outcomes[v] = "ok"
    latest = Table.open(uri, storage_options=opts)
    if CASES[case].must_be_correct(LATEST):
        assert fingerprint(latest.snapshot()) == expected[LATEST]
    assert "ok" in outcomes.values()
