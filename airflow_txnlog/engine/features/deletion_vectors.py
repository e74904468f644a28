"""Deletion vectors: rows of a data file marked deleted without rewriting it (Delta PROTOCOL.md,
"Deletion Vectors" and the appendix "Deletion Vector Format").

A live file's `deletionVector` descriptor names a set of row positions (0-based, over the whole
parquet file) that readers must not return. The descriptor:

    storageType 'u'  pathOrInlineDv = <random prefix><UUID, 20 Z85 chars>; the DV lives in
                     <table>/<prefix>/deletion_vector_<uuid>.bin
                'p'  pathOrInlineDv = an absolute path (URI, like add.path)
                'i'  pathOrInlineDv = Z85 of the serialized bitmap itself (sizeInBytes bytes)
    offset           where the DV starts in its file (absent for 'i')
    sizeInBytes      the serialized bitmap's size;  cardinality  how many rows it deletes

A DV file is a version byte (1) followed by DVs; at `offset`: the size as a big-endian int32, the
bitmap, then the CRC-32 of the bitmap as a big-endian int32. The bitmap is Delta's
`RoaringBitmapArray` in its portable format: the little-endian int32 magic 1681511377, then the
64-bit portable Roaring serialization, decoded by pyroaring (CRoaring), not by hand.

Invariants checked on every read (a mismatch is `LogCorruptedError` naming the data file): version
byte, size, checksum, magic, and cardinality = the bitmap's size. The file key in log replay is
path + `unique_id` (`<storageType><pathOrInlineDv>[@<offset>]`), so a file whose DV changes is a
remove of the old key and an add of the new one.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from pyroaring import BitMap64

from airflow_txnlog.engine.errors import LogCorruptedError
from airflow_txnlog.engine.log.actions import decode_path
from airflow_txnlog.engine.storage import Storage

PORTABLE_MAGIC = 1681511377
NATIVE_MAGIC = 1681511376
FILE_FORMAT_VERSION = 1
DV_FILE_PREFIX = "deletion_vector_"
_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_VALUE = {c: i for i, c in enumerate(_Z85)}
_UUID_CHARS = 20


def z85_decode(text: str, size: int | None = None) -> bytes:
    """Z85 (ZeroMQ RFC 32) as Delta uses it: 5 characters per 4 bytes, the last group padded,
    the result cut to `size` bytes when given."""
    if len(text) % 5:
        raise ValueError(f"Z85 text must be a multiple of 5 characters long, got {len(text)}")
    out = bytearray()
    for i in range(0, len(text), 5):
        value = 0
        for ch in text[i : i + 5]:
            if ch not in _Z85_VALUE:
                raise ValueError(f"{ch!r} is not a Z85 character")
            value = value * 85 + _Z85_VALUE[ch]
        if value > 0xFFFFFFFF:
            raise ValueError(f"Z85 group {text[i : i + 5]!r} is out of range")
        out += value.to_bytes(4, "big")
    return bytes(out if size is None else out[:size])


def z85_encode(data: bytes) -> str:
    """The inverse of `z85_decode` (input padded with zero bytes to a multiple of 4)."""
    padded = data + b"\0" * (-len(data) % 4)
    chars: list[str] = []
    for i in range(0, len(padded), 4):
        value = int.from_bytes(padded[i : i + 4], "big")
        group = []
        for _ in range(5):
            value, digit = divmod(value, 85)
            group.append(_Z85[digit])
        chars.extend(reversed(group))
    return "".join(chars)


@dataclass(frozen=True)
class DeletionVector:
    """One `deletionVector` descriptor (the wire names are the protocol's)."""

    storage_type: str
    path_or_inline: str
    size_in_bytes: int
    cardinality: int
    offset: int | None = None

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> DeletionVector:
        try:
            dv = cls(
                storage_type=str(d["storageType"]),
                path_or_inline=str(d["pathOrInlineDv"]),
                size_in_bytes=int(d["sizeInBytes"]),
                cardinality=int(d["cardinality"]),
                offset=None if d.get("offset") is None else int(d["offset"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise LogCorruptedError(f"deletion vector descriptor {dict(d)!r} is invalid: {exc}") from exc
        if dv.storage_type not in ("u", "i", "p"):
            raise LogCorruptedError(f"deletion vector storageType {dv.storage_type!r} is not one of u, i, p")
        if dv.size_in_bytes < 0 or dv.cardinality < 0:
            raise LogCorruptedError(f"deletion vector {dict(d)!r} has a negative size or cardinality")
        return dv

    @property
    def unique_id(self) -> str:
        """`<storageType><pathOrInlineDv>[@<offset>]`: with the path, the file's key in log replay."""
        base = f"{self.storage_type}{self.path_or_inline}"
        return base if self.offset is None else f"{base}@{self.offset}"

    def relative_path(self) -> str | None:
        """Where the DV file is, relative to the table root ('u'), absolute ('p'), or None ('i')."""
        if self.storage_type == "i":
            return None
        if self.storage_type == "p":
            return decode_path(self.path_or_inline)
        encoded = self.path_or_inline
        if len(encoded) < _UUID_CHARS:
            raise LogCorruptedError(f"deletion vector path {encoded!r} is shorter than a Z85 UUID")
        prefix, tail = encoded[:-_UUID_CHARS], encoded[-_UUID_CHARS:]
        try:
            name = f"{DV_FILE_PREFIX}{uuid.UUID(bytes=z85_decode(tail))}.bin"
        except ValueError as exc:
            raise LogCorruptedError(f"deletion vector path {encoded!r}: {exc}") from exc
        return f"{prefix}/{name}" if prefix else name


def _bitmap_rows(data: bytes, where: str) -> np.ndarray[Any, np.dtype[np.uint64]]:
    """Row positions in a serialized `RoaringBitmapArray` (portable format)."""
    if len(data) < 4:
        raise LogCorruptedError(f"{where}: deletion vector of {len(data)} bytes is truncated")
    (magic,) = struct.unpack_from("<i", data)
    if magic == NATIVE_MAGIC:
        raise LogCorruptedError(
            f"{where}: deletion vector in the native RoaringBitmapArray format is not supported"
        )
    if magic != PORTABLE_MAGIC:
        raise LogCorruptedError(
            f"{where}: deletion vector has magic number {magic}, expected {PORTABLE_MAGIC}"
        )
    try:
        bitmap = BitMap64.deserialize(data[4:])
    except (ValueError, IndexError) as exc:
        raise LogCorruptedError(f"{where}: deletion vector bitmap is unreadable: {exc!r}") from exc
    return np.fromiter(bitmap, dtype=np.uint64, count=len(bitmap))


def _from_file(storage: Storage, dv: DeletionVector, where: str) -> bytes:
    rel = dv.relative_path()
    assert rel is not None
    offset = 1 if dv.offset is None else dv.offset
    try:
        with storage.fs.open(storage.resolve(rel), "rb") as fh:
            if offset > 0:
                head = fh.read(1)
                if head != bytes([FILE_FORMAT_VERSION]):
                    raise LogCorruptedError(
                        f"{where}: deletion vector file {rel} has format version {head!r}"
                    )
            fh.seek(offset)
            framed: bytes = fh.read(dv.size_in_bytes + 8)
    except FileNotFoundError as exc:
        raise LogCorruptedError(f"{where}: deletion vector file {rel} is missing") from exc
    except OSError as exc:
        raise LogCorruptedError(f"{where}: deletion vector file {rel} is unreadable: {exc}") from exc
    if len(framed) < dv.size_in_bytes + 8:
        raise LogCorruptedError(f"{where}: deletion vector file {rel} ends before offset {offset} + size")
    (size,) = struct.unpack_from(">i", framed)
    data = framed[4 : 4 + dv.size_in_bytes]
    (checksum,) = struct.unpack_from(">I", framed, 4 + dv.size_in_bytes)
    if size != dv.size_in_bytes:
        raise LogCorruptedError(
            f"{where}: deletion vector size {size} in {rel} != sizeInBytes {dv.size_in_bytes}"
        )
    if zlib.crc32(data) != checksum:
        raise LogCorruptedError(f"{where}: deletion vector checksum mismatch in {rel}")
    return data


def deleted_rows(storage: Storage, descriptor: Mapping[str, Any], *, data_file: str) -> np.ndarray[Any, Any]:
    """Sorted row positions that `descriptor` deletes from `data_file` (uint64)."""
    dv = DeletionVector.from_wire(descriptor)
    where = f"data file {data_file!r}"
    if dv.storage_type == "i":
        try:
            data = z85_decode(dv.path_or_inline, dv.size_in_bytes)
        except ValueError as exc:
            raise LogCorruptedError(f"{where}: inline deletion vector: {exc}") from exc
    else:
        data = _from_file(storage, dv, where)
    rows = _bitmap_rows(data, where)
    if len(rows) != dv.cardinality:
        raise LogCorruptedError(
            f"{where}: deletion vector holds {len(rows)} rows, cardinality says {dv.cardinality}"
        )
    return rows


def keep_mask(num_rows: int, deleted: np.ndarray[Any, Any], *, data_file: str) -> np.ndarray[Any, Any]:
    """Boolean mask over a file's `num_rows` rows: False at the deleted positions."""
    if len(deleted) and int(deleted[-1]) >= num_rows:
        raise LogCorruptedError(
            f"data file {data_file!r}: its deletion vector deletes row {int(deleted[-1])}, "
            f"but the file has {num_rows} rows"
        )
    mask = np.ones(num_rows, dtype=bool)
    mask[deleted.astype(np.int64)] = False
    return mask


def dv_file_paths(descriptors: Iterable[Mapping[str, Any]]) -> set[str]:
    """The files (relative to the table root, or absolute) that hold these deletion vectors;
    inline ones have none. Many files usually share one DV file."""
    seen: set[tuple[str, str]] = set()
    paths: set[str] = set()
    for d in descriptors:
        key = (str(d.get("storageType")), str(d.get("pathOrInlineDv")))
        if key in seen or key[0] == "i":
            continue
        seen.add(key)
        path = DeletionVector.from_wire(d).relative_path()
        if path is not None:
            paths.add(path)
    return paths


def write_dv_file(storage: Storage, deleted: Mapping[str, Iterable[int]]) -> dict[str, dict[str, Any]]:
    """Write one DV file holding a deletion vector per key of `deleted` (row positions of that data
    file); returns each key's `deletionVector` descriptor (storageType 'u', no prefix). The file is
    new (a fresh UUID): until a commit names it, it is an orphan that vacuum reclaims."""
    dv_id = uuid.uuid4()
    blob = bytearray([FILE_FORMAT_VERSION])
    out: dict[str, dict[str, Any]] = {}
    for key, rows in deleted.items():
        bitmap = BitMap64(rows)
        data = struct.pack("<i", PORTABLE_MAGIC) + bitmap.serialize()
        out[key] = {
            "storageType": "u",
            "pathOrInlineDv": z85_encode(dv_id.bytes),
            "offset": len(blob),
            "sizeInBytes": len(data),
            "cardinality": len(bitmap),
        }
        blob += struct.pack(">i", len(data)) + data + struct.pack(">I", zlib.crc32(data))
    storage.put_if_absent(f"{DV_FILE_PREFIX}{dv_id}.bin", bytes(blob))
    return out
