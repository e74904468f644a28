"""The batch reader of the `txnlog` data source (see `source.data_source` for the whole picture).

Planning beside the driver: the snapshot of the pinned version, the filters Spark pushes turned into
the engine's pruning (`filters.plan`), the kept files packed into input partitions of about
`maxPartitionBytes`. Reading on the executors: each file through the engine (`FileScan`), as Arrow
record batches. The reader is pickled to the executors without its snapshot: its options pin the
version.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, Filter, InputPartition
from pyspark.sql.types import LongType, StructField, StructType

from airflow_txnlog.engine import AddFile, FileScan, InvalidArgumentError, Snapshot
from airflow_txnlog.engine.spi import row_tracking as row_tracking_names
from airflow_txnlog.engine.spi import variants_as, without_mapping
from airflow_txnlog.spark.errors import carrying, carrying_iterator
from airflow_txnlog.spark.schemas import to_spark_schema
from airflow_txnlog.spark.source.filters import plan
from airflow_txnlog.spark.source.options import ReadOptions

_BATCH_ROWS = 64 * 1024
# PySpark's Arrow form of a VariantType (pyspark.sql.pandas.types.to_arrow_type), which a Python data
# source must return: value first, and the marker on `metadata`.
SPARK_VARIANT = pa.struct(
    [
        pa.field("value", pa.binary(), nullable=False),
        pa.field("metadata", pa.binary(), nullable=False, metadata={b"variant": b"true"}),
    ]
)


def spark_schema(snapshot: Snapshot, *, row_tracking: bool = False) -> StructType:
    """The table's columns (with `row_tracking`, plus `_row_id` and `_row_commit_version`)."""
    schema = to_spark_schema(without_mapping(snapshot.schema))
    if not row_tracking:
        return schema
    row_ids_of(snapshot)  # (refused unless the table has row tracking enabled)
    extra = [
        StructField(n, LongType(), True)
        for n in (row_tracking_names.ROW_ID, row_tracking_names.ROW_COMMIT_VERSION)
    ]
    return StructType([*schema.fields, *extra])


def row_ids_of(snapshot: Snapshot) -> dict[str, str]:
    """The configuration a `FileScan` reads row ids with (InvalidArgumentError: row tracking off)."""
    conf = dict(snapshot.metadata.configuration)
    if not row_tracking_names.enabled(conf):
        raise InvalidArgumentError("txnlog: rowTracking=true needs row tracking enabled on the table")
    return conf


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

    @carrying_iterator
    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        snap = self._snap()
        self.predicate, back = plan(filters, snap.schema, snap.partition_columns)
        yield from back

    @carrying
    def partitions(self) -> Sequence[InputPartition]:
        snap = self._snap()
        files = snap.files(filter=self.predicate)
        scan = FileScan(
            self.options.path,
            self.options.storage_options or None,
            snap.schema,
            tuple(snap.partition_columns),
            snap.column_names,
            row_ids_of(snap) if self.options.row_tracking else None,
        )
        runs = pack(files, self.options.partition_bytes)
        return [FilesPartition(run, scan) for run in runs] or [FilesPartition((), scan)]

    @carrying_iterator
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, FilesPartition)
        for table in partition.scan.read(partition.files):
            for batch in table.to_batches(max_chunksize=_BATCH_ROWS):
                yield variants_as(batch, SPARK_VARIANT)  # (the Arrow form Spark takes a VariantType in)
