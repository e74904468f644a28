"""Change data files for the change data feed (`delta.enableChangeDataFeed=true`), written by DML.

A commit that rewrites part of a file (DELETE, UPDATE, MERGE, replaceWhere) must say which rows
changed: readers of the feed take a commit's `cdc` files as its whole feed when it has any. So such an
operation also writes the changed rows, with `_change_type`:

    DELETE        the deleted rows                                   delete
    UPDATE        each updated row before and after                  update_preimage / update_postimage
    MERGE         updated rows (pre / post), deleted rows, inserted  ... / delete / insert
    replaceWhere  the rows replaced, and the rows written            delete / insert

with Spark (same staging and move as data files: `stage`), partitioned like the table, under
`_change_data/` (which readers of the table and our vacuum's live-file rules ignore; vacuum deletes
change files past the retention). Commits that only add or only remove whole files need none: the
feed is inferred from their adds and removes. Nothing is written when the feed is off.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from airflow_txnlog.engine import AddCDCFile, Table
from airflow_txnlog.engine.spi import change_data_feed
from airflow_txnlog.spark.context import TableContext
from airflow_txnlog.spark.write.stage import write_files

CHANGE_TYPE = "_change_type"
CHANGE_DATA_DIR = "_change_data"


def enabled(ctx: TableContext) -> bool:
    return change_data_feed(ctx.properties)


def tagged(df: DataFrame, ctx: TableContext, kind: str) -> DataFrame:
    """`df` (the table's columns) with `_change_type` = `kind`."""
    return df.select(*[F.col(f"`{n}`") for n in ctx.schema.names], F.lit(kind).alias(CHANGE_TYPE))


def write_changes(ctx: TableContext, table: Table, changes: DataFrame, *, what: str) -> list[AddCDCFile]:
    """Write `changes` (the table's columns + `_change_type`) as change data files; their actions."""
    written = write_files(
        ctx, table, changes, data_change=False, what=f"{what} (change data)", folder=CHANGE_DATA_DIR
    )
    return [AddCDCFile(path=a.path, partition_values=a.partition_values, size=a.size) for a in written]
