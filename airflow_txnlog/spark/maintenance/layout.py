"""OPTIMIZE with a layout on Spark: Z-order (`zorder_by`) and liquid clustering, planned by the
engine (`plan_layout`: which files, which key, how many output files per partition), sorted by Spark.

    per group (one partition's files):
        cuts   a seeded sample (about 1M rows) of the key columns collected to the driver, cut into
               equally frequent ranges per column (`layout_cuts`)
        key    a `mapInArrow` adds each row's curve key (`layout_keys`, the engine's code, run on the
               executors with the driver's cut points: keys do not depend on the batch)
        order  `repartitionByRange(outputs, key)` then `sortWithinPartitions(key)`: one task per
               output file, each a contiguous stretch of the curve, rows in curve order
    all groups are unioned (one partition per output file kept) and written in one job; the commit
    removes the inputs and adds the outputs with dataChange=false, clusteringProvider=liquid on a
    clustering run, and Delta's OPTIMIZE parameters (predicate, zOrderBy, clusterBy, auto, isFull).

The key is unsigned 64-bit; Spark has signed longs, so its top bit is flipped (x ^ 2**63 as int64
sorts as x does unsigned).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from functools import reduce

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.types import LongType, StructField, StructType

from airflow_txnlog.engine import AddFile, LayoutPlan, Table, Transaction
from airflow_txnlog.engine.spi import layout_bits, layout_cuts, layout_keys
from airflow_txnlog.spark.context import TableContext, TableHandle
from airflow_txnlog.spark.read.scan import scan
from airflow_txnlog.spark.write.stage import write_files

KEY = "__txnlog_layout_key"
SAMPLE_ROWS = 1_000_000
# one task per output file: a union of range-partitioned children keeps their partitions
_KEEP_PARTITIONS = {"spark.sql.unionOutputPartitioning": "false"}


def _cut_points(df: DataFrame, columns: Sequence[str], rows: int) -> list[pa.Array]:
    fraction = min(1.0, SAMPLE_ROWS / max(rows, 1))
    sample = df.select(*columns)
    if fraction < 1.0:
        sample = sample.sample(fraction=fraction, seed=0)
    got = sample.toArrow()
    bits = layout_bits(len(columns))
    return [layout_cuts(got.column(c), bits) for c in columns]


def keyed(df: DataFrame, columns: Sequence[str], curve: str, cuts: list[pa.Array]) -> DataFrame:
    """`df` with the curve key of each row as the last column, KEY (a signed long, see above)."""
    names = list(columns)

    def add_key(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            keys = layout_keys(pa.Table.from_batches([batch]), names, curve, cuts, signed=True)
            signed = pa.array(keys)
            yield pa.RecordBatch.from_arrays([*batch.columns, signed], names=[*batch.schema.names, KEY])

    schema = StructType([*df.schema.fields, StructField(KEY, LongType(), False)])
    return df.mapInArrow(add_key, schema)


def ordered(
    ctx: TableContext, files: Sequence[AddFile], outputs: int, columns: Sequence[str], curve: str | None
) -> DataFrame:
    """The rows of `files` (row ids kept) in `outputs` partitions: with a curve, contiguous stretches
    of it, each sorted by its key; without one, as read (one partition: one task, one file)."""
    df = scan(ctx, list(files), row_ids=True)  # (row tracking: every row keeps its id)
    if curve is None:
        return df.coalesce(1) if outputs == 1 else df.repartition(outputs)
    rows = sum(f.num_records or 0 for f in files)
    with_key = keyed(df, columns, curve, _cut_points(df, columns, rows))
    return with_key.repartitionByRange(outputs, KEY).sortWithinPartitions(KEY).drop(KEY)


def write_groups(ctx: TableContext, table: Table, parts: Sequence[DataFrame]) -> list[AddFile]:
    """Each part (one Spark partition per output file) written in one job; the adds, not committed."""
    df = reduce(DataFrame.unionAll, parts)
    return write_files(
        ctx, table, df, data_change=False, what="OPTIMIZE", conf=_KEEP_PARTITIONS, one_file_per_task=True
    )


def rewrite(h: TableHandle, txn: Transaction, plan: LayoutPlan) -> list[AddFile]:
    """The plan's groups written in curve order (adds not committed; clusteringProvider set)."""
    if not plan.groups:
        return []
    ctx = h.context(txn.snapshot)
    parts = [
        ordered(ctx, g, n, plan.columns, plan.curve) for g, n in zip(plan.groups, plan.outputs, strict=True)
    ]
    adds = write_groups(ctx, h.table, parts)
    return [dataclasses.replace(a, clustering_provider=plan.provider) for a in adds]
