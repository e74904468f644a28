"""Planned maintenance on Spark: a plan's data rewrite (cluster, compact, purge_deletion_vectors) with
Spark reading and writing the files, the engine choosing and committing them.

    action   one element of `Table.plan_maintenance().to_dict()["actions"]`, as `Table.run_maintenance`
             takes it; the engine checks it, drops bins whose files are no longer live, decides the
             layout (engine.maintenance.rewrite_layout) and hands the writer a RewriteWork
    writer   per group of files: `scan` (deletion vectors applied, row ids kept on a row-tracking
             table) in one Spark partition per output file (a bin: `coalesce(1)`; Z-order / Hilbert
             clustering: the engine's curve keys on the executors with cut points from a sample of
             the group, `repartitionByRange` + `sortWithinPartitions`, spark.maintenance.layout);
             all groups unioned and written in one job through the `txnlog` data source
    commit   the engine's (engine.maintenance.rewrite_run): exactly the planned files removed and the
             written ones added, dataChange=false, the same conflict rules and metrics as the engine's
             own run; the result dict is `Table.run_maintenance`'s

The driver holds no group's rows: it plans Spark jobs and, for a curve, collects a sample of the key
columns (at most about a million values per column). Other kinds (checkpoint, vacuum, cleanup_log)
read no rows and run in the engine as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_txnlog.engine import AddFile, Snapshot
from airflow_txnlog.engine.spi import RewriteWork, RewriteWriter
from airflow_txnlog.spark.context import TableHandle
from airflow_txnlog.spark.maintenance.layout import ordered, write_groups


def spark_writer(h: TableHandle) -> RewriteWriter:
    """The RewriteWriter that runs a rewrite's groups on `h`'s Spark session (module docstring)."""

    def write(snap: Snapshot, work: RewriteWork) -> list[AddFile]:
        ctx = h.context(snap)
        columns, curve = work.layout.columns, work.layout.curve
        parts = [ordered(ctx, g, n, columns, curve) for g, n in zip(work.groups, work.outputs, strict=True)]
        return write_groups(ctx, h.table, parts)

    return write


def run_maintenance(h: TableHandle, action: Mapping[str, Any], *, dry_run: bool) -> dict[str, Any]:
    """One planned action; a data rewrite's files written by Spark (see the module docstring)."""
    return h.table.run_maintenance(action, dry_run=dry_run, rewriter=spark_writer(h))
