"""A Delta table's schema, partitioning and file entries in Iceberg's terms (as Delta's converter has
them, `IcebergSchemaUtils` / `IcebergTransactionUtils`).

    fields      Iceberg's field names are Delta's logical names; its field ids are the column
                mapping ids (`delta.columnMapping.id`), and a list element's or a map key's / value's
                id comes from the nearest struct field's `delta.columnMapping.nested.ids`, so an
                Iceberg reader matches the data files' parquet field ids (engine.features.iceberg_compat)
    types       byte / short / integer -> int, long, float, double, decimal(p, s), string, binary,
                boolean, date, timestamp -> timestamptz, timestamp_ntz -> timestamp; NOT NULL ->
                required; a map's key is always required
    partitions  identity transforms over the partition columns, in Delta's order, partition field ids
                from 1000 (Iceberg's), named as the columns; values parsed from the log's text into
                Iceberg's internal form (days for a date, microseconds for a timestamp)
    files       absolute locations (the table's location + the add's decoded path), PARQUET, the
                add's size and `numRecords`; no column bounds (optional in Iceberg: a reader then
                prunes by partition only, never wrongly)
"""

from __future__ import annotations

import datetime as dt
import functools
import uuid
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import orjson
import pyarrow as pa
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadataV2
from pyiceberg.transforms import IdentityTransform
from pyiceberg.typedef import Record
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
)

from airflow_txnlog.engine.errors import LogCorruptedError, TxnLogError
from airflow_txnlog.engine.features import column_mapping
from airflow_txnlog.engine.log.actions import AddFile
from airflow_txnlog.engine.schema import parse_partition_value, schema_from_json
from airflow_txnlog.engine.storage import has_scheme

PARTITION_ID_START = 1000  # Iceberg's first partition field id
_EPOCH = dt.date(1970, 1, 1)


def _id(f: pa.Field) -> int:
    raw = (f.metadata or {}).get(column_mapping.FIELD_ID.encode())
    if raw is None:
        raise LogCorruptedError(f"column {f.name!r} has no column mapping id: UniForm needs column mapping")
    return int(orjson.loads(raw))


def _level_id(ids: Mapping[str, Any], path: str) -> int:
    if path not in ids:
        raise LogCorruptedError(f"no nested id for {path!r}: icebergCompatV2 gives every list and map one")
    return int(ids[path])


def _primitive(t: pa.DataType) -> IcebergType:
    if pa.types.is_int64(t):
        return LongType()
    if pa.types.is_integer(t):
        return IntegerType()
    if pa.types.is_decimal(t):
        return DecimalType(t.precision, t.scale)
    if pa.types.is_timestamp(t):
        return TimestamptzType() if t.tz is not None else TimestampType()
    simple: list[tuple[Any, IcebergType]] = [
        (pa.types.is_float32, FloatType()), (pa.types.is_float64, DoubleType()),
        (pa.types.is_boolean, BooleanType()), (pa.types.is_date32, DateType()),
        (lambda x: pa.types.is_string(x) or pa.types.is_large_string(x), StringType()),
        (lambda x: pa.types.is_binary(x) or pa.types.is_large_binary(x), BinaryType()),
    ]  # fmt: skip
    for test, iceberg in simple:
        if test(t):
            return iceberg
    raise LogCorruptedError(f"type {t} has no Iceberg form (icebergCompatV2 refuses it)")


def _type(t: pa.DataType, path: str, ids: Mapping[str, Any]) -> IcebergType:
    if pa.types.is_struct(t):
        return StructType(*[field(f) for f in t])
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        element = f"{path}.element"
        inner = _type(t.value_type, element, ids)
        return ListType(_level_id(ids, element), inner, element_required=not t.value_field.nullable)
    if pa.types.is_map(t):
        key, value = f"{path}.key", f"{path}.value"
        return MapType(
            _level_id(ids, key), _type(t.key_type, key, ids),
            _level_id(ids, value), _type(t.item_type, value, ids),
            value_required=not t.item_field.nullable,
        )  # fmt: skip
    return _primitive(t)


def field(f: pa.Field) -> NestedField:
    """The Iceberg field of a Delta (logical) field with column mapping metadata."""
    raw = (f.metadata or {}).get(column_mapping.NESTED_IDS.encode())
    ids = orjson.loads(raw) if raw is not None else {}
    t = _type(f.type, column_mapping.physical_name(f), ids)
    return NestedField(_id(f), f.name, t, required=not f.nullable)


def schema(logical: pa.Schema, schema_id: int) -> Schema:
    """The Iceberg schema of a Delta table's logical schema (with its column mapping metadata)."""
    return Schema(*[field(f) for f in logical], schema_id=schema_id)


