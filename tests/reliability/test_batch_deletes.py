"""Vacuum and log cleanup delete in batches on every store (issue 41, item 4).

`Storage.delete_many` takes the keys batch by batch (`DELETE_BATCH`, patched small here so a few
keys cross several batches): on S3 a batch is one DeleteObjects request, on Azure and GCS fsspec's
`rm` of a list; a key already gone is no error anywhere. Vacuum deletes exactly the files it
planned, through batches only (a per-file delete fails the test), and the dry run reports them.
"""

from __future__ import annotations

from typing import Any

import pytest

from airflow_txnlog.engine import Table
from airflow_txnlog.engine.storage import FsspecStorage
from tests.conftest import SCHEMA, rows
from tests.reliability.conftest import Backend


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    import airflow_txnlog.engine.maintenance.vacuum as vacuum_module  # noqa: PLC0415
    import airflow_txnlog.engine.storage as storage_module  # noqa: PLC0415

    monkeypatch.setattr(storage_module, "DELETE_BATCH", 3)
    monkeypatch.setattr(vacuum_module, "DELETE_BATCH", 3)


def test_delete_many_deletes_every_key_batch_by_batch_and_skips_missing_ones(
    backend: Backend, small_batches: None
) -> None:
    t = Table.create(backend.new_uri("keys"), schema=SCHEMA, storage_options=backend.options)
    keys = [f"junk/k{i:02d}" for i in range(8)]
    for key in keys:
        t.storage.write(key, b"x")
    t.storage.delete_many([*keys[:4], "junk/never-there", *keys[4:], "junk/gone-too"])
    assert [k for k in keys if t.storage.exists(k)] == []
    assert t.storage.exists(f"_delta_log/{0:020d}.json")  # (nothing else touched)


def test_vacuum_deletes_the_planned_files_in_batches_only(
    backend: Backend, small_batches: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = Table.create(
        backend.new_uri("vac"), schema=SCHEMA, partition_by=["part"], storage_options=backend.options
    )
    for i in range(7):
        t.write(rows([i], f"p{i % 2}"))
    t.write(rows([99], "p0"), mode="overwrite")
    planned = t.vacuum(retention_hours=0, enforce_retention=False)  # the dry run: the report
    assert len(planned.files) == 7 and planned.dry_run

    one_by_one: list[str] = []  # single-object deletes (the vacuum fence's own marker is one)
    if isinstance(t.storage, FsspecStorage):
        rm_file = t.storage.fs.rm_file

        def recorded(path: str, *args: Any, **kwargs: Any) -> Any:
            one_by_one.append(path)
            return rm_file(path, *args, **kwargs)

        monkeypatch.setattr(t.storage.fs, "rm_file", recorded)
    done = t.vacuum(retention_hours=0, enforce_retention=False, dry_run=False)
    assert sorted(done.files) == sorted(planned.files) and done.deleted == 7
    assert [p for p in one_by_one if p.endswith(".parquet")] == []  # every data file went in a batch
    monkeypatch.undo()
    left = {f.path for f in t.snapshot().files()}
    assert [r["id"] for r in t.snapshot().to_arrow().to_pylist()] == [99]
    for path in planned.files:
        assert not t.storage.exists(path), path
    assert left and all(t.storage.exists(p) for p in left)


def test_a_full_vacuum_lists_partition_folders_in_parallel_and_never_the_hidden_ones(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On an object store the root is listed once with a delimiter and each visible folder whole
    (LIST_WORKERS at a time); the result is the whole-tree listing's, hidden folders left out."""
    from airflow_txnlog.engine.maintenance.vacuum import _hidden, list_files  # noqa: PLC0415

    t = Table.create(
        backend.new_uri("list"), schema=SCHEMA, partition_by=["part"], storage_options=backend.options
    )
    for i in range(6):
        t.write(rows([i], f"p{i % 3}"))
    for junk in ("part=p0/orphan.parquet", "orphan-at-root.parquet", "_junk/x.parquet", ".hidden/y"):
        t.storage.write(junk, b"x")
    storage = t.storage
    got = list_files(storage, {"part"})
    assert {"part=p0/orphan.parquet", "orphan-at-root.parquet"} <= set(got)
    assert not any(k.startswith(("_", ".")) for k in got) and len(got) == 6 + 2
    if not isinstance(storage, FsspecStorage):
        return  # (local disk: its own os.scandir walk)
    root = storage.fs_root.rstrip("/")
    whole = {str(p)[len(root) + 1 :] for p in storage.fs.find(root, withdirs=False)}
    assert set(got) == {k for k in whole if not _hidden(k, {"part"})}  # (what one listing of all gives)
    listed: list[str] = []
    find = storage.fs.find

    def recorded(path: str, *args: Any, **kwargs: Any) -> Any:
        listed.append(str(path)[len(root) + 1 :])
        return find(path, *args, **kwargs)

    monkeypatch.setattr(storage.fs, "find", recorded)
    assert list_files(storage, {"part"}) == got
    assert sorted(listed) == ["part=p0", "part=p1", "part=p2"]  # (never _delta_log, _junk, .hidden)
