"""UniForm upkeep: keeping the Iceberg metadata in step (`sync`, `after_commit`: engine.uniform's
sync, pyiceberg loaded only for a UniForm table) and turning icebergCompatV2 (and UniForm) on for a
table that has data files: Delta's `REORG TABLE t APPLY (UPGRADE UNIFORM(ICEBERG_COMPAT_VERSION=2))`,
which `set_properties` runs when the properties turn the compat on and the table has files.

1. one SET TBLPROPERTIES commit turns `delta.enableIcebergCompatV2` on (with column mapping `name`
   when the table had none: physical names = the current names, ids and nested ids assigned;
   `delta.enableDeletionVectors=false` when it was on), without `delta.universalFormat.*`;
2. every live file whose add lacks the tag `ICEBERG_COMPAT_VERSION=2` is rewritten alone
   (the planner's `purge_deletion_vectors` action: rows the same, deletion vectors applied,
   dataChange=false), so each new file carries its partition columns, field ids at every level and
   the tag; a file still without the tag afterwards (a concurrent writer's, which cannot happen
   once the compat is on) fails the upgrade before UniForm is turned on;
3. a last commit sets `delta.universalFormat.enabledFormats` when asked: its post-commit sync writes
   the first Iceberg metadata (a full conversion).

A failure between the steps leaves a valid Delta table with the compat on; running the same
`set_properties` again continues (already-tagged files are not rewritten).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from airflow_txnlog.engine import properties as props
from airflow_txnlog.engine.errors import TxnLogError
from airflow_txnlog.engine.features import iceberg_compat
from airflow_txnlog.engine.maintenance import compaction
from airflow_txnlog.engine.maintenance.maintenance_table import MaintenanceTable
from airflow_txnlog.engine.state.snapshot import Snapshot
from airflow_txnlog.engine.storage import Storage
from airflow_txnlog.engine.validate import mapping
from airflow_txnlog.engine.write import alter_table

if TYPE_CHECKING:
    from airflow_txnlog.engine.uniform.iceberg_sync import SyncResult


class UniformUpgradeError(TxnLogError):
    """Files without the icebergCompatV2 tag were left after the rewrite."""


def set_properties(table: MaintenanceTable, properties: Mapping[str, str]) -> int:
    """`alter_table.set_properties`, or the upgrade above when the properties turn icebergCompatV2 on
    for a table with files; the last version committed."""
    changes = props.checked_changes(
        mapping("properties", properties, example="{'delta.appendOnly': 'true'}", str_values=True)
    )
    if not ({iceberg_compat.KEY, iceberg_compat.FORMATS_KEY} & set(changes)):  # (no snapshot read here)
        return alter_table.set_properties(table.transaction, properties)
    snap = table.snapshot()
    turning_on = props.TableProperties(changes).iceberg_compat_v2 and not iceberg_compat.enabled(
        snap.metadata.configuration
    )
    if not turning_on or snap.num_files == 0:
        version = alter_table.set_properties(table.transaction, properties)
        return _synced(table, version)
    first = {k: v for k, v in changes.items() if k != iceberg_compat.FORMATS_KEY}
    if props.TableProperties({**snap.metadata.configuration, **first}).deletion_vectors:
        first[props.ENABLE_DELETION_VECTORS] = "false"
    version = alter_table.set_properties(table.transaction, first, rewrite_files=True)
    old = [f.path for f in table.snapshot().files() if (f.tags or {}).get(iceberg_compat.TAG) != "2"]
    if old:
        done = compaction.compact(table, {"kind": "purge_deletion_vectors", "files": old}, dry_run=False)
        version = done.version if done.version is not None else version
    left = [f.path for f in table.snapshot().files() if (f.tags or {}).get(iceberg_compat.TAG) != "2"]
    if left:
        raise UniformUpgradeError(
            f"{len(left)} file(s) still lack the icebergCompatV2 rewrite (e.g. {left[0]!r}); UniForm was "
            "not turned on. Help: run the same set_properties again"
        )
    if iceberg_compat.FORMATS_KEY in changes:
        formats = {iceberg_compat.FORMATS_KEY: changes[iceberg_compat.FORMATS_KEY]}
        version = alter_table.set_properties(table.transaction, formats)
    return _synced(table, version)


def _synced(table: MaintenanceTable, version: int) -> int:
    """`version`, its Iceberg metadata written when the commit turned UniForm on (a commit syncs on
    its own only when the table was UniForm before it)."""
    snap = table.snapshot()
    after_commit(table.storage, snap)
    return version


def sync(storage: Storage, snapshot: Snapshot) -> SyncResult:
    """`Table.uniform_sync`: the Iceberg metadata brought to `snapshot` (engine.uniform.iceberg_sync)."""
    from airflow_txnlog.engine.uniform import iceberg_sync  # noqa: PLC0415 (pyiceberg: UniForm only)

    return iceberg_sync.sync(storage, snapshot)


def after_commit_from(storage: Storage, base: Snapshot, version: int) -> SyncResult | None:
    """A commit's sync, from the snapshot before it (engine.uniform.commit_target), for a table that
    was UniForm before the commit; else nothing."""
    if not iceberg_compat.uniform_iceberg(base.metadata.configuration):
        return None
    from airflow_txnlog.engine.uniform import iceberg_sync  # noqa: PLC0415 (pyiceberg: UniForm only)

    return iceberg_sync.after_commit_from(storage, base, version)


def after_commit(storage: Storage, snapshot: Snapshot) -> SyncResult | None:
    """A commit's sync when the table is UniForm (its failure logged, never raised); else nothing."""
    if not iceberg_compat.uniform_iceberg(snapshot.metadata.configuration):
        return None
    from airflow_txnlog.engine.uniform import iceberg_sync  # noqa: PLC0415 (pyiceberg: UniForm only)

    return iceberg_sync.after_commit(storage, snapshot)


def run_action(table: MaintenanceTable, *, dry_run: bool) -> dict[str, Any]:
    """The planner's `uniform_sync` action (a commit's own sync failed): the sync's result."""
    done = {} if dry_run else dataclasses.asdict(sync(table.storage, table.snapshot()))
    return {"kind": "uniform_sync", "dry_run": dry_run, **done}
