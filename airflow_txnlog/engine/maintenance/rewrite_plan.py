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
from airflow_txnlog.engine.maintenance.rewrite_layout import ZOrderFinder, table_layout
from airflow_txnlog.engine.state.snapshot import Snapshot
from airflow_txnlog.engine.storage import Storage

REWRITES = ("cluster", "compact", "purge_deletion_vectors")
_UNKNOWN = "\0unknown"  # (a provider for files whose add this cannot read: treated as another's)
Partition = tuple[dict[str, Any] | None, int, PartitionFiles]


def plan_rewrites(
    storage: Storage,
    snap: Snapshot,
    listing: LogListing,
    s: PlanSettings,
    now_ms: int,
    *,
    zorder: ZOrderFinder | None = None,
) -> list[Decision]:
    """The rewrite decisions for `snap` (see the module docstring); `zorder`: the log's Z-order, when
    the caller's pass over the log already found it (rewrite_layout.table_layout)."""
    keys = snap.clustering_columns()
    files = _files(snap, clustered=bool(keys))
    unclustered = pc.is_null(files.column("_provider")) if keys else None
    share = _share(files, unclustered)
    mask = _candidates(files, s, unclustered if keys and clusters_by_share(share, s) else None)
    wanted = pc.any(mask).as_py() or (unclustered is not None and pc.any(unclustered).as_py())
    overhead = file_overhead(snap) if wanted else 0
    parts = _partitions(snap, files, mask, overhead)
    # The file table's transient buffers go back to the OS before the decisions build their Python
    # objects (a path string per candidate), which cannot reuse the Arrow pool's free pages.
    pa.default_memory_pool().release_unused()
    decisions = [
        d for part, newest, infos in parts for d in plan_partition(part, infos, s, now_ms, newest=newest)
    ]
    if unclustered is not None:
        decisions.insert(
            0, _clustering(files, unclustered, share, decisions, s, now_ms=now_ms, overhead=overhead)
        )
    return _keep_layout(decisions, storage, snap, listing, zorder=zorder, memory_bytes=s.rewrite_memory_bytes)


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


def _group_ids(files: pa.Table, keys: list[str]) -> np.ndarray:
    """Per file a dense id of its partition (its values' combination): each column dictionary-encoded
    (a null its own code), the codes combined column by column and made dense again."""
    ids = np.zeros(files.num_rows, dtype=np.int64)
    for key in keys:
        encoded = pc.dictionary_encode(files.column(key)).combine_chunks()
        width = len(encoded.dictionary) + 1
        codes = pc.fill_null(encoded.indices, width - 1).to_numpy(zero_copy_only=False).astype(np.int64)
        _, ids = np.unique(ids * width + codes, return_inverse=True)
    return np.asarray(ids, dtype=np.int64).reshape(-1)


def _partitions(snap: Snapshot, files: pa.Table, mask: pa.Array, overhead: int) -> list[Partition]:
    """(partition values or None, its newest file's modification time, its candidate files as
    columns) for every partition, in a stable order (by the partition values' text). The files are
    grouped by dense partition ids (a stable sort keeps the file table's order within a partition),
    the candidates taken from the file table once, and each partition gets a slice of them."""
    keys = [f"partition.{c}" for c in snap.partition_columns]
    if not keys:
        if not files.num_rows:
            return []
        newest = int(pc.max(files.column("modification_time")).as_py() or 0)
        return [(None, newest, PartitionFiles.of(files.filter(mask), overhead))]
    if not files.num_rows:
        return []
    ids = _group_ids(files, keys)
    order = np.argsort(ids, kind="stable")
    starts = np.flatnonzero(np.r_[True, ids[order][1:] != ids[order][:-1]])
    mtime = np.asarray(pc.fill_null(files.column("modification_time"), 0).to_numpy(), dtype=np.int64)
    newest = np.maximum.reduceat(mtime[order], starts).tolist()
    cands = np.asarray(pc.fill_null(mask, False).to_numpy(zero_copy_only=False), dtype=bool)[order]
    ends = np.cumsum(np.add.reduceat(cands.astype(np.int64), starts))
    # (only the columns the decisions read: the partition values are taken per partition below)
    wanted = files.select(["path", "size_bytes", "modification_time", "num_records", "_deleted"])
    all_files = PartitionFiles.of(wanted.take(pa.array(order[cands])), overhead)
    firsts = pa.array(order[starts])
    values = zip(*(files.column(k).take(firsts).to_pylist() for k in keys), strict=True)
    parts, out = snap.partition_columns, []
    for row, key in enumerate(values):
        start = int(ends[row - 1]) if row else 0
        part = dict(zip(parts, map(_plain, key), strict=True))
        out.append((str(key), (part, int(newest[row]), all_files.slice(start, int(ends[row])))))
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
    decisions: list[Decision],
    storage: Storage,
    snap: Snapshot,
    listing: LogListing,
    *,
    zorder: ZOrderFinder | None,
    memory_bytes: int,
) -> list[Decision]:
    """The rewrite actions with the layout they keep and the memory budget their run sorts within,
    or all of them skips when the layout cannot be kept."""
    if not any(d.reason is None and d.kind in REWRITES for d in decisions):
        return decisions
    try:
        layout = table_layout(storage, snap, listing, zorder=zorder).to_dict()
    except InvalidArgumentError as exc:
        return [_unkept(d, str(exc)) if d.reason is None and d.kind in REWRITES else d for d in decisions]
    budget = {"rewrite_memory_bytes": memory_bytes}
    return [
        dataclasses.replace(d, layout=layout, estimate={**d.estimate, **budget})
        if d.reason is None and d.kind in REWRITES
        else d
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
