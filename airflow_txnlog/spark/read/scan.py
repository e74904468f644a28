"""Reading a set of the table's files as one Spark DataFrame (the read side of every operation).

    files (AddFile list, from a snapshot or a transaction's `read_files`)
      -> spark.read.schema(<data columns>).parquet(<file URIs>)        one scan, no listing of folders
      -> + partition columns: broadcast join on the file's path with a small table
           (file URI, typed partition values) built on the driver from the log
      -> table columns in schema order (+ `_txnlog_file` / `_txnlog_row` on request)

Partition values always come from the log, never from folder names (files written by other engines
may live anywhere). The join key is Spark's `_metadata.file_path`, percent-decoded inside Spark (it
reports URI form: `%` -> `%25`, space -> `%20`); a row whose file is not found in the table raises
inside the job instead of being dropped. Columns a file lacks (added later by schema evolution) read
as NULL. Rows a file's deletion vector deletes are dropped by a broadcast anti join on (file,
`_metadata.row_index`) with the deleted positions, read on the driver from the log's DV
descriptors (`Snapshot.deleted_rows`), under a filter no predicate is pushed through (`_barrier`), so a
caller's filter never sees a deleted row. `_txnlog_file` carries `_metadata.file_path` as Spark
reports it; `file_key()` maps it back to the table-relative path on the driver.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType

from airflow_txnlog.engine import AddFile, UnsupportedFeatureError
from airflow_txnlog.engine.spi import parse_partition_value, without_mapping
from airflow_txnlog.spark.context import TableContext
from airflow_txnlog.spark.errors import checked
from airflow_txnlog.spark.read.row_ids import row_id_columns, with_row_ids
from airflow_txnlog.spark.schemas import data_schema, to_spark_schema

FILE_COL = "_txnlog_file"
ROW_COL = "_txnlog_row"
_KEY_COL = "_txnlog_key"
_FOUND_COL = "_txnlog_found"
_DELETED_COL = "_txnlog_deleted_row"


def _decoded_path() -> Column:
    # url_decode is form decoding ('+' -> space): protect literal '+' first.
    decoded = F.url_decode(F.regexp_replace(F.col("_metadata.file_path"), "\\+", "%2B"))
    return F.regexp_replace(decoded, "^file:///", "file:/")


def _partition_table(ctx: TableContext, files: Sequence[AddFile]) -> DataFrame:
    fields = [StructField(_KEY_COL, StringType(), False)]
    spark_fields = {f.name: f for f in to_spark_schema(ctx.schema).fields}
    fields += [StructField(c, spark_fields[c].dataType, True) for c in ctx.partition_columns]
    fields.append(StructField(_FOUND_COL, BooleanType(), False))
    rows = []
    for add in files:
        values = [
            parse_partition_value(add.partition_values.get(ctx.physical(c)), ctx.schema.field(c).type)
            for c in ctx.partition_columns
        ]
        rows.append((ctx.uri(add), *values, True))
    return ctx.spark.createDataFrame(rows, StructType(fields))


def _read_data(ctx: TableContext, paths: list[str], hidden: Sequence[str] = ()) -> DataFrame:
    """The data columns of the files, under the table's (logical) names and types (and the `hidden`
    columns of row tracking, null in files that lack them)."""
    extra = [StructField(h, LongType(), True) for h in hidden]
    if ctx.names is None:
        schema = data_schema(ctx.schema, ctx.partition_columns)
        return ctx.spark.read.schema(StructType([*schema.fields, *extra])).parquet(*paths)
    # column mapping: read the physical names, then rename; a cast between structs (also inside
    # arrays and maps) goes by position, so nested physical names become logical ones
    parts = {ctx.physical(c) for c in ctx.partition_columns}
    physical = data_schema(ctx.names.physical, sorted(parts))
    df = ctx.spark.read.schema(StructType([*physical.fields, *extra])).parquet(*paths)
    logical = {f.name: f for f in to_spark_schema(without_mapping(ctx.schema)).fields}  # users' view
    renamed = [
        F.col(f"`{p.name}`").cast(logical[lf.name].dataType).alias(lf.name)
        for lf, p in zip(ctx.schema, ctx.names.physical, strict=True)
        if p.name not in parts
    ]
    return df.select(*renamed, *[F.col(f"`{h}`") for h in hidden], "_metadata")


def _deleted_table(ctx: TableContext, files: Sequence[AddFile]) -> DataFrame | None:
    """(file key, row position) of every row the files' deletion vectors delete; None if none do."""
    with_dv = [f for f in files if f.deletion_vector]
    if not with_dv:
        return None
    if ctx.deleted_rows is None:
        raise UnsupportedFeatureError(
            "files have deletion vectors but this table context cannot read them", feature="deletionVectors"
        )
    keys, positions = [], []
    for f in with_dv:
        rows = ctx.deleted_rows(f)
        positions.append(pa.array(rows, pa.uint64()).cast(pa.int64()))
        keys.append(pa.repeat(pa.scalar(ctx.uri(f)), len(rows)))
    table = pa.table({_KEY_COL: pa.concat_arrays(keys), _DELETED_COL: pa.concat_arrays(positions)})
    return ctx.spark.createDataFrame(table)


