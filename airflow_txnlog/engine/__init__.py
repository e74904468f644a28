"""The transaction-log engine: a Delta Lake protocol implementation in pure Python + pyarrow + fsspec.

Never imports airflow, pyspark or pandas. Module order (each imports only those before it):
errors -> validate -> actions / log_paths / schema / properties / stats / predicates -> storage ->
log_segment -> replay / log_reader -> checkpoint / scan -> snapshot -> conflicts -> transaction ->
writer / create_table -> fence -> maintenance_table -> savepoints -> restore / vacuum / log_cleanup ->
health -> table (pyproject.toml's "engine layers" contract enforces it).
`log_reader` is the one way to read the log after a version (commits, commitInfo, the checkpoint hint).
"""

from __future__ import annotations

from airflow_txnlog.engine import log_reader
from airflow_txnlog.engine.actions import AddFile, CommitInfo, Metadata, Protocol, RemoveFile, Txn
from airflow_txnlog.engine.conflicts import IsolationLevel
from airflow_txnlog.engine.errors import (
    AppendOnlyViolationError,
    CommitConflictError,
    CommitOutcomeUnknownError,
    CommitRetriesExceededError,
    CommitTooLargeError,
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    ConcurrentTransactionError,
    FilesMissingError,
    ForeignCommitsError,
    InvalidArgumentError,
    LogCorruptedError,
    MetadataChangedError,
    NotPublishedError,
    PredicateError,
    ProtocolChangedError,
    PublicationError,
    RestoreError,
    RestoreFilesMissingError,
    RestoreRetriesExceededError,
    RetentionTooShortError,
    SavepointExistsError,
    SavepointFilesMissingError,
    SavepointNotFoundError,
    SchemaMismatchError,
    StorageError,
    TableExistsError,
    TableNotFoundError,
    TxnLogError,
    UnsupportedFeatureError,
    VacuumInProgressError,
    VersionNotFoundError,
)
from airflow_txnlog.engine.health import TableHealth
from airflow_txnlog.engine.log_cleanup import CleanupResult
from airflow_txnlog.engine.maintenance_table import MaintenanceTable
from airflow_txnlog.engine.predicates import Predicate, parse_predicate, to_arrow_expression
from airflow_txnlog.engine.properties import num_indexed_cols, target_file_size

# Protocol helpers that airflow_txnlog.spark builds on (documented in docs/spark.md, "Engine names
# Spark uses"): SQL predicates, schemaString <-> Arrow, partition values' log form, the stats
# format (which leaves, how bounds are written, the JSON), the compaction target size. Spark imports
# them from here, never from the submodules.
from airflow_txnlog.engine.provenance import Provenance, run_owner_tag
from airflow_txnlog.engine.publications import DEFAULT_CHANNEL, Publication
from airflow_txnlog.engine.restore import ForeignCommitsPolicy, RestoreResult
from airflow_txnlog.engine.savepoints import Savepoint
from airflow_txnlog.engine.schema import (
    HIVE_NULL,
    parse_partition_value,
    schema_from_json,
    schema_to_json,
    serialize_partition_value,
)
from airflow_txnlog.engine.snapshot import Snapshot
from airflow_txnlog.engine.stats import (
    STRING_PREFIX,
    LeafPath,
    LeafStats,
    indexed_leaves,
    json_bounds,
    stats_columns,
    stats_json,
)
from airflow_txnlog.engine.table import Table
from airflow_txnlog.engine.transaction import Transaction
from airflow_txnlog.engine.vacuum import VacuumResult
from airflow_txnlog.engine.validate import one_of as check_choice
from airflow_txnlog.engine.writer import WriteMode

__all__ = [
    "DEFAULT_CHANNEL",
    "HIVE_NULL",
    "STRING_PREFIX",
    "AddFile",
    "AppendOnlyViolationError",
    "CleanupResult",
    "CommitConflictError",
    "CommitInfo",
    "CommitOutcomeUnknownError",
    "CommitRetriesExceededError",
    "CommitTooLargeError",
    "ConcurrentAppendError",
    "ConcurrentDeleteDeleteError",
    "ConcurrentDeleteReadError",
    "ConcurrentTransactionError",
    "FilesMissingError",
    "ForeignCommitsError",
    "ForeignCommitsPolicy",
    "InvalidArgumentError",
    "IsolationLevel",
    "LeafPath",
    "LeafStats",
    "LogCorruptedError",
    "MaintenanceTable",
    "Metadata",
    "MetadataChangedError",
    "NotPublishedError",
    "Predicate",
    "PredicateError",
    "Protocol",
    "ProtocolChangedError",
    "Provenance",
    "Publication",
    "PublicationError",
    "RemoveFile",
    "RestoreError",
    "RestoreFilesMissingError",
    "RestoreResult",
    "RestoreRetriesExceededError",
    "RetentionTooShortError",
    "Savepoint",
    "SavepointExistsError",
    "SavepointFilesMissingError",
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
    "VersionNotFoundError",
    "WriteMode",
    "check_choice",
    "indexed_leaves",
    "json_bounds",
    "log_reader",
    "num_indexed_cols",
    "parse_partition_value",
    "parse_predicate",
    "run_owner_tag",
    "schema_from_json",
    "schema_to_json",
    "serialize_partition_value",
    "stats_columns",
    "stats_json",
    "target_file_size",
    "to_arrow_expression",
]
