"""In-commit timestamps (PROTOCOL.md "In-Commit Timestamps") of a transaction's commit.

Each commit's commitInfo carries `inCommitTimestamp`: the writer's clock, but strictly later than
the previous commit's, whatever the clocks say. The commit that turns the feature on for an existing
table also records its own version and timestamp in the metadata (`delta.inCommitTimestampEnablement*`).
Both name the very attempt being written, so the transaction computes them per attempt.
"""

from __future__ import annotations

import dataclasses

from airflow_txnlog.engine import properties as props
from airflow_txnlog.engine.log.actions import IN_COMMIT_TIMESTAMP, Metadata
from airflow_txnlog.engine.log.log_reader import read_commit_info
from airflow_txnlog.engine.state.snapshot import Snapshot
from airflow_txnlog.engine.storage import Storage


def with_enablement(snap: Snapshot, staged: Metadata | None, version: int, ict: int) -> Metadata | None:
    """The metadata to commit: when this commit turns in-commit timestamps on for an existing table
    (`snap` read without them), with the enablement version and timestamp it must record."""
    if staged is None or snap.version < 0:
        return staged
    if snap.table_properties.in_commit_timestamps:
        return staged
    extra = {props.ICT_ENABLEMENT_VERSION: str(version), props.ICT_ENABLEMENT_TIMESTAMP: str(ict)}
    return dataclasses.replace(staged, configuration={**staged.configuration, **extra})


def next_timestamp(storage: Storage, snap: Snapshot, version: int, now: int) -> int:
    """`inCommitTimestamp` of commit `version`: now, but later than the previous commit's."""
    if version == 0:
        return now
    info = snap.state.commit_infos.get(version - 1)
    if info is None:
        info = read_commit_info(storage, version - 1) or {}
    prev = info.get(IN_COMMIT_TIMESTAMP)
    if not isinstance(prev, int):  # the commit that turns them on: after the last commit's time
        prev = info.get("timestamp") if isinstance(info.get("timestamp"), int) else None
    return max(now, int(prev) + 1) if isinstance(prev, int) else now
