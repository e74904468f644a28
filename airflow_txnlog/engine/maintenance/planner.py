"""The maintenance planner: what one table needs now, and why, from its log alone.

Inputs: the latest snapshot (live files with size, modification time, numRecords, their deletion
vectors' cardinality and clusteringProvider), one listing of `_delta_log/`, one backwards pass over
the commits (skimmed: commitInfo lines, and only the commits holding a remove parsed) for both the
history since the last completed vacuum (engine.maintenance.vacuum_log) and the newest Z-order of
an unclustered table (rewrite_layout.ZOrderFinder riding the same pass), and the metadata folders
log cleanup consults (`_savepoints/`, `_published/`). No data file is read and no data folder is
listed (tests/engine/maintenance/test_planner.py records the storage calls).

Decisions, each an action or a skip with rule, observed value, threshold, cost and benefit:
    cluster, compact, purge_deletion_vectors   the data rewrites (engine.maintenance.rewrite_plan):
                   a clustered table's unclustered files first (cluster_plan), then per partition
                   (compaction_plan); each carries the layout it keeps (`layout`: the clustering
                   keys, or the Z-order the log names), or is a skip (rule `layout_kept`) when
                   that layout cannot be kept; bytes written are estimated without the per-file
                   overhead the inputs carry (file_overhead)
    checkpoint     commits since the newest checkpoint >= `checkpoint_interval`; benefit: the commit
                   files a reader no longer replays
    cleanup_log    what `cleanup_log` would delete now (its own rule, so running it converges)
    uniform_sync   a UniForm table whose Iceberg metadata lags the latest version (a commit's own
                   sync failed): `Table.uniform_sync()` catches up
    vacuum         lite (Delta's VACUUM LITE): the files removed since the last completed vacuum's
                   cutoff, past the retention, not live and inside the table root, when their bytes
                   reach `vacuum_min_bytes` or the retention has passed since the last vacuum; full
                   (a listing for orphans of failed writes): when no full vacuum ran for
                   `full_vacuum_days`, or the log no longer holds what a lite one would need
Planning again right after the plan ran gives no action: compaction never takes files of 0.75 x
target or more, a checkpoint resets the count, a vacuum covers what it found, log cleanup deletes
exactly what was planned. On a clustered table the cluster action's outputs may be small files
themselves and bring a partition's small files back to `min_input_files`: the next plan compacts
them. It settles: maintenance never writes an unclustered file, so once appends stop the cluster
action fires at most once more, and each compaction removes files net.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_txnlog.engine.features import iceberg_compat
from airflow_txnlog.engine.log.log_segment import LogListing, monotonic_timestamps
from airflow_txnlog.engine.log.replay import key_paths
from airflow_txnlog.engine.maintenance.compaction_plan import Decision
from airflow_txnlog.engine.maintenance.log_cleanup import cleanup_log
from airflow_txnlog.engine.maintenance.maintenance_table import MaintenanceTable
from airflow_txnlog.engine.maintenance.plan_settings import PlanSettings, settings
from airflow_txnlog.engine.maintenance.rewrite_layout import ZOrderFinder
from airflow_txnlog.engine.maintenance.rewrite_plan import plan_rewrites
from airflow_txnlog.engine.maintenance.vacuum_log import Removed, VacuumHistory, vacuum_history
from airflow_txnlog.engine.state.snapshot import Snapshot
from airflow_txnlog.engine.storage import ListedFile, has_scheme
from airflow_txnlog.engine.uniform import layout

DAY_MS = 24 * 3600 * 1000
_PER_FILE_CHECKPOINT_BYTES = 200  # (a rough size of one add in a parquet checkpoint: an estimate)


@dataclass(frozen=True)
class MaintenancePlan:
    """One table's plan; `to_dict()` is plain JSON."""

    table: str
    version: int
    planned_at: int
    settings: PlanSettings
    actions: list[Decision] = field(default_factory=list)
    skipped: list[Decision] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "version": self.version,
            "planned_at": self.planned_at,
            "settings": self.settings.to_dict(),
            "actions": [a.to_dict() for a in self.actions],
            "skipped": [s.to_dict() for s in self.skipped],
        }


