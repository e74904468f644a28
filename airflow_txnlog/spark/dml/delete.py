"""DELETE: the seed article's algorithm (Delta's `DeleteCommand.performDelete`), case by case.

    no predicate            -> remove every live file (`read_files()`), read no data;
    partition columns only  -> remove the files whose partition values satisfy it (decided from the
                               log, exactly), read no data;
    otherwise               -> candidates = files whose partition values / min-max stats admit a
                               match (`read_files(predicate)`, recorded for conflicts);
                               pass 1 (one Spark job): files holding rows where the predicate is
                               TRUE (`_metadata.file_path`), with their counts;
                               none -> nothing to do: no commit, version None;
                               pass 2 (one Spark job): rewrite only those files, keeping the rows
                               where `NOT (predicate <=> TRUE)`; commit removes + adds.
                               Few, small candidates and a predicate with an exact Arrow form:
                               both passes run in-process on the driver, no Spark job
                               (`delete_local`). With
                               `delta.enableDeletionVectors=true` the matching rows are marked in a
                               deletion vector instead (`spark.features.deletion_vectors`): no rewrite;
                               candidates of at most `delete_local.DV_MAX_BYTES` are read on the
                               driver (no Spark job), others in ONE Spark job that collects the
                               matching rows' positions (their counts are its list lengths).

Spark's analyser checks the predicate (`conditions.check_condition`) on a helper thread while the
engine classifies and prunes; every path waits for it before its first Spark job, file write or
commit, so a predicate Spark refuses fails as before, having changed nothing.

Metrics are Delta's: numRemovedFiles, numAddedFiles, numDeletedRows (when known: the stats of the
removed files in the metadata-only cases), numCopiedRows, numRemovedBytes, numAddedBytes,
numAddedChangeFiles, executionTimeMs, scanTimeMs, rewriteTimeMs.
"""

from __future__ import annotations

import functools
import json
import time

from pyspark.sql import Column

from airflow_txnlog.engine import AddCDCFile, AddFile, Transaction, schema_to_json
from airflow_txnlog.spark._arguments import sql_text
from airflow_txnlog.spark.conditions import PendingCheck, check_condition, check_condition_meanwhile
from airflow_txnlog.spark.context import TableContext, TableHandle
from airflow_txnlog.spark.dml import delete_local
from airflow_txnlog.spark.dml._dml import dml_result, elapsed_ms, file_metrics, output_rows
from airflow_txnlog.spark.dml.results import DmlResult
from airflow_txnlog.spark.features import deletion_vectors, identity
from airflow_txnlog.spark.read.planning import (
    Case,
    Plan,
    classify,
    is_true,
    matched_files,
    read_candidates,
    select_files,
    total_records,
)
from airflow_txnlog.spark.read.scan import scan
from airflow_txnlog.spark.write import change_data
from airflow_txnlog.spark.write.stage import delete_files, write_files


def delete(h: TableHandle, predicate: str | None) -> DmlResult:
    """Delete the rows where `predicate` is TRUE (all rows if None)."""
    sql_text("delete: predicate", predicate, none_means="delete every row")
    params = {"predicate": json.dumps([predicate] if predicate else [])}
    begin = functools.partial(h.table.transaction, "DELETE", params)
    return identity.on_fresh_transactions(h.table, begin, lambda txn: _delete(h, txn, predicate))


def _delete(h: TableHandle, txn: Transaction, predicate: str | None) -> DmlResult:
    start = time.monotonic()
    ctx = h.context(txn.snapshot)
    plan, checked = _classified(h, ctx, predicate)
    with checked:
        candidates = read_candidates(txn, plan)
        if plan.case is Case.DATA:
            return _delete_rows(h, txn, ctx, candidates, plan=plan, start=start, checked=checked)
        checked.wait()
        return _delete_files(h, txn, candidates, start)


def _classified(h: TableHandle, ctx: TableContext, predicate: str | None) -> tuple[Plan, PendingCheck]:
    """The engine's plan of `predicate`, and Spark's check of it started on the helper thread (its
    pass remembered when the engine parsed the predicate: then it is the engine's SQL)."""
    try:
        plan = classify(predicate, ctx)
    except Exception:
        check_condition(ctx.empty_df(), predicate, "DELETE predicate")  # (Spark's error first, as before)
        raise
    known = None if plan.parsed is None else schema_to_json(ctx.schema)
    what = "DELETE predicate"
    return plan, check_condition_meanwhile(h.spark, ctx.empty_df, predicate, what, columns_key=known)


def _delete_files(h: TableHandle, txn: Transaction, files: list[AddFile], start: float) -> DmlResult:
    metrics = file_metrics(files, [])
    metrics.update(numCopiedRows=0, scanTimeMs=elapsed_ms(start), rewriteTimeMs=0)
    rows = total_records(files)
    if rows is not None:
        metrics["numDeletedRows"] = rows
    metrics["executionTimeMs"] = elapsed_ms(start)
    # No file's data is read in these cases: nothing is reported as scanned.
    return dml_result("DELETE", h, txn, removes=files, adds=[], metrics=metrics, scanned=())


