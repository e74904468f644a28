"""The data files each commit adds and removes: what a streaming reader of a table needs.

`commit_files(storage, start, end)` reads commits `start`..`end` (they must all be in the log) and
returns, per version, the `add` actions with dataChange=true (the new rows, in path order, so a
stream can cut a commit's files into batches deterministically), whether the commit removed data
(a remove with dataChange=true: DELETE, UPDATE, MERGE, overwrite), and whether it changed any data
at all (OPTIMIZE and other dataChange=false commits change none: a stream skips them, as Delta's
does). The metadata a commit sets is reported too, so a stream can refuse a schema change.
"""

from __future__ import annotations

from dataclasses import dataclass

from airflow_txnlog.engine.errors import InvalidArgumentError
from airflow_txnlog.engine.log.actions import AddFile, Metadata
from airflow_txnlog.engine.log.log_reader import read_commits
from airflow_txnlog.engine.log.log_segment import list_log
from airflow_txnlog.engine.storage import Storage


@dataclass(frozen=True)
class CommitFiles:
    version: int
    adds: tuple[AddFile, ...]  # dataChange=true adds, in path order
    removes_data: bool  # a remove with dataChange=true
    metadata: Metadata | None  # the metaData action of the commit, if any


def commit_files(storage: Storage, start: int, end: int) -> list[CommitFiles]:
    """The file changes of commits `start`..`end` (see the module docstring)."""
    if start > end:
        return []
    listing = list_log(storage)
    run = listing.run_from(start, end)
    if len(run) != end - start + 1:
        raise InvalidArgumentError(
            f"the commits of versions {start}..{end} are not all in the log (log cleanup?); a stream "
            "can only read commits that still exist. Help: restart it from a newer startingVersion"
        )
    out = []
    for commit in read_commits(storage, run):
        adds = sorted(
            (
                AddFile.from_wire(a["add"])
                for a in commit.actions
                if "add" in a and a["add"].get("dataChange", True)
            ),
            key=lambda f: f.path,
        )
        removes = any("remove" in a and a["remove"].get("dataChange", True) for a in commit.actions)
        meta = next((Metadata.from_wire(a["metaData"]) for a in commit.actions if "metaData" in a), None)
        out.append(CommitFiles(commit.version, tuple(adds), removes, meta))
    return out