def plan_maintenance(
    table: MaintenanceTable, *, now_ms: int | None = None, **overrides: Any
) -> MaintenancePlan:
    """The plan for `table` at its latest version (see the module docstring)."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    snap = table.snapshot()
    s = settings(snap.metadata.configuration, overrides)
    files = table.storage.list_log()  # (the one listing of the plan, after the snapshot)
    listing = LogListing.build(files, complete=True)
    # One backwards pass over the commits: VACUUM LITE's history, the Z-order look-up riding along.
    zorder = None if snap.clustering_columns() else ZOrderFinder()
    history = vacuum_history(
        table.storage, listing, now_ms=now, retention_ms=s.vacuum_retention_ms,
        full_days=s.full_vacuum_days, rider=zorder,
    )  # fmt: skip
    decisions = plan_rewrites(table.storage, snap, listing, s, now, zorder=zorder)
    decisions += [
        _checkpoint(snap, listing, s),
        _compact_log(snap, listing, s),
        _cleanup_log(table, snap, s, files),
    ]
    decisions += _vacuum(history, snap, listing, s, now)
    decisions += _uniform_sync(table, snap)
    return MaintenancePlan(
        table=table.storage.root,
        version=snap.version,
        planned_at=now,
        settings=s,
        actions=[d for d in decisions if d.reason is None],
        skipped=[d for d in decisions if d.reason is not None],
    )


def _checkpoint(snap: Snapshot, listing: LogListing, s: PlanSettings) -> Decision:
    cps = [v for v in listing.checkpoints if v <= snap.version]
    since = snap.version - max(cps) if cps else snap.version + 1
    cost = {"bytes_written": snap.num_files * _PER_FILE_CHECKPOINT_BYTES, "requests": 2}
    benefit = {"commits_not_replayed": since}
    if since < s.checkpoint_interval:
        reason = f"{since} commits since the newest checkpoint < {s.checkpoint_interval}"
        limit = s.checkpoint_interval
        return Decision(
            "checkpoint", None, "checkpoint_interval", since, limit, reason=reason, cost=cost, benefit=benefit
        )
    return Decision(
        "checkpoint", None, "checkpoint_interval", since, s.checkpoint_interval,
        estimate={"checkpoint_version": snap.version}, cost=cost, benefit=benefit,
    )  # fmt: skip


def _compact_log(snap: Snapshot, listing: LogListing, s: PlanSettings) -> Decision:
    """A log compaction of the commits after the newest checkpoint but the latest, when at least
    `log_compaction_commits` of them are not covered by one yet and no checkpoint is due."""
    first = max((v for v in listing.checkpoints if v <= snap.version), default=-1) + 1
    last = snap.version - 1
    covered = max((y for y, _ in listing.compactions.get(first, []) if y <= last), default=first - 1)
    uncovered, limit = last - covered, s.log_compaction_commits
    # (reads the commits first..last, writes one file; a reader then reads one file instead of them)
    cost, benefit = {"requests": last - first + 2}, {"commit_reads_saved": last - first}
    rule = ("log_compaction_commits", uncovered, limit)
    why = None
    if limit <= 0:
        why = "turned off (log_compaction_commits = 0)"
    elif snap.version - first + 1 >= s.checkpoint_interval:
        why = "a checkpoint is due: it replaces the commits a compaction would cover"
    elif uncovered < limit:
        why = f"{uncovered} commits not covered by a log compaction < {limit}"
    if why is not None:
        return Decision("compact_log", None, *rule, reason=why, cost=cost, benefit=benefit)
    estimate = {"first": first, "last": last}
    return Decision("compact_log", None, *rule, estimate=estimate, cost=cost, benefit=benefit)


def _cleanup_log(
    table: MaintenanceTable, snap: Snapshot, s: PlanSettings, listed: Sequence[ListedFile]
) -> Decision:
    """What `cleanup_log` would delete now (its own rule: below the newest checkpoint whose commit
    is past the log retention, held back by published versions), so running it converges."""
    hours = s.log_retention_ms / 3_600_000
    files = cleanup_log(table, retention_hours=hours, dry_run=True, listed=listed, snap=snap).files
    days = round(s.log_retention_ms / DAY_MS, 3)
    if not files:
        reason = "no log file is past the log retention below a checkpoint that stays"
        return Decision("cleanup_log", None, "log_retention_days", 0, days, reason=reason)
    return Decision(
        "cleanup_log", None, "log_retention_days", len(files), days, files=list(files),
        estimate={"retention_hours": s.log_retention_ms / 3_600_000},
        cost={"requests": len(files) + 1}, benefit={"log_files_removed": len(files)},
    )  # fmt: skip


def _uniform_sync(table: MaintenanceTable, snap: Snapshot) -> list[Decision]:
    """UniForm tables only: a sync when the Iceberg metadata lags the latest version (a commit's
    own sync failed), so planned maintenance catches up; one small read (engine.uniform.layout)."""
    if not iceberg_compat.uniform_iceberg(snap.metadata.configuration):
        return []
    reflected = layout.reflected_version(table.storage)
    behind = snap.version - (-1 if reflected is None else reflected)
    rule = ("iceberg_versions_behind", behind, 0)
    if behind <= 0:
        reason = "the Iceberg metadata reflects the latest version"
        return [Decision("uniform_sync", None, *rule, reason=reason)]
    estimate = {"delta_version": snap.version, "reflected_version": reflected}
    return [Decision("uniform_sync", None, *rule, estimate=estimate, cost={"requests": 6})]


def _vacuum(
    history: VacuumHistory, snap: Snapshot, listing: LogListing, s: PlanSettings, now: int
) -> list[Decision]:
    cutoff = now - s.vacuum_retention_ms
    created = monotonic_timestamps(listing.commits).get(0)  # (None once version 0 was cleaned up)
    if not history.complete:
        reason = "the commits since the last vacuum are no longer in the log: a lite vacuum cannot see them"
        lite = Decision("vacuum", None, "log_complete", False, True, reason=reason)
        return [lite, _full(history, created, s, now, forced=True)]
    since = history.covered_before
    aged = [
        r
        for r in history.removes.values()
        if r.deletion_timestamp <= cutoff
        and (since is None or r.deletion_timestamp > since)
        and not (has_scheme(r.path) or r.path.startswith("/"))
    ]
    return [_lite(_not_live(aged, snap), history, s, now), _full(history, created, s, now)]


def _not_live(removed: list[Removed], snap: Snapshot) -> list[Removed]:
    """The removed files no live file names again (a path re-added since its remove stays); looked
    up in the snapshot's paths as Arrow, so a million live files are never a million strings."""
    if not removed:
        return []
    live = pc.is_in(pa.array([r.path for r in removed], pa.string()), value_set=key_paths(snap.file_keys()))
    return [r for r, is_live in zip(removed, live.to_pylist(), strict=True) if not is_live]


