"""The `txnlog` Spark data source: `spark.read.format("txnlog").load(path)` without any jar.

PySpark 4's Python data sources (`pyspark.sql.datasource`) run this code in Python workers: the
planning steps (`schema`, `pushFilters`, `partitions`) beside the driver, `read` on the executors.

    options -> the table (path), the version (`versionAsOf` / `timestampAsOf`, Delta's names),
               the storage options (`storage.<key>`, or `storageOptions` as a JSON object;
               session settings `spark.txnlog.storage.<key>` as defaults)
    schema  -> the table schema at that version (logical names, partition columns included),
               as `SparkTable.to_df` gives it
    filters -> `source_filters.plan`: the engine prunes files by partition values and stats; filters
               on partition columns are decided exactly and not evaluated again
    partitions -> the kept files packed into input partitions of about `maxPartitionBytes` (default
               128 MB) each, in file order; each carries the `AddFile`s and an engine `FileScan`
    read    -> on an executor: each file read by the engine (deletion vectors, column mapping,
               partition values, type widening), yielded as Arrow record batches

Every option is checked on the driver before any job: an unknown one, a bad version or a timestamp
before the table's first commit is an `InvalidArgumentError` naming it. Storage options are passed to
the executors inside the partitions (pickled, as Spark ships every task) and never logged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceWriter, Filter, InputPartition
from pyspark.sql.types import StructType

from airflow_txnlog.engine import (
    AddFile,
    FileScan,
    Snapshot,
    UnsupportedFeatureError,
    uses_variant,
    without_mapping,
)
from airflow_txnlog.spark.schemas import to_spark_schema
from airflow_txnlog.spark.source_filters import plan
from airflow_txnlog.spark.source_options import ReadOptions, WriteOptions
from airflow_txnlog.spark.source_write import TxnlogWriter

NAME = "txnlog"
_BATCH_ROWS = 64 * 1024


FILTER_PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark: SparkSession) -> None:
    """Make `format("txnlog")` known to `spark` (idempotent: registering again replaces it).

    Also turns on Python filter pushdown for the session: Spark refuses to read a Python source that
    implements `pushFilters` while the setting is off (its default)."""
    spark.dataSource.register(TxnlogDataSource)
    spark.conf.set(FILTER_PUSHDOWN_CONF, "true")


def spark_schema(snapshot: Snapshot) -> StructType:
    if uses_variant(snapshot.metadata.schema_string):
        raise UnsupportedFeatureError(
            "txnlog: the data source does not read variant columns yet; use SparkTable(...).to_df()",
            feature="variantType",
        )
    return to_spark_schema(without_mapping(snapshot.schema))


class TxnlogDataSource(DataSource):
    """`format("txnlog")` (see the module docstring)."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        return spark_schema(ReadOptions.parse(self.options).snapshot()[1])

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return TxnlogWriter(WriteOptions.parse(self.options), schema, overwrite)

    def reader(self, schema: StructType) -> DataSourceReader:
        # the version is pinned here: planning and every task read the same one, whatever commits next
        options = ReadOptions.parse(self.options)
        _, snap = options.snapshot()
        return TxnlogReader(dataclasses.replace(options, version=snap.version, timestamp=None), snap)


@dataclass(frozen=True)
class FilesPartition(InputPartition):
    """One task's share of the files."""

    files: tuple[AddFile, ...]
    scan: FileScan


def pack(files: Sequence[AddFile], target: int) -> list[tuple[AddFile, ...]]:
    """Files in order, cut into runs of about `target` bytes (a file larger than it is a run alone)."""
    runs: list[tuple[AddFile, ...]] = []
    current: list[AddFile] = []
    size = 0
    for f in files:
        if current and size + f.size > target:
            runs.append(tuple(current))
            current, size = [], 0
        current.append(f)
        size += f.size
    if current:
        runs.append(tuple(current))
    return runs


class TxnlogReader(DataSourceReader):
    """Plans on the driver side (filters, partitions), reads on the executors."""

    def __init__(self, options: ReadOptions, snapshot: Snapshot | None = None) -> None:
        self.options = options
        self.predicate: str | None = None
        self._snapshot = snapshot

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_snapshot": None}  # a snapshot is not shipped: the options pin it

    def _snap(self) -> Snapshot:
        if self._snapshot is None:
            self._snapshot = self.options.snapshot()[1]
        return self._snapshot

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        snap = self._snap()
        self.predicate, back = plan(filters, snap.schema, snap.partition_columns)
        yield from back

    def partitions(self) -> Sequence[InputPartition]:
        snap = self._snap()
        files = snap.files(filter=self.predicate)
        scan = FileScan(
            self.options.path,
            self.options.storage_options or None,
            snap.schema,
            tuple(snap.partition_columns),
            snap.column_names,
        )
        runs = pack(files, self.options.partition_bytes)
        return [FilesPartition(run, scan) for run in runs] or [FilesPartition((), scan)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, FilesPartition)
        for table in partition.scan.read(partition.files):
            yield from table.to_batches(max_chunksize=_BATCH_ROWS)
