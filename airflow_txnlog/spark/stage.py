"""Spark writes the data files, the driver turns them into `add` actions and commits.

    1. Spark writes the DataFrame as parquet into a fresh staging folder inside the table root,
       `_txnlog_staging/<uuid>/` (partitioned by the table's partition columns, so the folders below
       it are `col=escaped(value)/` as Spark names them). `_`-prefixed folders are ignored by Delta
       readers and vacuum, and the unique folder tells exactly which files this job wrote, even with
       other writers busy in the same table.
    2. The driver lists the staging folder (fsspec), reads each new file's parquet footer (footers
       only: numRecords, min/max, null counts -> `footers.footer_stats`) and derives its partition
       values from the folders Spark created (`partitions.partition_values_from_dir`).
    3. Each file is moved to its final place `col=value/part-...parquet` under the table root (a
       rename on local disks, HDFS and ABFS; a server-side copy on S3 / GCS). File names carry the
       Spark job's UUID, so they never collide. Empty files are dropped.
    4. The operation commits adds (and removes) through one engine transaction.

On a column-mapped table the DataFrame is first renamed to the physical names, with parquet field
ids (`schemas.to_physical`), and everything after works in physical names (`TableContext.as_files`):
folders, partition values and stats, as Delta writes them.

Failure anywhere before the commit leaves the table at its old version: the staging folder is
removed, files already moved are deleted (best effort: leftovers are unreferenced orphans that
vacuum reclaims). A commit that fails with a conflict deletes its new files too; an I/O error during
the commit may hide a commit that landed, so then the files are kept.

Timestamps are written as TIMESTAMP_MICROS (INT96 has no footer statistics): the session setting
`spark.sql.parquet.outputTimestampType` is set for the duration of the write and restored after.
"""

from __future__ import annotations

import contextlib
import posixpath
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession

from airflow_txnlog.engine import (
    AddCDCFile,
    AddFile,
    CommitConflictError,
    CommitRetriesExceededError,
    LeafPath,
    Table,
    Transaction,
    num_indexed_cols,
    stats_columns,
)
from airflow_txnlog.spark.errors import ConstraintViolationError, SparkJobError
from airflow_txnlog.spark.footers import footer_stats
from airflow_txnlog.spark.partitions import partition_values_from_dir
from airflow_txnlog.spark.scan import TableContext
from airflow_txnlog.spark.schemas import CHECK_MARKER, to_physical

STAGING_DIR = "_txnlog_staging"
TIMESTAMP_TYPE_CONF = "spark.sql.parquet.outputTimestampType"
SESSION_TZ_CONF = "spark.sql.session.timeZone"
_THREADS = 8


@contextlib.contextmanager
def session_conf(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """Set Spark SQL settings for the duration of a block, then restore the previous values."""
    previous = {k: spark.conf.get(k, None) for k in settings}
    for k, v in settings.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, old in previous.items():
            if old is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, old)


def spark_failure(exc: Exception, what: str) -> Exception:
    """The error to raise for a failed Spark job (a check of ours, or anything else)."""
    text = str(exc)
    if CHECK_MARKER in text:
        detail = text.split(CHECK_MARKER, 1)[1].strip().splitlines()[0].split(" SQLSTATE:")[0]
        return ConstraintViolationError(f"{what} failed, nothing was committed: {detail}")
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return SparkJobError(f"the Spark job for {what} failed, the table is unchanged: {first}")


def write_files(
    ctx: TableContext,
    table: Table,
    df: DataFrame,
    *,
    data_change: bool = True,
    what: str = "the write",
    conf: Mapping[str, str] | None = None,
    folder: str | None = None,
) -> list[AddFile]:
    """Write `df` (already conformed to the table's columns) with Spark; return the adds, not committed.

    `conf`: extra Spark SQL settings for the duration of the write job. `folder`: a folder of the
    table root to put the files in (change data files go to `_change_data/`).
    """
    chosen = stats_columns(ctx.properties)
    if ctx.names is not None:  # column mapping: physical names and field ids in the files and the log
        chosen = None if chosen is None else [ctx.names.physical_path(p) for p in chosen]
        df, ctx = to_physical(df, ctx.names), ctx.as_files()
    staging_rel = f"{STAGING_DIR}/{uuid.uuid4().hex}"
    storage = table.storage
    staging_fs = storage.full_path(staging_rel)
    try:
        _spark_write(ctx, df, f"{ctx.root}/{staging_rel}", what, conf or {})
        return _publish(ctx, table, staging_fs, data_change, folder, stats_cols=chosen)
    finally:
        with contextlib.suppress(OSError):
            if storage.fs.exists(staging_fs):
                storage.fs.rm(staging_fs, recursive=True)


