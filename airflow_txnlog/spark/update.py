"""UPDATE: the touched-files pattern of DELETE, with a projection instead of a filter.

    candidates = files whose partition values / stats admit `predicate` (`read_files`, recorded)
    pass 1 (one Spark job): files holding rows where the predicate is TRUE, with their counts;
    none -> no commit (version None);
    pass 2 (one Spark job): rewrite only those files; every column c becomes
        CASE WHEN predicate <=> TRUE THEN CAST(<set[c]> AS <type of c>) ELSE c END
    (one projection, so every SET expression sees the row's old values); commit removes + adds.

Updating a partition column moves rows between partitions: the rewrite is written partitioned, so
the rows land in their new folders. Metrics are Delta's: numUpdatedRows, numCopiedRows,
numRemovedFiles, numAddedFiles, numRemovedBytes, numAddedBytes, numAddedChangeFiles,
executionTimeMs, scanTimeMs, rewriteTimeMs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping

from pyspark.sql import Column
from pyspark.sql import functions as F

from airflow_txnlog.engine import AddCDCFile, AddFile
from airflow_txnlog.spark import change_data
from airflow_txnlog.spark._arguments import sql_mapping, sql_text
from airflow_txnlog.spark._dml import dml_result, elapsed_ms, file_metrics, output_rows, resolve_columns
from airflow_txnlog.spark.planning import (
    classify,
    is_true,
    matched_files,
    read_candidates,
    select_files,
)
from airflow_txnlog.spark.results import DmlResult
from airflow_txnlog.spark.scan import TableContext, TableHandle, scan
from airflow_txnlog.spark.schemas import conform, spark_type
from airflow_txnlog.spark.stage import write_files


def _projection(ctx: TableContext, condition: Column, assignments: dict[str, str]) -> list[Column]:
    cols = []
    for name in ctx.schema.names:
        col = F.col(f"`{name}`")
        if name in assignments:
            new = F.expr(assignments[name]).cast(spark_type(ctx.schema, name))
            col = F.when(condition, new).otherwise(col)
        cols.append(col.alias(name))
    return cols


def update(h: TableHandle, predicate: str | None, assignments: Mapping[str, str]) -> DmlResult:
    """Set columns of the rows where `predicate` is TRUE (all rows if None)."""
    sql_text("update: predicate", predicate, none_means="every row")
    accepted = "a non-empty mapping {column: SQL expression} such as {'value': 'value * 2'}"
    assignments = sql_mapping("update: set", assignments, accepted=accepted)
    start = time.monotonic()
    params = {"predicate": json.dumps([predicate] if predicate else [])}
    txn = h.table.transaction("UPDATE", params)
    ctx = h.context(txn.snapshot)
    sets = resolve_columns(ctx, assignments, "update")
    candidates = read_candidates(txn, classify(predicate, ctx))
    condition = is_true(predicate)
    counts = matched_files(ctx, candidates, condition)
    touched = select_files(candidates, ctx, counts)
    scan_ms = elapsed_ms(start)
    adds: list[AddFile] = []
    cdc: list[AddCDCFile] = []
    if touched:
        rewritten, _ = conform(scan(ctx, touched).select(*_projection(ctx, condition, sets)), ctx.schema)
        adds = write_files(ctx, h.table, rewritten, what="UPDATE")
        if change_data.enabled(ctx):
            before = scan(ctx, touched).filter(condition)
            after = conform(before.select(*_projection(ctx, condition, sets)), ctx.schema)[0]
            changes = change_data.tagged(before, ctx, "update_preimage").unionByName(
                change_data.tagged(after, ctx, "update_postimage")
            )
            cdc = change_data.write_changes(ctx, h.table, changes, what="UPDATE")
    updated = sum(counts.values())
    metrics = file_metrics(touched, adds)
    metrics.update(
        numUpdatedRows=updated,
        numCopiedRows=output_rows(adds) - updated,
        scanTimeMs=scan_ms,
        rewriteTimeMs=elapsed_ms(start) - scan_ms,
        executionTimeMs=elapsed_ms(start),
    )
    scanned = tuple(f.path for f in candidates)
    return dml_result("UPDATE", h, txn, removes=touched, adds=adds, metrics=metrics, scanned=scanned, cdc=cdc)
