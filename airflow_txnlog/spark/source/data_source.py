"""The `txnlog` Spark data source: `spark.read.format("txnlog").load(path)` without any jar.

PySpark 4's Python data sources (`pyspark.sql.datasource`) run this code in Python workers: the
planning steps (`schema`, `pushFilters`, `partitions`) beside the driver, `read` on the executors.

    options -> the table (path), the version (`versionAsOf` / `timestampAsOf`, Delta's names, or
               `release`: the table's version in a release log's current release, or in release
               `releaseSequence`), the storage options (`storage.<key>`, or `storageOptions` as a
               JSON object)
    schema  -> the table schema at that version (logical names, partition columns included),
               as `SparkTable.to_df` gives it
    filters -> `filters.plan`: the engine prunes files by partition values and stats; filters
               on partition columns are decided exactly and not evaluated again (the batch reader:
               `reader`; writes and streams: `writer`, `stream`; options: `options`)
    partitions -> the kept files packed into input partitions of about `maxPartitionBytes` (default
               128 MB) each, in file order; each carries the `AddFile`s and an engine `FileScan`
    read    -> on an executor: each file read by the engine (deletion vectors, column mapping,
               partition values, type widening), yielded as Arrow record batches

Every option is checked on the driver before any job: an unknown one, a bad version or a timestamp
before the table's first commit is an `InvalidArgumentError` naming it. Storage options are passed to
the executors inside the partitions (pickled, as Spark ships every task) and never logged. Spark
reports what a method here raises as its own exception: every method Spark calls is `@carrying`, so
a TxnLogError leaves with its class and fields, which `errors.carried_error` rebuilds on the driver.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import SparkSession
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from airflow_txnlog.spark.errors import carrying
from airflow_txnlog.spark.source.options import READ_OPTIONS, ReadOptions, WriteOptions
from airflow_txnlog.spark.source.reader import TxnlogReader, spark_schema
from airflow_txnlog.spark.source.stream import (
    STREAM_READ_OPTIONS,
    StreamOptions,
    TxnlogStreamReader,
    TxnlogStreamWriter,
)
from airflow_txnlog.spark.source.workers import check_workers
from airflow_txnlog.spark.source.writer import TxnlogWriter

NAME = "txnlog"
FILTER_PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark: SparkSession) -> None:
    """Make `format("txnlog")` known to `spark` (idempotent: registering again replaces it).

    Also turns on Python filter pushdown for the session: Spark refuses to read a Python source that
    implements `pushFilters` while the setting is off (its default)."""
    spark.dataSource.register(TxnlogDataSource)
    spark.conf.set(FILTER_PUSHDOWN_CONF, "true")
    check_workers(spark)  # a local session whose workers lack the package: a warning before any job


def _for_schema(options: Mapping[str, str]) -> ReadOptions:
    """The read options that decide the schema (a streaming read's own options are allowed here)."""
    lowered = {str(k).lower(): v for k, v in options.items()}
    known = READ_OPTIONS | STREAM_READ_OPTIONS
    return ReadOptions.parse({k: v for k, v in lowered.items() if k in READ_OPTIONS or k not in known})


class TxnlogDataSource(DataSource):
    """`format("txnlog")` (see the module docstring)."""

    @classmethod
    def name(cls) -> str:
        return NAME

    @carrying
    def schema(self) -> StructType:
        options = _for_schema(self.options)
        return spark_schema(options.snapshot()[1], row_tracking=options.row_tracking)

    @carrying
    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return TxnlogWriter(WriteOptions.parse(self.options), schema, overwrite)

    @carrying
    def reader(self, schema: StructType) -> DataSourceReader:
        # the version is pinned here: planning and every task read the same one, whatever commits next
        options = ReadOptions.parse(self.options)
        _, snap = options.snapshot()
        return TxnlogReader(options.pinned(snap), snap)

    @carrying
    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return TxnlogStreamReader(StreamOptions.parse(self.options), schema)

    @carrying
    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        if overwrite:
            raise ValueError("txnlog: a streaming write appends; outputMode('complete') is not supported")
        return TxnlogStreamWriter(self.options, schema)
