"""The maintenance planner: what one table needs now, and why, from its log alone.

Inputs: the latest snapshot (live files with size, modification time, numRecords and their deletion
vectors' cardinality; tombstones), one listing of `_delta_log/` and the commitInfo of the commits
since the newest expired tombstone could have been vacuumed. No data file is read and no data
folder is listed (tests/engine/test_planner.py counts the storage calls).

Decisions, each an action or a skip with rule, observed value, threshold, cost and benefit:
    compact / purge_deletion_vectors   per partition (engine.maintenance.compaction_plan)
    checkpoint     commits since the newest checkpoint >= `checkpoint_interval`; benefit: the commit
                   files a reader no longer replays
    cleanup_log    commit files older than the log retention below the newest checkpoint
    vacuum         lite (from the log's tombstones, no listing, Delta's VACUUM LITE): the tombstones
                   past the retention that no completed vacuum has covered yet (a vacuum covers
                   tombstones older than its start minus its retention), when their bytes reach
                   `vacuum_min_bytes` or the retention has passed since the last vacuum; full (a listing
                   for orphans of failed writes): when none ran for `full_vacuum_days`
Planning again right after the plan ran gives no action: compaction never takes files of 0.75 x
target or more, a checkpoint resets the count, a vacuum covers what it found.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_txnlog.engine.log.log_reader import read_commit_info
from airflow_txnlog.engine.log.log_segment import LogListing, list_log, monotonic_timestamps
from airflow_txnlog.engine.log.replay import key_paths
from airflow_txnlog.engine.maintenance.compaction_plan import Decision, FileInfo, plan_partition
from airflow_txnlog.engine.maintenance.maintenance_table import MaintenanceTable
from airflow_txnlog.engine.maintenance.plan_settings import PlanSettings, settings
from airflow_txnlog.engine.state.snapshot import Snapshot

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
    listing = list_log(table.storage)
    decisions = [
        d
        for part, newest, files in _partitions(snap, s)
        for d in plan_partition(part, files, s, now, newest=newest)
    ]
    decisions += [_checkpoint(snap, listing, s), _cleanup_log(snap, listing, s, now)]
    decisions += _vacuum(table, snap, listing, s, now)
    return MaintenancePlan(
        table=table.storage.root,
        version=snap.version,
        planned_at=now,
        settings=s,
        actions=[d for d in decisions if d.reason is None],
        skipped=[d for d in decisions if d.reason is not None],
    )


def _partitions(snap: Snapshot, s: PlanSettings) -> list[tuple[dict[str, Any] | None, int, list[FileInfo]]]:
    """(partition values or None, its newest file's modification time, its candidate files: small
    or with a deletion vector past the purge threshold) for every partition; only candidates become
    Python objects (a healthy million-file table builds none)."""
    files = snap.add_actions()
    deleted = pa.array(_deleted_rows(snap, files.num_rows), pa.int64())
    files = files.append_column("_deleted", deleted)
    keys = [f"partition.{c}" for c in snap.partition_columns]
    newest_by = files.group_by(keys).aggregate([("modification_time", "max")]) if keys else None
    records = pc.fill_null(files.column("num_records"), 0)
    heavy = pc.greater(
        pc.multiply(deleted, 1.0), pc.multiply(pc.cast(records, pa.float64()), s.dv_purge_fraction)
    )
    mask = pc.or_(pc.less(files.column("size_bytes"), s.small_bytes), pc.and_(heavy, pc.greater(records, 0)))
    cands = files.filter(mask)
    groups: dict[tuple[Any, ...], list[FileInfo]] = defaultdict(list)
    columns = [cands.column(k).to_pylist() for k in keys]
    rows = zip(
        *(
            cands.column(c).to_pylist()
            for c in ("path", "size_bytes", "modification_time", "num_records", "_deleted")
        ),
        strict=True,
    )
    for i, (path, size, mtime, n, dv) in enumerate(rows):
        groups[tuple(col[i] for col in columns)].append(
            FileInfo(path, int(size or 0), int(mtime or 0), n, int(dv or 0))
        )
    if newest_by is None:
        newest = {(): int(pc.max(files.column("modification_time")).as_py() or 0)} if files.num_rows else {}
    else:
        part_values = zip(*(newest_by.column(k).to_pylist() for k in keys), strict=True)
        newest = dict(zip(part_values, newest_by.column("modification_time_max").to_pylist(), strict=True))
    parts = snap.partition_columns
    return [
        (
            dict(zip(parts, map(_plain, key), strict=True)) if parts else None,
            int(ts or 0),
            groups.get(key, []),
        )
        for key, ts in sorted(newest.items(), key=lambda kv: str(kv[0]))
    ]


def _plain(value: Any) -> Any:
    """A partition value as JSON: dates and timestamps in ISO form."""
    return value.isoformat() if hasattr(value, "isoformat") else value


def _deleted_rows(snap: Snapshot, n: int) -> list[int]:
    """Per live file (in `add_actions` order), the rows its deletion vector deletes."""
    state = snap.state
    base = state.live_base_adds(["deletionVector"])
    out: list[int] = []
    if base is not None:
        if base.type.get_field_index("deletionVector") >= 0:
            card = base.field("deletionVector").field("cardinality")
            out = [int(c or 0) for c in pc.fill_null(card, 0).to_pylist()]
        else:
            out = [0] * len(base)
    for add in state.tail_adds():
        out.append(int((add.get("deletionVector") or {}).get("cardinality") or 0))
    return out if len(out) == n else [0] * n  # (a layout this does not know: no purge is planned)


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


def _cleanup_log(snap: Snapshot, listing: LogListing, s: PlanSettings, now: int) -> Decision:
    newest_cp = max((v for v in listing.checkpoints if v <= snap.version), default=None)
    stamps = monotonic_timestamps(listing.commits)
    cutoff = now - s.log_retention_ms
    expired = [v for v, ts in stamps.items() if ts <= cutoff and newest_cp is not None and v < newest_cp]
    days = round(s.log_retention_ms / DAY_MS, 3)
    if not expired:
        reason = "no commit file is past the log retention below a checkpoint"
        return Decision("cleanup_log", None, "log_retention_days", 0, days, reason=reason)
    return Decision(
        "cleanup_log", None, "log_retention_days", len(expired), days,
        estimate={"oldest_version_after": max(expired) + 1},
        cost={"requests": len(expired) + 1}, benefit={"log_files_removed": len(expired)},
    )  # fmt: skip


def _vacuum(
    table: MaintenanceTable, snap: Snapshot, listing: LogListing, s: PlanSettings, now: int
) -> list[Decision]:
    cutoff = now - s.vacuum_retention_ms
    tombs = snap.tombstone_table()
    expired = tombs.filter(pc.less_equal(tombs.column("deletion_timestamp"), cutoff))
    oldest = pc.min(expired.column("deletion_timestamp")).as_py() if expired.num_rows else None
    last = _last_vacuums(table, listing, oldest, s, now)
    covered = last.get("covered_before")
    todo = (
        expired
        if covered is None
        else expired.filter(pc.greater(expired.column("deletion_timestamp"), covered))
    )
    created = monotonic_timestamps(listing.commits).get(0)  # (None once version 0 was cleaned up)
    return [_lite(todo, last, s, now), _full(last, created, s, now)]


def _lite(todo: pa.Table, last: dict[str, Any], s: PlanSettings, now: int) -> Decision:
    count = todo.num_rows
    size = int(pc.sum(todo.column("size")).as_py() or 0) if count else 0
    since = last.get("started")
    aged = since is None or now - since >= s.vacuum_retention_ms
    benefit = {"files_removed": count, "bytes_reclaimed": size}
    limit = s.vacuum_min_bytes
    if count == 0:
        reason = "nothing past the retention that no vacuum has covered"
        return Decision("vacuum", None, "vacuum_min_bytes", 0, limit, reason=reason, benefit=benefit)
    if size < limit and not aged:
        reason = f"{size} reclaimable bytes < {limit}, and the last vacuum is within the retention"
        return Decision("vacuum", None, "vacuum_min_bytes", size, limit, reason=reason, benefit=benefit)
    rule, threshold = (
        ("vacuum_min_bytes", limit)
        if size >= limit
        else ("retention_since_last_vacuum", s.vacuum_retention_ms)
    )
    paths = sorted(key_paths(todo.column("key").combine_chunks()).to_pylist())
    return Decision(
        "vacuum", None, rule, size, threshold, files=paths, estimate={"mode": "lite"},
        cost={"requests": count + 2}, benefit=benefit,
    )  # fmt: skip


def _full(last: dict[str, Any], created: int | None, s: PlanSettings, now: int) -> Decision:
    """A listing for orphans when none ran for `full_vacuum_days` (counted from the table's first
    commit while it never had one)."""
    since = last.get("started", created)
    days = None if since is None else round((now - since) / DAY_MS, 3)
    if days is not None and days < s.full_vacuum_days:
        what = "the last full vacuum was" if "started" in last else "the table was created"
        reason = f"{what} {days} days ago < {s.full_vacuum_days:g}"
        return Decision("vacuum", None, "full_vacuum_days", days, s.full_vacuum_days, reason=reason)
    return Decision(
        "vacuum", None, "full_vacuum_days", days, s.full_vacuum_days,
        estimate={"mode": "full"}, cost={"requests": "one listing of the table"},
        benefit={"orphans": "found by the listing"},
    )  # fmt: skip


def _last_vacuums(
    table: MaintenanceTable, listing: LogListing, oldest: int | None, s: PlanSettings, now: int
) -> dict[str, Any]:
    """The newest completed vacuum in the commits of the last `full_vacuum_days` (at least since
    the oldest expired tombstone's retention passed): {"started": ms, "covered_before": ms}."""
    stamps = monotonic_timestamps(listing.commits)
    since = now - int(s.full_vacuum_days * DAY_MS)
    if oldest is not None:
        since = min(since, oldest + s.vacuum_retention_ms)
    ended = False
    for v in sorted((v for v, ts in stamps.items() if ts >= since), reverse=True):
        info = read_commit_info(table.storage, v) or {}
        op, params = info.get("operation"), info.get("operationParameters") or {}
        if op == "VACUUM END" and params.get("status", "COMPLETED") == "COMPLETED":
            ended = True
        elif op == "VACUUM START" and ended:
            ts = int(info.get("timestamp") or stamps[v])
            keep = int(params.get("specifiedRetentionMillis") or 0)
            return {"started": ts, "covered_before": ts - keep}
    return {}