def _lite(todo: list[Removed], history: VacuumHistory, s: PlanSettings, now: int) -> Decision:
    count, size = len(todo), sum(r.size for r in todo)
    since = history.last_started
    aged = since is None or now - since >= s.vacuum_retention_ms
    benefit = {"files_removed": count, "bytes_reclaimed": size}
    limit = s.vacuum_min_bytes
    if count == 0:
        reason = "nothing past the retention that no vacuum has covered"
        return Decision("vacuum", None, "vacuum_min_bytes", 0, limit, reason=reason, benefit=benefit)
    if size < limit and not aged:
        reason = f"{size} reclaimable bytes < {limit}, and the last vacuum is within the retention"
        return Decision("vacuum", None, "vacuum_min_bytes", size, limit, reason=reason, benefit=benefit)
    by_bytes = size >= limit
    rule = "vacuum_min_bytes" if by_bytes else "retention_since_last_vacuum"
    threshold = limit if by_bytes else s.vacuum_retention_ms
    return Decision(
        "vacuum", None, rule, size, threshold, files=sorted(r.path for r in todo),
        estimate={"mode": "lite", "retention_hours": s.vacuum_retention_ms / 3_600_000},
        cost={"requests": count + 2}, benefit=benefit,
    )  # fmt: skip


def _full(
    history: VacuumHistory, created: int | None, s: PlanSettings, now: int, *, forced: bool = False
) -> Decision:
    """A listing for orphans when no full vacuum ran for `full_vacuum_days` (counted from the
    table's first commit while it never had one; lite vacuums do not count), or when the log can no
    longer tell a lite vacuum what to delete (`forced`)."""
    since = history.last_full_started if history.last_full_started is not None else created
    days = None if since is None else round((now - since) / DAY_MS, 3)
    if not forced and days is not None and days < s.full_vacuum_days:
        what = (
            "the last full vacuum was" if history.last_full_started is not None else "the table was created"
        )
        reason = f"{what} {days} days ago < {s.full_vacuum_days:g}"
        return Decision("vacuum", None, "full_vacuum_days", days, s.full_vacuum_days, reason=reason)
    return Decision(
        "vacuum", None, "log_complete" if forced else "full_vacuum_days", days, s.full_vacuum_days,
        estimate={"mode": "full", "retention_hours": s.vacuum_retention_ms / 3_600_000},
        cost={"requests": "one listing of the table"},
        benefit={"orphans": "found by the listing"},
    )  # fmt: skip
