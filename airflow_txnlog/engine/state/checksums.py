"""Version checksums computed from table state: exactly from a snapshot, or incrementally for a commit.

Three operations on `engine.log.checksum.VersionChecksum`:

- `checksum_of(snapshot)`: the checksum of a loaded snapshot, from its reconciled state (live file
  sizes, metadata, protocol, live `txn`s and domains, the in-commit timestamp, deletion vectors).
  This is the truth a `.crc` file is compared with.
- `advanced(base, commit)`: the checksum after one commit from the checksum before it, without the
  files: sizes and counts move by the commit's adds and removes, txns and domains are replaced per
  key. Exact only when every remove names a live file with its `size` and no add re-adds a live
  path (a re-add replaces the file instead of adding one); `commit_is_countable` checks that
  against the read snapshot, and `advanced` returns None when a remove has no size or the histogram
  cannot hold it. Delta on Spark derives its checksums the same way (ChecksumHook).
- `mismatches(recorded, actual)`: the fields where a `.crc` disagrees with replay ("State
  Validation"); optional fields are compared only when the file has them. `checksum_problems`
  validates a version's file (table health reports it, a checkpoint logs it).

`TableSummary` / `table_summary`: protocol, metadata, file count and size of the latest version, from
its checksum when it has a valid one (engine.log.latest_checksum: no checkpoint read, no replay),
else from the loaded snapshot.

A checksum is never an input to a commit's conflict decisions: those read the log.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_txnlog.engine import properties as props
from airflow_txnlog.engine.log.actions import AddFile, DomainMetadata, Metadata, Protocol, RemoveFile, Txn
from airflow_txnlog.engine.log.checksum import (
    DEFAULT_BIN_BOUNDARIES,
    FileSizeHistogram,
    VersionChecksum,
    checksum_key,
    checksum_name,
    parse_checksum,
)
from airflow_txnlog.engine.log.latest_checksum import latest_checksum
from airflow_txnlog.engine.log.replay import LogState, file_key
from airflow_txnlog.engine.state.snapshot import Snapshot
from airflow_txnlog.engine.storage import Storage

_EXACT_FLOAT = 2**53  # bincount sums in float64: exact below this


def histogram_of(sizes: pa.Array, boundaries: tuple[int, ...] = DEFAULT_BIN_BOUNDARIES) -> FileSizeHistogram:
    """The file size histogram of `sizes` (int64 bytes)."""
    values = np.asarray(pc.fill_null(sizes, 0).to_numpy(zero_copy_only=False), dtype=np.int64)
    bins = np.searchsorted(np.asarray(boundaries, dtype=np.int64), values, side="right") - 1
    counts = np.bincount(bins, minlength=len(boundaries))
    totals = np.bincount(bins, weights=values, minlength=len(boundaries))
    if totals.max(initial=0) >= _EXACT_FLOAT:  # petabytes in one bin: add exactly
        exact = np.zeros(len(boundaries), dtype=np.int64)
        np.add.at(exact, bins, values)
        totals = exact
    return FileSizeHistogram(boundaries, tuple(int(c) for c in counts), tuple(int(t) for t in totals))


def checksum_of(
    snapshot: Snapshot, *, sizes: pa.Array | None = None, dvs: list[dict[str, Any]] | None = None
) -> VersionChecksum:
    """The checksum of `snapshot`'s version, from its state (`sizes`: its `file_sizes()`, `dvs`: its
    state's `deletion_vectors()`, when the caller has them already)."""
    state = snapshot.state
    sizes = snapshot.file_sizes() if sizes is None else sizes
    dvs = state.deletion_vectors() if dvs is None else dvs
    ict = snapshot.timestamp if props.in_commit_timestamps(snapshot.metadata.configuration) else None
    return VersionChecksum(
        table_size_bytes=int(pc.sum(sizes).as_py() or 0),
        num_files=len(sizes),
        metadata=snapshot.metadata,
        protocol=snapshot.protocol,
        in_commit_timestamp=ict,
        set_transactions=tuple(sorted(state.txns.values(), key=lambda t: t.app_id)),
        domain_metadata=tuple(DomainMetadata.from_wire(d) for _, d in sorted(state.domains.items())),
        file_size_histogram=histogram_of(sizes),
        num_deleted_records=sum(int(d.get("cardinality") or 0) for d in dvs),
        num_deletion_vectors=len(dvs),
    )


@dataclass(frozen=True)
class CommitChanges:
    """What one commit changes, as `advanced` needs it."""

    adds: Sequence[AddFile]
    removes: Sequence[RemoveFile]
    txns: Sequence[Txn] = ()
    domains: Sequence[DomainMetadata] = ()
    metadata: Metadata | None = None
    protocol: Protocol | None = None
    in_commit_timestamp: int | None = None
    txn_id: str | None = None


