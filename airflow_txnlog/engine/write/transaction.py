"""Optimistic transactions: read a snapshot, stage actions, commit with `put_if_absent`.

Commit loop (Delta's optimistic concurrency):
    attempt = read_version + 1
    loop (at most `max_attempts` times):
        put_if_absent(attempt.json, commitInfo + actions)      -> success: return attempt
        on "already exists" (`VersionAlreadyExistsError`, internal): read the winning commits
        attempt..latest (engine.log.log_reader), run `conflicts.check_winner` on each (raises the
        specific conflict error), then attempt = latest + 1.
    out of attempts: `CommitRetriesExceededError`.
Any other storage failure during the put is a `CommitOutcomeUnknownError`: the object may have been
written before the failure, so the caller must look before retrying.
The commit content never changes between attempts (readVersion stays the version we read), so a
retry is only allowed when the conflict checks prove our actions are still valid on top of the
winners. Blind appends (only adds, nothing read) never conflict with other appends, which is why the
attempt budget is generous: a busy table must not make us drop a commit.

Before the first attempt the transaction is validated, and nothing is written if it is invalid:
its arguments (isolation level, parameters/metrics/extra that must serialize to JSON, str tags),
protocol features we cannot write, `delta.appendOnly`, paths escaping the table root, duplicate
actions for one path, a new schema with a column both identity and generated (Delta refuses one).
(A transaction without actions commits a version holding only commitInfo, as Delta's VACUUM
START/END do; a 0-byte commit file is never written.)
Every commit records its provenance (engine.write.provenance): inside an Airflow task, commitInfo.job
and the run's `owner` tag, so that a restore can tell the run's own commits from other writers'.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from airflow_txnlog import __version__
from airflow_txnlog.engine import properties as props
from airflow_txnlog.engine.errors import (
    AppendOnlyViolationError,
    CommitRetriesExceededError,
    CommitTooLargeError,
    ConcurrentAppendError,
    InvalidArgumentError,
    TableCreatedConcurrentlyError,
    UnsupportedFeatureError,
    VersionAlreadyExistsError,
)
from airflow_txnlog.engine.features import constraints, domain_metadata, generated, identity, row_tracking
from airflow_txnlog.engine.features import iceberg_compat as iceberg
from airflow_txnlog.engine.features.feature_drop import check_protocol_change
from airflow_txnlog.engine.features.table_features import (
    check_write_supported,
    implied_features,
    schema_features,
    upgraded,
    with_writer_feature,
)
from airflow_txnlog.engine.log.actions import (
    IN_COMMIT_TIMESTAMP,
    Action,
    AddCDCFile,
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
    serialize_actions,
)
from airflow_txnlog.engine.log.log_reader import list_after, read_commits
from airflow_txnlog.engine.log.replay import file_key
from airflow_txnlog.engine.sql.predicates import Predicate, Range, parse_predicate
from airflow_txnlog.engine.state.checksums import CommitChanges
from airflow_txnlog.engine.state.snapshot import Snapshot
from airflow_txnlog.engine.storage import Storage
from airflow_txnlog.engine.validate import json_mapping, mapping, number, one_of, text
from airflow_txnlog.engine.write import commit_timestamps, landing, provenance, version_checksums
from airflow_txnlog.engine.write.conflicts import (
    SERIALIZABLE,
    SNAPSHOT_ISOLATION,
    IsolationLevel,
    ReadSet,
    check_winner,
)
from airflow_txnlog.engine.write.paths import check_inside_root

ENGINE_INFO = f"airflow-txnlog/{__version__}"
DEFAULT_MAX_ATTEMPTS = 100
# 256 MiB of JSON holds 0.5-2 million add/remove actions (120-500 bytes each, with stats): far beyond
# a sane single commit, yet small enough that one runaway commit cannot stall every reader.
DEFAULT_MAX_COMMIT_BYTES = 256 * 1024 * 1024
TAGS_EXAMPLE = provenance.TAGS_EXAMPLE


class Transaction:
    """One atomic change to a table. Use through `Table.transaction()` as a context manager.

    :param snapshot: the version the transaction reads (its `readVersion`).
    :param operation: the commitInfo operation name, e.g. "WRITE", "DELETE", "OPTIMIZE".
    """

    def __init__(
        self,
        storage: Storage,
        snapshot: Snapshot,
        *,
        operation: str,
        parameters: Mapping[str, Any] | None = None,
        isolation_level: IsolationLevel = SERIALIZABLE,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        max_commit_bytes: int | None = DEFAULT_MAX_COMMIT_BYTES,
        on_committed: Callable[[int], None] | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> None:
        number("max_attempts", max_attempts, minimum=1, integer=True)
        number("max_commit_bytes", max_commit_bytes, minimum=1, integer=True, none_means="no limit")
        text("operation", operation, none_ok=False, empty_ok=False)
        one_of("isolation_level", isolation_level, IsolationLevel)
        self._storage = storage
        self.snapshot = snapshot
        self.read_version = snapshot.version
        self.operation = operation
        self.parameters = json_mapping("parameters", parameters, example="{'mode': 'Append'}")
        self.isolation_level: str = isolation_level
        self.max_attempts = max_attempts
        self.max_commit_bytes = max_commit_bytes
        self._on_committed = on_committed
        self.tags = mapping("tags", tags, example=TAGS_EXAMPLE, str_values=True)
        self._adds: dict[str, AddFile] = {}
        self._removes: dict[str, RemoveFile] = {}
        self._txns: list[Txn] = []
        self._domains: dict[str, DomainMetadata] = {}
        self._cdc: list[AddCDCFile] = []
        self._metadata: Metadata | None = None
        self._protocol: Protocol | None = None
        self._read_predicates: list[Predicate] = []
        self._read_whole_table = False
        self._read_keys: set[str] = set()
        self._app_ids: set[str] = set()
        self._rows_checked = False
        self._existing_rows_checked = False
        self._winner_mark = -1  # the highest row id a winning commit assigned (row tracking)
        self._sent: set[str] = set()  # the txnIds of the payloads built (engine.write.landing)
        self._rows_preserved = False
        self._changes = CommitChanges((), ())  # what the last payload commits (its version checksum)
        self.committed_version: int | None = None
        self.attempts = 0

    def __enter__(self) -> Transaction:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None  # an uncommitted transaction leaves no trace in the log

    # ------------------------------------------------------------------ reads
    def read_files(self, filter: str | None = None) -> list[AddFile]:
        """Live files matching `filter` (all if None), recorded as read for conflict detection."""
        files = self.snapshot.files(filter)
        if filter is None:
            self._read_whole_table = True
        else:
            self._read_predicates.append(parse_predicate(filter, self.snapshot.schema))
        self._read_keys.update(file_key(f.path, f.deletion_vector) for f in files)
        return files

    def txn_version(self, app_id: str) -> int | None:
        """Last committed version of an idempotent writer (recorded as read)."""
        self._app_ids.add(app_id)
        return self.snapshot.txn_version(app_id)

    # ------------------------------------------------------------------ writes
    def add(self, add: AddFile) -> None:
        key = file_key(add.path, add.deletion_vector)
        if key in self._adds:
            raise InvalidArgumentError(f"file {add.path!r} is added twice in one transaction")
        self._adds[key] = add

    def rows_checked(self) -> None:
        """Vouch that every row of the data files this transaction adds satisfies the table's row
        rules (CHECK constraints, column invariants). The engine's writer and the Spark layer call it
        after enforcing them; a transaction that adds data to a table with rules without it is
        refused, since the engine cannot check files it did not write."""
        self._rows_checked = True

    def rows_preserved(self) -> None:
        """Vouch that the rows this commit copies or updates kept their stable row ids (and copied
        rows their commit versions) in the hidden columns: commitInfo then says
        `delta.rowTracking.preserved: true` (engine.features.row_tracking)."""
        self._rows_preserved = True

    def add_cdc(self, cdc: AddCDCFile) -> None:
        """Stage a change data file (change data feed): with any, the feed of this commit is exactly
        the change files' rows, so a commit that rewrites part of a file must list them all."""
        check_inside_root(cdc.path, self._storage.fs_root)
        self._cdc.append(cdc)

    def remove(self, file: AddFile | RemoveFile, *, data_change: bool = True) -> None:
        if isinstance(file, AddFile):
            file = file.remove(deletion_timestamp=int(time.time() * 1000), data_change=data_change)
        key = file_key(file.path, file.deletion_vector)
        if key in self._removes:
            raise InvalidArgumentError(f"file {file.path!r} is removed twice in one transaction")
        self._removes[key] = file

    def set_app_transaction(self, app_id: str, version: int) -> None:
        if not app_id or not isinstance(version, int) or version < 0:
            raise InvalidArgumentError(
                f"txn needs a non-empty app id and a version >= 0, got {app_id!r}, {version!r}"
            )
        self._app_ids.add(app_id)
        self._txns.append(Txn(app_id, version, int(time.time() * 1000)))

    def set_domain_metadata(self, domain: str, configuration: str) -> None:
        """Set a user metadata domain in this commit (engine.features.domain_metadata)."""
        self.stage_domain(domain_metadata.setting(domain, configuration))

    def remove_domain_metadata(self, domain: str) -> None:
        """Remove a user metadata domain the read snapshot has."""
        self.stage_domain(domain_metadata.removal(domain, self.snapshot.domain_metadata()))

    def stage_domain(self, action: DomainMetadata) -> None:
        """Stage a domain action as is (a feature's `delta.*` domain: engine.features.clustering)."""
        self._domains[action.domain] = action  # (one action per domain and commit: the last)
        current = self._protocol or self.snapshot.protocol
        if (protocol := with_writer_feature(current, domain_metadata.FEATURE)) != current:
            self.update_protocol(protocol)

    def update_metadata(self, metadata: Metadata) -> None:
        """Commit `metadata`; a schema whose types need a table feature the protocol lacks (a new
        variant or timestamp_ntz column) upgrades the protocol with it, as Delta does."""
        self._metadata = metadata
        current = self._protocol or self.snapshot.protocol
        needed = schema_features(current, metadata.schema_string)
        if needed:  # (a deferred create too: its version 0 carries `self._protocol` then)
            self._protocol = upgraded(current, needed, needed, {})

    def update_protocol(self, protocol: Protocol, *, dropping: str | None = None) -> None:
        """Commit `protocol`: never lower than the read one, but for DROP FEATURE `dropping`."""
        if self._domains:  # (a domain staged before: its feature stays in whatever protocol follows)
            protocol = with_writer_feature(protocol, domain_metadata.FEATURE)
        check_protocol_change(self.snapshot.protocol, protocol, dropping)
        self._protocol = protocol

    def record_identity_marks(self, marks: Mapping[str, int]) -> None:
        """The identity columns' new high-water marks (column -> mark), in this very commit, on top
        of any metadata change it already carries; the protocol gains `identityColumns` if it does
        not name it yet."""
        if not marks:
            return
        self.update_metadata(identity.with_marks(self._metadata or self.snapshot.metadata, marks))
        current = self._protocol or self.snapshot.protocol
        protocol = with_writer_feature(current, "identityColumns")
        if protocol != current:
            self.update_protocol(protocol)

    # ------------------------------------------------------------------ commit
    def _check_new_properties(self, metadata: Metadata) -> None:
        """Properties this transaction turns on: honored by the engine, and named by the protocol."""
        before = self.snapshot.metadata.configuration
        changed = {k: v for k, v in metadata.configuration.items() if before.get(k) != v}
        props.refuse_not_honored(changed, recorded=True)
        readers, writers = props.property_features(changed)
        implied_readers, implied_writers = implied_features(self._protocol or self.snapshot.protocol)
        if any(k.startswith(constraints.CONSTRAINT_PREFIX) for k in changed):
            writers.add("checkConstraints")  # (Table.add_constraint raises the protocol for it)
        missing = sorted((writers - implied_writers) | (readers - implied_readers))
        if missing:  # (a deferred create too: its properties belong in Table.create, which sets the protocol)
            raise UnsupportedFeatureError(
                f"the new properties turn on table feature {missing[0]!r}, which the protocol does not "
                "name; nothing was written. Help: use Table.set_properties, which upgrades the protocol, "
                "or pass the properties to Table.create",
                feature=missing[0],
            )

    def _check_new_identities(self, metadata: Metadata, protocol: Protocol) -> None:
        """A column this commit's schema makes both identity and generated is refused (one a foreign
        table already has stays: the writers refuse its writes, not its other commits)."""
        read = self.snapshot
        if metadata.schema_string != read.metadata.schema_string:
            had = generated.enforced(read.metadata, read.protocol)
            keep = identity.generated_identities(identity.of_metadata(read.metadata), had)
            new = generated.enforced(metadata, protocol)
            identity.refuse_generated(identity.of_metadata(metadata), new, keep=keep)

    def _validate(self) -> None:
        metadata = self._metadata or self.snapshot.metadata
        protocol = self._protocol or self.snapshot.protocol
        check_write_supported(protocol, metadata)
        if self._domains and domain_metadata.FEATURE not in implied_features(protocol)[1]:
            raise InvalidArgumentError("domainMetadata actions need the domainMetadata writer feature")
        if self._metadata is not None:  # a property turned on now must be one the engine honors
            self._check_new_properties(metadata)
            self._check_new_identities(metadata, protocol)
        # As Delta's prepareCommit: the table the transaction read decides, so one commit cannot turn
        # appendOnly off and remove data at once (a restore to a version before appendOnly was set
        # is refused the same way when it must remove data, as Spark's RESTORE is).
        read_conf = self.snapshot.metadata.configuration
        if props.append_only(read_conf) and any(r.data_change for r in self._removes.values()):
            raise AppendOnlyViolationError(
                "the table is append-only (delta.appendOnly=true in the version this transaction read): "
                "data-changing removes are not allowed. Help: set delta.appendOnly=false in a commit of its "
                "own first, if removing data is intended"
            )
        for add in self._adds.values():
            check_inside_root(add.path, self._storage.root)
        self._check_rules(metadata)
        before = self.snapshot.metadata if self.read_version >= 0 else None
        iceberg.check_commit(before, metadata, protocol, self._adds.values())
        both = set(self._adds) & set(self._removes)
        if both:
            raise InvalidArgumentError(f"file {sorted(both)[0]!r} is both added and removed in one commit")

    def existing_rows_checked(self) -> None:
        """Vouch that the rows already in the table keep the row rules this commit adds (a new
        constraint, invariant or generated column, or a protocol that turns one on): ADD CONSTRAINT
        calls it after its check, restore because the target's rows kept the target's rules."""
        self._existing_rows_checked = True

    def _check_rules(self, metadata: Metadata) -> None:
        """Rules this commit adds need the rows already there checked; files it adds, their rows."""
        rules = constraints.rules(metadata, self._protocol or self.snapshot.protocol)
        if not self._existing_rows_checked and self.snapshot.version >= 0:  # (a new table has no rows)
            before = {r.label for r in constraints.rules(self.snapshot.metadata, self.snapshot.protocol)}
            new = [r.label for r in rules if r.label not in before]
            if new:
                raise InvalidArgumentError(
                    f"this commit adds the row rule {new[0]} without checking the rows already in the "
                    "table. Nothing was written. Help: add a constraint with Table.add_constraint (it "
                    "checks them); a generated column or invariant is added at create"
                )
        if self._rows_checked or not self._adds:  # (dataChange=false files are rows too)
            return
        labels = [r.label for r in rules] + [
            f"identity column {i.column}" for i in identity.of_metadata(metadata)
        ]
        if labels:
            more = f" and {len(labels) - 1} more" if len(labels) > 1 else ""
            raise InvalidArgumentError(
                f"the table has row rules ({labels[0]}{more}) and this transaction adds data files the "
                "engine did not check against them. Nothing was written. Help: write through Table.write "
                "or SparkTable, which enforce them, or check every row yourself and call "
                "txn.rows_checked() before committing"
            )

    def _read_set(self) -> ReadSet:
        files: list[AddFile | RemoveFile] = [*self._adds.values(), *self._removes.values()]
        changes = [f.data_change for f in files]
        only_rearrange = bool(changes) and not any(changes)
        read_any = self._read_keys or self._read_whole_table or self._read_predicates
        blind = not (self._removes or read_any or self._metadata or self._protocol)
        return ReadSet(
            isolation_level=SNAPSHOT_ISOLATION if only_rearrange else self.isolation_level,
            is_blind_append=blind,
            read_whole_table=self._read_whole_table,
            read_predicates=tuple(self._read_predicates),
            read_file_keys=frozenset(self._read_keys),
            app_ids=frozenset(self._app_ids),
            removed_keys=frozenset(self._removes),
            writes_protocol=self._protocol is not None,
            domains=frozenset(self._domains),
        )

    def _payload(
        self, read_set: ReadSet, metrics: dict[str, Any], extra: dict[str, Any], *, version: int
    ) -> bytes:
        now = int(time.time() * 1000)
        metadata = self._metadata
        if self._in_commit_timestamps():
            ict = commit_timestamps.next_timestamp(self._storage, self.snapshot, version, now)
            extra = {**extra, IN_COMMIT_TIMESTAMP: ict}
            metadata = commit_timestamps.with_enablement(self.snapshot, self._metadata, version, ict)
        txn_id = str(uuid.uuid4())
        info = CommitInfo(
            timestamp=now,
            operation=self.operation,
            operation_parameters=self.parameters,
            read_version=self.read_version if self.read_version >= 0 else None,
            isolation_level=read_set.isolation_level,
            is_blind_append=read_set.is_blind_append,
            operation_metrics=metrics,
            engine_info=ENGINE_INFO,
            txn_id=txn_id,
            extra=extra,
        )
        self._sent.add(txn_id)
        protocol = self._protocol
        domains = dict(self._domains)
        if self.read_version < 0:  # a deferred create: version 0 holds protocol, metaData, domains
            protocol, metadata = protocol or self.snapshot.protocol, metadata or self.snapshot.metadata
            domains = {d: DomainMetadata(d, c) for d, c in self.snapshot.domain_metadata().items()} | domains
        adds = list(self._adds.values())
        meta = metadata or self.snapshot.metadata
        if row_tracking.assigns(protocol or self.snapshot.protocol, meta):
            live = row_tracking.high_water_mark(self.snapshot.domain_metadata())
            adds, mark, tags = row_tracking.stamp(
                adds, mark=max(live, self._winner_mark), version=version,
                enabled=row_tracking.enabled(meta.configuration), copies=bool(self._removes),
                vouched=self._rows_preserved,
            )  # fmt: skip
            domains.update({} if mark is None else {mark.domain: mark})
            extra = {**extra, "tags": {**extra.get("tags", {}), **tags}} if tags else extra
        removes, dms, stamp = [*self._removes.values()], [*domains.values()], extra.get(IN_COMMIT_TIMESTAMP)
        self._changes = CommitChanges(adds, removes, self._txns, dms, metadata, protocol, stamp, txn_id)
        actions: list[Action] = [dataclasses.replace(info, extra=extra)]
        actions += [a for a in (protocol, metadata) if a is not None]
        actions += self._txns + list(domains.values())
        actions += [*self._removes.values(), *adds]
        actions += self._cdc
        return serialize_actions(actions)

    def commit(
        self,
        *,
        metrics: Mapping[str, Any] | None = None,
        user_metadata: str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> int:
        """Commit the staged actions; returns the new version. Raises a conflict error if unsafe.

        :param extra: more commitInfo fields (e.g. "discardedVersions"); its `tags` merge with the
            transaction's own tags.
        """
        if self.committed_version is not None:
            raise InvalidArgumentError("this transaction has already been committed")
        self._validate()
        read_set = self._read_set()
        fields = provenance.info_fields(self.tags, metrics, user_metadata, extra)
        attempt = self.read_version + 1
        payload = self._payload(read_set, *fields, version=attempt)
        if self.max_commit_bytes is not None and len(payload) > self.max_commit_bytes:
            actions = len(self._adds) + len(self._removes) + len(self._txns)
            raise CommitTooLargeError(len(payload), self.max_commit_bytes, actions)
        while self.attempts < self.max_attempts:
            self.attempts += 1
            if self.attempts > 1 and (self._in_commit_timestamps() or self._row_tracking()):  # per attempt
                payload = self._payload(read_set, *fields, version=attempt)
            try:
                landing.put_commit(self._storage, attempt, payload)
            except VersionAlreadyExistsError:
                attempt, ours = self._check_winners(read_set, attempt)
                if not ours:
                    continue
            self.committed_version = attempt
            version_checksums.write_after_commit(self._storage, self.snapshot, attempt, self._changes)
            if self._on_committed is not None:
                self._on_committed(attempt)
            return attempt
        raise CommitRetriesExceededError(
            f"gave up after {self.max_attempts} commit attempts: the table is too busy. "
            "Help: retry later or raise max_commit_attempts."
        )

    def _row_tracking(self) -> bool:
        protocol, meta = self._protocol or self.snapshot.protocol, self._metadata or self.snapshot.metadata
        return row_tracking.assigns(protocol, meta)

    def _in_commit_timestamps(self) -> bool:
        return props.in_commit_timestamps((self._metadata or self.snapshot.metadata).configuration)

    def _check_winners(self, read_set: ReadSet, attempt: int) -> tuple[int, bool]:
        """Check every commit from `attempt` on against ours: (the next version to try, False), or
        (a version, True) when that version holds a commit this transaction sent (engine.write.landing)."""
        winners = list_after(self._storage, attempt - 1).run_from(attempt)
        for winner in read_commits(self._storage, winners):
            if landing.sent_by(winner.actions, self._sent):
                return winner.version, True
            if self.read_version < 0:  # a deferred create: whoever made version 0 made another table
                raise TableCreatedConcurrentlyError()
            self._winner_mark = max(self._winner_mark, row_tracking.mark_in(winner.actions))
            read = (self.snapshot.protocol, self.snapshot.metadata.configuration)
            ours = (self._protocol, None if self._metadata is None else self._metadata.configuration)
            if path := row_tracking.unnumbered_add(read, ours, winner.actions):
                raise ConcurrentAppendError(
                    f"a concurrent commit added {path!r} without row ids while this turns row tracking on",
                    winning_version=winner.version,
                )
            check_winner(
                read_set,
                winner.version,
                winner.actions,
                ranges=self._ranges,
                protocol_supported=self._protocol_ok,
            )
        if self.read_version < 0:
            raise TableCreatedConcurrentlyError()
        return attempt + len(winners), False

    def _ranges(self, add: Mapping[str, Any], columns: frozenset[str]) -> Mapping[str, Range]:
        return self.snapshot.file_ranges(AddFile.from_wire(add), columns)

    def _protocol_ok(self, wire: Mapping[str, Any]) -> bool:
        try:
            check_write_supported(Protocol.from_wire(wire), self._metadata or self.snapshot.metadata)
        except UnsupportedFeatureError:
            return False
        return True
