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

from airflow_txnlog.engine import AddFile, InvalidArgumentError
from airflow_txnlog.spark.delete import dml_result, elapsed_ms, file_metrics, output_rows
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


def resolve_columns(ctx: TableContext, assignments: Mapping[str, str], what: str) -> dict[str, str]:
    """`assignments` keyed by the table's spelling of each column (matched case-insensitively)."""
    by_lower = {n.lower(): n for n in ctx.schema.names}
    out: dict[str, str] = {}
    for name, sql in assignments.items():
        column = by_lower.get(str(name).lower())
        if column is None:
            raise InvalidArgumentError(f"{what}: unknown column {name!r}; columns are {ctx.schema.names}")
        if not isinstance(sql, str) or not sql.strip():
            raise InvalidArgumentError(f"{what}: the expression for {name!r} must be a non-empty SQL string")
        out[column] = sql
    return out


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
    if not assignments:
        raise InvalidArgumentError("update needs at least one column to set")
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
    if touched:
        rewritten, _ = conform(scan(ctx, touched).select(*_projection(ctx, condition, sets)), ctx.schema)
        adds = write_files(ctx, h.table, rewritten, what="UPDATE")
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
    return dml_result("UPDATE", h, txn, removes=touched, adds=adds, metrics=metrics, scanned=scanned)
