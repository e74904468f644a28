"""Spark's hash partitioning of file paths, which the protocol requires for multi-part checkpoints.

"All actions for a given file path must be in the same part", clustered the way Spark's
`repartition(parts, path)` does: part = pmod(murmur3_32(path, seed 42), parts) + 1, with Spark's
variant of murmur3_32 (the trailing bytes of a string that is not a multiple of four are mixed one
byte at a time, each as a signed int). A null path (protocol, metaData, txn, domainMetadata rows)
hashes to the seed. Vectorised with numpy: paths are grouped by byte length, and each group's 4-byte
blocks (then its trailing bytes) are mixed column by column.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

SPARK_HASH_SEED = 42


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def mix_k1(k: np.ndarray) -> np.ndarray:
    return _rotl(k * np.uint32(0xCC9E2D51), 15) * np.uint32(0x1B873593)


def mix_h1(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    return _rotl(h ^ k, 13) * np.uint32(5) + np.uint32(0xE6546B64)


def fmix(h: np.ndarray, length: int) -> np.ndarray:
    h = h ^ np.uint32(length)
    h = (h ^ (h >> np.uint32(16))) * np.uint32(0x85EBCA6B)
    h = (h ^ (h >> np.uint32(13))) * np.uint32(0xC2B2AE35)
    return h ^ (h >> np.uint32(16))  # type: ignore[no-any-return]


def murmur_rows(rows: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    """Spark's `Murmur3_x86_32.hashUnsafeBytes` of each row of a (k, n) uint8 matrix, each with its
    seed (uint32)."""
    n = rows.shape[1]
    aligned, h = n - n % 4, seeds.astype(np.uint32)
    words = np.ascontiguousarray(rows[:, :aligned]).view("<u4")  # Spark reads little-endian ints
    for j in range(aligned // 4):
        h = mix_h1(h, mix_k1(words[:, j]))
    for j in range(aligned, n):  # Spark's legacy tail: each byte, sign-extended, mixed as a whole int
        h = mix_h1(h, mix_k1(rows[:, j].view(np.int8).astype(np.int32).view(np.uint32)))
    return fmix(h, n)


def hash_bytes(values: pa.Array, seeds: np.ndarray) -> np.ndarray:
    """Murmur3 (uint32) of each row's bytes with its own seed, computed column-wise per byte length
    (a NULL row hashes as empty: callers keep their own rule for NULL)."""
    values = pc.fill_null(pc.cast(values, pa.binary()), b"")
    lengths = pc.binary_length(values).to_numpy(zero_copy_only=False)
    out = np.empty(len(values), dtype=np.uint32)
    for n in np.unique(lengths).tolist():
        idx = np.flatnonzero(lengths == n)
        if n == 0:
            rows = np.zeros((len(idx), 0), dtype=np.uint8)
        else:
            fixed = values.take(pa.array(idx)).cast(pa.binary(n))
            buf = np.frombuffer(fixed.buffers()[1], dtype=np.uint8)
            rows = buf[fixed.offset * n : (fixed.offset + len(fixed)) * n].reshape(-1, n)
        out[idx] = murmur_rows(rows, seeds[idx])
    return out


def _spark_hashes(paths: pa.Array) -> np.ndarray:
    """Spark's `hash(path)` of each (non-null) string."""
    return hash_bytes(paths, np.full(len(paths), SPARK_HASH_SEED, dtype=np.uint32)).view(np.int32)


def part_numbers(paths: pa.Array, parts: int) -> np.ndarray:
    """1-based part of each row: pmod(Spark hash of the path, parts) + 1; a null path hashes to the seed."""
    hashes = np.full(len(paths), SPARK_HASH_SEED, dtype=np.int64)
    valid = pc.is_valid(paths).to_numpy(zero_copy_only=False)
    if valid.any():
        hashes[valid] = _spark_hashes(paths.filter(pa.array(valid)))
    return hashes % parts + 1  # numpy's % of a negative int by a positive one is Java's pmod


def part_of(path: str | None, parts: int) -> int:
    """The part (1-based) of a `parts`-part checkpoint that holds the actions of the file at `path` (as
    written in the log, percent-encoded); None for the actions that name no file."""
    return int(part_numbers(pa.array([path], pa.string()), parts)[0])
