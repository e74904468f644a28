"""UniForm: Iceberg v2 metadata for a Delta table (engine.uniform.iceberg_sync has the algorithm).

The package's own names import pyiceberg only when called, so a table that is not UniForm never
loads it (it adds ~0.2 s to an import)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from airflow_txnlog.engine.state.snapshot import Snapshot
    from airflow_txnlog.engine.storage import Storage
    from airflow_txnlog.engine.uniform.iceberg_sync import SyncResult


def sync(storage: Storage, snapshot: Snapshot) -> SyncResult:
    """`iceberg_sync.sync`."""
    from airflow_txnlog.engine.uniform import iceberg_sync  # noqa: PLC0415 (pyiceberg on demand)

    return iceberg_sync.sync(storage, snapshot)


def after_commit(storage: Storage, snapshot: Snapshot) -> SyncResult | None:
    """`iceberg_sync.after_commit`."""
    from airflow_txnlog.engine.uniform import iceberg_sync  # noqa: PLC0415 (pyiceberg on demand)

    return iceberg_sync.after_commit(storage, snapshot)


def reflected_version(storage: Storage) -> int | None:
    """`iceberg_sync.reflected_version`."""
    from airflow_txnlog.engine.uniform import iceberg_sync  # noqa: PLC0415 (pyiceberg on demand)

    return iceberg_sync.reflected_version(storage)