def partition_spec(logical: pa.Schema, partition_columns: tuple[str, ...], spec_id: int = 0) -> PartitionSpec:
    """Identity partitioning over `partition_columns` (none: unpartitioned)."""
    fields = [
        PartitionField(_id(logical.field(c)), PARTITION_ID_START + i, IdentityTransform(), c)
        for i, c in enumerate(partition_columns)
    ]
    return PartitionSpec(*fields, spec_id=spec_id)


def _iceberg_value(value: Any, t: pa.DataType) -> Any:
    if value is None:
        return None
    if pa.types.is_date(t):
        return (value - _EPOCH).days
    if pa.types.is_timestamp(t):
        delta = value - (dt.datetime(1970, 1, 1, tzinfo=dt.UTC) if value.tzinfo else dt.datetime(1970, 1, 1))
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if pa.types.is_decimal(t):
        return Decimal(value)
    return value


class FileEntries:
    """Delta adds as Iceberg data files, for one table location, schema and partitioning."""

    def __init__(self, location: str, logical: pa.Schema, partition_columns: tuple[str, ...]) -> None:
        self.location = location.rstrip("/")
        self.parts = [
            (column_mapping.physical_name(logical.field(c)), logical.field(c).type) for c in partition_columns
        ]

    def path(self, add_path: str) -> str:
        """The absolute location of a file the log names (relative or absolute)."""
        return add_path if has_scheme(add_path) or add_path.startswith("/") else f"{self.location}/{add_path}"

    def partition(self, values: Mapping[str, str | None]) -> tuple[Any, ...]:
        """A file's Delta partition values (by physical name) as its Iceberg partition tuple."""
        return tuple(_iceberg_value(parse_partition_value(values.get(p), t), t) for p, t in self.parts)

    def known_partition(self, values: Mapping[str, str | None] | None) -> tuple[Any, ...] | None:
        """`partition`, or None (unknown) when `values` lack a partition column (they are optional in
        a Delta remove; some writers leave `{}`) or one does not parse."""
        if values is None or any(p not in values for p, _ in self.parts):
            return None
        try:
            return self.partition(values)
        except (TxnLogError, ValueError, ArithmeticError):
            return None

    def data_file(self, add: AddFile) -> DataFile:
        records = add.num_records
        if records is None:
            raise LogCorruptedError(f"add {add.path!r} has no numRecords: UniForm needs it on every file")
        return DataFile.from_args(
            _table_format_version=2,
            content=DataFileContent.DATA,
            file_path=self.path(add.path),
            file_format=FileFormat.PARQUET,
            partition=Record(*self.partition(add.partition_values)),
            record_count=records,
            file_size_in_bytes=add.size,
        )


def table_uuid(delta_id: str) -> uuid.UUID:
    """The Iceberg table's uuid: the Delta table's id (a uuid when Delta made it; else derived)."""
    try:
        return uuid.UUID(delta_id)
    except ValueError:
        return uuid.uuid5(uuid.NAMESPACE_URL, delta_id)


def schemas(base: TableMetadataV2 | None, logical: pa.Schema) -> tuple[list[Schema], Schema]:
    """The schemas of the next metadata and its current one (a new schema only when it changed)."""
    if base is None:
        s = schema(logical, 0)
        return [s], s
    latest = base.schema()
    s = _converted(logical, latest.schema_id)
    if s.fields == latest.fields:
        return list(base.schemas), latest
    s = schema(logical, max(x.schema_id for x in base.schemas) + 1)
    return [*base.schemas, s], s


_LAST_CONVERTED: list[tuple[pa.Schema, int, Schema]] = []


def _converted(logical: pa.Schema, schema_id: int) -> Schema:
    """`schema`, the last result kept: every sync of a table converts the same schema."""
    last = _LAST_CONVERTED[0] if _LAST_CONVERTED else None  # (read once: another thread may replace it)
    if last is not None and last[1] == schema_id and last[0] is logical:
        return last[2]
    converted = schema(logical, schema_id)
    _LAST_CONVERTED[:] = [(logical, schema_id, converted)]
    return converted


@functools.lru_cache(maxsize=8)
def logical(schema_string: str) -> pa.Schema:
    """The Delta schema of a schema string (a table's every sync parses the same one)."""
    return schema_from_json(schema_string)


@functools.lru_cache(maxsize=8)
def spec_of(schema_string: str, partition_columns: tuple[str, ...]) -> PartitionSpec:
    """`partition_spec` of a schema string, kept between syncs."""
    return partition_spec(logical(schema_string), partition_columns)
