"""What DELETE, UPDATE, MERGE and OPTIMIZE share: the commit-or-nothing tail, metrics, SET columns.

Each of them plans from a transaction's snapshot, rewrites files with Spark and ends the same way:

    removes + adds empty  -> no commit: DmlResult(version=None) (nothing matched, nothing to compact)
    otherwise             -> one commit of removes + adds (`write.stage.commit`, which deletes the new
                             files when the commit certainly failed) -> DmlResult(version, paths)

Metrics use Delta's names. `file_metrics` gives the file / byte counts every DML reports; each
operation adds its own row counts and timings. `resolve_columns` maps user-given SET / VALUES keys
(a value `DEFAULT` is the column's default, engine.features.column_defaults, or NULL without one)
onto the table's spelling of each column (case-insensitively, as Spark SQL does), so UPDATE and
MERGE name a missing column the same way.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from airflow_txnlog.engine import AddCDCFile, AddFile, InvalidArgumentError, Transaction
from airflow_txnlog.spark.context import TableContext, TableHandle
from airflow_txnlog.spark.dml.results import DmlResult
from airflow_txnlog.spark.write.stage import commit


def elapsed_ms(start: float) -> int:
    return int((time.monotonic() - start) * 1000)


def file_metrics(removed: list[AddFile], added: list[AddFile]) -> dict[str, int]:
    return {
        "numRemovedFiles": len(removed),
        "numAddedFiles": len(added),
        "numRemovedBytes": sum(f.size for f in removed),
        "numAddedBytes": sum(f.size for f in added),
        "numAddedChangeFiles": 0,
    }


def output_rows(adds: list[AddFile]) -> int:
    return sum(a.num_records or 0 for a in adds)


def dml_result(
    operation: str,
    h: TableHandle,
    txn: Transaction,
    *,
    removes: list[AddFile],
    adds: list[AddFile],
    metrics: dict[str, int],
    scanned: tuple[str, ...],
    data_change: bool = True,
    cdc: Sequence[AddCDCFile] = (),
    preserved: bool = False,
) -> DmlResult:
    """Commit removes + adds (+ change data files; nothing when there are no removes and adds) and
    describe the outcome. `preserved`: the rewrite carried every copied row's id (spark.read.row_ids)."""
    if not removes and not adds:
        return DmlResult(operation, None, metrics, scanned_files=scanned)
    if preserved:
        txn.rows_preserved()
    if "numAddedChangeFiles" in metrics:
        metrics["numAddedChangeFiles"] = len(cdc)
    version = commit(
        txn, h.table, adds=adds, removes=removes, metrics=metrics, data_change=data_change, cdc=cdc
    )
    return DmlResult(
        operation,
        version,
        metrics,
        scanned_files=scanned,
        removed_files=tuple(f.path for f in removes),
        added_files=tuple(a.path for a in adds),
    )


def resolve_columns(ctx: TableContext, assignments: Mapping[str, str], what: str) -> dict[str, str]:
    """`assignments` keyed by the table's spelling of each column (matched case-insensitively).

    The mapping's shape (string keys, non-empty SQL values) was checked by `_arguments.sql_mapping`
    when the call was made; only the table knows its columns, so they are checked here, before any
    Spark job.
    """
    by_lower = {n.lower(): n for n in ctx.schema.names}
    out: dict[str, str] = {}
    for name, sql in assignments.items():
        column = by_lower.get(name.lower())
        if column is None:
            raise InvalidArgumentError(f"{what}: unknown column {name!r}; columns are {ctx.schema.names}")
        if column in out:
            raise InvalidArgumentError(
                f"{what}: column {column!r} is set twice (names match case-insensitively)"
            )
        out[column] = _default_keyword(ctx, column) if sql.strip().upper() == "DEFAULT" else sql
    return out


def _default_keyword(ctx: TableContext, column: str) -> str:
    """SQL's `DEFAULT` as a value: the column's default (allowColumnDefaults), else NULL (as Spark)."""
    text = ctx.defaults.get(column)
    return f"({text})" if text is not None else "NULL"
