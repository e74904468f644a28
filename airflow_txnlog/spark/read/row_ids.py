"""Row tracking on Spark: stable row ids and commit versions carried through rewrites.

A table with row tracking enabled (engine `row_tracking`) keeps each row's stable id and commit
version in two hidden parquet columns, named in its configuration. A rewrite that copies rows
(DELETE / UPDATE rewrites, OPTIMIZE, replace_where's kept rows) reads them with `scan(row_ids=True)`:

    id       = coalesce(hidden id column, file's baseRowId + _metadata.row_index)
    version  = coalesce(hidden version column, file's defaultRowCommitVersion)

(the file's two values come from the log, joined by file on a broadcast table), and writes them
back into the same hidden columns of the new files (`write.stage.write_files` passes columns outside the
schema through; the data source writes them without stats). An updated row keeps its id and gets a
null version (`updated_version`): its new file's defaultRowCommitVersion is its commit version, as
PROTOCOL.md says of updated rows. The commit then says `delta.rowTracking.preserved: true`
(`Transaction.rows_preserved`).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from airflow_txnlog.engine import AddFile
from airflow_txnlog.engine.spi import row_tracking
from airflow_txnlog.spark.context import TableContext

ROW_ID, ROW_COMMIT_VERSION = row_tracking.ROW_ID, row_tracking.ROW_COMMIT_VERSION  # to_df's names
_BASE, _VERSION, _POSITION = "_txnlog_base_row_id", "_txnlog_default_version", "_txnlog_position"


def tracked(ctx: TableContext) -> bool:
    """Whether rewrites of this table must keep row ids (row tracking enabled)."""
    return row_tracking.enabled(ctx.properties)


def row_id_columns(ctx: TableContext) -> list[str]:
    """The hidden (id, version) column names, or [] when the table does not track rows."""
    return row_tracking.hidden_columns(ctx.properties) if tracked(ctx) else []


def _file_table(ctx: TableContext, files: Sequence[AddFile], key: str) -> DataFrame:
    schema = StructType(
        [
            StructField(key, StringType(), False),
            StructField(_BASE, LongType()),
            StructField(_VERSION, LongType()),
        ]
    )
    rows = [(ctx.uri(f), f.base_row_id, f.default_row_commit_version) for f in files]
    return ctx.spark.createDataFrame(rows, schema)


def with_row_ids(
    ctx: TableContext, df: DataFrame, files: Sequence[AddFile], *, key: str, hidden: Sequence[str]
) -> DataFrame:
    """`df` (read from `files`, with `_metadata` and the file key `key`) with its rows' stable ids
    and commit versions in the `hidden` columns."""
    id_col, version_col = hidden
    df = df.withColumn(_POSITION, F.col("_metadata.row_index"))
    df = df.join(F.broadcast(_file_table(ctx, files, key)), on=key, how="left")
    fresh = F.col(_BASE) + F.col(_POSITION)
    df = df.withColumn(id_col, F.coalesce(F.col(f"`{id_col}`"), fresh))
    df = df.withColumn(version_col, F.coalesce(F.col(f"`{version_col}`"), F.col(_VERSION)))
    return df.drop(_BASE, _VERSION, _POSITION)


def kept_ids(ctx: TableContext, updated: Column, alias: str | None = None) -> list[Column]:
    """The hidden columns of a rewrite's output rows (UPDATE; MERGE with the target's `alias`): each
    row keeps its stable id; a copied row its commit version too, an `updated` one gets none (its new
    file's version is its commit version); a row without a target row (an insert) has neither."""
    hidden = row_id_columns(ctx)
    if not hidden:
        return []
    id_col, version_col = hidden
    prefix = f"`{alias}`." if alias else ""
    version = F.when(updated, F.lit(None).cast(LongType())).otherwise(F.col(f"{prefix}`{version_col}`"))
    return [F.col(f"{prefix}`{id_col}`").alias(id_col), version.alias(version_col)]
