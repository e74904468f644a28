"""OPTIMIZE (compaction): bin-pack small files per partition into files near a target size.

    files  = live files (`read_files(where)`; `where` may name partition columns only, as in Delta)
    per partition: files smaller than the target, smallest first, packed greedily into bins whose
                   total size stays within the target; bins of a single file are dropped (rewriting
                   one file alone gains nothing) unless it is to be purged of its deletion vector
                   (it deletes more than 5% of the file's rows, Delta's maxDeletedRowsRatio): the
                   rewrite reads through the DV and writes only the rows left
    Spark: each bin is read as one task (`coalesce(1)`) and the bins are unioned (with
           `spark.sql.unionOutputPartitioning=false`, so the union keeps one partition per bin):
           each bin becomes exactly one new file; one write job for all bins
    commit: removes of the binned files + adds, all with dataChange=false

dataChange=false makes the commit run at snapshot isolation: a concurrent append never conflicts
with it (the engine skips the append check), while a concurrent delete of a file being compacted
does (the file was read). Target size: `target_file_size`, else the table property
`delta.targetFileSize`, else 100 MiB (delta-rs' default). Metrics are Delta's: numAddedFiles,
numRemovedFiles, numAddedBytes, numRemovedBytes, minFileSize, p25FileSize, p50FileSize,
p75FileSize, maxFileSize (sizes of the files added), numBatches, totalConsideredFiles.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from functools import reduce

from pyspark.sql import DataFrame

from airflow_txnlog.engine import AddFile, InvalidArgumentError, Transaction
from airflow_txnlog.engine.spi import plan_layout, target_file_size
from airflow_txnlog.spark._arguments import positive_int, sql_text
from airflow_txnlog.spark.conditions import check_condition
from airflow_txnlog.spark.context import TableContext, TableHandle
from airflow_txnlog.spark.dml._dml import dml_result, elapsed_ms, file_metrics
from airflow_txnlog.spark.dml.results import DmlResult
from airflow_txnlog.spark.maintenance import layout
from airflow_txnlog.spark.read.planning import Case, classify, read_candidates
from airflow_txnlog.spark.read.scan import scan
from airflow_txnlog.spark.write.stage import write_files

# Delta's spark.databricks.delta.optimize.maxDeletedRowsRatio: a file whose deletion vector deletes
# more than this share of its rows is rewritten whatever its size (the rewrite drops the DV).
MAX_DELETED_ROWS_RATIO = 0.05


def needs_purge(f: AddFile) -> bool:
    """Whether OPTIMIZE rewrites `f` to drop its deletion vector (see MAX_DELETED_ROWS_RATIO)."""
    if not f.deletion_vector:
        return False
    n, deleted = f.num_records, int(f.deletion_vector.get("cardinality") or 0)
    return not n or deleted / n > MAX_DELETED_ROWS_RATIO


def bin_pack(files: Sequence[AddFile], target: int) -> list[list[AddFile]]:
    """Bins (all from one partition) of files smaller than `target` and of files to purge of their
    deletion vectors; a bin of one file is kept only to purge it."""
    partitions: dict[tuple[tuple[str, str | None], ...], list[AddFile]] = {}
    for f in files:
        if f.size < target or needs_purge(f):
            partitions.setdefault(tuple(sorted(f.partition_values.items())), []).append(f)
    bins: list[list[AddFile]] = []
    for key in sorted(partitions, key=repr):
        current: list[AddFile] = []
        size = 0
        for f in sorted(partitions[key], key=lambda a: (a.size, a.path)):
            if current and size + f.size > target:
                bins.append(current)
                current, size = [], 0
            current.append(f)
            size += f.size
        bins.append(current)
    return [b for b in bins if len(b) > 1 or any(needs_purge(f) for f in b)]


def _percentile(sizes: list[int], q: float) -> int:
    ordered = sorted(sizes)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0


# Spark 4 may give a union of single-partition children a single partition (one task for every
# bin, so one file): keep one task per bin.
_ONE_FILE_PER_BIN = {"spark.sql.unionOutputPartitioning": "false"}


def _bins_df(ctx: TableContext, bins: list[list[AddFile]]) -> DataFrame:
    """One Spark partition (so one task, one output file) per bin."""
    return reduce(DataFrame.unionAll, [scan(ctx, b, row_ids=True).coalesce(1) for b in bins])


def optimize(
    h: TableHandle,
    where: str | None,
    file_size: int | None,
    zorder_by: list[str] | None = None,
    full: bool = False,
) -> DmlResult:
    """Compact small files (see the module docstring); `file_size` overrides the target size. With
    `zorder_by`, or on a clustered table, the layout path instead (spark.maintenance.layout)."""
    sql_text("optimize: where", where, none_means="every partition")
    positive_int("optimize: target_file_size", file_size, none_means="delta.targetFileSize, else 100 MiB")
    start = time.monotonic()
    params = {"predicate": json.dumps([where] if where else []), "zOrderBy": "[]"}
    txn = h.table.transaction("OPTIMIZE", params)
    if zorder_by is not None or txn.snapshot.clustering_columns():
        return _layout(h, txn, where, file_size, zorder_by, full, start)
    ctx = h.context(txn.snapshot)
    target = target_file_size(ctx.properties, file_size)
    check_condition(ctx.empty_df(), where, "OPTIMIZE where predicate")  # an unknown column, by name
    plan = classify(where, ctx)
    if plan.case is Case.DATA:
        raise InvalidArgumentError(
            f"optimize where={where!r} must be a predicate on partition columns {list(ctx.partition_columns)}"
        )
    files = read_candidates(txn, plan)
    bins = bin_pack(files, target)
    removed = [f for b in bins for f in b]
    adds = []
    if bins:
        adds = write_files(
            ctx, h.table, _bins_df(ctx, bins), data_change=False, what="OPTIMIZE", conf=_ONE_FILE_PER_BIN,
            one_file_per_task=True,
        )  # fmt: skip
    sizes = [a.size for a in adds]
    metrics = file_metrics(removed, adds)
    del metrics["numAddedChangeFiles"]
    metrics.update(
        minFileSize=min(sizes, default=0),
        p25FileSize=_percentile(sizes, 0.25),
        p50FileSize=_percentile(sizes, 0.5),
        p75FileSize=_percentile(sizes, 0.75),
        maxFileSize=max(sizes, default=0),
        numBatches=len(bins),
        totalConsideredFiles=len(files),
        executionTimeMs=elapsed_ms(start),
    )
    scanned = tuple(f.path for f in removed)
    return dml_result(
        "OPTIMIZE", h, txn, removes=removed, adds=adds, metrics=metrics, scanned=scanned, data_change=False,
        preserved=True,
    )  # fmt: skip


def _layout(  # noqa: PLR0917 (optimize's arguments, passed straight on)
    h: TableHandle,
    txn: Transaction,
    where: str | None,
    file_size: int | None,
    zorder_by: list[str] | None,
    full: bool,
    start: float,
) -> DmlResult:
    """Z-order or clustering (engine.plan_layout decides the files; spark.maintenance.layout sorts them)."""
    plan = plan_layout(txn.snapshot, zorder_by=zorder_by, where=where, full=full, target_file_size=file_size)
    txn.parameters.clear()
    txn.parameters.update(plan.parameters)
    removed = [f for g in plan.groups for f in g]
    adds = layout.rewrite(h, txn, plan)
    metrics = file_metrics(removed, adds)
    del metrics["numAddedChangeFiles"]
    metrics.update(
        numBatches=len(plan.groups), totalConsideredFiles=plan.considered, executionTimeMs=elapsed_ms(start)
    )
    scanned = tuple(f.path for f in removed)
    return dml_result(
        "OPTIMIZE", h, txn, removes=removed, adds=adds, metrics=metrics, scanned=scanned, data_change=False,
        preserved=True,
    )  # fmt: skip
