"""Spark writes the data files straight to their final places, the driver commits.

    1. `write_files` guards the DataFrame (already conformed to the table's columns) with the
       table's CHECK constraints and invariants (`features.rules.guard`: a breaking row fails the
       job) and hands it to the `txnlog` data source in its files-only mode: on the executors the
       engine's writer turns the Arrow batches into parquet files at `col=value/part-....parquet`
       (stats from the batches; on a column-mapped table physical names and field ids), exactly as
       `df.write.format("txnlog")` does (`source.writer`: one implementation of writing files). Its
       driver-side commit step does not commit: it writes the new files' `add` actions to a manifest
       `_txnlog_staging/<uuid>.json`, which `write_files` reads back and deletes (with the folder,
       once no other writer's manifest is in it). No listing, no footer reads, no moves or copies.
    2. The operation commits adds (and removes) through one engine transaction (`commit`).

Failure anywhere before the commit leaves the table at its old version: a failing task deletes the
files it wrote, the data source's abort deletes the others (best effort: leftovers are unreferenced
orphans that vacuum reclaims). A commit that fails with a conflict deletes its new files too; an I/O
error during the commit may hide a commit that landed, so then the files are kept. A failed job is
read back into our error by `errors.rule_failure` / `errors.spark_failure`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import uuid
from collections.abc import Iterator, Mapping, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from airflow_txnlog.engine import (
    AddCDCFile,
    AddFile,
    CommitConflictError,
    CommitRetriesExceededError,
    Table,
    Transaction,
    schema_to_json,
)
from airflow_txnlog.engine.spi import char_varchar_rewrites
from airflow_txnlog.spark.context import TableContext
from airflow_txnlog.spark.errors import rule_failure, spark_failure
from airflow_txnlog.spark.features.rules import guard
from airflow_txnlog.spark.schemas import to_arrow_schema
from airflow_txnlog.spark.source.data_source import register

STAGING_DIR = "_txnlog_staging"
SESSION_TZ_CONF = "spark.sql.session.timeZone"


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


def _plan(ctx: TableContext, df: DataFrame, folder: str | None, one_file: bool) -> str:
    extra = [f for f in df.schema.fields if f.name not in ctx.schema.names]
    return json.dumps(
        {
            "schema": schema_to_json(ctx.schema),
            "partitionColumns": list(ctx.partition_columns),
            "configuration": dict(ctx.properties),
            "prefix": f"{folder}/" if folder else "",
            "extra": schema_to_json(to_arrow_schema(StructType(extra))) if extra else None,
            "oneFilePerTask": one_file,
        }
    )


def _char_varchar(df: DataFrame, schema: pa.Schema) -> DataFrame:
    """`df` with CHAR / VARCHAR values trimmed and padded before the rules see them (Delta on Spark
    checks a CHECK constraint on the values as written); a value too long stays, for the writer on
    the executors to refuse (EXCEED_LIMIT_LENGTH)."""
    rewrites = {c: F.expr(sql) for c, sql in char_varchar_rewrites(schema).items() if c in df.columns}
    return df.withColumns(rewrites) if rewrites else df


def write_files(
    ctx: TableContext,
    table: Table,
    df: DataFrame,
    *,
    data_change: bool = True,
    what: str = "the write",
    conf: Mapping[str, str] | None = None,
    folder: str | None = None,
    one_file_per_task: bool = False,
) -> list[AddFile]:
    """Write `df` (the table's columns, conformed) as data files; return the adds, not committed.

    `conf`: extra Spark SQL settings for the duration of the write job. `folder`: a folder of the
    table root to put the files in (change data files go to `_change_data/`). `one_file_per_task`:
    each task's rows become exactly one file, streamed (a rewrite: spark.source.one_file), instead of
    files of `maxRowsPerFile` rows.
    """
    manifest = f"{STAGING_DIR}/{uuid.uuid4().hex}.json"
    # rows this write changes or adds must keep the table's rules; compaction and change data
    # files copy rows that already did (or are no table rows at all)
    rules = ctx.rules if data_change and folder is None else ()
    df = guard(_char_varchar(df, ctx.schema) if rules else df, rules)
    register(ctx.spark)
    writer = (
        df.write.format("txnlog")
        .mode("append")
        .option("__txnlog_plan", _plan(ctx, df, folder, one_file_per_task))
        .option("__txnlog_manifest", manifest)
    )
    if table.storage.options:
        writer = writer.option("storageOptions", json.dumps(dict(table.storage.options), default=str))
    try:
        with session_conf(ctx.spark, conf or {}):
            writer.save(table.uri)
    except Exception as exc:  # pyspark raises many types (captured JVM errors, Py4J, Connect)
        raise (rule_failure(exc, rules, what) or spark_failure(exc, what)) from exc
    try:
        lines = table.storage.read(manifest).splitlines()
    finally:
        with contextlib.suppress(OSError):
            table.storage.delete(manifest)
            table.storage.remove_empty_dir(STAGING_DIR)  # no empty folder left in the table root
    adds = [AddFile.from_wire(json.loads(line)["add"]) for line in lines if line.strip()]
    return adds if data_change else [dataclasses.replace(a, data_change=False) for a in adds]


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
        txn.rows_checked()  # (write_files guarded every new row; a DV-only rewrite keeps a subset)
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
