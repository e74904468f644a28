"""Results of the Spark operations: small frozen values (an Airflow task can push them to XCom)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class WriteResult:
    """What `SparkTable.write` committed.

    :param version: the new version; for a skipped idempotent write, the version that wrote it; None
        when nothing was written (an empty append).
    :param num_files: data files added.
    :param num_rows: rows written.
    :param num_bytes: bytes of the data files added.
    :param skipped: True when `txn=(app_id, version)` had already been committed.
    :param metrics: the commit's `operationMetrics` (Delta's names).
    """

    version: int | None
    num_files: int = 0
    num_rows: int = 0
    num_bytes: int = 0
    skipped: bool = False
    metrics: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class DmlResult:
    """What a DELETE / UPDATE / MERGE / OPTIMIZE did.

    :param operation: "DELETE", "UPDATE", "MERGE" or "OPTIMIZE".
    :param version: the new version, or None when nothing matched (no commit).
    :param metrics: the commit's `operationMetrics` (Delta's names, e.g. numRemovedFiles).
    :param scanned_files: files whose data Spark read (paths relative to the table root).
    :param removed_files: files removed by the commit.
    :param added_files: files added by the commit.
    """

    operation: str
    version: int | None
    metrics: Mapping[str, int] = field(default_factory=dict)
    scanned_files: tuple[str, ...] = ()
    removed_files: tuple[str, ...] = ()
    added_files: tuple[str, ...] = ()
