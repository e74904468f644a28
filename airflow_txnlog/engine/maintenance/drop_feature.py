"""`Table.drop_feature`: Delta 4's DROP FEATURE, its fast drop (AlterTableDropFeatureDeltaCommand),
for the features engine.features.feature_drop allows.

    1. checks, nothing written when one fails: the feature is in the protocol and droppable
       (`feature_drop.check_droppable`), and the table's state allows it (checkConstraints: no CHECK
       constraint left; Delta refuses the same);
    2. the commits that remove the feature's traces:
         inCommitTimestamp  delta.enableInCommitTimestamps=false, its enablement provenance removed
                            (operation UNSET TBLPROPERTIES)
         deletionVectors    delta.enableDeletionVectors=false, then every file with a deletion
                            vector rewritten without one (the planner's purge, each file alone),
                            then tombstones for the DV files older versions still use (below)
         rowTracking        delta.enableRowTracking=false and delta.rowTrackingSuspended=true, then
                            every file re-added without row ids (ROW TRACKING UNBACKFILL, batches);
                            the drop commit removes those properties and the delta.rowTracking domain
                            (domainMetadata stays in the protocol)
         typeWidening       delta.enableTypeWidening unset, the files written before a type change
                            (their parquet types differ) rewritten, then delta.typeChanges removed
         domainMetadata     one commit removing every domain left (DOMAIN METADATA CLEANUP)
         v2Checkpoint       delta.checkpointPolicy=classic (SET TBLPROPERTIES): the barrier
                            checkpoints and every one after are classic V1-spec files, so the
                            newest checkpoint a reader finds past the drop needs no V2 support
         icebergCompatV2    delta.enableIcebergCompatV2 and delta.universalFormat.enabledFormats
                            unset (UniForm off; the Iceberg metadata is no longer updated nor
                            kept from vacuum, as in Delta; columnMapping stays). Delta cannot
                            drop it (not a RemovableFeature); this engine does: a writer feature
                            whose rules bind only while on
    3. a protected drop (a reader-writer feature): three barrier steps, each an empty commit
       ("Empty Commit") and a checkpoint, so that a reader that does not know the feature finds a
       checkpoint past it before falling back to older ones (Delta: snapshot loading retries + 1);
    4. the DROP FEATURE commit ({"featureName", "truncateHistory": false}): the protocol without the
       feature (`feature_drop.without`) and the metadata; when protected, with `checkpointProtection`
       and `delta.requireCheckpointProtectionBeforeVersion` = this commit's own version. It must not
       lose a race (a commit in between would move its version): it is then rebuilt on the new
       snapshot, at most `ATTEMPTS` times;
    5. a protected drop: a checkpoint at that version.
Older versions keep the old protocol (time travel to them needs the feature); log cleanup honours
checkpointProtection (engine.features.checkpoint_protection).

checkpointProtection itself goes only with `truncate_history=True`, as in Delta: the log is cleaned
with a 24-hour retention (`delta.dropFeatureTruncateHistory.retentionDuration`); when a commit below V
is still there (younger than that, or held by a publication), it is refused ("wait"); else V is removed
and the feature dropped in one commit.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from typing import Any, Protocol

import pyarrow as pa

from airflow_txnlog.engine import properties as props
from airflow_txnlog.engine.errors import (
    CommitConflictError,
    CommitRetriesExceededError,
    InvalidArgumentError,
    TxnLogError,
    UnsupportedFeatureError,
)
from airflow_txnlog.engine.features import (
    checkpoint_protection,
    constraints,
    feature_drop,
    generated,
    iceberg_compat,
    identity,
    row_tracking,
    table_features,
    type_widening,
)
from airflow_txnlog.engine.features.deletion_vectors import DeletionVector
from airflow_txnlog.engine.log.actions import AddFile, DomainMetadata, RemoveFile
from airflow_txnlog.engine.log.log_paths import parse_name
from airflow_txnlog.engine.maintenance import compaction
from airflow_txnlog.engine.maintenance.log_cleanup import CleanupResult
from airflow_txnlog.engine.maintenance.maintenance_table import MaintenanceTable
from airflow_txnlog.engine.state.scan import file_schema
from airflow_txnlog.engine.state.snapshot import Snapshot
from airflow_txnlog.engine.validate import flag

log = logging.getLogger(__name__)
BARRIER_CHECKPOINTS = 3
UNBACKFILL_BATCH = 10_000  # files re-added without row ids per commit
_WIDENING = ("typeWidening", "typeWidening-preview")
# properties the DROP FEATURE commit itself removes (Delta's tablePropertiesToRemoveAtDowngradeCommit)
_UNSET = {
    "rowTracking": (
        props.ENABLE_ROW_TRACKING, props.ROW_TRACKING_SUSPENDED, props.ROW_ID_COLUMN_KEY,
        props.COMMIT_VERSION_COLUMN_KEY,
    )
}  # fmt: skip
ATTEMPTS = 3
TRUNCATE_RETENTION_HOURS = 24.0  # Delta's delta.dropFeatureTruncateHistory.retentionDuration default


class DropTable(MaintenanceTable, Protocol):
    def checkpoint(self, version: int | None = None) -> None: ...

    def cleanup_log(self, *, retention_hours: float | None = None, dry_run: bool = True) -> CleanupResult: ...


@dataclasses.dataclass(frozen=True)
class DropResult:
    feature: str
    version: int  # the DROP FEATURE commit
    protected_before: int | None  # V, when the drop protects history
    commits: list[int]  # every version this drop committed, in order


def drop_feature(table: DropTable, feature: str, *, truncate_history: bool = False) -> DropResult:
    """Drop `feature` from the table's protocol (see the module doc)."""
    flag("truncate_history", truncate_history)
    snap = table.snapshot()
    feature = feature_drop.canonical(feature)
    feature_drop.check_droppable(snap.protocol, feature)
    if feature == checkpoint_protection.FEATURE:
        if not truncate_history:
            raise InvalidArgumentError(
                "drop_feature: checkpointProtection is dropped only with truncate_history=True (as in "
                "Delta): its protected history must be cleaned up first. Nothing was written"
            )
        return _drop_protection(table)
    if truncate_history:
        raise InvalidArgumentError(
            f"drop_feature: truncate_history applies to checkpointProtection only, not {feature!r}"
        )
    _check_state(snap, feature)
    commits = _remove_traces(table, feature)
    protect = feature_drop.protects_history(feature)
    for _ in range(BARRIER_CHECKPOINTS if protect else 0):
        commits.append(table.transaction("Empty Commit", {}).commit())
        table.checkpoint()
    version = _drop_commit(table, feature, protect=protect)
    if protect:
        try:
            table.checkpoint(version)
        except (TxnLogError, OSError) as exc:  # (committed: Delta ignores it too; the next one will do)
            log.warning("drop_feature: the checkpoint of version %s failed after the drop: %s", version, exc)
    return DropResult(feature, version, version if protect else None, [*commits, version])


