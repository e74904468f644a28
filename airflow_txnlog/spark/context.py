"""What every Spark operation knows of the table: `TableHandle` (the table) and `TableContext` (one
version of it), shared by the reading, writing and DML rooms.

    TableHandle   the engine `Table` (plans and commits) with Spark's view of it: the session, the
                  table root as a Hadoop URI, the scheme map; `context(snapshot)` gives ...
    TableContext  ... one version: schema, partition columns, properties, column mapping's physical
                  names, the deletion vectors' reader, and the row rules, generated and identity
                  columns every write enforces or fills. `uri(add)` is a file's (decoded) Hadoop
                  URI, `file_key(reported)` maps a path as Spark reports it (`_metadata.file_path`)
                  to the same form.

Both are plain values built on the driver from an engine snapshot; nothing here runs a Spark job.
(They lived in `read/scan.py`, which `read/row_ids.py` needs the context from while scan imports
row_ids: here, below both, there is no import circle.)

`empty_df` (the table's columns, no rows: what a DML's SQL is analysed over before any job) is kept
per session and columns: `createDataFrame([], schema)` ships an empty Python RDD to the JVM, 10-25 ms
on 2 cores, which a selective DELETE paid on every call (docs/benchmarks.md, D1). A DataFrame is an
immutable plan, so one frame serves every later analysis; the SQL is still analysed each time.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructField, StructType

from airflow_txnlog.engine import AddFile, Snapshot, Table
from airflow_txnlog.engine.spi import (
    ColumnNames,
    Identity,
    RowRule,
    column_defaults,
    generated_columns,
    identity_columns,
    row_rules,
)
from airflow_txnlog.spark.schemas import to_spark_schema
from airflow_txnlog.spark.uris import decode_spark_path, file_uri


@dataclass(frozen=True)
class TableContext:
    """What the Spark side needs to know about one version of the table.

    :param root: the table root as a Hadoop URI (see `spark.uris.to_hadoop_uri`).
    :param schema: the table schema (Arrow), partition columns included.
    """

    spark: SparkSession
    root: str
    schema: pa.Schema
    partition_columns: tuple[str, ...]
    properties: Mapping[str, str]
    scheme_map: Mapping[str, str]
    # row positions a file's deletion vector deletes (`Snapshot.deleted_rows`)
    deleted_rows: Callable[[AddFile], Any] | None = None
    # column mapping: the files' physical names (`Snapshot.column_names`); None when not mapped
    names: ColumnNames | None = None
    # the table's CHECK constraints, column invariants and generated columns' rules, which every
    # write enforces (`spark.features.rules`), and the generated columns (column -> expression)
    # writes fill
    rules: tuple[RowRule, ...] = ()
    generated: Mapping[str, str] = field(default_factory=dict)
    identities: tuple[Identity, ...] = ()  # identity columns (`spark.features.identity` numbers them)
    defaults: Mapping[str, str] = field(
        default_factory=dict
    )  # column defaults (engine.features.column_defaults)

    @classmethod
    def of(
        cls, spark: SparkSession, root: str, snapshot: Snapshot, scheme_map: Mapping[str, str]
    ) -> TableContext:
        return cls(
            spark,
            root,
            snapshot.schema,
            tuple(snapshot.partition_columns),
            dict(snapshot.properties),
            dict(scheme_map),
            snapshot.deleted_rows,
            snapshot.column_names,
            tuple(row_rules(snapshot.metadata, snapshot.protocol)),
            generated_columns(snapshot.metadata, snapshot.protocol),
            tuple(identity_columns(snapshot.metadata)),
            column_defaults.enforced(snapshot.metadata, snapshot.protocol),
        )

    def physical(self, column: str) -> str:
        """The name `column` has in the files and in `partitionValues`."""
        return column if self.names is None else self.names.physical_of(column)

    def uri(self, add: AddFile) -> str:
        """The (decoded) Hadoop URI of a file of the table."""
        return file_uri(self.root, add.path, self.scheme_map)

    def file_key(self, reported: str) -> str:
        """The decoded URI of a path as Spark reports it (matches `uri()` of the same file)."""
        return decode_spark_path(reported)

    def empty_df(self, extra: Iterable[StructField] = ()) -> DataFrame:
        """No rows, the table's columns (then `extra`): one frame per session and columns."""
        return empty_frame(self.spark, StructType([*to_spark_schema(self.schema).fields, *extra]))


_FRAMES_KEPT = 32  # (sessions x column sets: a bound, so a long-lived process never grows without end)
_frames: OrderedDict[tuple[int, str], DataFrame] = OrderedDict()
_frames_lock = threading.Lock()  # (DML from several threads, and the SQL checks' helper thread)


def empty_frame(spark: SparkSession, schema: StructType) -> DataFrame:
    """An empty DataFrame of `schema` in `spark`, built once and then reused (least recently used
    frames dropped beyond `_FRAMES_KEPT`). A kept frame holds its session, so the session's id
    cannot be reused while the key is kept; the identity check guards anyway."""
    key = (id(spark), schema.json())
    with _frames_lock:
        kept = _frames.get(key)
        if kept is not None and kept.sparkSession is spark:
            _frames.move_to_end(key)
            return kept
    frame = spark.createDataFrame([], schema)
    with _frames_lock:
        _frames[key] = frame
        while len(_frames) > _FRAMES_KEPT:
            _frames.popitem(last=False)
    return frame


@dataclass(frozen=True)
class TableHandle:
    """A table as the Spark operations use it: the engine `Table` (commits) and Spark's view of it."""

    spark: SparkSession
    table: Table
    root: str
    scheme_map: Mapping[str, str]

    def context(self, snapshot: Snapshot) -> TableContext:
        return TableContext.of(self.spark, self.root, snapshot, self.scheme_map)
