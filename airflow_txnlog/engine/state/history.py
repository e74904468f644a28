"""A page of a table's history with what each commit did to its files: for views of long logs.

`history_page(storage, before=v, limit=n)` lists the log once (one listing; on S3 one request per
1,000 names), then reads only the `n` newest commits below `v` — a page of a 10,000-commit log reads
`n` commit files, never the rest. Each entry is the commit's commitInfo plus `version`,
`timestamp` (in-commit timestamp, else the file's, forced increasing as Delta does), and what its
add / remove actions say: files and bytes added and removed, rows added (the adds' `numRecords`)
and rows removed (the removes' `numRecords`, when every remove carries stats; else None).
`next_before` is the version to ask for next (None at the oldest commit still in the log).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from airflow_txnlog.engine.log.log_reader import LogCommit, read_commits
from airflow_txnlog.engine.log.log_segment import list_log, monotonic_timestamps
from airflow_txnlog.engine.storage import Storage
from airflow_txnlog.engine.validate import number

MAX_TIMESTAMP_MS = 253_402_300_800_000  # 10000-01-01: beyond it dates cannot be shown


@dataclass(frozen=True)
class HistoryPage:
    entries: list[dict[str, Any]]  # newest first
    latest_version: int
    oldest_version: int  # the oldest commit still in the log
    next_before: int | None


def _records(stats: Any) -> int | None:
    if not isinstance(stats, str) or not stats:
        return None
    try:
        value = orjson.loads(stats).get("numRecords")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    return int(value) if isinstance(value, int) else None


def _timestamp(in_commit: Any, file_time: int) -> int:
    """The in-commit timestamp when it is a plausible time in ms (a writer may put anything there)."""
    if isinstance(in_commit, int) and not isinstance(in_commit, bool) and 0 < in_commit < MAX_TIMESTAMP_MS:
        return in_commit
    return file_time


def commit_entry(commit: LogCommit, stamps: Mapping[int, int]) -> dict[str, Any]:
    """A commit's commitInfo plus `version` and `timestamp` (its in-commit timestamp when plausible,
    else the file's from `stamps`, `monotonic_timestamps` of the listing): `Table.history`'s entry."""
    entry = dict(commit.info)
    entry["version"] = commit.version
    entry["timestamp"] = _timestamp(entry.get("inCommitTimestamp"), stamps[commit.version])
    return entry


def file_changes(actions: list[dict[str, Any]]) -> dict[str, int | None]:
    """Files, bytes and rows a commit's add / remove actions added and removed."""
    adds = [a["add"] for a in actions if isinstance(a.get("add"), dict)]
    removes = [a["remove"] for a in actions if isinstance(a.get("remove"), dict)]
    added_rows = [_records(a.get("stats")) for a in adds]
    removed_rows = [_records(r.get("stats")) for r in removes]
    return {
        "filesAdded": len(adds),
        "filesRemoved": len(removes),
        "bytesAdded": sum(int(a.get("size") or 0) for a in adds),
        "bytesRemoved": sum(int(r.get("size") or 0) for r in removes),
        "rowsAdded": None if None in added_rows else sum(r for r in added_rows if r is not None),
        "rowsRemoved": None if None in removed_rows else sum(r for r in removed_rows if r is not None),
    }


def history_page(storage: Storage, *, before: int | None = None, limit: int = 50) -> HistoryPage:
    """The `limit` newest commits with a version below `before` (see the module docstring)."""
    number("limit", limit, minimum=1, integer=True)
    number("before", before, minimum=0, integer=True, none_means="from the latest commit")
    listing = list_log(storage)
    stamps = monotonic_timestamps(listing.commits)
    versions = sorted((v for v in listing.commits if before is None or v < before), reverse=True)
    chosen = [(v, listing.commits[v]) for v in versions[:limit]]
    entries = []
    for commit in read_commits(storage, chosen):
        entries.append({**commit_entry(commit, stamps), **file_changes(commit.actions)})
    oldest = min(listing.commits)
    more = len(versions) > limit
    return HistoryPage(entries, max(listing.commits), oldest, chosen[-1][0] if more and chosen else None)
