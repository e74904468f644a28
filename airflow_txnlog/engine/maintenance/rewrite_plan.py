"""The planner's data rewrites of one table (cluster, compact, purge_deletion_vectors), from the log.

    files       the live files as columns (`Snapshot.file_summary`), with the rows each one's
                deletion vector deletes and, on a clustered table, its clusteringProvider (null:
                unclustered); the candidates stay columns too (compaction_plan.PartitionFiles: one
                take of the file table, grouped by partition with Arrow, a slice per partition):
                only the paths a decision names become Python strings
    candidates  small files, and files whose deletion vector deletes more than dv_purge_fraction;
                on a clustered table never another provider's files (the protocol leaves them to
                their implementation), nor the unclustered ones while their share calls for
                clustering (then the cluster action takes them)
    decisions   per partition (engine.maintenance.compaction_plan); on a clustered table the cluster
                decision first (engine.maintenance.cluster_plan), so it runs before a compaction
    layout      every rewrite carries the layout it keeps (engine.maintenance.rewrite_layout; the
                log is read for a Z-order only when an unclustered table gets a rewrite); when the
                layout cannot be kept every rewrite becomes a skip (rule `layout_kept`)
    estimates   each candidate's bytes less the per-file overhead (engine.maintenance.file_overhead,
                computed only when some file is a candidate)
Invariants: a file is in at most one rewrite; no rewrite is planned that would not keep the layout.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from itertools import repeat
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_txnlog.engine.errors import InvalidArgumentError
from airflow_txnlog.engine.features import clustering
from airflow_txnlog.engine.log.log_segment import LogListing
from airflow_txnlog.engine.maintenance.cluster_plan import clusters_by_share, plan_clustering
from airflow_txnlog.engine.maintenance.compaction_plan import (
    Decision,
    FileInfo,
    PartitionFiles,
    plan_partition,
)
from airflow_txnlog.engine.maintenance.file_overhead import file_overhead
from airflow_txnlog.engine.maintenance.plan_settings import PlanSettings
from airflow_txnlog.engine.maintenance.rewrite_layout import table_layout
from airflow_txnlog.engine.state.snapshot import Snapshot
from airflow_txnlog.engine.storage import Storage

REWRITES = ("cluster", "compact", "purge_deletion_vectors")
_UNKNOWN = "\0unknown"  # (a provider for files whose add this cannot read: treated as another's)
Partition = tuple[dict[str, Any] | None, int, PartitionFiles]


def plan_rewrites(
    storage: Storage, snap: Snapshot, listing: LogListing, s: PlanSettings, now_ms: int
) -> list[Decision]:
    """The rewrite decisions for `snap` (see the module docstring)."""
    keys = snap.clustering_columns()
    files = _files(snap, clustered=bool(keys))
    unclustered = pc.is_null(files.column("_provider")) if keys else None
    share = _share(files, unclustered)
    mask = _candidates(files, s, unclustered if keys and clusters_by_share(share, s) else None)
    wanted = pc.any(mask).as_py() or (unclustered is not None and pc.any(unclustered).as_py())
    overhead = file_overhead(snap) if wanted else 0
    decisions = [
        d
        for part, newest, infos in _partitions(snap, files, mask, overhead)
        for d in plan_partition(part, infos, s, now_ms, newest=newest)
    ]
    if unclustered is not None:
        decisions.insert(
            0, _clustering(files, unclustered, share, decisions, s, now_ms=now_ms, overhead=overhead)
        )
    budget = {"rewrite_memory_bytes": s.rewrite_memory_bytes}  # (the run sorts within it)
    return [
        dataclasses.replace(d, estimate={**d.estimate, **budget}) if d.reason is None else d
        for d in _keep_layout(decisions, storage, snap, listing)
    ]


def _files(snap: Snapshot, *, clustered: bool) -> pa.Table:
    files = snap.file_summary()
    files = files.append_column("_deleted", _deleted_rows(snap, files.num_rows))
    if clustered:
        files = files.append_column("_provider", _providers(snap, files.num_rows))
    return files


def _share(files: pa.Table, unclustered: pa.Array | None) -> float:
    """The unclustered share of the live bytes (0 for an unclustered table or an empty one)."""
    sizes = pc.fill_null(files.column("size_bytes"), 0)
    total = int(pc.sum(sizes).as_py() or 0)
    if unclustered is None or total == 0:
        return 0.0
    return int(pc.sum(sizes.filter(unclustered)).as_py() or 0) / total


def _candidates(files: pa.Table, s: PlanSettings, leave: pa.Array | None) -> pa.Array:
    """Per file: is it a compaction or purge candidate? (`leave`: files the cluster action takes)"""
    records = pc.fill_null(files.column("num_records"), 0)
    deleted = files.column("_deleted")
    heavy = pc.greater(
        pc.multiply(deleted, 1.0), pc.multiply(pc.cast(records, pa.float64()), s.dv_purge_fraction)
    )
    mask = pc.or_(pc.less(files.column("size_bytes"), s.small_bytes), pc.and_(heavy, pc.greater(records, 0)))
    if "_provider" in files.column_names:
        provider = files.column("_provider")
        mine = pc.or_(pc.is_null(provider), pc.fill_null(pc.equal(provider, clustering.PROVIDER), False))
        mask = pc.and_(mask, mine)
    if leave is not None:
        mask = pc.and_(mask, pc.invert(leave))
    return mask


def _infos(rows: pa.Table, overhead: int) -> Iterator[FileInfo]:
    fields = [
        rows.column(c) if c in ("path", "num_records") else pc.fill_null(rows.column(c), 0)
        for c in ("path", "size_bytes", "modification_time", "num_records", "_deleted")
    ]
    # (column-wise: no per-row Arrow access)
    return map(FileInfo, *(f.to_pylist() for f in fields), repeat(overhead, rows.num_rows))


def _partitions(snap: Snapshot, files: pa.Table, mask: pa.Array, overhead: int) -> list[Partition]:
    """(partition values or None, its newest file's modification time, its candidate files as
    columns) for every partition, in a stable order (by the partition values' text). The candidates
    are taken from the file table once, grouped, and each partition gets a slice of them."""
    keys = [f"partition.{c}" for c in snap.partition_columns]
    if not keys:
        if not files.num_rows:
            return []
        newest = int(pc.max(files.column("modification_time")).as_py() or 0)
        return [(None, newest, PartitionFiles.of(files.filter(mask), overhead))]
    table = files.select(keys).append_column("_mt", files.column("modification_time"))
    table = table.append_column("_i", pa.array(np.arange(files.num_rows, dtype=np.int64)))
    # (no threads: each group's lists keep the file table's order, so a plan is the same every time)
    groups = (
        table.append_column("_c", mask)
        .group_by(keys, use_threads=False)
        .aggregate([("_mt", "max"), ("_i", "list"), ("_c", "list")])
    )
    lists, flags = groups.column("_i_list").combine_chunks(), groups.column("_c_list").combine_chunks()
    cands = np.asarray(flags.values.to_numpy(zero_copy_only=False), dtype=bool)
    chosen = np.asarray(lists.values.to_numpy(), dtype=np.int64)[cands]
    ends = np.cumsum(np.add.reduceat(cands.astype(np.int64), lists.offsets.to_numpy()[:-1]))
    all_files = PartitionFiles.of(files.take(pa.array(chosen)), overhead)
    values = zip(*(groups.column(k).to_pylist() for k in keys), strict=True)
    newest = groups.column("_mt_max").to_pylist()
    parts, out = snap.partition_columns, []
    for row, key in enumerate(values):
        start = int(ends[row - 1]) if row else 0
        part = dict(zip(parts, map(_plain, key), strict=True))
        out.append((str(key), (part, int(newest[row] or 0), all_files.slice(start, int(ends[row])))))
    return [p for _, p in sorted(out, key=lambda kv: kv[0])]


def _clustering(
    files: pa.Table,
    unclustered: pa.Array,
    share: float,
    decisions: list[Decision],
    s: PlanSettings,
    *,
    now_ms: int,
    overhead: int,
) -> Decision:
    """The cluster decision over the unclustered files the plan's other rewrites leave."""
    taken = {p for d in decisions if d.reason is None for p in d.files}
    rest = [f for f in _infos(files.filter(unclustered), overhead) if f.path not in taken]
    newest = int(pc.max(files.column("modification_time")).as_py() or 0) if files.num_rows else 0
    return plan_clustering(rest, share, s, now_ms, newest=newest, rewritten=len(taken))


def _keep_layout(
    decisions: list[Decision], storage: Storage, snap: Snapshot, listing: LogListing
) -> list[Decision]:
    """The rewrite actions with the layout they keep, or all of them skips when it cannot be kept."""
    if not any(d.reason is None and d.kind in REWRITES for d in decisions):
        return decisions
    try:
        layout = table_layout(storage, snap, listing).to_dict()
    except InvalidArgumentError as exc:
        return [_unkept(d, str(exc)) if d.reason is None and d.kind in REWRITES else d for d in decisions]
    return [
        dataclasses.replace(d, layout=layout) if d.reason is None and d.kind in REWRITES else d
        for d in decisions
    ]


def _unkept(d: Decision, why: str) -> Decision:
    return Decision(
        d.kind, d.partition, "layout_kept", False, True, cost=d.cost, benefit=d.benefit,
        reason=f"not rewritten, since the rewrite would not keep the table's layout: {why}",
    )  # fmt: skip


def _plain(value: Any) -> Any:
    """A partition value as JSON: dates and timestamps in ISO form, decimals and bytes as text."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def _deleted_rows(snap: Snapshot, n: int) -> pa.Array:
    """Per live file (in `files()` order), the rows its deletion vector deletes (int64, Arrow)."""
    state = snap.state
    base = state.live_base_adds(["deletionVector.cardinality"])
    parts: list[pa.Array] = []
    if base is not None:
        if base.type.get_field_index("deletionVector") >= 0:
            card = pc.struct_field(base.field("deletionVector"), "cardinality")
            parts.append(pc.fill_null(card.cast(pa.int64()), 0))
        else:
            parts.append(pa.repeat(pa.scalar(0, pa.int64()), len(base)))
    tail = [int((add.get("deletionVector") or {}).get("cardinality") or 0) for add in state.tail_adds()]
    parts.append(pa.array(tail, pa.int64()))
    out = pa.concat_arrays(parts)
    if len(out) != n:  # (a layout this does not know: no purge is planned)
        return pa.repeat(pa.scalar(0, pa.int64()), n)
    return out


def _providers(snap: Snapshot, n: int) -> pa.Array:
    """Per live file (in `files()` order), its clusteringProvider (null: none), as a string array."""
    state = snap.state
    base = state.live_base_adds(["clusteringProvider"])
    parts: list[pa.Array] = []
    if base is not None:
        if base.type.get_field_index("clusteringProvider") >= 0:
            parts.append(base.field("clusteringProvider").cast(pa.string()))
        else:
            parts.append(pa.nulls(len(base), pa.string()))
    parts.append(pa.array([add.get("clusteringProvider") for add in state.tail_adds()], pa.string()))
    out = pa.concat_arrays(parts)
    if len(out) != n:  # (a layout this does not know: every file left alone, as another's)
        return pa.repeat(pa.scalar(_UNKNOWN, pa.string()), n)
    return out
