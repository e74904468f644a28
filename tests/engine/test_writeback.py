"""`writeback.SyncedFile`: the early writeback of a file another writer appends to, and its fsync."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from airflow_txnlog.engine import writeback


def _recording(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int, int]]:
    """The (offset, length, result) of every early writeback; the kernel's own call still runs."""
    real = writeback._sync_file_range()
    assert real is not None
    calls: list[tuple[int, int, int]] = []

    def record(fd: int, offset: int, length: int, flags: int) -> int:
        result = real(fd, offset, length, flags)
        calls.append((offset, length, result))
        return result

    monkeypatch.setattr(writeback, "_sync_file_range", lambda: record)
    return calls


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sync_file_range is Linux's")
def test_each_appended_stretch_is_written_back_once_and_sync_returns_the_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _recording(monkeypatch)
    path = tmp_path / "part.tmp"
    with path.open("wb") as writer:  # (the other writer, as pyarrow's is)
        synced = writeback.SyncedFile(str(path))
        for size in (5000, 0, 70_000, 1):
            writer.write(b"x" * size)
            writer.flush()
            synced.advance()
        assert synced.sync() == 75_001
        synced.close()
        synced.close()  # (closing twice is harmless)
    assert calls == [(0, 5000, 0), (5000, 70_000, 0), (75_000, 1, 0)]  # nothing twice, nothing empty
    assert path.read_bytes() == b"x" * 75_001


def test_without_the_call_the_file_is_still_synced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writeback, "_sync_file_range", lambda: None)  # (as on macOS)
    path = tmp_path / "part.tmp"
    path.write_bytes(b"abc")
    synced = writeback.SyncedFile(str(path))
    synced.advance()
    assert synced.sync() == 3
    fd = synced._fd
    synced.close()
    assert synced._fd == -1
    if sys.platform.startswith("linux"):  # (the descriptor no longer names the file)
        link = f"/proc/self/fd/{fd}"
        assert not os.path.exists(link) or os.readlink(link) != str(path)


def test_outside_linux_there_is_no_early_writeback(monkeypatch: pytest.MonkeyPatch) -> None:
    """`sync_file_range` is Linux's; elsewhere (on Windows `CDLL(None)` cannot even be made) the
    part is only fsynced."""
    monkeypatch.setattr(writeback.sys, "platform", "win32")
    writeback._sync_file_range.cache_clear()
    try:
        assert writeback._sync_file_range() is None
    finally:
        writeback._sync_file_range.cache_clear()
