"""The transaction-log engine: a Delta Lake protocol implementation in pure Python + pyarrow + fsspec.

Never imports airflow, pyspark or pandas. The engine is a house of rooms (docs/architecture.md);
each room may import only the rooms below it, and pyproject.toml's import-linter contracts enforce it:

    table.py        the entry point: `Table` (create / open, read, write, maintain)
    maintenance/    savepoints, restore, vacuum, log cleanup, publications, health
    write/          transactions and conflicts, the writer, CREATE TABLE, ALTER TABLE, provenance
    state/          a table at one version: snapshot, scan, skipping, checkpoints
    features/       Delta table features: supported features, column mapping, deletion vectors, ...
    sql/            Spark SQL: one parse and typer, the rows and the pruning back ends
    log/            the wire format and reading the log: actions, listing, replay, checkpoint columns
    storage.py, schema.py, properties.py, validate.py, errors.py   the foundations

`log.log_reader` is the one way to read the log after a version (commits, commitInfo, the
checkpoint hint). The names below are the public API; the rooms' modules are not.

The public names load lazily (PEP 562): `import airflow_txnlog.engine` costs nothing, and
`from airflow_txnlog.engine import Table` imports only what `Table` needs. A process that needs only
the light modules (the Airflow triggers poll the log with `log_reader` and `storage`, pure Python +
fsspec) never loads pyarrow, numpy or sqlglot, whose import would hold the triggerer's event loop.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names below load on first use (PEP 562 __getattr__), see the docstring
    from airflow_txnlog.engine.errors import (
        AppendOnlyViolationError,
        CommitConflictError,
        CommitOutcomeUnknownError,
        CommitRetriesExceededError,
        CommitTooLargeError,
        ConcurrentAppendError,
        ConcurrentDeleteDeleteError,
        ConcurrentDeleteReadError,
        ConcurrentDomainMetadataError,
        ConcurrentTransactionError,
        ConstraintNotFoundError,
        ConstraintViolationError,
        FilesMissingError,
        ForeignCommitsError,
        InvalidArgumentError,
        LogCorruptedError,
        MetadataChangedError,
        NotPublishedError,
        PredicateError,
        PropertyNotSetError,
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
        TableCreatedConcurrentlyError,
        TableExistsError,
        TableNotFoundError,
        TxnLogError,
        UnsupportedExpressionError,
        UnsupportedFeatureError,
        VacuumInProgressError,
        VersionNotFoundError,
    )
    from airflow_txnlog.engine.features import row_tracking
    from airflow_txnlog.engine.features.char_varchar import spark_rewrites as char_varchar_rewrites
    from airflow_txnlog.engine.features.column_mapping import Names as ColumnNames
    from airflow_txnlog.engine.features.column_mapping import with_new_fields, without_mapping
    from airflow_txnlog.engine.features.constraints import Rule as RowRule
    from airflow_txnlog.engine.features.constraints import check_rows as check_row_rules
    from airflow_txnlog.engine.features.constraints import compile_rules as compile_row_rules
    from airflow_txnlog.engine.features.constraints import rules as row_rules
    from airflow_txnlog.engine.features.constraints import violation_error as row_rule_violation
    from airflow_txnlog.engine.features.deletion_vectors import write_dv_file as write_deletion_vectors
    from airflow_txnlog.engine.features.generated import enforced as generated_columns
    from airflow_txnlog.engine.features.generated import expression_columns, rewrite_columns
    from airflow_txnlog.engine.features.identity import Identity, IdentityColumn
    from airflow_txnlog.engine.features.identity import lost_race as lost_identity_race
    from airflow_txnlog.engine.features.identity import of_metadata as identity_columns
    from airflow_txnlog.engine.features.variant import check as check_variant_values
    from airflow_txnlog.engine.features.variant import variants_as
    from airflow_txnlog.engine.log import log_reader
    from airflow_txnlog.engine.log.actions import (
        AddCDCFile,
        AddFile,
        CommitInfo,
        Metadata,
        Protocol,
        RemoveFile,
        Txn,
    )
    from airflow_txnlog.engine.log.commit_files import CommitFiles
    from airflow_txnlog.engine.log.stats import (
        STRING_PREFIX,
        LeafPath,
        LeafStats,
        indexed_leaves,
        json_bounds,
        stats_columns,
        stats_json,
    )
    from airflow_txnlog.engine.maintenance.curves import bits_per_column as layout_bits
    from airflow_txnlog.engine.maintenance.curves import boundaries as layout_cuts
    from airflow_txnlog.engine.maintenance.curves import layout_keys
    from airflow_txnlog.engine.maintenance.curves import sample as layout_sample
    from airflow_txnlog.engine.maintenance.health import TableHealth
    from airflow_txnlog.engine.maintenance.layout import LayoutPlan, LayoutResult, layout_summary, plan_layout
    from airflow_txnlog.engine.maintenance.log_cleanup import CleanupResult
    from airflow_txnlog.engine.maintenance.maintenance_table import MaintenanceTable
    from airflow_txnlog.engine.maintenance.publication_records import DEFAULT_CHANNEL, Publication
    from airflow_txnlog.engine.maintenance.restore import RestoreResult
    from airflow_txnlog.engine.maintenance.savepoints import Savepoint
    from airflow_txnlog.engine.maintenance.vacuum import VacuumResult
    from airflow_txnlog.engine.properties import change_data_feed, num_indexed_cols, target_file_size
    from airflow_txnlog.engine.schema import (
        HIVE_NULL,
        parse_partition_value,
        schema_from_json,
        schema_to_json,
        serialize_partition_value,
        type_text,
        uses_variant,
    )
    from airflow_txnlog.engine.sql.predicates import Predicate, parse_predicate
    from airflow_txnlog.engine.state.scan import FileScan
    from airflow_txnlog.engine.state.snapshot import Snapshot
    from airflow_txnlog.engine.storage import storage_for
    from airflow_txnlog.engine.table import Table
    from airflow_txnlog.engine.validate import ForeignCommitsPolicy, WriteMode
    from airflow_txnlog.engine.validate import one_of as check_choice
    from airflow_txnlog.engine.write.conflicts import IsolationLevel

    # Protocol helpers that airflow_txnlog.spark builds on (documented in docs/spark.md, "Engine names
    # Spark uses"): SQL predicates, schemaString <-> Arrow, partition values' log form, the stats
    # format (which leaves, how bounds are written, the JSON), the compaction target size. Spark imports
    # them from here, never from the submodules.
    from airflow_txnlog.engine.write.provenance import Provenance, job_provenance, run_owner_tag
    from airflow_txnlog.engine.write.transaction import Transaction
    from airflow_txnlog.engine.write.writer import (
        conform_rows,
        conform_to_schema,
        write_data_files,
    )

# public name -> (engine submodule, attribute in it; None: the submodule itself)
_LAZY: dict[str, tuple[str, str | None]] = {
    "AddCDCFile": ("log.actions", "AddCDCFile"),
    "AddFile": ("log.actions", "AddFile"),
    "AppendOnlyViolationError": ("errors", "AppendOnlyViolationError"),
    "CleanupResult": ("maintenance.log_cleanup", "CleanupResult"),
    "LayoutPlan": ("maintenance.layout", "LayoutPlan"),
    "LayoutResult": ("maintenance.layout", "LayoutResult"),
    "plan_layout": ("maintenance.layout", "plan_layout"),
    "layout_summary": ("maintenance.layout", "layout_summary"),
    "layout_bits": ("maintenance.curves", "bits_per_column"),
    "layout_cuts": ("maintenance.curves", "boundaries"),
    "layout_keys": ("maintenance.curves", "layout_keys"),
    "layout_sample": ("maintenance.curves", "sample"),
    "ColumnNames": ("features.column_mapping", "Names"),
    "with_new_fields": ("features.column_mapping", "with_new_fields"),
    "without_mapping": ("features.column_mapping", "without_mapping"),
    "FileScan": ("state.scan", "FileScan"),
    "CommitFiles": ("log.commit_files", "CommitFiles"),
    "storage_for": ("storage", "storage_for"),
    "conform_to_schema": ("write.writer", "conform_to_schema"),
    "write_data_files": ("write.writer", "write_data_files"),
    "uses_variant": ("schema", "uses_variant"),
    "CommitConflictError": ("errors", "CommitConflictError"),
    "CommitInfo": ("log.actions", "CommitInfo"),
    "CommitOutcomeUnknownError": ("errors", "CommitOutcomeUnknownError"),
    "CommitRetriesExceededError": ("errors", "CommitRetriesExceededError"),
    "CommitTooLargeError": ("errors", "CommitTooLargeError"),
    "ConcurrentAppendError": ("errors", "ConcurrentAppendError"),
    "ConcurrentDeleteDeleteError": ("errors", "ConcurrentDeleteDeleteError"),
    "ConcurrentDeleteReadError": ("errors", "ConcurrentDeleteReadError"),
    "ConcurrentDomainMetadataError": ("errors", "ConcurrentDomainMetadataError"),
    "ConcurrentTransactionError": ("errors", "ConcurrentTransactionError"),
    "DEFAULT_CHANNEL": ("maintenance.publication_records", "DEFAULT_CHANNEL"),
    "FilesMissingError": ("errors", "FilesMissingError"),
    "ForeignCommitsError": ("errors", "ForeignCommitsError"),
    "ForeignCommitsPolicy": ("validate", "ForeignCommitsPolicy"),
    "HIVE_NULL": ("schema", "HIVE_NULL"),
    "InvalidArgumentError": ("errors", "InvalidArgumentError"),
    "IsolationLevel": ("write.conflicts", "IsolationLevel"),
    "LeafPath": ("log.stats", "LeafPath"),
    "LeafStats": ("log.stats", "LeafStats"),
    "LogCorruptedError": ("errors", "LogCorruptedError"),
    "MaintenanceTable": ("maintenance.maintenance_table", "MaintenanceTable"),
    "Metadata": ("log.actions", "Metadata"),
    "MetadataChangedError": ("errors", "MetadataChangedError"),
    "NotPublishedError": ("errors", "NotPublishedError"),
    "Predicate": ("sql.predicates", "Predicate"),
    "PredicateError": ("errors", "PredicateError"),
    "RowRule": ("features.constraints", "Rule"),
    "generated_columns": ("features.generated", "enforced"),
    "expression_columns": ("features.generated", "expression_columns"),
    "Identity": ("features.identity", "Identity"),
    "IdentityColumn": ("features.identity", "IdentityColumn"),
    "identity_columns": ("features.identity", "of_metadata"),
    "lost_identity_race": ("features.identity", "lost_race"),
    "variants_as": ("features.variant", "variants_as"),
    "check_variant_values": ("features.variant", "check"),
    "rewrite_columns": ("features.generated", "rewrite_columns"),
    "conform_rows": ("write.writer", "conform_rows"),
    "check_row_rules": ("features.constraints", "check_rows"),
    "compile_row_rules": ("features.constraints", "compile_rules"),
    "row_rules": ("features.constraints", "rules"),
    "row_rule_violation": ("features.constraints", "violation_error"),
    "char_varchar_rewrites": ("features.char_varchar", "spark_rewrites"),
    "ConstraintNotFoundError": ("errors", "ConstraintNotFoundError"),
    "PropertyNotSetError": ("errors", "PropertyNotSetError"),
    "ConstraintViolationError": ("errors", "ConstraintViolationError"),
    "UnsupportedExpressionError": ("errors", "UnsupportedExpressionError"),
    "Protocol": ("log.actions", "Protocol"),
    "TableCreatedConcurrentlyError": ("errors", "TableCreatedConcurrentlyError"),
    "ProtocolChangedError": ("errors", "ProtocolChangedError"),
    "Provenance": ("write.provenance", "Provenance"),
    "Publication": ("maintenance.publication_records", "Publication"),
    "PublicationError": ("errors", "PublicationError"),
    "RemoveFile": ("log.actions", "RemoveFile"),
    "RestoreError": ("errors", "RestoreError"),
    "RestoreFilesMissingError": ("errors", "RestoreFilesMissingError"),
    "RestoreResult": ("maintenance.restore", "RestoreResult"),
    "RestoreRetriesExceededError": ("errors", "RestoreRetriesExceededError"),
    "RetentionTooShortError": ("errors", "RetentionTooShortError"),
    "STRING_PREFIX": ("log.stats", "STRING_PREFIX"),
    "Savepoint": ("maintenance.savepoints", "Savepoint"),
    "SavepointExistsError": ("errors", "SavepointExistsError"),
    "SavepointFilesMissingError": ("errors", "SavepointFilesMissingError"),
    "SavepointNotFoundError": ("errors", "SavepointNotFoundError"),
    "SchemaMismatchError": ("errors", "SchemaMismatchError"),
    "Snapshot": ("state.snapshot", "Snapshot"),
    "StorageError": ("errors", "StorageError"),
    "Table": ("table", "Table"),
    "TableExistsError": ("errors", "TableExistsError"),
    "TableHealth": ("maintenance.health", "TableHealth"),
    "TableNotFoundError": ("errors", "TableNotFoundError"),
    "Transaction": ("write.transaction", "Transaction"),
    "Txn": ("log.actions", "Txn"),
    "TxnLogError": ("errors", "TxnLogError"),
    "UnsupportedFeatureError": ("errors", "UnsupportedFeatureError"),
    "VacuumInProgressError": ("errors", "VacuumInProgressError"),
    "VacuumResult": ("maintenance.vacuum", "VacuumResult"),
    "VersionNotFoundError": ("errors", "VersionNotFoundError"),
    "WriteMode": ("validate", "WriteMode"),
    "check_choice": ("validate", "one_of"),
    "indexed_leaves": ("log.stats", "indexed_leaves"),
    "job_provenance": ("write.provenance", "job_provenance"),
    "json_bounds": ("log.stats", "json_bounds"),
    "log_reader": ("log.log_reader", None),
    "row_tracking": ("features.row_tracking", None),
    "change_data_feed": ("properties", "change_data_feed"),
    "num_indexed_cols": ("properties", "num_indexed_cols"),
    "parse_partition_value": ("schema", "parse_partition_value"),
    "parse_predicate": ("sql.predicates", "parse_predicate"),
    "run_owner_tag": ("write.provenance", "run_owner_tag"),
    "schema_from_json": ("schema", "schema_from_json"),
    "schema_to_json": ("schema", "schema_to_json"),
    "serialize_partition_value": ("schema", "serialize_partition_value"),
    "stats_columns": ("log.stats", "stats_columns"),
    "stats_json": ("log.stats", "stats_json"),
    "target_file_size": ("properties", "target_file_size"),
    "type_text": ("schema", "type_text"),
    "write_deletion_vectors": ("features.deletion_vectors", "write_dv_file"),
}

__all__ = [
    "DEFAULT_CHANNEL",
    "HIVE_NULL",
    "STRING_PREFIX",
    "AddCDCFile",
    "AddFile",
    "AppendOnlyViolationError",
    "CleanupResult",
    "ColumnNames",
    "CommitConflictError",
    "CommitFiles",
    "CommitInfo",
    "CommitOutcomeUnknownError",
    "CommitRetriesExceededError",
    "CommitTooLargeError",
    "ConcurrentAppendError",
    "ConcurrentDeleteDeleteError",
    "ConcurrentDeleteReadError",
    "ConcurrentDomainMetadataError",
    "ConcurrentTransactionError",
    "ConstraintNotFoundError",
    "ConstraintViolationError",
    "FileScan",
    "FilesMissingError",
    "ForeignCommitsError",
    "ForeignCommitsPolicy",
    "Identity",
    "IdentityColumn",
    "InvalidArgumentError",
    "IsolationLevel",
    "LayoutPlan",
    "LayoutResult",
    "LeafPath",
    "LeafStats",
    "LogCorruptedError",
    "MaintenanceTable",
    "Metadata",
    "MetadataChangedError",
    "NotPublishedError",
    "Predicate",
    "PredicateError",
    "PropertyNotSetError",
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
    "RowRule",
    "Savepoint",
    "SavepointExistsError",
    "SavepointFilesMissingError",
    "SavepointNotFoundError",
    "SchemaMismatchError",
    "Snapshot",
    "StorageError",
    "Table",
    "TableCreatedConcurrentlyError",
    "TableExistsError",
    "TableHealth",
    "TableNotFoundError",
    "Transaction",
    "Txn",
    "TxnLogError",
    "UnsupportedExpressionError",
    "UnsupportedFeatureError",
    "VacuumInProgressError",
    "VacuumResult",
    "VersionNotFoundError",
    "WriteMode",
    "change_data_feed",
    "char_varchar_rewrites",
    "check_choice",
    "check_row_rules",
    "check_variant_values",
    "compile_row_rules",
    "conform_rows",
    "conform_to_schema",
    "expression_columns",
    "generated_columns",
    "identity_columns",
    "indexed_leaves",
    "job_provenance",
    "json_bounds",
    "layout_bits",
    "layout_cuts",
    "layout_keys",
    "layout_sample",
    "layout_summary",
    "log_reader",
    "lost_identity_race",
    "num_indexed_cols",
    "parse_partition_value",
    "parse_predicate",
    "plan_layout",
    "rewrite_columns",
    "row_rule_violation",
    "row_rules",
    "row_tracking",
    "run_owner_tag",
    "schema_from_json",
    "schema_to_json",
    "serialize_partition_value",
    "stats_columns",
    "stats_json",
    "storage_for",
    "target_file_size",
    "type_text",
    "uses_variant",
    "variants_as",
    "with_new_fields",
    "without_mapping",
    "write_data_files",
    "write_deletion_vectors",
]


def __getattr__(name: str) -> Any:
    """Load a public name's submodule on first use (and keep the name, so this runs once per name)."""
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    loaded = importlib.import_module(f"{__name__}.{module}")
    value = loaded if attr is None else getattr(loaded, attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
