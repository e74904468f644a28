"""The latest version of a table and its version checksum, from one short listing of the log.

`latest_checksum` lists `_delta_log/` from the `_last_checkpoint` hint (a few dozen names at most
after a checkpoint) and reads `<latest>.crc` when the listing shows one: protocol, metadata, file
count and size of the latest version without reading a checkpoint or replaying a commit. Pure Python
and fsspec (no pyarrow): the Airflow layer's light readers may call it.

Invariant: the checksum returned is the one of the version returned, and only a valid one that
describes the table (a file that does not parse as a checksum is ignored, `engine.log.checksum.
read_checksum`, and so is an old writer's without `metadata` and `protocol`).
"""

from __future__ import annotations

from airflow_txnlog.engine.log.checksum import VersionChecksum, read_checksum
from airflow_txnlog.engine.log.log_reader import read_last_checkpoint
from airflow_txnlog.engine.log.log_segment import list_log
from airflow_txnlog.engine.storage import Storage


def latest_checksum(storage: Storage) -> tuple[int, VersionChecksum | None]:
    """(the latest version, its checksum or None when it has no usable one)."""
    hint = read_last_checkpoint(storage)
    listing = list_log(storage, hint_version=hint.version if hint else None)
    latest = listing.latest()
    assert latest is not None  # (list_log raises TableNotFoundError for an empty log)
    crc = read_checksum(storage, latest) if latest in listing.checksums else None
    if crc is None or crc.metadata is None or crc.protocol is None:  # (an old writer's: counts only)
        return latest, None
    return latest, crc
