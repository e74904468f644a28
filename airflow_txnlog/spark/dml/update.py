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

import functools
import json
import time
from collections.abc import Mapping

from pyspark.sql import Column
from pyspark.sql import functions as F

from airflow_txnlog.engine import AddCDCFile, AddFile, Transaction
from airflow_txnlog.spark._arguments import sql_mapping, sql_text
from airflow_txnlog.spark.conditions import check_condition, check_expressions
from airflow_txnlog.spark.context import TableContext, TableHandle
from airflow_txnlog.spark.dml._dml import dml_result, elapsed_ms, file_metrics, output_rows, resolve_columns
from airflow_txnlog.spark.dml.results import DmlResult
from airflow_txnlog.spark.features import deletion_vectors, identity
from airflow_txnlog.spark.features.generated import assigned, refuse_identity_update
from airflow_txnlog.spark.read.planning import classify, is_true, matched_files, read_candidates, select_files
from airflow_txnlog.spark.read.row_ids import kept_ids, row_id_columns
from airflow_txnlog.spark.read.scan import scan
from airflow_txnlog.spark.schemas import conform, spark_type
from airflow_txnlog.spark.write import change_data
from airflow_txnlog.spark.write.stage import delete_files, write_files


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
    params = {"predicate": json.dumps([predicate] if predicate else [])}
    begin = functools.partial(h.table.transaction, "UPDATE", params)
    return identity.on_fresh_transactions(h.table, begin, lambda txn: _update(h, txn, predicate, assignments))


def _update(
    h: TableHandle, txn: Transaction, predicate: str | None, assignments: Mapping[str, str]
) -> DmlResult:
    start = time.monotonic()
    ctx = h.context(txn.snapshot)
    sets = assigned(ctx, resolve_columns(ctx, assignments, "update"), keep=lambda c: f"`{c}`")
    refuse_identity_update(ctx, "UPDATE", sets)
    rows = ctx.empty_df()  # the table's columns, no rows: Spark analyses, no job runs
    check_condition(rows, predicate, "UPDATE predicate")
    check_expressions(rows, sets, "UPDATE set value")
    candidates = read_candidates(txn, classify(predicate, ctx))
    condition = is_true(predicate)
    counts = matched_files(ctx, candidates, condition)
    touched = select_files(candidates, ctx, counts)
    scan_ms = elapsed_ms(start)
    adds, marked, cdc = _rewrite(h, ctx, touched, condition, sets)
    updated = sum(counts.values())
    metrics = file_metrics(touched, [*marked, *adds])
    metrics.update(
        numUpdatedRows=updated,
        numCopiedRows=output_rows(adds) - updated,
        numDeletionVectorsAdded=len(marked),
        scanTimeMs=scan_ms,
        rewriteTimeMs=elapsed_ms(start) - scan_ms,
        executionTimeMs=elapsed_ms(start),
    )
    scanned = tuple(f.path for f in candidates)
    return dml_result(
        "UPDATE", h, txn, removes=touched, adds=[*marked, *adds], metrics=metrics, scanned=scanned, cdc=cdc,
        preserved=True,
    )  # fmt: skip


def _rewrite(
    h: TableHandle, ctx: TableContext, touched: list[AddFile], condition: Column, sets: dict[str, str]
) -> tuple[list[AddFile], list[AddFile], list[AddCDCFile]]:
    """(new files, touched files marked with deletion vectors, change files). With deletion vectors
    the updated rows are marked deleted in place and only they are written again; otherwise the
    touched files are rewritten whole."""
    if not touched:
        return [], [], []
    marked: list[AddFile] = []
    rewrite, updated_only = touched, []
    if deletion_vectors.enabled(ctx):
        with_dv, rewrite = deletion_vectors.split(touched)
        marked = deletion_vectors.marked(
            ctx, h.table, with_dv, deletion_vectors.positions(ctx, with_dv, condition)
        )
        updated_only = with_dv
    frames = []
    ids = kept_ids(ctx, condition)  # (row tracking: ids kept, versions of updated rows reset)
    if rewrite:
        frames.append(scan(ctx, rewrite, row_ids=True).select(*_projection(ctx, condition, sets), *ids))
    if updated_only:
        only = scan(ctx, updated_only, row_ids=True).filter(condition)
        frames.append(only.select(*_projection(ctx, condition, sets), *ids))
    out = frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])
    adds = write_files(ctx, h.table, conform(out, ctx.schema, keep=row_id_columns(ctx))[0], what="UPDATE")
    cdc: list[AddCDCFile] = []
    if change_data.enabled(ctx):
        before = scan(ctx, touched).filter(condition)
        after = conform(before.select(*_projection(ctx, condition, sets)), ctx.schema)[0]
        changes = change_data.tagged(before, ctx, "update_preimage").unionByName(
            change_data.tagged(after, ctx, "update_postimage")
        )
        try:
            cdc = change_data.write_changes(ctx, h.table, changes, what="UPDATE")
        except BaseException:
            delete_files(h.table, adds)
            raise
    return adds, marked, cdc
