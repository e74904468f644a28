"""The transaction-log engine: a Delta Lake protocol implementation in pure Python + pyarrow + fsspec.

Never imports airflow, pyspark or pandas. Module order (each imports only those before it):
errors -> actions / log_paths / schema / properties / stats / predicates -> storage ->
replay / log_segment -> checkpoint / scan -> snapshot -> conflicts -> transaction -> writer -> table.
"""

from __future__ import annotations

from airflow_txnlog.engine.actions import AddFile, CommitInfo, Metadata, Protocol, RemoveFile, Txn
from airflow_txnlog.engine.errors import (
    AppendOnlyViolationError,
    CommitConflictError,
    CommitRetriesExceededError,
    CommitTooLargeError,
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    ConcurrentTransactionError,
    ForeignCommitsError,
    InvalidArgumentError,
    LogCorruptedError,
    MetadataChangedError,
    PredicateError,
    ProtocolChangedError,
    RestoreError,
    RestoreFilesMissingError,
    RetentionTooShortError,
    SavepointExistsError,
    SavepointNotFoundError,
    SchemaMismatchError,
    StorageError,
    TableExistsError,
    TableNotFoundError,
    TxnLogError,
    UnsupportedFeatureError,
    VacuumInProgressError,
    VersionAlreadyExistsError,
    VersionNotFoundError,
)
from airflow_txnlog.engine.health import TableHealth
from airflow_txnlog.engine.log_cleanup import CleanupResult
from airflow_txnlog.engine.restore import RestoreResult
from airflow_txnlog.engine.savepoints import Savepoint
from airflow_txnlog.engine.snapshot import Snapshot
from airflow_txnlog.engine.table import Table
from airflow_txnlog.engine.transaction import Transaction
from airflow_txnlog.engine.vacuum import VacuumResult

__all__ = [
    "AddFile",
    "AppendOnlyViolationError",
    "CleanupResult",
    "CommitConflictError",
    "CommitInfo",
    "CommitRetriesExceededError",
    "CommitTooLargeError",
    "ConcurrentAppendError",
    "ConcurrentDeleteDeleteError",
    "ConcurrentDeleteReadError",
    "ConcurrentTransactionError",
    "ForeignCommitsError",
    "InvalidArgumentError",
    "LogCorruptedError",
    "Metadata",
    "MetadataChangedError",
    "PredicateError",
    "Protocol",
    "ProtocolChangedError",
    "RemoveFile",
    "RestoreError",
    "RestoreFilesMissingError",
    "RestoreResult",
    "RetentionTooShortError",
    "Savepoint",
    "SavepointExistsError",
    "SavepointNotFoundError",
    "SchemaMismatchError",
    "Snapshot",
    "StorageError",
    "Table",
    "TableExistsError",
    "TableHealth",
    "TableNotFoundError",
    "Transaction",
    "Txn",
    "TxnLogError",
    "UnsupportedFeatureError",
    "VacuumInProgressError",
    "VacuumResult",
    "VersionAlreadyExistsError",
    "VersionNotFoundError",
]