def _check_state(snap: Snapshot, feature: str) -> None:
    if feature == "checkConstraints" and (names := sorted(constraints.constraints(snap.metadata))):
        raise InvalidArgumentError(
            f"drop_feature: the table has CHECK constraints {names}; nothing was written. "
            "Help: drop_constraint each of them first"
        )
    used = _columns_using(snap, feature)
    if used:
        raise InvalidArgumentError(
            f"drop_feature: {feature} is used by column(s) {used}; nothing was written. Help: drop those "
            "columns first (drop_columns, on a column-mapped table), then drop the feature"
        )


def _columns_using(snap: Snapshot, feature: str) -> list[str]:
    """The columns still generated (generatedColumns) or numbered (identityColumns)."""
    if feature == "generatedColumns":
        return sorted(generated.of_schema(snap.schema))
    if feature == "identityColumns":
        return sorted(i.column for i in identity.of_metadata(snap.metadata))
    return []


def _traces_left(snap: Snapshot, feature: str) -> str | None:
    """What of `feature` is still in `snap` after its pre-downgrade commits (a rival writer's since:
    Delta's validateDropInvariants), None when nothing is."""
    conf = snap.metadata.configuration
    if feature == "deletionVectors":
        if conf.get(props.ENABLE_DELETION_VECTORS, "false").lower() != "false":
            return f"{props.ENABLE_DELETION_VECTORS} is on"
        marked = next((f.path for f in snap.files() if f.deletion_vector), None)
        return f"{marked} has a deletion vector" if marked else None
    if feature == "inCommitTimestamp":
        keys = (props.ICT_ENABLEMENT_VERSION, props.ICT_ENABLEMENT_TIMESTAMP)
        on = conf.get(props.IN_COMMIT_TIMESTAMPS, "false").lower() != "false" or any(k in conf for k in keys)
        return "in-commit timestamps are on" if on else None
    if feature == "domainMetadata" and (domains := snap.domain_metadata()):
        return f"domain {sorted(domains)[0]!r} is set"
    if feature == "v2Checkpoint" and table_features.v2_checkpoints(conf):
        return f"{props.CHECKPOINT_POLICY} is v2"
    if feature == iceberg_compat.FEATURE and (iceberg_compat.enabled(conf) or iceberg_compat.formats(conf)):
        return f"{iceberg_compat.KEY} or UniForm is on"
    if feature in _WIDENING:
        on = conf.get(props.ENABLE_TYPE_WIDENING, "false").lower() != "false"
        return "type widening is on" if on or type_widening.type_changes(snap.schema) else None
    if feature == "rowTracking":
        if row_tracking.enabled(conf) or conf.get(row_tracking.SUSPENDED, "false").lower() != "true":
            return "row tracking is on"
        numbered = next((f.path for f in snap.files() if _row_fields(f)), None)
        return f"{numbered} has row ids" if numbered else None
    return None


