"""Version checksum files: `_delta_log/<version>.crc` (PROTOCOL.md "Version Checksum File").

A checksum is one JSON object describing the table *after* a version: `tableSizeBytes` (sum of the
live adds' sizes), `numFiles`, `numMetadata` / `numProtocol` (always 1), the `metadata` and
`protocol`, and optionally `txnId`, `inCommitTimestampOpt`, `setTransactions`, `domainMetadata`
(without tombstones), `fileSizeHistogram`, `numDeletedRecordsOpt` / `numDeletionVectorsOpt`.
Delta on Spark wrote the histogram as `histogramOpt` until 4.x; both names are read, the
protocol's `fileSizeHistogram` is written (Delta on Spark and delta-kernel read either).

Invariants of this module:
- It is wire format only: pure Python, no pyarrow, so the light readers (the Airflow hook's polls)
  can use it. Computing a checksum from a table state is `engine.state.checksums`.
- A checksum is auxiliary. `read_checksum` returns None for a missing, unreadable or malformed file
  (readers "MUST continue functioning if Version Checksum files are missing"); it never raises for
  the file's content, so a bad `.crc` can only send a reader to the log, never stop it.
- `write_checksum` writes with put-if-absent (writers "MUST NOT overwrite existing Version
  Checksum files") and only after the commit of that version exists (the caller's duty).
- Histogram bins: bin i holds sizes in [boundaries[i], boundaries[i+1]); the last bin is open.
  The default boundaries are Delta's (95 bins, 0 .. 256 GiB), so histograms add up across writers.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from airflow_txnlog.engine.log.actions import METADATA, PROTOCOL, DomainMetadata, Metadata, Protocol, Txn
from airflow_txnlog.engine.storage import LOG_DIR, Storage

log = logging.getLogger(__name__)

TXN_ID = "txnId"
TABLE_SIZE_BYTES = "tableSizeBytes"
NUM_FILES = "numFiles"
NUM_METADATA = "numMetadata"
NUM_PROTOCOL = "numProtocol"
IN_COMMIT_TIMESTAMP_OPT = "inCommitTimestampOpt"
SET_TRANSACTIONS = "setTransactions"
DOMAIN_METADATA_LIST = "domainMetadata"
CRC_METADATA = "metadata"
CRC_PROTOCOL = "protocol"
FILE_SIZE_HISTOGRAM = "fileSizeHistogram"
LEGACY_HISTOGRAM = "histogramOpt"  # Delta on Spark's name before the protocol named the field
NUM_DELETED_RECORDS = "numDeletedRecordsOpt"
NUM_DELETION_VECTORS = "numDeletionVectorsOpt"
# The protocol requires `metadata` and `protocol` too, but Delta writers before 1.0 (Databricks
# Runtime 8) left them out: such a file still counts files and bytes, it cannot describe the table.
REQUIRED_FIELDS = (TABLE_SIZE_BYTES, NUM_FILES, NUM_METADATA, NUM_PROTOCOL)

_KB, _MB, _GB = 1024, 1024**2, 1024**3


def _default_boundaries() -> tuple[int, ...]:
    """Delta's default bin boundaries (delta-kernel `FileSizeHistogram.createDefaultBinBoundaries`)."""
    out = [0]
    out += [_KB * 8 * 2**i for i in range(10)]  # 8 KiB .. 4 MiB, doubling
    runs = [(8, 40, 4), (48, 120, 8), (124, 144, 4), (160, 576, 16), (640, 1408, 64), (1536, 2048, 128)]
    for first, last, step in runs:
        out += [mb * _MB for mb in range(first, last + 1, step)]
    out += [mb * _MB for mb in range(2304, 4096 + 1, 256)]
    out += [_GB * 8 * 2**i for i in range(6)]  # 8 GiB .. 256 GiB, doubling
    return tuple(out)


DEFAULT_BIN_BOUNDARIES = _default_boundaries()


def checksum_name(version: int) -> str:
    return f"{version:020d}.crc"


def checksum_key(version: int) -> str:
    return f"{LOG_DIR}/{checksum_name(version)}"


@dataclass(frozen=True, slots=True)
class FileSizeHistogram:
    """Files and bytes per size bin; `boundaries[0]` is 0 and the arrays have one entry a bin."""

    boundaries: tuple[int, ...]
    file_counts: tuple[int, ...]
    total_bytes: tuple[int, ...]

    @classmethod
    def empty(cls, boundaries: tuple[int, ...] = DEFAULT_BIN_BOUNDARIES) -> FileSizeHistogram:
        zeros = (0,) * len(boundaries)
        return cls(boundaries, zeros, zeros)

    def bin_of(self, size: int) -> int:
        return bisect.bisect_right(self.boundaries, size) - 1

    def moved(self, added: Iterable[int], removed: Iterable[int]) -> FileSizeHistogram | None:
        """This histogram with files of the `added` sizes in and the `removed` out; None when a removed
        file's bin is empty (the histogram did not describe the files being removed)."""
        counts, sizes = list(self.file_counts), list(self.total_bytes)
        for size, sign in [*((s, 1) for s in added), *((s, -1) for s in removed)]:
            i = self.bin_of(size)
            counts[i] += sign
            sizes[i] += sign * size
            if counts[i] < 0 or sizes[i] < 0:
                return None
        return FileSizeHistogram(self.boundaries, tuple(counts), tuple(sizes))

    def to_wire(self) -> dict[str, Any]:
        return {
            "sortedBinBoundaries": list(self.boundaries),
            "fileCounts": list(self.file_counts),
            "totalBytes": list(self.total_bytes),
        }

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> FileSizeHistogram:
        out = cls(
            tuple(int(x) for x in d["sortedBinBoundaries"]),
            tuple(int(x) for x in d["fileCounts"]),
            tuple(int(x) for x in d["totalBytes"]),
        )
        bounds = out.boundaries
        if len(bounds) < 2 or bounds[0] != 0 or list(bounds) != sorted(set(bounds)):
            raise ValueError("sortedBinBoundaries must start at 0 and increase")
        if not len(bounds) == len(out.file_counts) == len(out.total_bytes):
            raise ValueError("the histogram's arrays differ in length")
        return out


