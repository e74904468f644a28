"""Writing `<version>.crc` after a commit (PROTOCOL.md "Version Checksum File", writer requirements).

After a commit lands at version v the transaction asks for the checksum of v, derived incrementally
(`engine.state.checksums.advanced`) from a base that describes v-1 exactly:

1. v-1's own `.crc` when it exists, parses and agrees with the transaction's snapshot of v-1
   (`agrees`: metadata, protocol, and its commit's txnId or the file count; one small read);
2. else, when the transaction read v-1 itself (no commit landed in between), its snapshot's state
   (`checksum_of`: sizes, histogram, txns, domains of the loaded files);
3. for version 0 (a table's creation), the empty table.

At checkpoint versions (multiples of `delta.checkpointInterval`) base 2 is used even when base 1
agrees: a chain of incremental checksums is anchored to the replayed state there (the checkpoint
about to be written costs far more), so a count another writer got wrong lives for at most one
interval; validation (table health, checkpoints) reports it meanwhile.

The commit must be countable on top of the transaction's snapshot (`commit_is_countable`: its
removes name live files, its adds new paths); when another writer's commits landed in between, base 1
is the only one and the check against the older snapshot errs towards writing nothing.

Invariants: the `.crc` of v is written only after commit v exists and never replaces one (put if
absent); nothing here can fail the commit: every error is logged and the checksum left out
(a missing `.crc` only costs a later reader a replay). The checksum never feeds conflict checks.
"""

from __future__ import annotations

import logging

from airflow_txnlog.engine import properties as props
from airflow_txnlog.engine.log import checksum as crc_file
from airflow_txnlog.engine.log.checksum import FileSizeHistogram, VersionChecksum
from airflow_txnlog.engine.state.checksums import CommitChanges, advanced, checksum_of, commit_is_countable
from airflow_txnlog.engine.state.snapshot import Snapshot
from airflow_txnlog.engine.storage import Storage

log = logging.getLogger(__name__)


def write_after_commit(storage: Storage, snapshot: Snapshot, version: int, changes: CommitChanges) -> bool:
    """Write the checksum of the just-committed `version`; True when one was written (never raises)."""
    try:
        base = _base(storage, snapshot, version, changes)
        crc = None if base is None else advanced(base, changes)
        return crc is not None and crc_file.write_checksum(storage, version, crc)
    except Exception as exc:  # auxiliary file: the commit has landed and stays a success
        log.warning("commit %d landed but its version checksum was not written: %s", version, exc)
        return False


def write_exact(storage: Storage, snapshot: Snapshot) -> bool:
    """Write the checksum of `snapshot`'s version from its state (a table's creation); never raises."""
    try:
        return crc_file.write_checksum(storage, snapshot.version, checksum_of(snapshot))
    except Exception as exc:  # auxiliary file, as above
        log.warning("version %d's checksum was not written: %s", snapshot.version, exc)
        return False


def _base(
    storage: Storage, snapshot: Snapshot, version: int, changes: CommitChanges
) -> VersionChecksum | None:
    if version == 0 or snapshot.version < 0:
        return _empty(changes)
    if not commit_is_countable(snapshot, changes):
        return None
    if snapshot.version != version - 1:  # other commits landed since the read: their checksum only
        return crc_file.read_checksum(storage, version - 1)
    if version % props.checkpoint_interval(snapshot.metadata.configuration) == 0:  # an anchor
        return checksum_of(snapshot)
    previous = crc_file.read_checksum(storage, version - 1)
    return previous if previous is not None and agrees(previous, snapshot) else checksum_of(snapshot)


def agrees(crc: VersionChecksum, snapshot: Snapshot) -> bool:
    """The cheap part of validation: a `.crc` another writer left that contradicts the snapshot we hold
    is not built upon (a wrong base would carry its error on). Metadata and protocol must be equal,
    and the file count too unless the file names the version's own commit (its `txnId`, as Delta's
    writers record it) — counting the live files of a million-file snapshot costs more than the rest
    of a commit."""
    state = snapshot.state
    if (crc.metadata, crc.protocol) != (snapshot.metadata, snapshot.protocol):
        return False
    own = state.commit_infos.get(snapshot.version, {}).get("txnId")
    return (crc.txn_id is not None and crc.txn_id == own) or crc.num_files == state.num_files()


def _empty(changes: CommitChanges) -> VersionChecksum | None:
    """The checksum before version 0: no files; version 0 brings the metadata and protocol."""
    if changes.metadata is None or changes.protocol is None:
        return None
    return VersionChecksum(
        table_size_bytes=0,
        num_files=0,
        metadata=changes.metadata,
        protocol=changes.protocol,
        set_transactions=(),
        domain_metadata=(),
        file_size_histogram=FileSizeHistogram.empty(),
        num_deleted_records=0,
        num_deletion_vectors=0,
    )