def _row_metrics(
    deleted: int, touched: list[AddFile], adds: list[AddFile], *, marked: int, scan_ms: int, start: float
) -> dict[str, int]:
    """Delta's metrics of a DELETE that read data (in-process or on Spark)."""
    metrics = file_metrics(touched, adds)
    metrics.update(
        numDeletedRows=deleted,
        numCopiedRows=output_rows(adds),
        numDeletionVectorsAdded=marked,
        scanTimeMs=scan_ms,
        rewriteTimeMs=elapsed_ms(start) - scan_ms,
        executionTimeMs=elapsed_ms(start),
    )
    return metrics


def _delete_in_process(
    h: TableHandle,
    txn: Transaction,
    ctx: TableContext,
    candidates: list[AddFile],
    *,
    plan: Plan,
    start: float,
    checked: PendingCheck,
) -> DmlResult:
    assert plan.parsed is not None
    counts, touched, adds = delete_local.delete_in_process(
        ctx, h.table, candidates, plan.parsed, before_writing=checked.wait
    )
    metrics = _row_metrics(sum(counts.values()), touched, adds, marked=0, scan_ms=0, start=start)
    scanned = tuple(f.path for f in candidates)
    return dml_result("DELETE", h, txn, removes=touched, adds=adds, metrics=metrics, scanned=scanned)


def _mark_in_process(
    h: TableHandle,
    txn: Transaction,
    ctx: TableContext,
    candidates: list[AddFile],
    *,
    plan: Plan,
    start: float,
    checked: PendingCheck,
) -> DmlResult:
    """Deletion vectors found and written on the driver (`delete_local.marks_apply`)."""
    assert plan.parsed is not None
    found = deletion_vectors.positions_in_process(ctx, h.table, candidates, plan.parsed)
    scan_ms = elapsed_ms(start)
    checked.wait()  # (before the DV file is written)
    touched = [f for f in candidates if f.path in found]
    marked = deletion_vectors.marked(ctx, h.table, touched, found) if touched else []
    deleted = sum(len(rows) for rows in found.values())
    metrics = _row_metrics(deleted, touched, [], marked=len(marked), scan_ms=scan_ms, start=start)
    scanned = tuple(f.path for f in candidates)
    return dml_result(
        "DELETE", h, txn, removes=touched, adds=marked, metrics=metrics, scanned=scanned, preserved=True
    )


def _spark_matches(
    ctx: TableContext, candidates: list[AddFile], condition: Column
) -> tuple[dict[str, int], list[AddFile], dict[str, list[int]]]:
    """({file URI: matching rows}, the files holding matches, {path: positions} of those that take a
    deletion vector): one Spark job, positions and counts at once where DVs are written."""
    if not deletion_vectors.enabled(ctx):
        counts = matched_files(ctx, candidates, condition)
        return counts, select_files(candidates, ctx, counts), {}
    with_dv, other = deletion_vectors.split(candidates)
    found = deletion_vectors.positions(ctx, with_dv, condition)
    counts = matched_files(ctx, other, condition) if other else {}  # (no numRecords: rewritten)
    counts.update({ctx.uri(f): len(found[f.path]) for f in with_dv if f.path in found})
    return counts, select_files(candidates, ctx, counts), found


def _delete_rows(
    h: TableHandle,
    txn: Transaction,
    ctx: TableContext,
    candidates: list[AddFile],
    *,
    plan: Plan,
    start: float,
    checked: PendingCheck,
) -> DmlResult:
    if delete_local.marks_apply(ctx, plan.parsed, candidates):
        return _mark_in_process(h, txn, ctx, candidates, plan=plan, start=start, checked=checked)
    if plan.parsed is not None and delete_local.applies(ctx, plan.parsed, candidates):
        return _delete_in_process(h, txn, ctx, candidates, plan=plan, start=start, checked=checked)
    checked.wait()  # before the first Spark job
    condition = is_true(plan.predicate)
    counts, touched, found = _spark_matches(ctx, candidates, condition)
    scan_ms = elapsed_ms(start)
    scanned = tuple(f.path for f in candidates)
    with_dv = [f for f in touched if f.path in found]
    rewrite = [f for f in touched if f.path not in found]
    marked = deletion_vectors.marked(ctx, h.table, with_dv, found) if with_dv else []
    adds: list[AddFile] = []
    if rewrite:
        kept = scan(ctx, rewrite, row_ids=True).filter(~condition)  # (row ids kept, with row tracking)
        adds = write_files(ctx, h.table, kept, what="DELETE")
    cdc: list[AddCDCFile] = []
    if touched and change_data.enabled(ctx):
        deleted = change_data.tagged(scan(ctx, touched).filter(condition), ctx, "delete")
        try:
            cdc = change_data.write_changes(ctx, h.table, deleted, what="DELETE")
        except BaseException:
            delete_files(h.table, adds)  # (a DV file left behind is an orphan vacuum reclaims)
            raise
    metrics = _row_metrics(
        sum(counts.values()), touched, adds, marked=len(marked), scan_ms=scan_ms, start=start
    )
    return dml_result(
        "DELETE", h, txn, removes=touched, adds=[*marked, *adds], metrics=metrics, scanned=scanned, cdc=cdc,
        preserved=True,
    )  # fmt: skip
