"""`SparkTable`: a table of the engine, with Spark as its data plane.

Every operation follows one shape: plan on the driver from the log (an engine snapshot or
transaction), move data with Spark (read, filter, join, write parquet), commit on the driver (one
small atomic log write through `Table.transaction`). Spark never touches `_delta_log/`; the engine
never reads data rows here. Works with any `SparkSession` (classic or Spark Connect, e.g. from the
apache-spark provider's `spark` / `spark_connect` connections): only the DataFrame API and
`spark.conf` are used, never `sparkContext` or the JVM gateway.

Operations and their modules: `write` (dml/write.py), `to_df` (read/time_travel.py over
read/scan.py), `delete` (dml/delete.py), `update` (dml/update.py), `merge` (dml/merge.py),
`optimize` (maintenance/optimize.py), `add_constraint` (features/rules.py). Their arguments are
checked before any Spark job (`_arguments.py`); the DML ones share their commit-or-nothing tail
(`dml/_dml.py`), and a failed Spark job becomes our error in `errors.py`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from airflow_txnlog.engine import (
    IdentityColumn,
    InvalidArgumentError,
    Release,
    Snapshot,
    Table,
    TxnLogError,
    WriteMode,
)
from airflow_txnlog.engine.spi import RowRule
from airflow_txnlog.spark import _arguments as check
from airflow_txnlog.spark.context import TableHandle
from airflow_txnlog.spark.dml import delete as _delete
from airflow_txnlog.spark.dml import update as _update
from airflow_txnlog.spark.dml import write as _write
from airflow_txnlog.spark.dml.merge import MergeBuilder
from airflow_txnlog.spark.dml.merge_clauses import MergeSpec
from airflow_txnlog.spark.dml.results import DmlResult, WriteResult
from airflow_txnlog.spark.errors import spark_failure
from airflow_txnlog.spark.features.rules import rows_breaking
from airflow_txnlog.spark.maintenance import optimize as _optimize
from airflow_txnlog.spark.maintenance import planned as _planned
from airflow_txnlog.spark.read.scan import scan
from airflow_txnlog.spark.read.time_travel import rows, snapshot_of
from airflow_txnlog.spark.schemas import to_arrow_schema
from airflow_txnlog.spark.source.workers import check_workers
from airflow_txnlog.spark.uris import to_hadoop_uri


class SparkTable:
    """A Delta table read and changed through PySpark, committed by the engine.

    :param spark: any SparkSession (classic or Connect) whose cluster can reach the table's storage.
    :param uri: the table as fsspec names it (local path, `s3://`, `gs://`, `abfss://`, `file://`).
    :param storage_options: fsspec options of the table (the log, and the files the executors write
        through the `txnlog` data source: they travel with the tasks).
    :param scheme_map: fsspec -> Hadoop scheme overrides (default `uris.DEFAULT_SCHEME_MAP`:
        `s3` -> `s3a`; `gs`, `abfss` unchanged; local paths -> `file:`).
    :param table: an already open engine `Table` for `uri` (optional).
    """

    def __init__(
        self,
        spark: SparkSession,
        uri: str,
        *,
        storage_options: dict[str, Any] | None = None,
        scheme_map: Mapping[str, str] | None = None,
        table: Table | None = None,
    ) -> None:
        self.spark = spark
        self.scheme_map = check.scheme_map(scheme_map)
        check_workers(spark)  # a local session whose workers lack the package: warned before any job
        if table is None:
            table = Table.open(uri, storage_options=check.storage_options(storage_options))
        elif not isinstance(table, Table):
            raise InvalidArgumentError(f"table must be an engine Table or None, got {type(table).__name__}")
        self.table = table
        self.spark_uri = to_hadoop_uri(self.table.uri, self.scheme_map)
        self._handle = TableHandle(spark, self.table, self.spark_uri, self.scheme_map)

    @classmethod
    def create(
        cls,
        spark: SparkSession,
        uri: str,
        schema: pa.Schema | StructType | DataFrame,
        *,
        partition_by: Sequence[str] = (),
        properties: Mapping[str, str] | None = None,
        storage_options: dict[str, Any] | None = None,
        scheme_map: Mapping[str, str] | None = None,
        name: str | None = None,
        description: str | None = None,
        defer: bool = False,
        generated_columns: Mapping[str, str] | None = None,
        identity_columns: Mapping[str, IdentityColumn] | None = None,
        cluster_by: Sequence[str] | None = None,
    ) -> SparkTable:
        """Create an empty table (version 0) with `schema` (Arrow, Spark, or a DataFrame's schema;
        a DataFrame's rows are not written: call `write` next). TableExistsError if one exists.
        With `defer=True` nothing is written until the first commit (e.g. that `write`), which is
        then version 0: one commit, as Delta's first write to a new path (`Table.create`).
        `generated_columns` ({column: Spark SQL expression}): generated columns, which every write
        fills (Spark SQL) where the data leaves them out and checks where it does not.
        `identity_columns` ({column: IdentityColumn(start, step, always)}): identity columns, which
        `write` and MERGE inserts number (`spark.features.identity`). `cluster_by`: clustering keys (a
        clustered table; never with partition_by)."""
        if isinstance(schema, DataFrame):
            schema = schema.schema
        arrow = to_arrow_schema(schema) if isinstance(schema, StructType) else schema
        if not isinstance(arrow, pa.Schema):
            raise InvalidArgumentError("schema must be a pyarrow.Schema, a Spark StructType or a DataFrame")
        to_hadoop_uri(uri, scheme_map)  # refuse URIs Spark cannot reach before creating anything
        accepted = "a mapping {property: value} such as {'delta.appendOnly': 'true'}, or None"
        table = Table.create(
            uri,
            schema=arrow,
            partition_by=check.column_names("create: partition_by", partition_by),
            properties=check.string_keyed("create: properties", properties, accepted=accepted),
            storage_options=check.storage_options(storage_options),
            name=name,
            description=description,
            defer=defer,
            generated_columns=generated_columns,
            identity_columns=identity_columns,
            cluster_by=cluster_by,
            spark_expressions=True,  # (Spark computes what the engine cannot, on Spark's writes)
        )
        return cls(spark, uri, scheme_map=scheme_map, table=table)

    @property
    def uri(self) -> str:
        return self.table.uri

    def version(self) -> int:
        """The latest committed version."""
        return self.table.latest_version()

    # ------------------------------------------------------------------ read
    def to_df(
        self,
        *,
        version: int | None = None,
        timestamp: dt.datetime | str | int | None = None,
        published: bool | str = False,
        release: Release | None = None,
        row_tracking: bool = False,
    ) -> DataFrame:
        """The rows of the latest version, or of `version`, or as of `timestamp`, or of the version
        published on a channel (`published=True`: the default channel; a str: that channel; see
        `Table.publish`), or of the table's version in a multi-table `release` (a `Release`:
        `Releases.open(log).current()`; ReleaseError when the table is not in it). One of them at
        most. Partition columns included, in schema order. `row_tracking=True` (a table
        with row tracking enabled): plus `_row_id` and `_row_commit_version`, each row's stable
        id and commit version (PROTOCOL.md "Row Tracking")."""
        snap = snapshot_of(
            self.table, version=version, timestamp=timestamp, published=published, release=release
        )
        return rows(self._handle.context(snap), snap, row_tracking=row_tracking)

    def changes(self, start_version: int, end_version: int | None = None) -> DataFrame:
        """The change data feed of versions `start_version`..`end_version` (latest if None): the rows
        that changed, with `_change_type`, `_commit_version` and `_commit_timestamp`
        (`Table.changes`; read by the engine on the driver, then handed to Spark as Arrow)."""
        return self.spark.createDataFrame(self.table.changes(start_version, end_version))

    # ------------------------------------------------------------------ write
    def write(
        self,
        df: DataFrame,
        *,
        mode: WriteMode = "append",
        partition_by: Sequence[str] | None = None,
        replace_where: str | None = None,
        merge_schema: bool = False,
        txn: tuple[str, int] | None = None,
        metrics: Mapping[str, int] | None = None,
    ) -> WriteResult:
        """Append or overwrite `df` (see `airflow_txnlog.spark.dml.write`); `metrics` are added to the
        commit's operationMetrics (e.g. what expectations dropped)."""
        return _write.write(
            self._handle,
            df,
            mode=mode,
            partition_by=partition_by,
            replace_where=replace_where,
            merge_schema=merge_schema,
            txn=txn,
            metrics=check.metrics(metrics),
        )

    # ------------------------------------------------------------------ DML
    def delete(self, predicate: str | None = None) -> DmlResult:
        """Delete rows where `predicate` (Spark SQL) is TRUE; all rows when None."""
        return _delete.delete(self._handle, predicate)

    def update(self, predicate: str | None, set: Mapping[str, str]) -> DmlResult:
        """Set columns (`{"col": "<SQL expression>"}`) on rows where `predicate` is TRUE."""
        return _update.update(self._handle, predicate, set)

    def merge(
        self, source_df: DataFrame, on: str, *, source_alias: str = "s", target_alias: str = "t"
    ) -> MergeBuilder:
        """Start a MERGE of `source_df` into this table; add WHEN clauses, then `.execute()`."""
        check.dataframe("merge: source_df", source_df)
        check.sql_text("merge: on", on)
        check.alias("merge: source_alias", source_alias)
        check.alias("merge: target_alias", target_alias)
        if source_alias == target_alias:
            raise InvalidArgumentError("source_alias and target_alias must differ")
        return MergeBuilder(self._handle, MergeSpec(source_df, on, source_alias, target_alias))

    # ------------------------------------------------------------------ constraints
    def add_constraint(self, name: str, expression: str) -> int:
        """ALTER TABLE ADD CONSTRAINT (`Table.add_constraint`), the existing rows checked by a Spark
        job (so any Spark SQL boolean expression works); the new version."""

        def check(snap: Snapshot, rule: RowRule) -> tuple[int, dict[str, Any] | None]:
            try:
                return rows_breaking(scan(self._handle.context(snap), snap.files()), rule)
            except TxnLogError:
                raise
            except Exception as exc:  # pyspark raises many types (captured JVM errors, Py4J, Connect)
                raise spark_failure(exc, "ADD CONSTRAINT") from exc

        return self.table.add_constraint(name, expression, check=check)

    def drop_constraint(self, name: str, *, if_exists: bool = False) -> int | None:
        """ALTER TABLE DROP CONSTRAINT (`Table.drop_constraint`); the new version (None: absent and
        `if_exists`)."""
        return self.table.drop_constraint(name, if_exists=if_exists)

    def optimize(
        self,
        *,
        where: str | None = None,
        target_file_size: int | None = None,
        zorder_by: Sequence[str] | None = None,
        full: bool = False,
    ) -> DmlResult:
        """OPTIMIZE (dataChange=false): compact small files per partition; with `zorder_by`, Z-order
        each selected partition (Delta's OPTIMIZE ZORDER BY); on a clustered table, cluster the
        unclustered files by the table's keys (`full`: its own clustered files too)."""
        columns = None if zorder_by is None else list(check.column_names("optimize: zorder_by", zorder_by))
        return _optimize.optimize(self._handle, where, target_file_size, columns, full)

    def run_maintenance(self, action: Mapping[str, Any], *, dry_run: bool = True) -> dict[str, Any]:
        """Run one action of a plan (an element of `Table.plan_maintenance().to_dict()["actions"]`)
        as `Table.run_maintenance` does, returning its result dict; a data rewrite (cluster, compact,
        purge_deletion_vectors) has Spark read and write the files and the engine commit exactly the
        planned ones (spark.maintenance.planned). Other kinds run in the engine. A dry run, as the
        engine's, unless `dry_run=False`."""
        return _planned.run_maintenance(self._handle, action, dry_run=dry_run)

    def cluster_by(self, columns: Sequence[str] | None) -> int:
        """ALTER TABLE CLUSTER BY (`Table.cluster_by`): new clustering keys, None to remove them."""
        return self.table.cluster_by(columns)
