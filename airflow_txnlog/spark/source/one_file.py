"""A write task's rows as exactly one data file, streamed: what a rewrite (OPTIMIZE's bins, a layout's
output ranges, a planned compaction) asks of the `txnlog` data source, where one Spark task is one
output file however many rows it has.

    pieces     the task's Arrow batches, gathered into runs of PIECE_ROWS rows and prepared as any
               write's (`writer.prepared`: conformed, rules checked) by the caller
    partition  every row of the task must be in one partition (a rewrite's bin is): its values in the
               log's form come from the first row (the engine's `serialize_partition_value`); a piece
               with another partition value fails the task (nothing is committed)
    file       `engine.spi.write_streamed`: one parquet file, row groups of about a million rows, the
               stats of all the rows; the memory of one run and one row group, not of the task

The usual write (`writer.write_task`) splits a task's rows into files of `maxRowsPerFile` rows and
holds each in memory: a 1 GB bin became 68 files (benchmarks/spark_maintenance.py).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa

from airflow_txnlog.engine import AddFile, InvalidArgumentError
from airflow_txnlog.engine.spi import ColumnNames, row_tracking, serialize_partition_value, write_streamed

PIECE_ROWS = 262_144  # rows prepared and handed to the file at a time (about a row group's quarter)


def runs(batches: Iterable[pa.RecordBatch], rows: int = PIECE_ROWS) -> Iterator[list[pa.RecordBatch]]:
    """The batches in runs of at least `rows` rows (the last one shorter)."""
    pending: list[pa.RecordBatch] = []
    held = 0
    for batch in batches:
        if batch.num_rows:
            pending.append(batch)
            held += batch.num_rows
        if held >= rows:
            yield pending
            pending, held = [], 0
    if pending:
        yield pending


def write_one_file(
    storage: Any,
    pieces: Iterator[pa.Table],
    *,
    schema: pa.Schema,
    partition_columns: tuple[str, ...],
    conf: Mapping[str, str],
    names: ColumnNames | None,
) -> list[AddFile]:
    """The pieces (prepared rows, logical names) as one file; its add (none for no rows)."""
    first = next((p for p in pieces if p.num_rows), None)
    if first is None:
        return []
    values = {c: first.column(c)[0].as_py() for c in partition_columns}
    logged = {
        (names.physical_of(c) if names is not None else c): serialize_partition_value(
            v, schema.field(c).type, c
        )
        for c, v in values.items()
    }
    hidden = [h for h in row_tracking.hidden_columns(dict(conf)) if h in first.column_names]
    checked = (_one_partition(p, values) for p in itertools.chain([first], pieces))
    add = write_streamed(storage, checked, logged, list(partition_columns), conf, names=names, hidden=hidden)
    return [] if add is None else [add]


def _same(a: Any, b: Any) -> bool:
    return bool(a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)))


def _one_partition(piece: pa.Table, values: Mapping[str, Any]) -> pa.Table:
    for c, value in values.items():
        seen = piece.column(c).unique().to_pylist()
        if len(seen) != 1 or not _same(seen[0], value):
            raise InvalidArgumentError(
                f"txnlog: a one-file write task got rows of two partitions ({c} = {value!r} and "
                f"{[v for v in seen if not _same(v, value)][:1]!r}); nothing was committed"
            )
    return piece