def _remove_traces(table: DropTable, feature: str) -> list[int]:
    """The pre-downgrade commits of `feature` (the module doc's step 2); their versions."""
    snap, done = table.snapshot(), []
    conf = dict(snap.metadata.configuration)
    if feature == "inCommitTimestamp":
        keys = [props.IN_COMMIT_TIMESTAMPS, props.ICT_ENABLEMENT_VERSION, props.ICT_ENABLEMENT_TIMESTAMP]
        if conf.get(keys[0], "false").lower() != "false" or any(k in conf for k in keys[1:]):
            kept = {k: v for k, v in conf.items() if k not in keys[1:]}
            done.append(_set_conf(table, snap, {**kept, keys[0]: "false"}, keys[0]))
    elif feature == "deletionVectors":
        if props.ENABLE_DELETION_VECTORS in conf:  # (Delta: UNSET TBLPROPERTIES ... IF EXISTS)
            conf.pop(props.ENABLE_DELETION_VECTORS)
            done.append(_set_conf(table, snap, conf, props.ENABLE_DELETION_VECTORS))
        marked = [f.path for f in table.snapshot().files() if f.deletion_vector]
        if marked:
            action = {"kind": "purge_deletion_vectors", "partition": None, "files": marked}
            purged = compaction.compact(table, action, dry_run=False)
            done += [purged.version] if purged.version is not None else []
        done.append(_dv_tombstones(table))
    elif feature == "rowTracking":
        done += _unbackfill(table, snap)
    elif feature in _WIDENING:
        done += _rewrite_widened(table, snap)
    elif feature == "v2Checkpoint" and _traces_left(snap, feature):
        done.append(_classic_checkpoints(table, snap))
    elif feature == iceberg_compat.FEATURE and _traces_left(snap, feature):
        keys = [iceberg_compat.KEY, iceberg_compat.FORMATS_KEY]  # (UniForm off first, then the compat)
        kept = {k: v for k, v in conf.items() if k not in keys}
        done.append(_set_conf(table, snap, kept, iceberg_compat.KEY))
    elif feature == "domainMetadata" and (domains := snap.domain_metadata()):
        count = {"domainMetadataRemovedCount": len(domains)}
        txn = table.transaction("DOMAIN METADATA CLEANUP", count, snapshot=snap)
        for name, config in domains.items():
            txn.stage_domain(DomainMetadata(name, config, removed=True))
        done.append(txn.commit())
    return done


def _rewrite_widened(table: DropTable, snap: Snapshot) -> list[int]:
    """delta.enableTypeWidening unset; every file whose parquet types differ from the table's for a
    column with a recorded type change (written before the change) rewritten alone in the table's
    types; then the `delta.typeChanges` records removed from the schema (Delta: REORG ... APPLY
    (REWRITE_TYPE_WIDENING), then a metadata commit its history names DROP FEATURE too)."""
    done, conf = [], dict(snap.metadata.configuration)
    if props.ENABLE_TYPE_WIDENING in conf:
        conf.pop(props.ENABLE_TYPE_WIDENING)
        done.append(_set_conf(table, snap, conf, props.ENABLE_TYPE_WIDENING))
    snap = table.snapshot()
    changed = {path[0] for path, _ in type_widening.type_changes(snap.schema)}
    physical = snap.column_names.physical if snap.column_names is not None else snap.schema
    want = {p.name: p.type for f, p in zip(snap.schema, physical, strict=True) if f.name in changed}
    old = [f.path for f in snap.files() if _types_differ(file_schema(table.storage, f), want)]
    if old:  # (the purge action rewrites each file alone, in the table's types: what REORG does here)
        purged = compaction.compact(table, {"kind": "purge_deletion_vectors", "files": old}, dry_run=False)
        done += [purged.version] if purged.version is not None else []
    snap = table.snapshot()
    if changed:
        tree = json.loads(snap.metadata.schema_string)
        _strip(tree, type_widening.TYPE_CHANGES)
        txn = table.transaction("DROP FEATURE", {"columns": json.dumps(sorted(changed))}, snapshot=snap)
        schema_string = json.dumps(tree, separators=(",", ":"))
        txn.update_metadata(dataclasses.replace(snap.metadata, schema_string=schema_string))
        done.append(txn.commit())
    return done


