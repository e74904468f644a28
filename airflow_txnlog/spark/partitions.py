"""Partition values of files Spark has just written, read back from the folders Spark created.

Why folder names are acceptable here (the engine never derives partition values from paths of
files it did not write): these files were written moments ago by `DataFrameWriter.partitionBy`
with exactly the table's partition columns, so their folders are `col=value/...` in the table's
partition order, with values escaped by Spark's `escapePathName` (`%XX` for `" # % ' * / : = ? \
{ [ ] ^`, DEL and control characters) and null (or an empty string) written as
`__HIVE_DEFAULT_PARTITION__`. Un-escaping gives Spark's string form of the value, which is then
normalised to the log's form with the engine's `parse_partition_value` /
`serialize_partition_value`, so the log reads the same as for files the engine writes itself:

- numbers, booleans, dates, decimals: parsed and printed again (`1.0E20` -> `1e+20`, both valid);
- TIMESTAMP: Spark prints it in the session time zone (`spark.sql.session.timeZone`); it is
  converted to UTC (`yyyy-MM-dd HH:mm:ss.ffffff`);
- TIMESTAMP_NTZ: printed as is.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from zoneinfo import ZoneInfo

import pyarrow as pa

from airflow_txnlog.engine import (
    HIVE_NULL,
    LogCorruptedError,
    parse_partition_value,
    serialize_partition_value,
)

_ESCAPED = re.compile(r"%([0-9A-Fa-f]{2})")


def hive_unescape(text: str) -> str:
    """Inverse of Spark's `escapePathName` (every `%XX` becomes its character)."""
    return _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), text)


def _normalise(text: str, t: pa.DataType, session_tz: str) -> str | None:
    value = parse_partition_value(text, t)
    if pa.types.is_timestamp(t) and t.tz is not None and isinstance(value, dt.datetime):
        # parse_partition_value reads a zone-less text as UTC; Spark wrote it in the session zone.
        local = value.replace(tzinfo=None).replace(tzinfo=_zone(session_tz))
        value = local.astimezone(dt.UTC) if "+" not in text and not text.endswith("Z") else value
    return serialize_partition_value(value, t)


def _zone(name: str) -> dt.tzinfo:
    if name.upper() in ("UTC", "Z", "GMT", "ETC/UTC"):
        return dt.UTC
    return ZoneInfo(name)


def partition_values_from_dir(
    rel_dir: str, schema: pa.Schema, partition_columns: Sequence[str], session_tz: str
) -> dict[str, str | None]:
    """Log partition values of a file in folder `rel_dir` (relative to where Spark wrote)."""
    segments = [s for s in rel_dir.split("/") if s]
    if len(segments) != len(partition_columns):
        raise LogCorruptedError(
            f"Spark wrote a file in {rel_dir!r}, "
            f"expected folders for partition columns {list(partition_columns)}"
        )
    out: dict[str, str | None] = {}
    for column, segment in zip(partition_columns, segments, strict=True):
        name, sep, raw = segment.partition("=")
        if not sep or hive_unescape(name).lower() != column.lower():
            raise LogCorruptedError(f"folder {segment!r} is not a partition folder of column {column!r}")
        value = hive_unescape(raw)
        out[column] = None if value == HIVE_NULL else _normalise(value, schema.field(column).type, session_tz)
    return out
