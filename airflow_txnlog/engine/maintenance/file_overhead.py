"""What one data file of a table costs before its rows: the bytes a compaction saves per input file.

A parquet file carries, whatever its row count, its magic bytes, a footer (the schema, the Arrow
schema pyarrow embeds, one row group's column-chunk metadata with min/max statistics) and, per
column, page headers and a dictionary page. Compacting n files into one keeps one such overhead
and drops n - 1. The planner used to estimate a compaction's output as the sum of its inputs' sizes,
which counts the overhead n times: for files of a few rows it is most of their bytes (six files of
about 972 bytes, compacted into one of 1,025, were predicted as 5,832: -82 %). So the estimate is
now, per input, its payload (size - overhead, scaled by the share of rows it keeps), plus one
overhead per output file (engine.maintenance.compaction_plan).

How: a file of the table's schema holding one row of narrow values (0, '', empty lists, false,
the epoch; nulls for variants) is written in memory as the engine's writer writes a data file (physical names
and field ids on a column-mapped table, partition columns left out, variants as their parquet
group, snappy), and its size is the overhead. Nothing is read from or written to the table's
storage. One row rather than none: a file of no rows has no row group, no column chunk and no page,
and misses about a fifth of a small file's overhead (measured: 467 bytes empty, 694 for one row of
a string and an int64).
Limits: it is an estimate of this engine's files; files other writers made (Spark writes more
footer metadata) carry a different overhead, and values wider than the narrow ones make longer
statistics. When the probe cannot be written (a type with no narrow value), the overhead is 0: the
estimate is then the plain sum of the inputs, an over-estimate, as before.
"""

from __future__ import annotations

import decimal
import io

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_txnlog.engine.features import variant
from airflow_txnlog.engine.schema import is_variant
from airflow_txnlog.engine.state.snapshot import Snapshot

_COMPRESSION = "snappy"  # (engine.write.writer's: the overhead is that of the files it writes)


def _narrow(t: pa.DataType) -> pa.Array:
    """One value of type `t`, as narrow as the type allows (a null where it has none)."""
    if is_variant(t):
        return pa.nulls(1, t)
    if pa.types.is_struct(t):
        return pa.StructArray.from_arrays([_narrow(f.type) for f in t], fields=list(t))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        return pa.array([[]], t)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.array([""], t)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.array([b""], t)
    if pa.types.is_boolean(t):
        return pa.array([False], t)
    if pa.types.is_decimal(t):
        return pa.array([decimal.Decimal(0)], t)
    for source in (pa.int64(), pa.int32()):  # (numbers, timestamps, times; dates from int32)
        try:
            return pa.array([0], source).cast(t)
        except (pa.ArrowException, ValueError, TypeError):
            continue
    return pa.nulls(1, t)


def file_overhead(snap: Snapshot) -> int:
    """The size of a one-row data file of `snap`'s schema as the engine writes it (bytes; 0 when it
    cannot be written): the fixed part of every data file of the table."""
    parts = set(snap.partition_columns)
    fields = [f for f in snap.schema if f.name not in parts]
    if not fields:
        return 0
    try:
        row = pa.Table.from_arrays([_narrow(f.type) for f in fields], schema=pa.schema(fields))
        names = snap.column_names
        data = names.to_files(row) if names is not None else row
        buf = io.BytesIO()
        pq.write_table(variant.to_files(data), buf, compression=_COMPRESSION)
    except (pa.ArrowException, ValueError, TypeError, NotImplementedError):
        return 0  # (no narrow row for some type: no overhead subtracted, the estimate as before)
    return len(buf.getvalue())