def _types_differ(got: pa.Schema, want: dict[str, pa.DataType]) -> bool:
    return any(n in got.names and got.field(n).type != t for n, t in want.items())


def _strip(node: object, key: str) -> None:
    """Remove `key` from every `metadata` object of a schema JSON tree, nested fields too."""
    if isinstance(node, dict):
        meta = node.get("metadata")
        if isinstance(meta, dict):
            meta.pop(key, None)
        for value in node.values():
            _strip(value, key)
    elif isinstance(node, list):
        for value in node:
            _strip(value, key)


def _unbackfill(table: DropTable, snap: Snapshot) -> list[int]:
    """Row tracking turned off and suspended (no commit assigns ids any more), then every file that
    carries row ids re-added without them, `UNBACKFILL_BATCH` files a commit, dataChange=false
    (Delta's RowTrackingUnBackfillCommand)."""
    done = []
    conf = dict(snap.metadata.configuration)
    if conf.get(row_tracking.SUSPENDED, "false").lower() != "true" or row_tracking.enabled(conf):
        conf.update({row_tracking.ENABLED: "false", row_tracking.SUSPENDED: "true"})
        done.append(_set_conf(table, snap, conf, row_tracking.ENABLED))
    while numbered := [f for f in table.snapshot().files() if _row_fields(f)][:UNBACKFILL_BATCH]:
        txn = table.transaction("ROW TRACKING UNBACKFILL", {"batchId": len(done)})
        for f in numbered:
            txn.add(
                dataclasses.replace(f, base_row_id=None, default_row_commit_version=None, data_change=False)
            )
        done.append(txn.commit())
    return done


def _row_fields(f: AddFile) -> bool:
    return f.base_row_id is not None or f.default_row_commit_version is not None


def _dv_tombstones(table: DropTable) -> int:
    """Delta's "Deletion Vector Tombstones" commit (always made, even empty): a tombstone for each
    deletion vector file that tombstones within the retention still name, so that a vacuum that does
    not know deletion vectors keeps those files as long as time travel to the versions that use them
    (instead of deleting them as files nothing references)."""
    snap = table.snapshot()
    cutoff = int(time.time() * 1000) - props.deleted_file_retention_ms(snap.metadata.configuration)
    tombstones = snap.tombstones()
    removed = {t.path for t in tombstones}
    paths: set[str] = set()
    for t in tombstones:
        dv = DeletionVector.from_wire(t.deletion_vector) if t.deletion_vector else None
        if dv is not None and dv.storage_type == "u" and (t.deletion_timestamp or 0) >= cutoff:
            path = dv.relative_path()  # (absolute 'p' paths are left out, as Delta leaves them)
            paths.update([path] if path is not None and path not in removed else [])
    txn = table.transaction("Deletion Vector Tombstones", {"count": len(paths)}, snapshot=snap)
    now = int(time.time() * 1000)
    for path in sorted(paths):
        txn.remove(RemoveFile(path, deletion_timestamp=now, data_change=False), data_change=False)
    return txn.commit()


def _classic_checkpoints(table: DropTable, snap: Snapshot) -> int:
    """delta.checkpointPolicy=classic (Delta's V2CheckpointPreDowngradeCommand: SET TBLPROPERTIES)."""
    classic = {props.CHECKPOINT_POLICY: "classic"}
    conf = {**snap.metadata.configuration, **classic}
    return _commit_conf(table, snap, conf, "SET TBLPROPERTIES", {"properties": json.dumps(classic)})


def _set_conf(table: DropTable, snap: Snapshot, conf: dict[str, str], off: str) -> int:
    """Commit the configuration `conf` (property `off` turned off) on `snap` (Delta: UNSET TBLPROPERTIES)."""
    parameters = {"properties": json.dumps([off]), "ifExists": "true"}
    return _commit_conf(table, snap, conf, "UNSET TBLPROPERTIES", parameters)


