"""Durable local files written as a stream: the disk writes while the writer encodes, so the fsync
that makes the file durable at the end finds little left to write.

A checkpoint part is a file of ~150 MB at a million live files, written in ~1 s and fsynced before
it is renamed into place. Left to the kernel, its dirty pages wait for the fsync, which then writes
all of them, on the checkpoint's critical path. Linux's
`sync_file_range(SYNC_FILE_RANGE_WRITE)` starts the writeback of a range and returns without waiting
for it (RocksDB's `bytes_per_sync` and PostgreSQL's `checkpoint_flush_after` do the same). Called
for each stretch once it is written (`SyncedFile.advance`), the disk writes beside the writer: the
final fsync of the 144 MB checkpoint of a million-file table took ~1 ms instead of 51-58 ms.

Invariants: the early writeback is only a hint to the kernel. It never replaces the fsync
(`SyncedFile.sync`), which alone makes the bytes durable, and its failure or absence (any system
but Linux) changes nothing but the fsync's duration.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
from collections.abc import Callable

_SYNC_FILE_RANGE_WRITE = 2  # (linux/fs.h: start writeback of the range's dirty pages, do not wait)


@functools.cache
def _sync_file_range() -> Callable[[int, int, int, int], int] | None:
    """libc's `sync_file_range` on Linux, else None (a Linux call; `CDLL(None)`, the process's own
    symbols, is not even possible on Windows)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        call = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (AttributeError, OSError):  # (a C library without it)
        return None
    call.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    call.restype = ctypes.c_int
    return call


class SyncedFile:
    """A local file another writer (pyarrow's) is appending to, made durable as it grows.

    `advance()` starts the writeback of what was appended since the last call; `sync()` fsyncs the
    file and returns its size; `close()` closes this handle (not the writer's)."""

    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
        self._started = 0  # bytes whose writeback has been started

    def advance(self) -> None:
        call = _sync_file_range()
        if call is None:
            return
        size = os.fstat(self._fd).st_size
        if size > self._started:
            # (the result is ignored: a hint that failed leaves the work to `sync`)
            call(self._fd, self._started, size - self._started, _SYNC_FILE_RANGE_WRITE)
            self._started = size

    def sync(self) -> int:
        os.fsync(self._fd)
        return os.fstat(self._fd).st_size

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
