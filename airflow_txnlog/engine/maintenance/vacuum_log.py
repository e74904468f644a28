"""What the log says about vacuums: the last completed ones, and the files removed since (VACUUM LITE).

A checkpoint drops tombstones older than the retention, so the snapshot alone cannot say which
removed files are still on storage. As Delta's VACUUM LITE does, `vacuum_history` reads the commits
backwards from the latest, until both of these are known:
- removes: every `remove` of the commits at or after the newest completed vacuum's cutoff (its
  start minus the retention it ran with: removes before that cutoff were its to delete), with their
  path, size and deletion time;
- the newest completed full vacuum (a listing for orphans), or that none ran within `full_days`.
A completed vacuum is a VACUUM START followed by a VACUUM END with status COMPLETED;
`vacuumType` LITE in its parameters marks a lite one (missing: full, as older writers wrote it).
When the commits the removes need are no longer in the log (log cleanup), `complete` is False: a
lite vacuum cannot see every candidate, and a full one (a listing) is needed.
Each commit is skimmed (log_reader.skim_commit): its commitInfo line says whether it is a vacuum's,
and only a commit whose bytes hold `"remove"` is parsed whole. A commit whose commitInfo says
`isBlindAppend: true` is not searched (Delta's writers set it only when a commit adds files and
nothing else); a writer that said so of a commit with removes would only leave those files for the
next full vacuum, never delete a live one. Another reader of the same commits
(the planner's Z-order look-up) may ride the pass (`rider`), so a plan reads the log backwards once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from airflow_txnlog.engine.log.actions import decode_path
from airflow_txnlog.engine.log.log_reader import SkimmedCommit, read_commit_blobs, skim_commit
from airflow_txnlog.engine.log.log_segment import LogListing, monotonic_timestamps
from airflow_txnlog.engine.storage import Storage

DAY_MS = 24 * 3600 * 1000
_BATCH = 64


@dataclass(frozen=True)
class Removed:
    path: str
    size: int
    deletion_timestamp: int


@dataclass(frozen=True)
class VacuumHistory:
    last_started: int | None = None  # the newest completed vacuum (lite or full)
    covered_before: int | None = None  # removes deleted before this time were that vacuum's
    last_full_started: int | None = None
    removes: dict[str, Removed] = field(default_factory=dict)  # by path, since covered_before
    complete: bool = True


# Only a commit holding these bytes can hold a remove: the others are not parsed beyond commitInfo.
_REMOVE = (b'"remove"',)

CommitRider = Callable[[SkimmedCommit], bool]
"""Another reader of the same backwards pass: sees each commit read, True while it needs older ones."""


@dataclass
class _Scan:
    ended: str | None = None  # a VACUUM END seen, its START not yet: "LITE" / "FULL" pending
    out: dict[str, Any] = field(default_factory=dict)
    removes: dict[str, Removed] = field(default_factory=dict)

    def done(self, oldest: int, full_since: int) -> bool:
        """Whether the commits older than `oldest` can tell this history nothing more."""
        removes_done = "covered_before" in self.out and oldest < self.out["covered_before"]
        return removes_done and ("last_full_started" in self.out or oldest < full_since)


def vacuum_history(
    storage: Storage,
    listing: LogListing,
    *,
    now_ms: int,
    retention_ms: int,
    full_days: float,
    rider: CommitRider | None = None,
) -> VacuumHistory:
    """See the module docstring. `rider` sees every commit read; the pass goes on (skimming only)
    past the history's own end while the rider asks for older commits."""
    stamps = monotonic_timestamps(listing.commits)
    full_since = now_ms - int(full_days * DAY_MS)
    versions = sorted(stamps, reverse=True)
    scan, riding, done = _Scan(), rider is not None, False
    for start in range(0, len(versions), _BATCH):
        chunk = versions[start : start + _BATCH]
        blobs = read_commit_blobs(storage, [(v, listing.commits[v]) for v in chunk])
        for version, name, data in blobs:
            needles = () if done else _REMOVE
            commit = skim_commit(version, name, data, parse_when=needles, blind_appends_skipped=True)
            if not done:
                _visit(scan, commit, stamps[version], retention_ms)
            if riding and rider is not None:
                riding = rider(commit)
        done = done or scan.done(stamps[chunk[-1]], full_since)
        if done and not riding:
            break
    if not done and "covered_before" not in scan.out and 0 not in listing.commits:
        scan.out["complete"] = False  # (the whole log was read and it does not start at version 0)
    return VacuumHistory(removes=scan.removes, **scan.out)


def _visit(scan: _Scan, commit: SkimmedCommit, ts: int, retention_ms: int) -> None:
    info = commit.info
    op, params = info.get("operation"), info.get("operationParameters") or {}
    if op == "VACUUM END" and str(params.get("status", "COMPLETED")).upper() == "COMPLETED":
        scan.ended = "pending"
    elif op == "VACUUM START" and scan.ended:
        scan.ended = None
        started = int(info.get("timestamp") or ts)
        kind = str(params.get("vacuumType", "FULL")).upper()
        keep = params.get("specifiedRetentionMillis") or params.get("defaultRetentionMillis")
        scan.out.setdefault("last_started", started)
        scan.out.setdefault("covered_before", started - int(keep if keep is not None else retention_ms))
        if kind != "LITE":
            scan.out.setdefault("last_full_started", started)
    if "covered_before" in scan.out and ts < scan.out["covered_before"]:
        return  # (removes this old were that vacuum's to delete)
    for a in commit.actions or ():
        rm = a.get("remove")
        path = decode_path(rm["path"]) if rm is not None and rm.get("path") else None
        if rm is not None and path is not None and path not in scan.removes:  # (the newest remove wins)
            when = int(rm.get("deletionTimestamp") or ts)
            scan.removes[path] = Removed(path, int(rm.get("size") or 0), when)
