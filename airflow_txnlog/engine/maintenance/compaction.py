"""Partition-level OPTIMIZE driven by a plan: rewrite exactly the bins a `compact` (or the files a
`purge_deletion_vectors`) action names, nothing else, keeping the table's layout.

Each bin becomes one file: its files' rows are read with the engine's reader (deletion vectors
applied, partition values attached), ordered as the table's layout says
(engine.maintenance.rewrite_layout: along the Hilbert curve over the clustering keys, marked
clusteringProvider=liquid, on a clustered table; in Z-order over the columns of the log's newest
Z-order; as read otherwise), written as one parquet file of the same partition, and the commit
(operation OPTIMIZE, Delta's parameters, `zOrderBy` / `clusterBy` naming the layout) removes the
inputs and adds the outputs with dataChange=false, so streaming readers and the change feed see no
change. A layout that cannot be kept, or a bin holding a file another implementation clustered on
a clustered table, is an InvalidArgumentError before anything is written. A bin with a file that is
no longer live (a concurrent rewrite took it since the plan) is dropped, never half-done; a
concurrent commit that removes an input fails the commit (ConcurrentDeleteDeleteError) and the new
files are deleted. The result carries predicted and actual bytes and files, and the seconds spent.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_txnlog.engine.errors import InvalidArgumentError
from airflow_txnlog.engine.features import clustering
from airflow_txnlog.engine.log.actions import AddFile
from airflow_txnlog.engine.maintenance.maintenance_table import MaintenanceTable
from airflow_txnlog.engine.maintenance.rewrite_layout import CLUSTER, RewriteLayout, run_layout
from airflow_txnlog.engine.maintenance.rewrite_run import (
    RewriteWork,
    RewriteWriter,
    commit_rewrite,
    memory_budget,
)
from airflow_txnlog.engine.state.snapshot import Snapshot

_KINDS = ("compact", "purge_deletion_vectors")


@dataclass(frozen=True)
class CompactionResult:
    """What a planned OPTIMIZE did (or, dry run, would do)."""

    kind: str
    partition: dict[str, Any] | None
    version: int | None
    dry_run: bool
    bins_run: int
    bins_dropped: int
    predicted: dict[str, int]
    actual: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    layout: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _bins(action: Mapping[str, Any]) -> list[list[str]]:
    kind = action.get("kind")
    if kind not in _KINDS:
        raise InvalidArgumentError(f"compaction runs actions of kind {_KINDS}, got {kind!r}")
    if kind == "purge_deletion_vectors":
        return [[p] for p in action.get("files") or []]  # (each file rewritten alone)
    bins = action.get("bins") or []
    if not bins or any(not isinstance(b, list) or len(b) < 2 for b in bins):
        raise InvalidArgumentError("a compact action needs 'bins': lists of two or more file paths")
    return [list(b) for b in bins]


def compact(
    table: MaintenanceTable,
    action: Mapping[str, Any],
    *,
    dry_run: bool = True,
    writer: RewriteWriter | None = None,
) -> CompactionResult:
    """Run one `compact` / `purge_deletion_vectors` action of a plan (its `to_dict()` form); `writer`
    writes the bins (engine.maintenance.rewrite_run; default: the engine, in this process)."""
    started = time.monotonic()
    bins = _bins(action)
    memory = memory_budget(action)  # (checked before anything, a dry run too)
    snap = table.snapshot()
    live = {f.path: f for f in snap.files()}
    runnable = [[live[p] for p in b] for b in bins if all(p in live for p in b)]
    layout = _layout(table, snap, action, runnable)
    estimate = action.get("estimate") or {}
    predicted = {
        "files_after": int(estimate.get("files_after") or len(bins)),
        "bytes_after": int(estimate.get("bytes_after") or 0),
    }
    out = CompactionResult(
        str(action.get("kind")), action.get("partition"), None, dry_run,
        len(runnable), len(bins) - len(runnable), predicted, layout=layout.to_dict(),
    )  # fmt: skip
    if dry_run or not runnable:
        return dataclasses.replace(out, seconds=round(time.monotonic() - started, 3))
    version, adds, removed = _rewrite(
        table, snap, runnable, action, layout, writer=writer, memory_bytes=memory
    )
    actual = {
        "files_after": len(adds),
        "bytes_after": sum(a.size for a in adds),
        "files_removed": len(removed),
        "bytes_read": sum(f.size for f in removed),
    }
    return dataclasses.replace(
        out, version=version, actual=actual, seconds=round(time.monotonic() - started, 3)
    )


def _layout(
    table: MaintenanceTable, snap: Snapshot, action: Mapping[str, Any], bins: Sequence[Sequence[AddFile]]
) -> RewriteLayout:
    """The layout the bins are written in; on a clustered table, a file another implementation
    clustered is never rewritten (the protocol leaves it to that implementation)."""
    layout = run_layout(table.storage, snap, action.get("layout"))
    if layout.mode == CLUSTER:
        foreign = sorted(
            f.path for b in bins for f in b if f.clustering_provider not in (None, clustering.PROVIDER)
        )
        if foreign:
            raise InvalidArgumentError(
                f"the action would rewrite files another implementation clustered: {foreign[:3]}; "
                "they are left to it. Help: plan again (the planner never picks them)"
            )
    return layout


def _rewrite(
    table: MaintenanceTable,
    snap: Snapshot,
    bins: Sequence[Sequence[AddFile]],
    action: Mapping[str, Any],
    layout: RewriteLayout,
    *,
    writer: RewriteWriter | None,
    memory_bytes: int | None,
) -> tuple[int, list[AddFile], list[AddFile]]:
    """The bins rewritten in `layout` (one file each) and committed on a transaction that read
    `snap`, the snapshot the bins' files were chosen from: a commit since (another rewrite, a
    delete) is a conflict, never missed."""
    partition = action.get("partition")
    predicate = json.dumps([_predicate(partition)] if isinstance(partition, Mapping) and partition else [])
    work = RewriteWork(tuple(tuple(b) for b in bins), (1,) * len(bins), layout)
    version, adds = commit_rewrite(
        table, snap, work, parameters=layout.parameters(predicate), writer=writer,
        memory_bytes=memory_bytes,
    )  # fmt: skip
    return version, adds, work.files


def _predicate(partition: Mapping[str, Any]) -> str:
    """The partition as Delta's OPTIMIZE records its `predicate` (for history, not for reading)."""
    return " AND ".join(
        f"{k} = {json.dumps(v)}" if v is not None else f"{k} IS NULL" for k, v in partition.items()
    )
