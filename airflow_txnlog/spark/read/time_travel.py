"""Reading the table as it was: which snapshot `SparkTable.to_df` reads, and its rows as a DataFrame.

    snapshot_of(table, ...)   the latest version; or `version`; or as of `timestamp` (the latest
                              version committed at or before it, `Table.snapshot`); or the version
                              published on a channel (`published=True`: the default channel; a str:
                              that channel; `Table.published_snapshot`); or the table's version in
                              a multi-table `release` (a `Release` of `engine.Releases`:
                              `Table.snapshot(release=)`). One of them at most.
    rows(ctx, snap, ...)      its rows (`scan`: partition columns included, in schema order); with
                              `row_tracking` plus `_row_id` and `_row_commit_version`, each row's
                              stable id and commit version (`row_ids`; PROTOCOL.md "Row Tracking")

Nothing is read on the driver but the log: the rows stay a lazy Spark DataFrame.
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import DataFrame

from airflow_txnlog.engine import DEFAULT_CHANNEL, InvalidArgumentError, Release, Snapshot, Table
from airflow_txnlog.spark.context import TableContext
from airflow_txnlog.spark.read.row_ids import ROW_COMMIT_VERSION, ROW_ID, row_id_columns
from airflow_txnlog.spark.read.scan import scan


def snapshot_of(
    table: Table,
    *,
    version: int | None = None,
    timestamp: dt.datetime | str | int | None = None,
    published: bool | str = False,
    release: Release | None = None,
) -> Snapshot:
    """The snapshot to read (see the module docstring)."""
    if release is not None:
        if version is not None or timestamp is not None or published is not False:
            raise InvalidArgumentError(
                "give one of version, timestamp, published or release, not several (a release names "
                "the version itself)"
            )
        if isinstance(release, str):
            raise InvalidArgumentError(
                f"release must be a Release (Releases.open({release!r}).current(), or .get(sequence)), "
                "not a release log's URI (the txnlog data source's `release` option takes one)"
            )
        return table.snapshot(release=release)  # (InvalidArgumentError for anything but a Release)
    if published is False:
        return table.snapshot(version=version, timestamp=timestamp)
    if version is not None or timestamp is not None:
        raise InvalidArgumentError("give one of version, timestamp or published, not several")
    if published is not True and (not isinstance(published, str) or not published):
        raise InvalidArgumentError(f"published must be True or a channel name; got {published!r}")
    return table.published_snapshot(DEFAULT_CHANNEL if published is True else published)


def rows(ctx: TableContext, snap: Snapshot, *, row_tracking: bool = False) -> DataFrame:
    """The rows of `snap` (with `row_tracking`: plus each row's id and commit version)."""
    if not row_tracking:
        return scan(ctx, snap.files())
    hidden = row_id_columns(ctx)
    if not hidden:
        raise InvalidArgumentError(
            "row ids need row tracking enabled on the table (delta.enableRowTracking=true)"
        )
    df = scan(ctx, snap.files(), row_ids=True)
    return df.withColumnsRenamed(dict(zip(hidden, (ROW_ID, ROW_COMMIT_VERSION), strict=True)))
