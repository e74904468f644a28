"""Table schema <-> Spark schema, and conforming a DataFrame to the table before it is written.

A Delta `schemaString` is Spark's own `StructType` JSON, so the conversion goes through it in both
directions: Arrow -> `schema_to_json` -> `StructType.fromJson`, and Spark -> `jsonValue()` ->
`schema_from_json` (which refuses Spark types Delta cannot store, e.g. intervals).

Schema enforcement on write (`conform`), as Delta does it:
- columns are matched by name, case-insensitively, and written with the table's spelling and order;
- a column the DataFrame lacks is written as NULL if it is nullable, else `SchemaMismatchError`; a
  generated column it lacks is computed from its expression (Spark SQL, cast to the column's type);
- a column whose type differs from the table's is a `SchemaMismatchError` (no silent casts);
- a column the table lacks is a `SchemaMismatchError`, unless `merge_schema=True`: then it is added
  at the end of the schema as nullable (partition columns never change);
- a NOT NULL column is checked row by row inside the write job (`raise_error`), so a NULL fails the
  job and nothing is committed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StructField, StructType

from airflow_txnlog.engine import SchemaMismatchError, schema_from_json, schema_to_json
from airflow_txnlog.engine.spi import column_defaults
from airflow_txnlog.spark.errors import checked


def to_spark_schema(schema: pa.Schema) -> StructType:
    """The Spark schema of an Arrow table schema."""
    parsed = StructType.fromJson(json.loads(schema_to_json(schema)))
    return parsed


def to_arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow table schema of a Spark schema (`SchemaMismatchError` for types Delta lacks)."""
    return schema_from_json(json.dumps(schema.jsonValue()))


def data_schema(schema: pa.Schema, partition_columns: Sequence[str]) -> StructType:
    """The Spark schema of the data files: the table's columns minus the partition columns."""
    full = to_spark_schema(schema)
    return StructType([f for f in full.fields if f.name not in partition_columns])


def spark_type(schema: pa.Schema, column: str) -> DataType:
    return to_spark_schema(pa.schema([schema.field(column)])).fields[0].dataType


def _same_type(a: DataType, b: DataType) -> bool:
    # simpleString ignores nullability and field metadata, which Delta does not enforce by type.
    return a.simpleString() == b.simpleString()


def _evolve(schema: pa.Schema, extra: list[StructField]) -> pa.Schema:
    added = to_arrow_schema(StructType([StructField(f.name, f.dataType, True) for f in extra]))
    return pa.schema(list(schema) + list(added))


def conform(
    df: DataFrame,
    schema: pa.Schema,
    *,
    merge_schema: bool = False,
    generated: Mapping[str, str] | None = None,
    defaults: Mapping[str, str] | None = None,
    keep: Sequence[str] = (),
) -> tuple[DataFrame, pa.Schema | None]:
    """`df` projected onto the table's columns (see the module docstring), and the evolved schema
    when `merge_schema` added columns (else None). `keep`: columns outside the schema passed
    through at the end (row tracking's hidden columns)."""
    by_lower = {f.name.lower(): f for f in df.schema.fields}
    if len(by_lower) != len(df.schema.fields):
        raise SchemaMismatchError(f"the data has duplicate column names: {df.columns}")
    table_lower = {n.lower() for n in schema.names}
    kept = {k.lower() for k in keep}
    extra = [f for f in df.schema.fields if f.name.lower() not in table_lower | kept]
    if extra and not merge_schema:
        raise SchemaMismatchError(
            f"columns {[f.name for f in extra]} are not in the table schema {schema.names}. "
            "Help: pass merge_schema=True to add them."
        )
    target = _evolve(schema, extra) if extra else schema
    spark_schema = to_spark_schema(target)
    for column, text in (defaults or {}).items():  # (the engine's value, as every writer fills it)
        if column.lower() not in by_lower:
            value = column_defaults.value(text, schema.field(column), schema).as_py()
            df = df.withColumn(column, F.lit(value).cast(spark_type(schema, column)))
            by_lower[column.lower()] = df.schema[column]
    for column, expression in (generated or {}).items():  # what the data lacks, Spark computes
        if column.lower() not in by_lower:
            df = df.withColumn(column, F.expr(expression).cast(spark_type(schema, column)))
            by_lower[column.lower()] = df.schema[column]
    problems: list[str] = []
    cols = [_column(by_lower, field, problems) for field in spark_schema.fields]
    if problems:
        raise SchemaMismatchError("data does not match the table schema: " + "; ".join(problems))
    return df.select(*cols, *[F.col(f"`{k}`") for k in keep]), (target if extra else None)


def _column(by_lower: dict[str, StructField], field: StructField, problems: list[str]) -> Column:
    src = by_lower.get(field.name.lower())
    if src is None:
        if not field.nullable:
            problems.append(f"non-nullable column {field.name!r} is missing")
        return F.lit(None).cast(field.dataType).alias(field.name)
    if not _same_type(src.dataType, field.dataType):
        problems.append(
            f"column {field.name!r} has type {src.dataType.simpleString()}, "
            f"the table has {field.dataType.simpleString()}"
        )
    col = F.col(f"`{src.name}`")
    if not field.nullable:
        msg = checked(f"NULL value in NOT NULL column {field.name!r}")
        col = F.when(col.isNull(), F.raise_error(F.lit(msg))).otherwise(col)
    return col.alias(field.name)
