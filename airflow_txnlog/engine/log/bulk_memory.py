"""The memory pool the engine's bulk log reads allocate from, and checkpoint parts opened on it.

Loading a million-file checkpoint decodes a few hundred MB of columns (paths, the JSON stats text)
and parses the stats batch by batch, freeing each batch's working memory before the next. pyarrow's
default pool (mimalloc) serves these from an arena it advises for transparent huge pages and returns
freed pages to the system ~10 ms after a free: every batch faults in fresh memory again, 2 MB at a
time, and the kernel zeroes it. On the 2-core benchmark VM, six loads each run right after a
delta-rs process (as the benchmark runs them) took 1.16-1.72 s (median 1.54 s, 0.66 s of it system
time) on the default pool, 1.24-1.33 s (median 1.30 s, 0.41 s system) with these reads on jemalloc,
which keeps freed pages for reuse and faults in only the 4 KB pages it touches; peak RSS 579 -> 508
MB. (Every part read moves: with the open's key read left on the default pool it was worse, median 1.64 s.)
So:

- `bulk_pool()` is jemalloc's pool where this pyarrow build has one, else the default pool;
- `open_parquet(fh, ...)` opens a checkpoint part as `pq.ParquetFile` whose reader decodes into
  that pool. pyarrow's `ParquetFile` takes no pool, its reader class does
  (`pyarrow._parquet.ParquetReader(memory_pool=...)`): the file is opened as usual (footer parsed
  once) and its reader replaced by one on the pool, given the same footer. Should a pyarrow release
  change that class, or its reader see the file's schema differently from `ParquetFile`'s (pyarrow
  before 21 opened extension types differently), the file is read on the default pool (same data,
  the old speed); a test pins that this build reads into the pool.

Arrays keep a reference to the pool that allocated them, so mixing pools is safe: a buffer is always
freed where it came from. Nothing here changes the process's default pool (a library must not).
"""

from __future__ import annotations

import functools
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

try:  # (pyarrow's reader class, which takes a pool; private, so its absence is tolerated)
    from pyarrow._parquet import ParquetReader as _Reader
except ImportError:  # pragma: no cover - every pyarrow release we support has it
    _Reader = None


@functools.cache
def bulk_pool() -> pa.MemoryPool:
    """jemalloc's pool where this pyarrow build has it, else the default pool."""
    try:
        return pa.jemalloc_memory_pool()
    except NotImplementedError:
        return pa.default_memory_pool()


def open_parquet(source: Any, *, buffer_size: int, pre_buffer: bool) -> pq.ParquetFile:
    """`pq.ParquetFile(source, ...)` whose column reads allocate from `bulk_pool()` (see the module
    doc; the default pool if this pyarrow's reader class cannot be given one)."""
    f = pq.ParquetFile(source, buffer_size=buffer_size, pre_buffer=pre_buffer)
    pool = bulk_pool()
    if _Reader is None or pool.backend_name == pa.default_memory_pool().backend_name:
        return f
    try:
        reader = _Reader(memory_pool=pool)
        # (the options ParquetFile gives its own reader: its defaults differ from the class's)
        reader.open(
            source,
            buffer_size=buffer_size,
            pre_buffer=pre_buffer,
            metadata=f.metadata,
            arrow_extensions_enabled=True,
        )
    except (TypeError, AttributeError):  # (another pyarrow's signature: the default pool)
        return f
    if reader.schema_arrow != f.schema_arrow:  # (a pyarrow whose ParquetFile reads otherwise)
        return f
    f.reader = reader
    return f