def commit_is_countable(snapshot: Snapshot, changes: CommitChanges) -> bool:
    """True when the commit's adds are new files and its removes live ones, on top of `snapshot`
    (by reconciliation key: path and deletion vector)."""
    if not changes.adds and not changes.removes:
        return True
    added = {file_key(a.path, a.deletion_vector) for a in changes.adds}
    removed = {file_key(r.path, r.deletion_vector) for r in changes.removes}
    if len(removed) != len(changes.removes):
        return False
    live = _live_among(snapshot.state, added | removed)
    return not added & live and removed <= live


def _live_among(state: LogState, keys: set[str]) -> set[str]:
    """Which of `keys` are live files of `state`: one pass of the checkpoint's keys against these few
    (never a set of a million live keys), then the commits after it, which decide for what they hold."""
    live: set[str] = set()
    base = state.base_add_keys
    if base is not None and len(base):
        probe = _string_array(sorted(keys)).cast(base.type)
        hits = pc.is_in(base, value_set=probe)
        if pc.any(hits).as_py():
            live.update(base.filter(hits).to_pylist())
    for key in keys & state.tail.keys():
        is_add, _ = state.tail[key]
        (live.add if is_add else live.discard)(key)
    return live


def _string_array(values: list[str]) -> pa.Array:
    """A string array built from its buffers: `pa.array` of Python objects first imports pandas
    (pyarrow looks for pandas types), 0.2 s that a commit in a fresh process would otherwise pay."""
    data = [v.encode() for v in values]
    offsets = np.cumsum([0, *map(len, data)], dtype=np.int64).astype(np.int32)
    buffers = [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(data))]
    return pa.Array.from_buffers(pa.string(), len(data), buffers)


def advanced(base: VersionChecksum, changes: CommitChanges) -> VersionChecksum | None:
    """The checksum after the commit `changes` describes; None when it cannot be derived exactly."""
    if any(r.size is None for r in changes.removes) or any(a.size is None for a in changes.adds):
        return None
    added = [int(a.size or 0) for a in changes.adds]
    removed = [int(r.size or 0) for r in changes.removes]
    histogram = base.file_size_histogram
    if histogram is not None:
        histogram = histogram.moved(added, removed)
        if histogram is None:
            return None
    metadata, deleted = changes.metadata or base.metadata, _deleted_rows(base, changes)
    protocol = changes.protocol or base.protocol
    if metadata is None or protocol is None:  # (an old writer's base: it cannot describe the table)
        return None
    ict = changes.in_commit_timestamp if props.in_commit_timestamps(metadata.configuration) else None
    return VersionChecksum(
        table_size_bytes=base.table_size_bytes + sum(added) - sum(removed),
        num_files=base.num_files + len(added) - len(removed),
        metadata=metadata,
        protocol=protocol,
        txn_id=changes.txn_id,
        in_commit_timestamp=ict,
        set_transactions=_txns(base.set_transactions, changes.txns),
        domain_metadata=_domains(base.domain_metadata, changes.domains),
        file_size_histogram=histogram,
        num_deleted_records=deleted[0],
        num_deletion_vectors=deleted[1],
    )


def _txns(base: tuple[Txn, ...] | None, new: Sequence[Txn]) -> tuple[Txn, ...] | None:
    if base is None:
        return None
    merged = {t.app_id: t for t in base} | {t.app_id: t for t in new}
    return tuple(sorted(merged.values(), key=lambda t: t.app_id))


def _domains(
    base: tuple[DomainMetadata, ...] | None, new: Sequence[DomainMetadata]
) -> tuple[DomainMetadata, ...] | None:
    if base is None:
        return None
    merged = {d.domain: d for d in base} | {d.domain: d for d in new}
    return tuple(d for _, d in sorted(merged.items()) if not d.removed)


def _deleted_rows(base: VersionChecksum, changes: CommitChanges) -> tuple[int | None, int | None]:
    """(deleted rows, deletion vectors) after the commit; unknown when the base does not say."""
    if base.num_deleted_records is None or base.num_deletion_vectors is None:
        return None, None
    plus = [a.deletion_vector for a in changes.adds if a.deletion_vector]
    minus = [r.deletion_vector for r in changes.removes if r.deletion_vector]
    rows = sum(int(d.get("cardinality") or 0) for d in plus) - sum(
        int(d.get("cardinality") or 0) for d in minus
    )
    return base.num_deleted_records + rows, base.num_deletion_vectors + len(plus) - len(minus)