def _commit_conf(
    table: DropTable, snap: Snapshot, conf: dict[str, str], operation: str, parameters: dict[str, str]
) -> int:
    txn = table.transaction(operation, parameters, snapshot=snap)
    txn.update_metadata(dataclasses.replace(snap.metadata, configuration=conf))
    return txn.commit()


def _drop_commit(table: DropTable, feature: str, *, protect: bool) -> int:
    """The DROP FEATURE commit (step 4), rebuilt on the latest snapshot when it loses a race."""
    for attempt in range(ATTEMPTS):
        snap = table.snapshot()
        feature_drop.check_droppable(snap.protocol, feature)  # (a rival may have changed the table)
        _check_state(snap, feature)
        if (left := _traces_left(snap, feature)) is not None:
            raise CommitConflictError(
                f"drop_feature: another writer brought {feature} back ({left}); the protocol still has "
                "it. Help: run drop_feature again",
                winning_version=snap.version,
            )
        conf: dict[str, Any] = {
            k: v for k, v in snap.metadata.configuration.items() if k not in _UNSET.get(feature, ())
        }
        if protect:
            conf[props.CHECKPOINT_PROTECTION_VERSION] = str(snap.version + 1)
        parameters = {"featureName": feature, "truncateHistory": "false"}
        txn = table.transaction("DROP FEATURE", parameters, snapshot=snap)  # (a rival commit: a conflict)
        txn.max_attempts = 1  # (no rebase: V names this very version)
        txn.update_metadata(dataclasses.replace(snap.metadata, configuration=conf))
        if feature == "rowTracking" and row_tracking.DOMAIN in (domains := snap.domain_metadata()):
            txn.stage_domain(DomainMetadata(row_tracking.DOMAIN, domains[row_tracking.DOMAIN], removed=True))
        txn.update_protocol(feature_drop.without(snap.protocol, feature, protect=protect), dropping=feature)
        try:
            return txn.commit()
        except (CommitRetriesExceededError, CommitConflictError):
            if attempt == ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def _protected(snap: Snapshot) -> int:
    """V of `snap`; InvalidArgumentError when it is not a whole number (no cleanup could honour it)."""
    protected = checkpoint_protection.protected_before(snap.protocol, snap.metadata)
    if protected == checkpoint_protection.EVERYTHING:
        raise InvalidArgumentError(
            f"drop_feature: {props.CHECKPOINT_PROTECTION_VERSION} is not a whole number "
            f"({snap.metadata.configuration.get(props.CHECKPOINT_PROTECTION_VERSION)!r}); nothing was written"
        )
    return protected


def _drop_protection(table: DropTable) -> DropResult:
    """checkpointProtection with its history truncated (the module doc's last paragraph)."""
    protected = _protected(table.snapshot())
    if protected:
        table.cleanup_log(retention_hours=TRUNCATE_RETENTION_HOURS, dry_run=False)
    snap = table.snapshot()  # (the commit is built on this one: a rival commit after it conflicts)
    if _protected(snap) != protected:
        raise CommitConflictError(
            "drop_feature: another writer moved the protected version", winning_version=snap.version
        )
    names = [parse_name(f.name) for f in table.storage.list_log()]
    if any(p is not None and p.kind == "commit" and p.version < protected for p in names):
        raise UnsupportedFeatureError(
            f"drop_feature: commits below version {protected} ({props.CHECKPOINT_PROTECTION_VERSION}) "
            f"are still in the log, younger than {TRUNCATE_RETENTION_HOURS:g} hours or held by a "
            "publication; nothing was dropped. Help: run it again once they are older",
            feature=checkpoint_protection.FEATURE,
        )
    conf = {k: v for k, v in snap.metadata.configuration.items() if k != props.CHECKPOINT_PROTECTION_VERSION}
    parameters = {"featureName": checkpoint_protection.FEATURE, "truncateHistory": "true"}
    txn = table.transaction("DROP FEATURE", parameters, snapshot=snap)
    txn.update_metadata(dataclasses.replace(snap.metadata, configuration=conf))
    protocol = feature_drop.without(snap.protocol, checkpoint_protection.FEATURE, protect=False)
    txn.update_protocol(protocol, dropping=checkpoint_protection.FEATURE)
    version = txn.commit()
    return DropResult(checkpoint_protection.FEATURE, version, None, [version])
