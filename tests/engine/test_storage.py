from __future__ import annotations

import threading
from pathlib import Path

import fsspec
import pytest

from airflow_txnlog.engine import InvalidArgumentError, StorageError
from airflow_txnlog.engine.storage import FsspecStorage, LocalStorage, MemoryStorage, storage_for


def test_storage_for_picks_backends(tmp_path: Path) -> None:
    assert isinstance(storage_for(str(tmp_path)), LocalStorage)
    assert isinstance(storage_for(f"file://{tmp_path}"), LocalStorage)
    assert isinstance(storage_for("memory://x/y"), MemoryStorage)
    for bad in ["", "   ", "s3://"]:
        with pytest.raises(InvalidArgumentError):
            storage_for(bad)


def test_put_if_absent_contract(table_uri: str) -> None:
    s = storage_for(table_uri)
    s.put_if_absent("_delta_log/00000000000000000000.json", b"first\n")
    with pytest.raises(FileExistsError):
        s.put_if_absent("_delta_log/00000000000000000000.json", b"second\n")
    assert s.read("_delta_log/00000000000000000000.json") == b"first\n"
    with pytest.raises(StorageError, match="empty"):
        s.put_if_absent("_delta_log/00000000000000000001.json", b"")
    assert [f.name for f in s.list_log()] == ["00000000000000000000.json"]


def test_racing_threads_exactly_one_wins(table_uri: str) -> None:
    s = storage_for(table_uri)
    s.write("_delta_log/.keep", b"x")
    winners: list[int] = []
    barrier = threading.Barrier(8)

    def race(i: int) -> None:
        barrier.wait()
        try:
            s.put_if_absent("_delta_log/00000000000000000005.json", f"{i}\n".encode())
            winners.append(i)
        except FileExistsError:
            pass

    threads = [threading.Thread(target=race, args=(i,)) for i in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(winners) == 1
    assert s.read("_delta_log/00000000000000000005.json") == f"{winners[0]}\n".encode()


def test_local_put_leaves_no_temp_files(tmp_path: Path) -> None:
    s = LocalStorage(str(tmp_path))
    s.put_if_absent("_delta_log/00000000000000000000.json", b"a\n")
    with pytest.raises(FileExistsError):
        s.put_if_absent("_delta_log/00000000000000000000.json", b"b\n")
    assert list((tmp_path / "_delta_log" / ".tmp").iterdir()) == []


def test_non_atomic_backend_refuses_unless_single_writer(tmp_path: Path) -> None:
    fs = fsspec.filesystem("file")
    unsafe = FsspecStorage(str(tmp_path), fs, str(tmp_path), atomic=False, single_writer=False)
    with pytest.raises(StorageError, match="single_writer=True"):
        unsafe.put_if_absent("_delta_log/00000000000000000000.json", b"a\n")
    fs.makedirs(str(tmp_path / "_delta_log"), exist_ok=True)
    single = FsspecStorage(str(tmp_path), fs, str(tmp_path), atomic=False, single_writer=True)
    single.put_if_absent("_delta_log/00000000000000000000.json", b"a\n")
    with pytest.raises(FileExistsError):
        single.put_if_absent("_delta_log/00000000000000000000.json", b"b\n")


def test_remove_empty_dir_removes_only_an_empty_folder(tmp_path: Path) -> None:
    s = LocalStorage(str(tmp_path))
    s.write("_staging/a.json", b"{}")
    s.remove_empty_dir("_staging")  # another writer's manifest is in it: kept
    assert s.read("_staging/a.json") == b"{}"
    s.delete("_staging/a.json")
    s.remove_empty_dir("_staging")
    assert not (tmp_path / "_staging").exists()
    s.remove_empty_dir("_staging")  # already gone: no error
    storage_for("memory://remove-empty/t").remove_empty_dir("_staging")  # object stores: nothing to do


def test_write_survives_its_folder_being_removed_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer whose emptied folder another process removes between making it and renaming its temp
    file into it (the staging folder race) makes the folder again instead of failing."""
    s = LocalStorage(str(tmp_path))
    real = s._temp_write

    def temp_then_folder_removed(key: str, data: bytes) -> str:
        tmp = real(key, data)
        (tmp_path / "_staging").rmdir()  # the other writer's remove_empty_dir, at the worst moment
        return tmp

    monkeypatch.setattr(s, "_temp_write", temp_then_folder_removed)
    s.write("_staging/b.json", b"[]")
    assert s.read("_staging/b.json") == b"[]"