def mismatches(recorded: VersionChecksum, actual: VersionChecksum) -> list[str]:
    """The fields of `recorded` (a `.crc` file) that replay (`actual`) contradicts, with both values."""
    out = []
    pairs: list[tuple[str, object, object]] = [
        ("tableSizeBytes", recorded.table_size_bytes, actual.table_size_bytes),
        ("numFiles", recorded.num_files, actual.num_files),
    ]
    optional = [
        ("metadata", recorded.metadata, actual.metadata),
        ("protocol", _protocol(recorded.protocol), _protocol(actual.protocol)),
        ("setTransactions", _txn_map(recorded.set_transactions), _txn_map(actual.set_transactions)),
        ("domainMetadata", _domain_map(recorded.domain_metadata), _domain_map(actual.domain_metadata)),
        ("inCommitTimestampOpt", recorded.in_commit_timestamp, actual.in_commit_timestamp),
        ("numDeletedRecordsOpt", recorded.num_deleted_records, actual.num_deleted_records),
        ("numDeletionVectorsOpt", recorded.num_deletion_vectors, actual.num_deletion_vectors),
        ("fileSizeHistogram", *_histograms(recorded, actual)),
    ]
    pairs += [(name, got, want) for name, got, want in optional if got is not None and want is not None]
    for name, got, want in pairs:
        if got != want:
            out.append(f"{name}: the checksum says {_short(got)}, the log says {_short(want)}")
    return out


def _protocol(p: Protocol | None) -> tuple[int, int, frozenset[str], frozenset[str]] | None:
    if p is None:
        return None
    return (p.min_reader_version, p.min_writer_version, frozenset(p.reader_features or ()),
            frozenset(p.writer_features or ()))  # fmt: skip


def _txn_map(txns: tuple[Txn, ...] | None) -> dict[str, int] | None:
    return None if txns is None else {t.app_id: t.version for t in txns}


def _domain_map(domains: tuple[DomainMetadata, ...] | None) -> dict[str, str] | None:
    return None if domains is None else {d.domain: d.configuration for d in domains if not d.removed}


def _histograms(
    recorded: VersionChecksum, actual: VersionChecksum
) -> tuple[FileSizeHistogram | None, FileSizeHistogram | None]:
    got = recorded.file_size_histogram
    if got is None or actual.file_size_histogram is None:
        return None, None
    sizes = actual.file_size_histogram
    if got.boundaries != sizes.boundaries:  # another writer's bins: not comparable bin by bin
        return None, None
    return got, sizes


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


@dataclass(frozen=True)
class TableSummary:
    """What one version of a table is, without its files: from the version's checksum (`source`
    "checksum": no checkpoint read, no commit replayed) or else from a loaded snapshot ("snapshot")."""

    version: int
    protocol: Protocol
    metadata: Metadata
    num_files: int
    size_bytes: int
    file_size_histogram: FileSizeHistogram | None
    source: str

    def to_dict(self) -> dict[str, Any]:
        histogram = self.file_size_histogram
        return {
            "version": self.version,
            "protocol": self.protocol.to_wire()["protocol"],
            "metadata": self.metadata.to_wire()["metaData"],
            "num_files": self.num_files,
            "size_bytes": self.size_bytes,
            "file_size_histogram": None if histogram is None else histogram.to_wire(),
            "source": self.source,
        }


def table_summary(storage: Storage, snapshot: Callable[[], Snapshot]) -> TableSummary:
    """The latest version's summary: its checksum when it has a valid one, else `snapshot()`'s."""
    version, crc = latest_checksum(storage)
    if crc is not None and crc.metadata is not None and crc.protocol is not None:
        return TableSummary(
            version, crc.protocol, crc.metadata, crc.num_files, crc.table_size_bytes,
            crc.file_size_histogram, "checksum",
        )  # fmt: skip
    snap = snapshot()
    sizes = snap.file_sizes()
    total = int(pc.sum(sizes).as_py() or 0)
    return TableSummary(
        snap.version, snap.protocol, snap.metadata, len(sizes), total, histogram_of(sizes), "snapshot"
    )


def checksum_problems(
    snapshot: Snapshot, *, sizes: pa.Array | None = None, dvs: list[dict[str, Any]] | None = None
) -> list[str] | None:
    """Validate the `.crc` file of `snapshot`'s version against its replayed state: None when there is
    none, else what is wrong with it ([] when it agrees field by field). `sizes`, `dvs`: as
    `checksum_of` takes them."""
    name = checksum_name(snapshot.version)
    try:
        data = snapshot.storage.read(checksum_key(snapshot.version))
    except FileNotFoundError:
        return None
    try:
        recorded = parse_checksum(data)
    except ValueError as exc:
        return [f"{name}: {exc}"]
    actual = checksum_of(snapshot, sizes=sizes, dvs=dvs)
    return [f"{name}: {problem}" for problem in mismatches(recorded, actual)]
