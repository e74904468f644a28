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
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, Filter, InputPartition
from pyspark.sql.types import StructType

from airflow_txnlog.engine import (
    AddFile,
    FileScan,
    InvalidArgumentError,
    Snapshot,
    Table,
    UnsupportedFeatureError,
    uses_variant,
    without_mapping,
)
from airflow_txnlog.spark.schemas import to_spark_schema
from airflow_txnlog.spark.source_filters import plan

NAME = "txnlog"
STORAGE_PREFIX = "storage."
SESSION_STORAGE_PREFIX = "spark.txnlog.storage."
DEFAULT_PARTITION_BYTES = 128 * 1024 * 1024
READ_OPTIONS = frozenset({"path", "versionasof", "timestampasof", "maxpartitionbytes", "storageoptions"})
_BATCH_ROWS = 64 * 1024


def register(spark: SparkSession) -> None:
    """Make `format("txnlog")` known to `spark` (idempotent: registering again replaces it)."""
    spark.dataSource.register(TxnlogDataSource)


def _session_storage_options() -> dict[str, str]:
    spark = SparkSession.getActiveSession()
    if spark is None:
        return {}
    try:
        conf = spark.conf.getAll
    except Exception:
        return {}
    items = conf.items() if isinstance(conf, Mapping) else []
    return {
        k[len(SESSION_STORAGE_PREFIX) :]: str(v) for k, v in items if k.startswith(SESSION_STORAGE_PREFIX)
    }


@dataclass(frozen=True)
class ReadOptions:
    """The options of a read, checked."""

    path: str
    version: int | None
    timestamp: str | None
    partition_bytes: int
    storage_options: dict[str, Any]

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> ReadOptions:
        opts = {str(k).lower(): str(v) for k, v in options.items()}
        storage = _session_storage_options()
        storage.update({k[len(STORAGE_PREFIX) :]: v for k, v in opts.items() if k.startswith(STORAGE_PREFIX)})
        unknown = sorted(k for k in opts if k not in READ_OPTIONS and not k.startswith(STORAGE_PREFIX))
        if unknown:
            raise InvalidArgumentError(
                f"txnlog: unknown read options {unknown}; known: path, versionAsOf, timestampAsOf, "
                "maxPartitionBytes, storageOptions, storage.<fsspec option>"
            )
        if not opts.get("path"):
            raise InvalidArgumentError('txnlog: no table path; use spark.read.format("txnlog").load(path)')
        if "storageoptions" in opts:
            storage.update(_json_object("storageOptions", opts["storageoptions"]))
        version = _int_option("versionAsOf", opts.get("versionasof"), minimum=0)
        if version is not None and opts.get("timestampasof"):
            raise InvalidArgumentError("txnlog: give versionAsOf or timestampAsOf, not both")
        size = _int_option("maxPartitionBytes", opts.get("maxpartitionbytes"), minimum=1)
        return cls(opts["path"], version, opts.get("timestampasof"), size or DEFAULT_PARTITION_BYTES, storage)

    def snapshot(self) -> tuple[Table, Snapshot]:
        table = Table.open(self.path, storage_options=self.storage_options or None)
        return table, table.snapshot(version=self.version, timestamp=self.timestamp)


def _int_option(name: str, raw: str | None, *, minimum: int) -> int | None:
    if raw is None:
        return None
    try:
        value = int(raw.strip())
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise InvalidArgumentError(f"txnlog: {name} must be an integer >= {minimum}, got {raw!r}")
    return value


def _json_object(name: str, raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise InvalidArgumentError(f"txnlog: {name} must be a JSON object: {exc}") from exc
    if not isinstance(value, dict):
        raise InvalidArgumentError(f"txnlog: {name} must be a JSON object, got {type(value).__name__}")
    return value


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
