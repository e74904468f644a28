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

This module is the door for users: the tables, snapshots and transactions, what they return, the log
actions they show, and the errors they raise, each under the name it has where it is defined. The
package's other layers (Spark, Airflow, the CLI) build on a second door, `airflow_txnlog.engine.spi`.
The names are listed once, as the imports below, and load on first use (engine._doors): `import
airflow_txnlog.engine` costs nothing, and `from airflow_txnlog.engine import Table` imports only what
`Table` needs. tests/test_public_api.py checks every change against api/ (griffe).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_txnlog.engine._doors import door

if TYPE_CHECKING:  # the public names (`X as X`: re-exported), loaded on first use (engine._doors)
    from airflow_txnlog.engine.errors import (
        AppendOnlyViolationError as AppendOnlyViolationError,
    )
    from airflow_txnlog.engine.errors import (
        CommitConflictError as CommitConflictError,
    )
    from airflow_txnlog.engine.errors import (
        CommitOutcomeUnknownError as CommitOutcomeUnknownError,
    )
    from airflow_txnlog.engine.errors import (
        CommitRetriesExceededError as CommitRetriesExceededError,
    )
    from airflow_txnlog.engine.errors import (
        CommitTooLargeError as CommitTooLargeError,
    )
    from airflow_txnlog.engine.errors import (
        ConcurrentAppendError as ConcurrentAppendError,
    )
    from airflow_txnlog.engine.errors import (
        ConcurrentDeleteDeleteError as ConcurrentDeleteDeleteError,
    )
    from airflow_txnlog.engine.errors import (
        ConcurrentDeleteReadError as ConcurrentDeleteReadError,
    )
    from airflow_txnlog.engine.errors import (
        ConcurrentDomainMetadataError as ConcurrentDomainMetadataError,
    )
    from airflow_txnlog.engine.errors import (
        ConcurrentTransactionError as ConcurrentTransactionError,
    )
    from airflow_txnlog.engine.errors import (
        ConstraintNotFoundError as ConstraintNotFoundError,
    )
    from airflow_txnlog.engine.errors import (
        ConstraintViolationError as ConstraintViolationError,
    )
    from airflow_txnlog.engine.errors import (
        FilesMissingError as FilesMissingError,
    )
    from airflow_txnlog.engine.errors import (
        ForeignCommitsError as ForeignCommitsError,
    )
    from airflow_txnlog.engine.errors import (
        InvalidArgumentError as InvalidArgumentError,
    )
    from airflow_txnlog.engine.errors import (
        LogCorruptedError as LogCorruptedError,
    )
    from airflow_txnlog.engine.errors import (
        MetadataChangedError as MetadataChangedError,
    )
    from airflow_txnlog.engine.errors import (
        NotPublishedError as NotPublishedError,
    )
    from airflow_txnlog.engine.errors import (
        PredicateError as PredicateError,
    )
    from airflow_txnlog.engine.errors import (
        PropertyNotSetError as PropertyNotSetError,
    )
    from airflow_txnlog.engine.errors import (
        ProtocolChangedError as ProtocolChangedError,
    )
    from airflow_txnlog.engine.errors import (
        PublicationError as PublicationError,
    )
    from airflow_txnlog.engine.errors import (
        ReleaseError as ReleaseError,
    )
    from airflow_txnlog.engine.errors import (
        ReleaseNotFoundError as ReleaseNotFoundError,
    )
    from airflow_txnlog.engine.errors import (
        RestoreError as RestoreError,
    )
    from airflow_txnlog.engine.errors import (
        RestoreFilesMissingError as RestoreFilesMissingError,
    )
    from airflow_txnlog.engine.errors import (
        RestoreRetriesExceededError as RestoreRetriesExceededError,
    )
    from airflow_txnlog.engine.errors import (
        RetentionTooShortError as RetentionTooShortError,
    )
    from airflow_txnlog.engine.errors import (
        SavepointExistsError as SavepointExistsError,
    )
    from airflow_txnlog.engine.errors import (
        SavepointFilesMissingError as SavepointFilesMissingError,
    )
    from airflow_txnlog.engine.errors import (
        SavepointNotFoundError as SavepointNotFoundError,
    )
    from airflow_txnlog.engine.errors import (
        SchemaMismatchError as SchemaMismatchError,
    )
    from airflow_txnlog.engine.errors import (
        StorageError as StorageError,
    )
    from airflow_txnlog.engine.errors import (
        TableCreatedConcurrentlyError as TableCreatedConcurrentlyError,
    )
    from airflow_txnlog.engine.errors import (
        TableExistsError as TableExistsError,
    )
    from airflow_txnlog.engine.errors import (
        TableNotFoundError as TableNotFoundError,
    )
    from airflow_txnlog.engine.errors import (
        TxnLogError as TxnLogError,
    )
    from airflow_txnlog.engine.errors import (
        UnsupportedExpressionError as UnsupportedExpressionError,
    )
    from airflow_txnlog.engine.errors import (
        UnsupportedFeatureError as UnsupportedFeatureError,
    )
    from airflow_txnlog.engine.errors import (
        VacuumInProgressError as VacuumInProgressError,
    )
    from airflow_txnlog.engine.errors import (
        VersionNotFoundError as VersionNotFoundError,
    )
    from airflow_txnlog.engine.features.identity import IdentityColumn as IdentityColumn
    from airflow_txnlog.engine.log.actions import (
        AddCDCFile as AddCDCFile,
    )
    from airflow_txnlog.engine.log.actions import (
        AddFile as AddFile,
    )
    from airflow_txnlog.engine.log.actions import (
        CommitInfo as CommitInfo,
    )
    from airflow_txnlog.engine.log.actions import (
        Metadata as Metadata,
    )
    from airflow_txnlog.engine.log.actions import (
        Protocol as Protocol,
    )
    from airflow_txnlog.engine.log.actions import (
        RemoveFile as RemoveFile,
    )
    from airflow_txnlog.engine.log.actions import (
        Txn as Txn,
    )
    from airflow_txnlog.engine.log.checksum import FileSizeHistogram as FileSizeHistogram
    from airflow_txnlog.engine.log.checksum import VersionChecksum as VersionChecksum
    from airflow_txnlog.engine.maintenance.drop_feature import DropResult as DropResult
    from airflow_txnlog.engine.maintenance.health import TableHealth as TableHealth
    from airflow_txnlog.engine.maintenance.layout import LayoutPlan as LayoutPlan
    from airflow_txnlog.engine.maintenance.layout import LayoutResult as LayoutResult
    from airflow_txnlog.engine.maintenance.log_cleanup import CleanupResult as CleanupResult
    from airflow_txnlog.engine.maintenance.log_compaction import LogCompactionResult as LogCompactionResult
    from airflow_txnlog.engine.maintenance.publication_records import DEFAULT_CHANNEL as DEFAULT_CHANNEL
    from airflow_txnlog.engine.maintenance.publication_records import Publication as Publication
    from airflow_txnlog.engine.maintenance.restore import RestoreResult as RestoreResult
    from airflow_txnlog.engine.maintenance.savepoints import Savepoint as Savepoint
    from airflow_txnlog.engine.maintenance.vacuum import VacuumResult as VacuumResult
    from airflow_txnlog.engine.overview import TableOverview as TableOverview
    from airflow_txnlog.engine.overview import VersionFacts as VersionFacts
    from airflow_txnlog.engine.plan_pool import plan_tables as plan_tables
    from airflow_txnlog.engine.plan_worker import PlanOutcome as PlanOutcome
    from airflow_txnlog.engine.plan_worker import PlanTarget as PlanTarget
    from airflow_txnlog.engine.releases import Release as Release
    from airflow_txnlog.engine.releases import Releases as Releases
    from airflow_txnlog.engine.schema import schema_from_json as schema_from_json
    from airflow_txnlog.engine.schema import schema_to_json as schema_to_json
    from airflow_txnlog.engine.sql.predicates import Predicate as Predicate
    from airflow_txnlog.engine.sql.predicates import parse_predicate as parse_predicate
    from airflow_txnlog.engine.state.checksums import TableSummary as TableSummary
    from airflow_txnlog.engine.state.scan import FileScan as FileScan
    from airflow_txnlog.engine.state.snapshot import Snapshot as Snapshot
    from airflow_txnlog.engine.table import Table as Table
    from airflow_txnlog.engine.validate import ForeignCommitsPolicy as ForeignCommitsPolicy
    from airflow_txnlog.engine.validate import WriteMode as WriteMode
    from airflow_txnlog.engine.write.conflicts import IsolationLevel as IsolationLevel
    from airflow_txnlog.engine.write.provenance import Provenance as Provenance
    from airflow_txnlog.engine.write.transaction import Transaction as Transaction

__all__, __getattr__, __dir__ = door(__name__)