def _barrier(df: DataFrame) -> DataFrame:
    """`df` behind a filter Spark's optimizer cannot move a predicate through (its condition is not
    deterministic, though always true: a partition id is never negative). Without it a caller's
    filter on data columns is pushed below the anti join that drops the rows deletion vectors
    delete, and evaluated on those rows too: `100 / id` raised an ANSI division by zero for a
    deleted `id = 0` row. Delta on Spark evaluates its own deleted-row filter first."""
    return df.filter(F.spark_partition_id() >= 0)


def scan(
    ctx: TableContext,
    files: Sequence[AddFile],
    *,
    with_file: bool = False,
    with_row: bool = False,
    row_ids: bool = False,
) -> DataFrame:
    """Rows of `files` with the table's columns (see the module docstring). `row_ids` (a rewrite
    that copies rows, on a table with row tracking enabled): plus each row's stable row id and
    commit version under the table's hidden column names (spark.read.row_ids), which `write_files`
    then writes into the new files."""
    extra = []
    if with_file:
        extra.append(StructField(FILE_COL, StringType(), False))
    if with_row:
        extra.append(StructField(ROW_COL, LongType(), False))
    hidden = row_id_columns(ctx) if row_ids else []
    extra += [StructField(h, LongType(), True) for h in hidden]
    if not files:
        return ctx.empty_df(extra)
    paths = [ctx.uri(f) for f in files]
    df = _read_data(ctx, paths, hidden)
    if with_file:
        df = df.withColumn(FILE_COL, F.col("_metadata.file_path"))
    if with_row:
        df = df.withColumn(ROW_COL, F.col("_metadata.row_index"))
    deleted = _deleted_table(ctx, files)
    if ctx.partition_columns or deleted is not None or hidden:
        df = df.withColumn(_KEY_COL, _decoded_path())
    if deleted is not None:  # (positions first: a join drops `_metadata`)
        df = df.withColumn(_DELETED_COL, F.col("_metadata.row_index"))
    if hidden:  # (before any join too: the row's physical position comes from the file's metadata)
        df = with_row_ids(ctx, df, files, key=_KEY_COL, hidden=hidden)
    if deleted is not None:  # deletion vectors: drop the rows at their (file, position)
        df = _barrier(df.join(F.broadcast(deleted), on=[_KEY_COL, _DELETED_COL], how="left_anti"))
    if ctx.partition_columns:
        df = df.join(F.broadcast(_partition_table(ctx, files)), on=_KEY_COL, how="left")
        missing = F.concat(F.lit(checked("file not in the table: ")), F.col(_KEY_COL))
        check = F.when(F.col(_FOUND_COL).isNull(), F.raise_error(missing))
        first = ctx.partition_columns[0]
        df = df.withColumn(first, F.coalesce(check.cast(df.schema[first].dataType), F.col(first)))
    names = list(ctx.schema.names) + [f.name for f in extra]
    return df.select(*[F.col(f"`{n}`") for n in names])
