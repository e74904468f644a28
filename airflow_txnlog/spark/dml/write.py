"""WRITE: append / overwrite / overwrite with `replace_where`, with schema enforcement and evolution.

    1. idempotency: with `txn=(app_id, version)`, a table whose txn for app_id is >= version already
       holds this write: nothing runs, the version that wrote it is returned (`skipped=True`);
    2. identity columns (if any) numbered (`spark.features.identity`: the rows materialized once, the new
       marks in this commit), then the DataFrame conformed to the table schema (`schemas.conform`,
       which fills generated columns, so one may read an identity column; `merge_schema=True` adds
       new columns and the commit carries the new metaData); a commit lost only to other identity
       writers runs 2-4 again on a fresh transaction;
    3. `replace_where`: every new row must satisfy the predicate -- checked inside the write job
       (`raise_error`), so a violating row fails the job and nothing is committed;
    4. Spark writes the files (`write.stage.write_files`), the driver commits, in one transaction:
         append        adds;
         overwrite     removes every live file (read: the whole table) + adds;
         replace_where removes what the predicate selects, like DELETE: files of matching partitions
                       when it names partition columns only, otherwise the files holding matching
                       rows are rewritten without them (pass 1 finds them, pass 2 rewrites) + adds.
A blind append (nothing read, no txn, no schema change) never conflicts with other writers.
Metrics are Delta's: numFiles, numOutputRows, numOutputBytes, and for overwrites numRemovedFiles,
numRemovedBytes, numDeletedRows / numCopiedRows (replace_where).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from airflow_txnlog.engine import (
    AddCDCFile,
    AddFile,
    ConcurrentTransactionError,
    InvalidArgumentError,
    MetadataChangedError,
    Table,
    Transaction,
    WriteMode,
    schema_from_json,
)
from airflow_txnlog.engine.spi import ColumnNames, check_choice, with_new_fields
from airflow_txnlog.spark._arguments import app_transaction, column_names, dataframe, flag, sql_text
from airflow_txnlog.spark.conditions import check_condition
from airflow_txnlog.spark.context import TableContext, TableHandle
from airflow_txnlog.spark.dml.results import WriteResult
from airflow_txnlog.spark.errors import checked
from airflow_txnlog.spark.features import identity
from airflow_txnlog.spark.read.planning import (
    Case,
    classify,
    is_true,
    matched_files,
    read_candidates,
    select_files,
    total_records,
)
from airflow_txnlog.spark.read.scan import scan
from airflow_txnlog.spark.schemas import conform
from airflow_txnlog.spark.write import change_data
from airflow_txnlog.spark.write.stage import commit, delete_files, write_files


def _done(table: Table, txn: tuple[str, int]) -> int | None:
    app_id, version = txn
    snap = table.snapshot()
    seen = snap.txn_version(app_id)
    if seen is None or seen < version:
        return None
    return table.txn_commit_version(app_id, version) or snap.version


def _check_rows(df: DataFrame, predicate: str) -> DataFrame:
    """`df` whose first column fails the job on a row where `predicate` is not TRUE."""
    first = df.columns[0]
    msg = checked(f"a written row does not satisfy replace_where {predicate!r}")
    guarded = F.when(is_true(predicate), F.col(f"`{first}`")).otherwise(F.raise_error(F.lit(msg)))
    return df.withColumn(first, guarded)


def _replaced(
    h: TableHandle, txn: Transaction, ctx: TableContext, replace_where: str | None, mode: WriteMode
) -> tuple[list[AddFile], list[AddFile], dict[str, int]]:
    """(files removed, files added by a rewrite, metrics) of what an overwrite replaces."""
    if mode == "append":
        return [], [], {}
    plan = classify(replace_where, ctx)
    candidates = read_candidates(txn, plan)
    if plan.case is not Case.DATA:
        deleted = total_records(candidates)
        return candidates, [], ({"numDeletedRows": deleted} if deleted is not None else {})
    counts = matched_files(ctx, candidates, is_true(replace_where))
    touched = select_files(candidates, ctx, counts)
    kept = scan(ctx, touched, row_ids=True).filter(~is_true(replace_where))  # (row ids kept)
    rewritten = write_files(ctx, h.table, kept, what="WRITE (replace_where)") if touched else []
    copied = sum(a.num_records or 0 for a in rewritten)
    return touched, rewritten, {"numDeletedRows": sum(counts.values()), "numCopiedRows": copied}


def _parameters(
    mode: WriteMode, partition_columns: Sequence[str], replace_where: str | None
) -> dict[str, str]:
    params = {"mode": mode.capitalize(), "partitionBy": json.dumps(list(partition_columns))}
    if replace_where is not None:
        params["predicate"] = json.dumps([replace_where])
    return params


def _validate(
    df: DataFrame,
    mode: WriteMode,
    replace_where: str | None,
    merge_schema: bool,
    txn: tuple[str, int] | None,
) -> None:
    """The arguments on their own (the table's partitioning is checked against the snapshot)."""
    dataframe("write: df", df)
    check_choice("write: mode", mode, WriteMode)
    sql_text("write: replace_where", replace_where, none_means="replace every row when overwriting")
    if replace_where is not None and mode != "overwrite":
        raise InvalidArgumentError("replace_where needs mode='overwrite'")
    flag("write: merge_schema", merge_schema)
    if txn is not None:
        app_transaction(txn)


def _check_partitioning(partition_by: Sequence[str] | None, parts: list[str]) -> None:
    if partition_by is None:
        return
    columns = list(column_names("write: partition_by", partition_by))
    if columns != parts:
        raise InvalidArgumentError(
            f"partition_by={columns} differs from the table's partition columns {parts}; "
            "a table's partitioning cannot change"
        )


def write(
    h: TableHandle,
    df: DataFrame,
    *,
    mode: WriteMode,
    partition_by: Sequence[str] | None,
    replace_where: str | None,
    merge_schema: bool,
    txn: tuple[str, int] | None,
    metrics: Mapping[str, int] | None = None,
) -> WriteResult:
    _validate(df, mode, replace_where, merge_schema, txn)
    snap = h.table.snapshot()
    _check_partitioning(partition_by, snap.partition_columns)
    rows = _Rows(df)
    request = _Request(mode, replace_where, merge_schema, txn, dict(metrics or {}))
    return identity.retrying(lambda: _write(h, rows, request))


@dataclasses.dataclass
class _Rows:
    """The DataFrame to write; materialized once when identity columns number it
    (`spark.features.identity`)."""

    df: DataFrame
    stable: bool = False

    def numbered(self, ctx: TableContext) -> tuple[DataFrame, dict[str, int]]:
        if not ctx.identities:
            return self.df, {}
        if not self.stable:
            self.df, self.stable = identity.stable(self.df), True
        return identity.number(ctx, identity.with_columns(ctx, self.df))


@dataclasses.dataclass(frozen=True)
class _Request:
    mode: WriteMode
    replace_where: str | None
    merge_schema: bool
    txn: tuple[str, int] | None
    metrics: dict[str, int]


def _write(h: TableHandle, rows: _Rows, r: _Request) -> WriteResult:
    """One attempt, on a fresh transaction (`Renumber` when it lost to other identity writers)."""
    if r.txn is not None and (done := _done(h.table, r.txn)) is not None:
        return WriteResult(version=done, skipped=True)  # (a retry: another run committed it meanwhile)
    parts = h.table.snapshot().partition_columns
    t = h.table.transaction("WRITE", _parameters(r.mode, parts, r.replace_where))
    try:
        return _write_on(h, t, rows, r)
    except MetadataChangedError as exc:
        identity.check_lost_race(exc, t, h.table)
        raise


def _write_on(h: TableHandle, t: Transaction, rows: _Rows, r: _Request) -> WriteResult:
    ctx = h.context(t.snapshot)
    df, marks = rows.numbered(ctx)
    conformed, evolved = conform(
        df, t.snapshot.schema, merge_schema=r.merge_schema, generated=ctx.generated, defaults=ctx.defaults
    )
    if evolved is not None:  # (new columns of a column-mapped table get ids and physical names)
        meta = with_new_fields(t.snapshot.metadata, evolved)
        t.update_metadata(meta)
        schema = schema_from_json(meta.schema_string)
        ctx = dataclasses.replace(ctx, schema=schema, names=ColumnNames.of(meta))
    t.record_identity_marks(marks)
    if r.txn is not None:
        t.set_app_transaction(*r.txn)
    if r.replace_where is not None:
        check_condition(ctx.empty_df(), r.replace_where, "replace_where predicate")  # before any job
        conformed = _check_rows(conformed, r.replace_where)
    adds = write_files(ctx, h.table, conformed, what="WRITE")
    cdc: list[AddCDCFile] = []
    rewritten: list[AddFile] = []
    try:
        removed, rewritten, extra = _replaced(h, t, ctx, r.replace_where, r.mode)
        if rewritten and r.replace_where is not None and change_data.enabled(ctx):
            cdc = _changes(ctx, h.table, removed, adds, r.replace_where)
    except BaseException:
        delete_files(h.table, [*adds, *rewritten, *cdc])
        raise
    t.rows_preserved()  # (row tracking: the only copied rows, replace_where's kept ones, kept their ids)
    change = _Change(adds, removed, rewritten, extra, evolved is not None, cdc)
    return _commit(h, t, r.txn, change, r.mode, extra=r.metrics)


def _changes(
    ctx: TableContext, table: Table, touched: list[AddFile], adds: list[AddFile], replace_where: str
) -> list[AddCDCFile]:
    """Change data of a replace_where that rewrote part of some files: the rows it replaced
    (`delete`) and every row written (`insert`); the feed of such a commit is its change files."""
    deleted = change_data.tagged(scan(ctx, touched).filter(is_true(replace_where)), ctx, "delete")
    inserted = change_data.tagged(scan(ctx, adds), ctx, "insert")
    return change_data.write_changes(ctx, table, deleted.unionByName(inserted), what="WRITE")


@dataclasses.dataclass(frozen=True)
class _Change:
    adds: list[AddFile]
    removed: list[AddFile]
    rewritten: list[AddFile]
    extra: dict[str, int]
    evolved: bool
    cdc: list[AddCDCFile] = dataclasses.field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.adds or self.removed or self.rewritten or self.evolved)