def _spark_write(ctx: TableContext, df: DataFrame, target: str, what: str, conf: Mapping[str, str]) -> None:
    writer = df.write.mode("append").option("compression", "snappy")
    if ctx.partition_columns:
        writer = writer.partitionBy(*ctx.partition_columns)
    try:
        with session_conf(ctx.spark, {TIMESTAMP_TYPE_CONF: "TIMESTAMP_MICROS", **conf}):
            writer.parquet(target)
    except Exception as exc:  # pyspark raises many types (captured JVM errors, Py4J, Connect)
        raise spark_failure(exc, what) from exc


def _staged(fs: Any, staging_fs: str) -> list[tuple[str, int]]:
    """(path relative to the staging folder, size) of each data file Spark left there."""
    if not fs.exists(staging_fs):
        return []
    out = []
    for path, info in sorted(fs.find(staging_fs, detail=True).items()):
        rel = posixpath.relpath(path, staging_fs)
        name = posixpath.basename(rel)
        if name.startswith(("_", ".")) or rel.startswith("_") or not name.endswith(".parquet"):
            continue
        out.append((rel, int(info["size"])))
    return out


def _publish(
    ctx: TableContext,
    table: Table,
    staging_fs: str,
    data_change: bool,
    folder: str | None,
    *,
    stats_cols: list[LeafPath] | None,
) -> list[AddFile]:
    storage = table.storage
    staged = _staged(storage.fs, staging_fs)
    session_tz = str(ctx.spark.conf.get(SESSION_TZ_CONF, "UTC") or "UTC")
    file_schema = pa.schema([f for f in ctx.schema if f.name not in ctx.partition_columns])
    n_cols = num_indexed_cols(ctx.properties)
    moved: list[AddFile] = []

    def one(item: tuple[str, int]) -> AddFile | None:
        rel, size = item
        src = f"{staging_fs}/{rel}"
        with storage.fs.open(src, "rb") as fh:
            md = pq.ParquetFile(fh).metadata
        if md.num_rows == 0:
            return None
        parent = posixpath.dirname(rel)
        add = AddFile(
            path=f"{folder}/{rel}" if folder else rel,
            partition_values=partition_values_from_dir(parent, ctx.schema, ctx.partition_columns, session_tz),
            size=size,
            modification_time=int(time.time() * 1000),
            data_change=data_change,
            stats=footer_stats(md, file_schema, num_indexed_cols=n_cols, stats_columns=stats_cols),
        )
        dst = storage.full_path(add.path)
        storage.fs.makedirs(posixpath.dirname(dst), exist_ok=True)
        storage.fs.mv(src, dst)
        moved.append(add)
        return add

    try:
        with ThreadPoolExecutor(max_workers=_THREADS) as pool:
            results = list(pool.map(one, staged))
    except BaseException:
        delete_files(table, moved)
        raise
    return [a for a in results if a is not None]


def delete_files(table: Table, adds: Sequence[AddFile | AddCDCFile]) -> None:
    """Best-effort removal of files this process wrote but did not commit."""
    for a in adds:
        with contextlib.suppress(OSError):
            table.storage.delete(a.path)


def commit(
    txn: Transaction,
    table: Table,
    *,
    adds: Sequence[AddFile],
    removes: Sequence[AddFile],
    metrics: Mapping[str, int],
    data_change: bool = True,
    cdc: Sequence[AddCDCFile] = (),
) -> int:
    """Stage removes + adds (+ change data files) on `txn` and commit; on a certain failure delete the
    new files."""
    try:
        for r in removes:
            txn.remove(r, data_change=data_change)
        for a in adds:
            txn.add(a)
        for c in cdc:
            txn.add_cdc(c)
        return txn.commit(metrics=metrics)
    except BaseException as exc:
        # Only when the commit certainly did not happen: an I/O error during the put may hide a
        # commit that landed, and deleting its files would corrupt that version.
        if txn.attempts == 0 or isinstance(exc, CommitConflictError | CommitRetriesExceededError):
            # (an add of a path this commit also removes is that file with a new deletion vector:
            # the file is live, never ours to delete; its orphan DV file is left to vacuum)
            kept = {r.path for r in removes}
            delete_files(table, [*(a for a in adds if a.path not in kept), *cdc])
        raise