@dataclass(frozen=True, slots=True)
class VersionChecksum:
    """One `.crc` file: the table after a version (module docstring)."""

    table_size_bytes: int
    num_files: int
    metadata: Metadata | None  # None only in files of old writers (REQUIRED_FIELDS)
    protocol: Protocol | None
    num_metadata: int = 1
    num_protocol: int = 1
    txn_id: str | None = None
    in_commit_timestamp: int | None = None
    set_transactions: tuple[Txn, ...] | None = None
    domain_metadata: tuple[DomainMetadata, ...] | None = None
    file_size_histogram: FileSizeHistogram | None = None
    num_deleted_records: int | None = None
    num_deletion_vectors: int | None = None

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            TXN_ID: self.txn_id,
            TABLE_SIZE_BYTES: self.table_size_bytes,
            NUM_FILES: self.num_files,
            NUM_METADATA: self.num_metadata,
            NUM_PROTOCOL: self.num_protocol,
            IN_COMMIT_TIMESTAMP_OPT: self.in_commit_timestamp,
            NUM_DELETED_RECORDS: self.num_deleted_records,
            NUM_DELETION_VECTORS: self.num_deletion_vectors,
        }
        if self.set_transactions is not None:
            out[SET_TRANSACTIONS] = [t.to_wire()["txn"] for t in self.set_transactions]
        if self.domain_metadata is not None:
            out[DOMAIN_METADATA_LIST] = [d.to_wire()["domainMetadata"] for d in self.domain_metadata]
        out[CRC_METADATA] = None if self.metadata is None else self.metadata.to_wire()[METADATA]
        out[CRC_PROTOCOL] = None if self.protocol is None else self.protocol.to_wire()[PROTOCOL]
        if self.file_size_histogram is not None:
            out[FILE_SIZE_HISTOGRAM] = self.file_size_histogram.to_wire()
        return {k: v for k, v in out.items() if v is not None}

    def to_bytes(self) -> bytes:
        return orjson.dumps(self.to_wire())

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> VersionChecksum:
        """Parse a checksum object; ValueError / KeyError / TypeError when it is malformed."""
        missing = [f for f in REQUIRED_FIELDS if d.get(f) is None]
        if missing:
            raise ValueError(f"required fields missing: {missing}")
        histogram = d.get(FILE_SIZE_HISTOGRAM) or d.get(LEGACY_HISTOGRAM)
        txns, domains = d.get(SET_TRANSACTIONS), d.get(DOMAIN_METADATA_LIST)
        return cls(
            table_size_bytes=int(d[TABLE_SIZE_BYTES]),
            num_files=int(d[NUM_FILES]),
            metadata=None if d.get(CRC_METADATA) is None else Metadata.from_wire(d[CRC_METADATA]),
            protocol=None if d.get(CRC_PROTOCOL) is None else Protocol.from_wire(d[CRC_PROTOCOL]),
            num_metadata=int(d[NUM_METADATA]),
            num_protocol=int(d[NUM_PROTOCOL]),
            txn_id=d.get(TXN_ID),
            in_commit_timestamp=_opt_int(d.get(IN_COMMIT_TIMESTAMP_OPT)),
            set_transactions=None if txns is None else tuple(Txn.from_wire(t) for t in txns),
            domain_metadata=None if domains is None else tuple(DomainMetadata.from_wire(x) for x in domains),
            file_size_histogram=None if not histogram else FileSizeHistogram.from_wire(histogram),
            num_deleted_records=_opt_int(d.get(NUM_DELETED_RECORDS)),
            num_deletion_vectors=_opt_int(d.get(NUM_DELETION_VECTORS)),
        )


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def parse_checksum(data: bytes) -> VersionChecksum:
    """A checksum from a file's bytes; ValueError naming what is wrong when it is not one."""
    try:
        wire = orjson.loads(data)
        if not isinstance(wire, dict):
            raise ValueError("not a JSON object")
        crc = VersionChecksum.from_wire(wire)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"not a version checksum: {exc}") from exc
    if crc.num_metadata != 1 or crc.num_protocol != 1 or crc.num_files < 0 or crc.table_size_bytes < 0:
        raise ValueError("numMetadata and numProtocol must be 1, numFiles and tableSizeBytes >= 0")
    return crc


def read_checksum(storage: Storage, version: int) -> VersionChecksum | None:
    """The checksum of `version`, or None when there is none or it cannot be used (logged)."""
    try:
        data = storage.read(checksum_key(version))
    except FileNotFoundError:
        return None
    except Exception as exc:  # auxiliary file: any failure to read it sends the reader to the log
        log.warning("could not read %s (%s); replaying the log instead", checksum_name(version), exc)
        return None
    try:
        return parse_checksum(data)
    except ValueError as exc:
        log.warning("ignoring %s: %s", checksum_name(version), exc)
        return None


def write_checksum(storage: Storage, version: int, crc: VersionChecksum) -> bool:
    """Write the checksum of `version` unless one exists (then False: existing ones are never replaced)."""
    try:
        storage.put_if_absent(checksum_key(version), crc.to_bytes())
    except FileExistsError:  # (the storage contract's answer for an existing key)
        return False
    return True