def _commit(
    h: TableHandle,
    t: Transaction,
    txn: tuple[str, int] | None,
    change: _Change,
    mode: WriteMode,
    *,
    extra: Mapping[str, int],
) -> WriteResult:
    rows = sum(a.num_records or 0 for a in change.adds)
    size = sum(a.size for a in change.adds)
    metrics = {"numFiles": len(change.adds), "numOutputRows": rows, "numOutputBytes": size, **extra}
    if mode == "overwrite":
        metrics.update(
            numRemovedFiles=len(change.removed), numRemovedBytes=sum(f.size for f in change.removed)
        )
        metrics.update(numAddedFiles=len(change.adds) + len(change.rewritten), **change.extra)
    if change.empty and txn is None and t.read_version >= 0:  # (a deferred create commits: the table)
        return WriteResult(None, 0, 0, 0, metrics=metrics)  # an empty append: nothing to commit
    try:
        adds = [*change.adds, *change.rewritten]
        version = commit(t, h.table, adds=adds, removes=change.removed, metrics=metrics, cdc=change.cdc)
    except ConcurrentTransactionError:
        done = _done(h.table, txn) if txn is not None else None
        if done is None:
            raise
        return WriteResult(version=done, skipped=True)  # the same idempotent write won concurrently
    return WriteResult(version, len(change.adds), rows, size, metrics=metrics)
