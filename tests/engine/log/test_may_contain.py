"""`stats_struct.may_contain`: the buffer scan that decides whether paths need decoding."""

from __future__ import annotations

import random
import tracemalloc

import pyarrow as pa
import pytest

from airflow_txnlog.engine.log.stats_struct import _SCAN_CHUNK, may_contain


@pytest.mark.parametrize("seed", range(20))
def test_may_contain_never_misses_a_needle(seed: int) -> None:
    rng = random.Random(seed)
    values = ["".join(rng.choice("ab%:file/") for _ in range(rng.randint(0, 12))) for _ in range(50)]
    strings = pa.array(values)
    for needles in ([b"%"], [b"file:"], [b"%", b"file:"], [b"zz"]):
        truly = any(n.decode() in v for v in values for n in needles)
        got = may_contain(strings, *needles)
        assert got or not truly  # (never a miss)
        if not any(n[-1:].decode() in "".join(values) for n in needles):
            assert not got  # (no needle byte at all: exactly no)


@pytest.mark.parametrize("at", [0, _SCAN_CHUNK - 1, _SCAN_CHUNK, _SCAN_CHUNK + 3, 2 * _SCAN_CHUNK + 10])
def test_a_needle_anywhere_in_a_large_buffer_is_found(at: int) -> None:
    filler = "x" * (2 * _SCAN_CHUNK + 64)
    for needle in ("%", "file:"):
        text = filler[:at] + needle + filler[at + len(needle) :]
        strings = pa.array([text[:at], text[at:]]) if at else pa.array([text])
        assert may_contain(strings, needle.encode())
        assert not may_contain(pa.array([filler]), needle.encode())
    assert not may_contain(pa.array([filler[:at] + "file" + filler[at + 4 :]]), b"file:")  # (no ':')


def test_the_scan_works_in_a_small_temporary() -> None:
    """Scanning a 16 MB buffer allocates one small temporary (at most 1 MB), reused chunk after
    chunk: in a fresh process each new page of memory costs a page fault."""
    strings = pa.array(["x" * (16 << 20)])
    tracemalloc.start()
    try:
        assert not may_contain(strings, b"%", b"file:")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 << 20
