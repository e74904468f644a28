"""OPTIMIZE with a layout: Z-order, liquid clustering, or plain compaction; planned here, run by
the engine (pyarrow, `optimize_layout`) or by Spark (airflow_txnlog.spark.maintenance.optimize, same plan).

    plan_layout(snapshot, zorder_by, where, full, target)
        zorder   zorder_by given (an unclustered table): every live file of each partition that the
                 `where` partition predicate selects, even a partition of one file (Delta's OPTIMIZE
                 ZORDER BY rewrites them all); key: Z-order over the columns
        cluster  a clustered table with keys: the files without `clusteringProvider` (with `full`,
                 also those the engine clustered, provider `liquid`; another provider's files are
                 never touched); key: Hilbert curve over the keys, one key: the column itself
        compact  otherwise: per partition, the files smaller than the target, when there are two
        -> LayoutPlan: groups of files (one per partition), each rewritten into ceil(bytes / target)
           files (at least one)
    optimize_layout: per group, read its rows (deletion vectors applied), cut points from a sample
        of the group, order rows by key (stable), cut into files of equal row counts, write; then
        one OPTIMIZE commit: removes and adds with dataChange=false (readers of the change feed and
        streams see nothing), adds of a clustering run with clusteringProvider=liquid. Its
        parameters are Delta's: predicate, zOrderBy, clusterBy, auto, and isFull on clustered tables.

    run_cluster_action: a planned `cluster` action (engine.maintenance.cluster_plan) is this same
        clustered OPTIMIZE over the action's files that are still live and unclustered
        (`plan_layout(only=...)`), with the plan's target file size.

A concurrent commit that removes a file being rewritten makes the commit fail (the files it wrote
are deleted); a concurrent append does not (the rewrite reads nothing new). A group whose input
files add up to at most the rewrite memory budget (`txnlog.maintenance.rewriteMemoryBytes`, 256
MiB) is held in memory (its rows decoded, plus the ordered copy; plain compaction cuts it into files
of equal row counts); a larger one is sorted externally (engine.maintenance.external_sort: one input
file, then one key range, in memory at a time), or, for plain compaction, streamed into one file per
run of input files of about equal rows (engine.maintenance.rewrite_run).
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from airflow_txnlog.engine.errors import (
    InvalidArgumentError,
    LogCorruptedError,
)
from airflow_txnlog.engine.features import clustering, row_tracking
from airflow_txnlog.engine.features.table_features import check_write_supported
from airflow_txnlog.engine.log.actions import AddFile
from airflow_txnlog.engine.maintenance.maintenance_table import MaintenanceTable
from airflow_txnlog.engine.maintenance.rewrite_layout import NONE, RewriteLayout
from airflow_txnlog.engine.maintenance.rewrite_run import (
    RewriteWork,
    RewriteWriter,
    commit_rewrite,
    memory_budget,
)
from airflow_txnlog.engine.sql.predicates import parse_predicate
from airflow_txnlog.engine.state.snapshot import Snapshot
from airflow_txnlog.engine.validate import flag, number, text

ZORDER, CLUSTER, COMPACT = "zorder", "cluster", "compact"


@dataclass(frozen=True)
class LayoutPlan:
    """What an OPTIMIZE rewrites: `groups[i]` (one partition's files) becomes `outputs[i]` files."""

    mode: str
    columns: tuple[str, ...]
    curve: str | None
    groups: tuple[tuple[AddFile, ...], ...]
    outputs: tuple[int, ...]
    considered: int
    parameters: dict[str, Any]

    @property
    def provider(self) -> str | None:
        """The clusteringProvider of the files this plan writes."""
        return clustering.PROVIDER if self.mode == CLUSTER else None


@dataclass(frozen=True)
class LayoutResult:
    """What an OPTIMIZE did."""

    version: int | None
    mode: str
    columns: list[str]
    curve: str | None
    partitions: int
    files_removed: int
    files_added: int
    bytes_removed: int
    bytes_added: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _partition_only(snap: Snapshot, where: str | None) -> None:
    text("optimize: where", where)
    if where is None:
        return
    parts = {c.lower() for c in snap.partition_columns}
    other = sorted(c for c in parse_predicate(where, snap.schema).columns if c.lower() not in parts)
    if other:
        raise InvalidArgumentError(
            f"optimize where={where!r} may name partition columns only {snap.partition_columns}, not {other}"
        )


def _mode(snap: Snapshot, zorder_by: Sequence[str] | None, full: bool) -> tuple[str, list[str]]:
    keys = snap.clustering_columns()
    nested = [k for k in keys if k not in snap.schema.names]
    if nested:
        raise InvalidArgumentError(
            f"the table is clustered by nested fields {nested}; this engine's OPTIMIZE clusters by "
            "top-level columns only. Help: cluster_by([...]) top-level columns, or OPTIMIZE with Delta"
        )
    if full and not keys:
        raise InvalidArgumentError(
            "full=True re-clusters a clustered table; this table has no clustering keys"
        )
    if zorder_by is not None:
        if clustering.DOMAIN in snap.domain_metadata():
            raise InvalidArgumentError(
                "zorder_by: the table is clustered (liquid clustering); OPTIMIZE clusters it by its keys "
                f"{keys}. Help: change them with cluster_by, not zorder_by"
            )
        conf = snap.metadata.configuration
        columns = clustering.layout_columns(
            zorder_by, snap.schema, partition_columns=snap.partition_columns, conf=conf,
            what="zorder_by", limit=clustering.MAX_ZORDER_COLUMNS,
        )  # fmt: skip
        return ZORDER, columns
    return (CLUSTER, keys) if keys else (COMPACT, [])


def plan_layout(
    snap: Snapshot,
    *,
    zorder_by: Sequence[str] | None = None,
    where: str | None = None,
    full: bool = False,
    target_file_size: int | None = None,
    only: Collection[str] | None = None,
) -> LayoutPlan:
    """The files an OPTIMIZE of `snap` rewrites and how (see the module docstring); checks every
    argument (InvalidArgumentError) before anything is read. `only`: the paths it may take (a
    planned action's), the others left as they are."""
    flag("full", full)
    check_write_supported(snap.protocol, snap.metadata)  # (a table we may not write: refused up front)
    number("target_file_size", target_file_size, minimum=1, integer=True, none_means="the table's")
    _partition_only(snap, where)
    mode, columns = _mode(snap, zorder_by, full)
    target = target_file_size if target_file_size is not None else snap.table_properties.target_file_size
    files = snap.files(where)
    if only is not None:
        files = [f for f in files if f.path in only]
    by_partition: dict[tuple[tuple[str, str | None], ...], list[AddFile]] = {}
    for f in files:
        if mode == CLUSTER and f.clustering_provider not in (None, *((clustering.PROVIDER,) if full else ())):
            continue
        if mode == COMPACT and f.size >= target:
            continue
        by_partition.setdefault(tuple(sorted(f.partition_values.items())), []).append(f)
    minimum = 2 if mode == COMPACT else 1
    groups = [tuple(sorted(g, key=lambda f: f.path)) for _, g in sorted(by_partition.items(), key=repr)]
    groups = [g for g in groups if len(g) >= minimum]
    outputs = [max(1, math.ceil(sum(f.size for f in g) / target)) for g in groups]
    parameters: dict[str, Any] = {
        "predicate": json.dumps([where] if where else []),
        "zOrderBy": json.dumps(columns if mode == ZORDER else []),
        "clusterBy": json.dumps(columns if mode == CLUSTER else []),
        "auto": "false",
    }
    if mode == CLUSTER:
        parameters["isFull"] = json.dumps(full)
    curve = {ZORDER: "zorder", CLUSTER: "hilbert"}.get(mode)
    return LayoutPlan(mode, tuple(columns), curve, tuple(groups), tuple(outputs), len(files), parameters)


def ordered(data: pa.Table, plan: LayoutPlan) -> pa.Table:
    """`data` (one group's rows) in the plan's key order; unchanged for plain compaction. (The
    same ordering as a planned compaction's: engine.maintenance.rewrite_layout.)"""
    return RewriteLayout(plan.mode if plan.curve else NONE, plan.columns).order(data)


def optimize_layout(
    table: MaintenanceTable,
    *,
    zorder_by: Sequence[str] | None = None,
    where: str | None = None,
    full: bool = False,
    target_file_size: int | None = None,
) -> LayoutResult:
    """Run an OPTIMIZE (see the module docstring) in this process; the result once committed."""
    started = time.monotonic()
    snap = table.snapshot()
    plan = plan_layout(snap, zorder_by=zorder_by, where=where, full=full, target_file_size=target_file_size)
    removed = [f for g in plan.groups for f in g]
    version: int | None = None
    adds: list[AddFile] = []
    if plan.groups:
        version, adds = _rewrite(table, snap, plan)
    return LayoutResult(
        version, plan.mode, list(plan.columns), plan.curve, len(plan.groups), len(removed), len(adds),
        sum(f.size for f in removed), sum(a.size for a in adds), round(time.monotonic() - started, 3),
    )  # fmt: skip


def run_cluster_action(
    table: MaintenanceTable,
    action: Mapping[str, Any],
    *,
    dry_run: bool,
    writer: RewriteWriter | None = None,
) -> dict[str, Any]:
    """Run a planned `cluster` action (its `to_dict()` form): the clustered OPTIMIZE over its files
    still live and unclustered (a table whose keys were removed since the plan: nothing). The
    result has the shape of a planned compaction's (predicted and actual bytes and files)."""
    started = time.monotonic()
    paths = action.get("files")
    if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
        raise InvalidArgumentError(f"a cluster action needs 'files': a list of file paths, got {paths!r}")
    estimate = action.get("estimate") or {}
    memory = memory_budget(action)  # (checked before anything, a dry run too)
    snap = table.snapshot()
    plan = (
        plan_layout(snap, target_file_size=estimate.get("target_file_size"), only=frozenset(paths))
        if snap.clustering_columns()
        else None
    )
    taken = [f for g in plan.groups for f in g] if plan is not None else []
    out: dict[str, Any] = {
        "kind": "cluster", "partition": None, "version": None, "dry_run": dry_run,
        "files_run": len(taken), "files_dropped": len(paths) - len(taken),
        "predicted": {k: int(estimate.get(k) or 0) for k in ("files_after", "bytes_after")}, "actual": {},
        "layout": RewriteLayout(CLUSTER, plan.columns).to_dict() if plan else {},
    }  # fmt: skip
    if plan is not None and taken and not dry_run:
        out["version"], adds = _rewrite(table, snap, plan, writer, memory)
        out["actual"] = {
            "files_after": len(adds), "bytes_after": sum(a.size for a in adds),
            "files_removed": len(taken), "bytes_read": sum(f.size for f in taken),
        }  # fmt: skip
    return {**out, "seconds": round(time.monotonic() - started, 3)}


def _rewrite(
    table: MaintenanceTable,
    snap: Snapshot,
    plan: LayoutPlan,
    writer: RewriteWriter | None = None,
    memory_bytes: int | None = None,
) -> tuple[int, list[AddFile]]:
    """The plan's groups written in its key order by `writer` (default: the engine) and committed
    as one OPTIMIZE reading `snap` (engine.maintenance.rewrite_run)."""
    layout = RewriteLayout(plan.mode if plan.curve else NONE, plan.columns)
    work = RewriteWork(plan.groups, plan.outputs, layout)
    metrics = {"numBatches": len(plan.groups), "totalConsideredFiles": plan.considered}
    return commit_rewrite(
        table,
        snap,
        work,
        parameters=plan.parameters,
        metrics=metrics,
        writer=writer,
        memory_bytes=memory_bytes,
    )


def layout_summary(snap: Snapshot) -> dict[str, Any]:
    """How a version is laid out, for a UI: clustering keys, how much of it the engine clustered
    (files and bytes with clusteringProvider=liquid; other providers' counted apart) and row tracking
    (the feature, the property, the `delta.rowTracking` domain's high-water mark)."""
    domains = snap.domain_metadata()
    files = snap.files() if snap.clustering_columns() or clustering.DOMAIN in domains else []
    ours = [f for f in files if f.clustering_provider == clustering.PROVIDER]
    other = [f for f in files if f.clustering_provider not in (None, clustering.PROVIDER)]
    writers = set(snap.protocol.writer_features or ())
    try:  # (None: no domain, or one the UI should not fail on)
        mark = row_tracking.high_water_mark(domains) if row_tracking.DOMAIN in domains else None
    except LogCorruptedError:
        mark = None
    return {
        "clustered": clustering.FEATURE in writers,
        "clusteringColumns": snap.clustering_columns(),
        "files": len(files),
        "clusteredFiles": len(ours),
        "clusteredBytes": sum(f.size for f in ours),
        "otherProviderFiles": len(other),
        "bytes": sum(f.size for f in files),
        "rowTracking": {
            "supported": row_tracking.FEATURE in writers,
            "enabled": snap.table_properties.row_tracking,
            "highWaterMark": mark,
        },
    }
