"""`Table`: the engine's entry point (create / open, snapshots, writes, transactions, checkpoints).

A `Table` caches its latest snapshot and brings it up to date incrementally (reading only new
commits). A commit never reloads the table; after a commit whose version is a multiple of
`delta.checkpointInterval`, the snapshot is advanced to exactly that version and checkpointed.
A failed checkpoint is logged and never fails the commit.

Maintenance (savepoints, restore, vacuum, log cleanup, health, OPTIMIZE, the planner and running a
plan's actions) gets the table itself as its `MaintenanceTable`, and refuses a deferred create that
has committed nothing (`_committed`). `run_maintenance` runs one action of a plan (a `Decision` of
`plan.actions`, or its `to_dict()` form, as an Airflow task gets it from XCom), dry run by default;
anything else, or a skip, is an InvalidArgumentError saying what it got. `overview` is one version
as a page shows it, from one log listing and one read of the savepoints (engine.overview).
Arguments are checked before anything is written (engine.validate). Every commit records who made
it (engine.write.provenance: an Airflow task's DAG, task, run and try).

This module is longer than the package's 500-line rule (tests/engine/test_rooms.py names it): it
is one concept, the entry point, and its methods only check arguments and delegate to the rooms.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_txnlog._shown import shown
from airflow_txnlog.engine import properties as props
from airflow_txnlog.engine.errors import (
    ConcurrentTransactionError,
    InvalidArgumentError,
    LogCorruptedError,
    StorageError,
    TxnLogError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from airflow_txnlog.engine.features import iceberg_compat
from airflow_txnlog.engine.features.constraints import constraints as table_constraints
from airflow_txnlog.engine.features.identity import IdentityColumn
from airflow_txnlog.engine.features.table_features import check_write_supported
from airflow_txnlog.engine.log.commit_files import CommitFiles, commit_files
from airflow_txnlog.engine.log.log_reader import find_txn_commit, list_after, read_commits
from airflow_txnlog.engine.log.log_segment import list_log, monotonic_timestamps
from airflow_txnlog.engine.maintenance import log_cleanup, publications, savepoints, uniform
from airflow_txnlog.engine.maintenance import restore as restore_mod
from airflow_txnlog.engine.maintenance import vacuum as vacuum_mod
from airflow_txnlog.engine.maintenance.compaction import compact
from airflow_txnlog.engine.maintenance.compaction_plan import Decision, action_dict
from airflow_txnlog.engine.maintenance.drop_feature import DropResult, drop_feature
from airflow_txnlog.engine.maintenance.health import TableHealth, table_health
from airflow_txnlog.engine.maintenance.layout import LayoutResult, optimize_layout, run_cluster_action
from airflow_txnlog.engine.maintenance.log_cleanup import CleanupResult
from airflow_txnlog.engine.maintenance.log_compaction import LogCompactionResult, compact_log
from airflow_txnlog.engine.maintenance.planner import MaintenancePlan, plan_maintenance
from airflow_txnlog.engine.maintenance.publications import DEFAULT_CHANNEL, Publication
from airflow_txnlog.engine.maintenance.release_records import ReleaseRecord, released_snapshot
from airflow_txnlog.engine.maintenance.restore import RestoreResult
from airflow_txnlog.engine.maintenance.rewrite_run import RewriteWriter
from airflow_txnlog.engine.maintenance.savepoints import Savepoint
from airflow_txnlog.engine.maintenance.vacuum import VacuumResult
from airflow_txnlog.engine.overview import TableOverview, VersionFacts, table_overview
from airflow_txnlog.engine.state.change_data import changes as read_changes
from airflow_txnlog.engine.state.checkpoint import DEFAULT_PART_SIZE, write_checkpoint
from airflow_txnlog.engine.state.checksums import TableSummary, checksum_problems, table_summary
from airflow_txnlog.engine.state.history import commit_entry
from airflow_txnlog.engine.state.snapshot import Snapshot, load_snapshot, version_at
from airflow_txnlog.engine.storage import Storage, storage_for
from airflow_txnlog.engine.validate import (
    ForeignCommitsPolicy,
    WriteMode,
    flag,
    mapping,
    number,
    one_of,
    text,
    txn_pair,
)
from airflow_txnlog.engine.write import alter_table
from airflow_txnlog.engine.write.alter_table import RowCheck
from airflow_txnlog.engine.write.conflicts import SERIALIZABLE, IsolationLevel
from airflow_txnlog.engine.write.create_table import create_at, unclaimed, version_zero, with_provenance
from airflow_txnlog.engine.write.transaction import (
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_COMMIT_BYTES,
    TAGS_EXAMPLE,
    Transaction,
)
from airflow_txnlog.engine.write.writer import write_parameters, write_retrying

if TYPE_CHECKING:  # (pyiceberg is imported only when a table is UniForm)
    from airflow_txnlog.engine.uniform.iceberg_sync import SyncResult

log = logging.getLogger(__name__)


def _now_ms() -> int:
    return int(time.time() * 1000)


class Table:
    """A Delta table at a URI: local path, `file://`, `s3://`, `gs://`, `abfss://`, `memory://`.

    :param storage: the storage backend (use `Table.open` / `Table.create` instead of building one).
    :param checkpoint_part_size: actions per checkpoint file, bigger checkpoints split in parts (deprecated
        by the protocol; default None: one file, as Delta on Spark writes).
    :param max_commit_attempts: attempts before a commit gives up on a busy table.
    :param max_commit_bytes: a commit whose JSON is larger raises `CommitTooLargeError` before anything
        is written (default 256 MiB; None: no limit).
    """

    def __init__(
        self,
        storage: Storage,
        *,
        checkpoint_part_size: int | None = DEFAULT_PART_SIZE,
        max_commit_attempts: int = DEFAULT_MAX_ATTEMPTS,
        max_commit_bytes: int | None = DEFAULT_MAX_COMMIT_BYTES,
    ) -> None:
        number("checkpoint_part_size", checkpoint_part_size, minimum=1, integer=True, none_means="one file")
        number("max_commit_attempts", max_commit_attempts, minimum=1, integer=True)
        number("max_commit_bytes", max_commit_bytes, minimum=1, integer=True, none_means="no limit")
        self._storage = storage
        self._latest: Snapshot | None = None
        self.checkpoint_part_size = checkpoint_part_size
        self.max_commit_attempts = max_commit_attempts
        self.max_commit_bytes = max_commit_bytes
        # Tags added to every commit made through this handle (e.g. {"owner": run id}).
        self.default_tags: dict[str, str] = {}

    # ------------------------------------------------------------------ construction
    @classmethod
    def open(
        cls,
        uri: str,
        *,
        storage_options: Mapping[str, Any] | None = None,
        single_writer: bool = False,
        lazy: bool = False,
        **kw: Any,
    ) -> Table:
        """Open an existing table (TableNotFoundError if there is no log). `lazy=True` touches no file:
        the first read finds out whether there is a table (for one query, e.g. `overview`)."""
        flag("lazy", lazy)
        table = cls(storage_for(uri, storage_options, single_writer=single_writer), **kw)
        if lazy:
            return table
        try:  # (its listing raises TableNotFoundError when there is no log at all)
            table._latest = load_snapshot(table._storage)
        except (LogCorruptedError, UnsupportedFeatureError, VersionNotFoundError):
            # Older versions may still be readable; snapshot() of the latest raises the error.
            table._latest = None
        except (OSError, TypeError) as exc:  # unreachable store, bad storage options (s3fs checks lazily)
            raise StorageError(
                f"cannot read the log of {table._storage.root!r}: {type(exc).__name__}: {exc}"
            ) from exc
        return table

    @classmethod
    def create(
        cls,
        uri: str,
        *,
        schema: pa.Schema,
        partition_by: tuple[str, ...] | list[str] = (),
        properties: Mapping[str, str] | None = None,
        storage_options: Mapping[str, Any] | None = None,
        name: str | None = None,
        description: str | None = None,
        single_writer: bool = False,
        defer: bool = False,
        generated_columns: Mapping[str, str] | None = None,
        identity_columns: Mapping[str, IdentityColumn] | None = None,
        cluster_by: Sequence[str] | None = None,
        spark_expressions: bool = False,
        **kw: Any,
    ) -> Table:
        """Create a table: version 0 with protocol and metaData (TableExistsError if one exists).
        With `defer=True` nothing is written yet: the first commit (a `write` or a `transaction`)
        makes version 0, protocol and metaData included (engine.write.create_table).
        `generated_columns` ({column: Spark SQL expression}) makes generated columns, which writes fill
        and check (engine.features.generated); `identity_columns` ({column: IdentityColumn(start, step,
        always)}) identity columns, which writes number (engine.features.identity); `cluster_by` (up to
        4 columns, never with partition_by) a clustered table (engine.features.clustering).
        A generation expression the engine cannot compute as Spark does is refused here
        (UnsupportedExpressionError), unless `spark_expressions` (what `SparkTable.create` passes:
        Spark computes it on Spark's writes, and the engine's own writes refuse the table).

        Every argument is checked before anything is written (see engine.write.create_table).
        """
        flag("defer", defer)
        flag("spark_expressions", spark_expressions)
        actions = version_zero(
            schema, partition_by=partition_by, properties=properties, name=name, description=description,
            generated_columns=generated_columns, identity_columns=identity_columns, cluster_by=cluster_by,
            spark_expressions=spark_expressions,
        )  # fmt: skip
        actions = with_provenance(actions)
        storage = storage_for(uri, storage_options, single_writer=single_writer)
        table = cls(storage, **kw)
        table._latest = create_at(storage, actions, defer=defer)
        if not defer:  # (a UniForm table: Iceberg metadata for version 0, empty)
            uniform.after_commit(storage, table._latest)
        return table

    # ------------------------------------------------------------------ reading
    @property
    def uri(self) -> str:
        return self._storage.root

    @property
    def storage(self) -> Storage:
        return self._storage

    def _committed(self, what: str) -> None:
        """InvalidArgumentError for maintenance on a deferred create that has committed nothing."""
        if self._latest is not None and self._latest.version < 0 and self._refresh().version < 0:
            raise InvalidArgumentError(f"cannot {what}: the table has no version yet (defer=True); write")

    def latest_version(self) -> int:
        """The newest committed version (lists the log; loads nothing)."""
        if self._latest is None:
            latest = list_log(self._storage).latest()
            assert latest is not None  # list_log raises TableNotFoundError on an empty log
            return latest
        start = self._latest.version
        found = list_after(self._storage, start).latest()
        return start if found is None else max(start, found)

    def snapshot(
        self,
        version: int | None = None,
        timestamp: dt.datetime | str | int | None = None,
        *,
        release: ReleaseRecord | None = None,
    ) -> Snapshot:
        """The table as of `version`, or as of `timestamp`, or at its version in `release` (a
        `Releases` record: engine.releases), or the latest version."""
        if sum(x is not None for x in (version, timestamp, release)) > 1:
            raise InvalidArgumentError("give one of version, timestamp or release, not more")
        if release is not None:
            released: Snapshot = released_snapshot(release, self.uri, self.snapshot, self._refresh)
            return released
        if timestamp is not None:
            ict = props.in_commit_timestamps(self._refresh().metadata.configuration)
            version = version_at(self._storage, timestamp, in_commit_timestamps=ict)
        if version is None:
            return self._refresh()
        if not isinstance(version, int) or isinstance(version, bool) or version < 0:
            raise InvalidArgumentError(f"version must be a non-negative integer, got {version!r}")
        if self._latest is not None and self._latest.version == version:
            return self._latest
        return load_snapshot(self._storage, version)

    def _refresh(self) -> Snapshot:
        if self._latest is not None and self._latest.version < 0:  # deferred create, nothing committed
            return unclaimed(self._latest)
        self._latest = load_snapshot(self._storage) if self._latest is None else self._latest.update()
        return self._latest

    def history(self, limit: int | None = None) -> list[dict[str, Any]]:
        """commitInfo of each commit still in the log, newest first, with `version` and `timestamp`."""
        number("limit", limit, minimum=0, integer=True, none_means="every commit")
        listing = list_log(self._storage)
        stamps = monotonic_timestamps(listing.commits)
        newest_first = sorted(listing.commits.items(), reverse=True)[:limit]
        return [commit_entry(commit, stamps) for commit in read_commits(self._storage, newest_first)]

    def overview(
        self,
        *,
        limit: int = 50,
        before: int | None = None,
        with_facts: bool = True,
        known: VersionFacts | None = None,
    ) -> TableOverview:
        """The latest version as a page shows it, from ONE log listing and ONE read of the savepoints
        (engine.overview): the history page of the `limit` commits below `before` (None: the newest),
        the savepoints and, `with_facts`, what needs the snapshot (health, checkpoint interval, schema,
        protocol, properties, layout), taken from `known` (an earlier overview's facts of this table)
        without loading anything when they are of the listed version."""
        return table_overview(
            self._storage, Table, limit=limit, before=before, with_facts=with_facts, known=known
        )

    # ------------------------------------------------------------------ writing
    def transaction(
        self,
        operation: str = "WRITE",
        parameters: Mapping[str, Any] | None = None,
        *,
        isolation_level: IsolationLevel = SERIALIZABLE,
        tags: Mapping[str, str] | None = None,
        snapshot: Snapshot | None = None,
    ) -> Transaction:
        """A transaction reading `snapshot` (default: the latest); commit it with `txn.commit()`.

        :param tags: recorded in commitInfo["tags"]; e.g. {"owner": run_id} lets `restore` tell a
            run's own commits from other writers'.
        :param snapshot: a snapshot of this table to read instead of the latest (the commit then
            conflicts with whatever was committed after it and invalidates what it read).
        """
        if snapshot is None:
            snapshot = self._refresh()
        elif not isinstance(snapshot, Snapshot) or snapshot.storage.root != self._storage.root:
            raise InvalidArgumentError(
                f"snapshot must be a Snapshot of {self.uri!r} or None; got {shown(snapshot)}"
            )
        return Transaction(
            self._storage,
            snapshot,
            operation=operation,
            parameters=parameters,
            isolation_level=isolation_level,
            max_attempts=self.max_commit_attempts,
            max_commit_bytes=self.max_commit_bytes,
            on_committed=self._post_commit,
            tags={**self.default_tags, **mapping("tags", tags, example=TAGS_EXAMPLE, str_values=True)},
        )

    def write(
        self,
        data: pa.Table,
        *,
        mode: WriteMode = "append",
        txn: tuple[str, int] | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> int:
        """Append or overwrite rows; with `txn=(app_id, version)` a repeated write commits nothing."""
        one_of("mode", mode, WriteMode)
        snap = self._refresh()
        if txn is not None:
            done = self._txn_done(snap, txn)
            if done is not None:
                return done
        reads = [snap]  # the snapshot just refreshed is the first one read: no second listing

        def begin() -> Transaction:
            read = reads.pop() if reads else self._refresh()
            t = self.transaction(
                "WRITE", write_parameters(mode, read.partition_columns), tags=tags, snapshot=read
            )
            if txn is not None:
                t.set_app_transaction(*txn)
            return t

        try:
            return write_retrying(begin, lambda: self._refresh().metadata, self._storage, data, mode=mode)
        except ConcurrentTransactionError:
            done = self._txn_done(self._refresh(), txn) if txn is not None else None
            if done is None:
                raise
            return done  # the same idempotent write won concurrently: ours must not commit

    def _txn_done(self, snap: Snapshot, txn: tuple[str, int]) -> int | None:
        app_id, version = txn_pair(txn)
        seen = snap.txn_version(app_id)
        if seen is None or seen < version:
            return None
        return find_txn_commit(self._storage, app_id, version) or snap.version

    def commit_files(self, start: int, end: int) -> list[CommitFiles]:
        """The data files commits `start`..`end` add and remove (engine.log.commit_files), for streams."""
        number("start", start, minimum=0, integer=True)
        number("end", end, minimum=0, integer=True)
        return commit_files(self._storage, start, end)

    def check_writable(self) -> None:
        """`UnsupportedFeatureError` unless this engine can write the latest version (its protocol's
        writer features, and the features its metadata uses): call it before writing data files."""
        snap = self._refresh()
        check_write_supported(snap.protocol, snap.metadata)

    def txn_commit_version(self, app_id: str, version: int) -> int | None:
        """The version whose commit recorded txn `app_id` at `version` or later (None if not in the log)."""
        text("app_id", app_id, none_ok=False, empty_ok=False)
        number("version", version, minimum=0, integer=True)
        return find_txn_commit(self._storage, app_id, version)

    # ------------------------------------------------------------------ maintenance
    def create_savepoint(
        self,
        name: str,
        *,
        version: int | None = None,
        reason: str | None = None,
        created_by: str | None = None,
        expires_at: dt.datetime | str | int | None = None,
    ) -> Savepoint:
        """Savepoint `version` (default latest) under `name` (SavepointExistsError if taken)."""
        self._committed("create savepoint")
        snap = self.snapshot(version)
        return savepoints.create_savepoint(
            self, snap, name, created_by=created_by, reason=reason, expires_at=expires_at
        )

    def savepoints(self) -> list[Savepoint]:
        return savepoints.list_savepoints(self._storage)

    def get_savepoint(self, name: str) -> Savepoint:
        return savepoints.get_savepoint(self._storage, name)

    def delete_savepoint(self, name: str) -> Savepoint | None:
        return savepoints.delete_savepoint(self._storage, name)

    # ------------------------------------------------------------------ publications (write-audit-publish)
    def publish(self, version: int | None = None, *, channel: str = DEFAULT_CHANNEL) -> Publication:
        """Mark `version` (default latest) as audited on `channel` for its readers (engine.maintenance.
        publications). Re-publishing the current version is a no-op; an older one: `PublicationError`."""
        self._committed("publish")
        return publications.publish(self, version, channel=channel)

    def publication(self, channel: str = DEFAULT_CHANNEL) -> Publication | None:
        """The channel's current publication, None when nothing is published (one listing, one read)."""
        return publications.current_publication(self._storage, publications.validate_channel(channel))

    def published_snapshot(self, channel: str = DEFAULT_CHANNEL) -> Snapshot:
        """The table as of the channel's current version (`NotPublishedError` when there is none)."""
        pub = publications.require_publication(self._storage, publications.validate_channel(channel))
        return self.snapshot(pub.version)

    def restore(
        self,
        *,
        version: int | None = None,
        timestamp: dt.datetime | str | int | None = None,
        savepoint: str | None = None,
        dry_run: bool = False,
        on_foreign_commits: ForeignCommitsPolicy = "fail",
        owner: str | None = None,
    ) -> RestoreResult:
        """Restore to a version, a timestamp or a savepoint as a new commit (see engine.maintenance.restore).

        :param owner: commits tagged {"owner": owner} since the target are this caller's own; other
            data-changing commits are foreign and make `on_foreign_commits="fail"` refuse. Without an
            owner no commit is considered foreign.
        """
        self._committed("restore")
        restore_mod.check_options(dry_run=dry_run, on_foreign_commits=on_foreign_commits, owner=owner)
        if sum(x is not None for x in (version, timestamp, savepoint)) != 1:
            raise InvalidArgumentError("restore needs exactly one of version, timestamp or savepoint")
        if savepoint is not None:
            target, snap = restore_mod.savepoint_target(self, savepoint), None
        else:
            target, snap = restore_mod.version_target(
                self.snapshot, self._storage, version=version, timestamp=timestamp
            )
        # A savepoint's files are protected already; a plain version's are pinned until the commit.
        with restore_mod.pinned(self, None if dry_run else snap):
            return restore_mod.restore(
                self, target, dry_run=dry_run, on_foreign_commits=on_foreign_commits, owner=owner
            )

    def changes(
        self, start_version: int, end_version: int | None = None, *, columns: Sequence[str] | None = None
    ) -> pa.Table:
        """The rows that changed in versions `start_version`..`end_version` (latest if None), with
        `_change_type` (insert, delete, update_preimage, update_postimage), `_commit_version` and
        `_commit_timestamp`: the change data feed, delta-rs's `load_cdf` shape (`engine.state.change_data`).
        The table must have `delta.enableChangeDataFeed=true` over the whole range."""
        return read_changes(self._storage, start_version, end_version, columns=columns)

    def rename_column(self, old: str, new: str) -> int:
        """Rename a column (a dotted path for a nested field) of a column-mapped table: metadata only,
        no file rewritten (`engine.write.alter_table`); the new version."""
        self._committed("rename column")
        return alter_table.rename_column(self.transaction, old, new)

    def drop_columns(self, columns: Sequence[str]) -> int:
        """Drop columns of a column-mapped table from its schema: metadata only; the new version."""
        self._committed("drop columns")
        return alter_table.drop_columns(self.transaction, columns)

    def cluster_by(self, columns: Sequence[str] | None) -> int:
        """ALTER TABLE CLUSTER BY: new clustering keys, or None / [] to remove them (CLUSTER BY NONE);
        no file is rewritten, the next OPTIMIZE clusters by them. A partitioned table is refused."""
        self._committed("cluster by")
        return alter_table.cluster_by(self.transaction, columns)

    def set_properties(self, properties: Mapping[str, str]) -> int:
        """Set table properties (merged into the configuration) and upgrade the protocol to the table
        features they turn on, as Delta's ALTER TABLE SET TBLPROPERTIES (`engine.features.table_features`);
        returns the new version. A downgrade or a feature the engine cannot honor is refused."""
        self._committed("set properties")
        return uniform.set_properties(self, properties)  # (icebergCompatV2 may rewrite files)

    def unset_properties(self, keys: Sequence[str], *, if_exists: bool = False) -> int | None:
        """ALTER TABLE UNSET TBLPROPERTIES [IF EXISTS]: remove properties (say a typo another tool
        recorded); the new version (None: none was set and `if_exists`). A key whose removal would
        break the table or turn a feature off silently is refused, naming what to do instead."""
        self._committed("unset properties")
        return alter_table.unset_properties(self.transaction, keys, if_exists=if_exists)

    def add_constraint(self, name: str, expression: str, *, check: RowCheck | None = None) -> int:
        """ALTER TABLE ADD CONSTRAINT: every later write must satisfy the Spark SQL boolean `expression`
        (NULL breaks it). Existing rows are checked first (ConstraintViolationError naming how many
        break it, nothing written); the protocol gains `checkConstraints`. Returns the new version.

        :param check: (snapshot, rule) -> (live rows breaking it, one of them); default: the engine
            reads every live file (`SparkTable.add_constraint` passes a Spark job)."""
        self._committed("add a constraint")
        return alter_table.add_constraint(self.transaction, name, expression, check=check)

    def set_column_default(self, column: str, expression: str | None) -> int | None:
        """ALTER COLUMN SET DEFAULT `expression` / DROP DEFAULT (None) (engine.features.column_defaults)."""
        self._committed("set a column default")
        return alter_table.set_column_default(self.transaction, column, expression)

    def drop_constraint(self, name: str, *, if_exists: bool = False) -> int | None:
        """ALTER TABLE DROP CONSTRAINT; the new version (None: absent and `if_exists`)."""
        self._committed("drop a constraint")
        return alter_table.drop_constraint(self.transaction, name, if_exists=if_exists)

    def constraints(self) -> dict[str, str]:
        """The table's CHECK constraints: name -> Spark SQL expression."""
        return table_constraints(self.snapshot().metadata)

    # ------------------------------------------------------------------ upkeep
    def vacuum(
        self,
        *,
        retention_hours: float | None = None,
        dry_run: bool = True,
        enforce_retention: bool = True,
        lite: bool = False,
    ) -> VacuumResult:
        """Delete files no version within the retention, tombstone or savepoint needs (dry run by
        default); `lite=True`: only the log's expired tombstones, no listing (Delta's VACUUM LITE)."""
        self._committed("vacuum")
        return vacuum_mod.vacuum(
            self,
            retention_hours=retention_hours,
            dry_run=dry_run,
            enforce_retention=enforce_retention,
            lite=lite,
        )

    def cleanup_log(
        self, *, retention_hours: float | None = None, dry_run: bool = True, enforce_retention: bool = False
    ) -> CleanupResult:
        """Delete commits and checkpoints older than the log retention, below a checkpoint that stays
        (dry run by default: time travel to the versions below it ends)."""
        self._committed("cleanup log")
        return log_cleanup.cleanup_log(
            self, retention_hours=retention_hours, dry_run=dry_run, enforce_retention=enforce_retention
        )

    def compact_log(self, *, first: int | None = None, last: int | None = None) -> LogCompactionResult:
        """A log compaction of commits `first`..`last` (default: past the checkpoint, but the latest)."""
        self._committed("compact the log")
        return compact_log(self, first=first, last=last)

    def summary(self) -> TableSummary:
        """Protocol, metadata, file count and size of the latest version: from its valid `.crc` without
        reading a checkpoint (open `lazy=True`), else from the snapshot (engine.state.checksums)."""
        return table_summary(self._storage, self._refresh)

    def drop_feature(self, feature: str, *, truncate_history: bool = False) -> DropResult:
        """Delta 4's DROP FEATURE (engine.maintenance.drop_feature): the protocol without `feature`."""
        self._committed("drop a feature")
        return drop_feature(self, feature, truncate_history=truncate_history)

    def uniform_sync(self) -> SyncResult:
        """UniForm: the Iceberg metadata at the latest version (engine.uniform; no-op when it is)."""
        self._committed("sync UniForm metadata")
        return uniform.sync(self._storage, self._refresh())

    def health(self, *, small_file_bytes: int | None = None) -> TableHealth:
        """Small files, checkpoint lag, tombstones, restorable versions (engine.maintenance.health)."""
        self._committed("health")
        return table_health(self, small_file_bytes=small_file_bytes)

    def optimize(
        self,
        *,
        zorder_by: Sequence[str] | None = None,
        where: str | None = None,
        full: bool = False,
        target_file_size: int | None = None,
    ) -> LayoutResult:
        """OPTIMIZE in this process (engine.maintenance.layout): Z-order by `zorder_by`, cluster a
        clustered table by its keys (`full`: re-cluster the files clustered before too), or else
        compact small files; `where` names partitions. Data is not changed (dataChange=false)."""
        self._committed("optimize")
        return optimize_layout(
            self, zorder_by=zorder_by, where=where, full=full, target_file_size=target_file_size
        )

    def plan_maintenance(self, **overrides: Any) -> MaintenancePlan:
        """What the table needs now and why, from its log alone (engine.maintenance.planner)."""
        self._committed("plan maintenance")
        return plan_maintenance(self, **overrides)

    def run_maintenance(
        self,
        action: Mapping[str, Any] | Decision,
        *,
        dry_run: bool = True,
        rewriter: RewriteWriter | None = None,
    ) -> dict[str, Any]:
        """Run one action of a plan (`plan.actions[i]`, or `MaintenancePlan.to_dict()["actions"][i]`);
        a result dict. `rewriter` writes the files of a data rewrite (cluster, compact,
        purge_deletion_vectors) instead of this process (engine.maintenance.rewrite_run; Spark's is
        `SparkTable.run_maintenance`); the engine still chooses and commits exactly the planned files.

        A vacuum or log cleanup keeps the retention the plan used (`estimate.retention_hours`), so it
        deletes no more than planned, and never one below the table's (RetentionTooShortError)."""
        action = action_dict(action)
        flag("dry_run", dry_run)
        self._committed("run maintenance")
        kind = action.get("kind")
        if kind in ("compact", "purge_deletion_vectors"):
            return compact(self, action, dry_run=dry_run, writer=rewriter).to_dict()
        if kind == "cluster":
            return run_cluster_action(self, action, dry_run=dry_run, writer=rewriter)
        estimate = action.get("estimate") or {}
        retention = estimate.get("retention_hours")  # (the plan's: checked against the table's)
        if kind == "vacuum":
            lite = estimate.get("mode") != "full"
            done = self.vacuum(retention_hours=retention, dry_run=dry_run, lite=lite)
            mode, files = "lite" if lite else "full", len(done.files)
            return {"kind": kind, "mode": mode, "dry_run": dry_run, "files": files, "bytes": done.bytes}
        if kind == "cleanup_log":
            done_log = self.cleanup_log(retention_hours=retention, dry_run=dry_run, enforce_retention=True)
            return {"kind": kind, **dataclasses.asdict(done_log)}
        if kind == "compact_log":  # (writes one log file, deletes nothing)
            span = {"first": estimate.get("first"), "last": estimate.get("last")}
            done_span = span if dry_run else compact_log(self, **span).to_dict()
            return {"kind": kind, "dry_run": dry_run, **done_span}
        if kind == "uniform_sync":
            return uniform.run_action(self, dry_run=dry_run)
        if kind == "checkpoint":
            version = self.snapshot().version
            if not dry_run:
                self.checkpoint(version)
            return {"kind": kind, "dry_run": dry_run, "version": version}
        raise InvalidArgumentError(f"run_maintenance: unknown action kind {kind!r}")

    # ------------------------------------------------------------------ checkpoints
    def checkpoint(self, version: int | None = None) -> None:
        """Write a checkpoint of `version` (default latest) and update `_last_checkpoint`."""
        self._committed("checkpoint")
        self._write_checkpoint(self.snapshot(version))

    def _write_checkpoint(self, snap: Snapshot) -> None:
        if problems := checksum_problems(snap):  # (the checkpoint is the log's state, whatever the .crc says)
            log.warning("the version checksum disagrees with the log: %s", "; ".join(problems))
        write_checkpoint(
            self._storage,
            snap.state,
            min_tombstone_ts=_now_ms() - props.deleted_file_retention_ms(snap.metadata.configuration),
            part_size=self.checkpoint_part_size,
            parsed_base_stats=snap.parsed_base_stats(),  # (what an `add_actions()` parsed, or None)
        )

    def _post_commit(self, version: int) -> None:
        try:
            base = self._latest
            if base is not None and base.version < 0:  # a deferred create's version 0: it exists now
                self._latest = None  # (the next read loads it: one commit)
                if iceberg_compat.uniform_iceberg(base.metadata.configuration):
                    uniform.after_commit(self._storage, self._refresh())
                return
            if base is None or base.version >= version:
                return
            if version % props.checkpoint_interval(base.metadata.configuration) != 0:
                uniform.after_commit_from(self._storage, base, version)  # (UniForm tables only)
                return
            snap = base.update(until=version)
            if version % props.checkpoint_interval(snap.metadata.configuration) == 0:
                self._write_checkpoint(snap)
            self._latest = snap
            uniform.after_commit(self._storage, snap)  # (UniForm tables: logs its own failure)
        except (TxnLogError, OSError, pa.ArrowException) as exc:
            log.warning("checkpoint after commit %s failed (the commit itself succeeded): %s", version, exc)
