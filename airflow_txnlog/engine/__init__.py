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
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    ConcurrentTransactionError,
    InvalidArgumentError,
    LogCorruptedError,
    MetadataChangedError,
    PredicateError,
    ProtocolChangedError,
    SchemaMismatchError,
    StorageError,
    TableExistsError,
    TableNotFoundError,
    TxnLogError,
    UnsupportedFeatureError,
    VersionAlreadyExistsError,
    VersionNotFoundError,
)
from airflow_txnlog.engine.snapshot import Snapshot
from airflow_txnlog.engine.table import Table
from airflow_txnlog.engine.transaction import Transaction

__all__ = [
    "AddFile",
    "AppendOnlyViolationError",
    "CommitConflictError",
    "CommitInfo",
    "CommitRetriesExceededError",
    "ConcurrentAppendError",
    "ConcurrentDeleteDeleteError",
    "ConcurrentDeleteReadError",
    "ConcurrentTransactionError",
    "InvalidArgumentError",
    "LogCorruptedError",
    "Metadata",
    "MetadataChangedError",
    "PredicateError",
    "Protocol",
    "ProtocolChangedError",
    "RemoveFile",
    "SchemaMismatchError",
    "Snapshot",
    "StorageError",
    "Table",
    "TableExistsError",
    "TableNotFoundError",
    "Transaction",
    "Txn",
    "TxnLogError",
    "UnsupportedFeatureError",
    "VersionAlreadyExistsError",
    "VersionNotFoundError",
]
