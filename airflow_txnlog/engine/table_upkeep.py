"""The maintenance methods of `Table`, kept apart from the entry point (engine.table): vacuum, log
cleanup, health, OPTIMIZE with a layout, the maintenance planner and running a plan's actions.

Each method gets the table itself as its `MaintenanceTable` and refuses a deferred create that has
committed nothing (`_committed`). `run_maintenance` runs one action of a plan (a `Decision` of
`plan.actions`, or its `to_dict()` form, as an Airflow task gets it from XCom), dry run by default,
as the fixed operations do; anything else, or a skip, is an InvalidArgumentError saying what it got.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, cast

from airflow_txnlog.engine.errors import InvalidArgumentError
from airflow_txnlog.engine.maintenance import log_cleanup
from airflow_txnlog.engine.maintenance import vacuum as vacuum_mod
from airflow_txnlog.engine.maintenance.compaction import compact
from airflow_txnlog.engine.maintenance.compaction_plan import Decision
from airflow_txnlog.engine.maintenance.health import TableHealth, table_health
from airflow_txnlog.engine.maintenance.layout import LayoutResult, optimize_layout, run_cluster_action
from airflow_txnlog.engine.maintenance.log_cleanup import CleanupResult
from airflow_txnlog.engine.maintenance.maintenance_table import MaintenanceTable
from airflow_txnlog.engine.maintenance.planner import MaintenancePlan, plan_maintenance
from airflow_txnlog.engine.maintenance.vacuum import VacuumResult
from airflow_txnlog.engine.validate import flag


class Upkeep:
    """Mixed into `Table` (which provides `_committed`, `storage`, `snapshot`, `transaction`)."""

    def _committed(self, what: str) -> None:
        raise NotImplementedError  # (engine.table.Table's)

    def _me(self) -> MaintenanceTable:
        return cast(MaintenanceTable, self)

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
            self._me(),
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
            self._me(), retention_hours=retention_hours, dry_run=dry_run, enforce_retention=enforce_retention
        )

    def health(self, *, small_file_bytes: int | None = None) -> TableHealth:
        self._committed("health")
        return table_health(self._me(), small_file_bytes=small_file_bytes)

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
            self._me(), zorder_by=zorder_by, where=where, full=full, target_file_size=target_file_size
        )

    def plan_maintenance(self, **overrides: Any) -> MaintenancePlan:
        """What the table needs now and why, from its log alone (engine.maintenance.planner)."""
        self._committed("plan maintenance")
        return plan_maintenance(self._me(), **overrides)

    def run_maintenance(
        self, action: Mapping[str, Any] | Decision, *, dry_run: bool = True
    ) -> dict[str, Any]:
        """Run one action of a plan (`plan.actions[i]`, or `MaintenancePlan.to_dict()["actions"][i]`);
        a result dict.

        A vacuum or log cleanup keeps the retention the plan used (`estimate.retention_hours`), so it
        deletes no more than planned, and never one below the table's (RetentionTooShortError)."""
        action = _action_dict(action)
        flag("dry_run", dry_run)
        self._committed("run maintenance")
        kind = action.get("kind")
        if kind in ("compact", "purge_deletion_vectors"):
            return compact(self._me(), action, dry_run=dry_run).to_dict()
        if kind == "cluster":
            return run_cluster_action(self._me(), action, dry_run=dry_run)
        estimate = action.get("estimate") or {}
        retention = estimate.get("retention_hours")  # (the plan's: checked against the table's)
        if kind == "vacuum":
            lite = estimate.get("mode") != "full"
            done = self.vacuum(retention_hours=retention, dry_run=dry_run, lite=lite)
            mode = "lite" if lite else "full"
            return {
                "kind": kind,
                "mode": mode,
                "dry_run": dry_run,
                "files": len(done.files),
                "bytes": done.bytes,
            }
        if kind == "cleanup_log":
            done_log = self.cleanup_log(retention_hours=retention, dry_run=dry_run, enforce_retention=True)
            return {"kind": kind, **dataclasses.asdict(done_log)}
        if kind == "checkpoint":
            version = self._me().snapshot().version
            if not dry_run:
                self.checkpoint(version)
            return {"kind": kind, "dry_run": dry_run, "version": version}
        raise InvalidArgumentError(f"run_maintenance: unknown action kind {kind!r}")

    def checkpoint(self, version: int | None = None) -> None:
        raise NotImplementedError  # (engine.table.Table's)


def _action_dict(action: object) -> Mapping[str, Any]:
    """A plan's action as its dict: a `Decision` converted (`to_dict`), a mapping as it is; a skip
    or anything else refused, naming what was given and what is expected."""
    if isinstance(action, Decision):
        action = action.to_dict()
    if not isinstance(action, Mapping):
        shown = repr(action)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        raise InvalidArgumentError(
            f"run_maintenance: action must be one of a plan's actions (a Decision of "
            f"plan_maintenance().actions, or its to_dict()), got {type(action).__name__}: {shown}"
        )
    if action.get("reason") is not None:
        raise InvalidArgumentError(
            f"run_maintenance: the {action.get('kind')!r} decision is a skip, not an action "
            f"({action.get('reason')}); run only a plan's actions"
        )
    return action
