"""The embedded pyarrow writer: append / overwrite a `pyarrow.Table` as parquet files plus one commit.

1. conform the data to the table schema (same columns and types; missing nullable columns become
   null; anything else is a `SchemaMismatchError` before a byte is written);
2. split rows by partition values, write one parquet file per partition (split every
   `max_rows_per_file` rows) under `col=value/` folders escaped as Spark does, partition columns
   left out of the files; collect size and stats for each file from the data in memory;
3. commit adds (and, for overwrite, removes of every live file) in one transaction. If the commit
   fails, the files written are deleted again (best effort: vacuum reclaims leftovers).
"""

from __future__ import annotations

import contextlib
import time
import uuid
from typing import Any, Literal

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from airflow_txnlog.engine import properties as props
from airflow_txnlog.engine.actions import AddFile
from airflow_txnlog.engine.errors import (
    CommitConflictError,
    CommitRetriesExceededError,
    InvalidArgumentError,
    SchemaMismatchError,
)
from airflow_txnlog.engine.schema import hive_escape, normalize_schema, serialize_partition_value
from airflow_txnlog.engine.stats import compute_stats
from airflow_txnlog.engine.storage import Storage
from airflow_txnlog.engine.transaction import Transaction
from airflow_txnlog.engine.validate import one_of

DEFAULT_MAX_ROWS_PER_FILE = 1_000_000
WriteMode = Literal["append", "overwrite"]
"""What a write does with the rows already in the table: keep them, or replace them all."""


def conform_to_schema(data: pa.Table, schema: pa.Schema) -> pa.Table:
    """`data` with exactly the table's columns and types, or SchemaMismatchError saying why."""
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if not isinstance(data, pa.Table):
        raise InvalidArgumentError(f"data must be a pyarrow.Table, got {type(data).__name__}")
    extra = [c for c in data.column_names if c not in schema.names]
    problems = [f"column {c!r} is not in the table schema" for c in extra]
    if len(set(data.column_names)) != len(data.column_names):
        problems.append("duplicate column names")
    try:
        have = normalize_schema(data.schema)
    except (InvalidArgumentError, ValueError) as exc:
        raise SchemaMismatchError(f"data schema cannot be stored in a Delta table: {exc}") from exc
    cols = []
    for f in schema:
        if f.name not in data.column_names:
            if not f.nullable:
                problems.append(f"non-nullable column {f.name!r} is missing")
            cols.append(pa.nulls(data.num_rows, f.type))
            continue
        got = have.field(f.name).type
        if got != f.type:
            problems.append(f"column {f.name!r} has type {got}, the table has {f.type}")
            continue
        col = data.column(f.name).cast(f.type)
        if not f.nullable and col.null_count:
            problems.append(f"non-nullable column {f.name!r} has {col.null_count} null values")
        cols.append(col)
    if problems:
        raise SchemaMismatchError("data does not match the table schema: " + "; ".join(problems))
    return pa.Table.from_arrays(cols, schema=schema)


def _partition_groups(data: pa.Table, parts: list[str]) -> list[tuple[tuple[Any, ...], pa.Table]]:
    if not parts:
        return [((), data)]
    order = pc.sort_indices(data, sort_keys=[(c, "ascending", "at_end") for c in parts])
    data = data.take(order)
    keys = list(zip(*(data.column(c).to_pylist() for c in parts), strict=True))
    groups, start = [], 0
    for i in range(1, len(keys) + 1):
        if i == len(keys) or keys[i] != keys[start]:
            groups.append((keys[start], data.slice(start, i - start)))
            start = i
    return groups


def write_data_files(
    storage: Storage, data: pa.Table, parts: list[str], conf: dict[str, str], *, max_rows_per_file: int
) -> list[AddFile]:
    """Write `data` (already conformed) as parquet files; return their add actions (not committed)."""
    adds: list[AddFile] = []
    n_cols = props.num_indexed_cols(conf)
    schema = data.schema
    try:
        for key, group in _partition_groups(data, parts):
            pvals = {
                c: serialize_partition_value(v, schema.field(c).type) for c, v in zip(parts, key, strict=True)
            }
            folder = "".join(f"{c}={hive_escape(pvals[c])}/" for c in parts)
            body = group.drop_columns(parts)
            for offset in range(0, group.num_rows, max_rows_per_file):
                chunk = body.slice(offset, max_rows_per_file)
                rel = f"{folder}part-{len(adds):05d}-{uuid.uuid4()}-c000.snappy.parquet"
                adds.append(_write_one(storage, rel, chunk, pvals, n_cols))
    except BaseException:
        delete_files(storage, adds)
        raise
    return adds


def _write_one(
    storage: Storage, rel: str, chunk: pa.Table, pvals: dict[str, str | None], n_cols: int
) -> AddFile:
    path = storage.full_path(rel)
    parent = path.rsplit("/", 1)[0]
    storage.fs.makedirs(parent, exist_ok=True)
    with storage.fs.open(path, "wb") as f:
        pq.write_table(chunk, f, compression="snappy")
    return AddFile(
        path=rel,
        partition_values=pvals,
        size=int(storage.fs.size(path)),
        modification_time=int(time.time() * 1000),
        data_change=True,
        stats=compute_stats(chunk, num_indexed_cols=n_cols),
    )


def delete_files(storage: Storage, adds: list[AddFile]) -> None:
    for a in adds:
        with contextlib.suppress(OSError):
            storage.delete(a.path)


def write(
    txn: Transaction,
    storage: Storage,
    data: pa.Table,
    *,
    mode: WriteMode,
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
) -> int:
    """Append or overwrite through `txn` (which the caller created); returns the committed version."""
    one_of("mode", mode, WriteMode)
    snap = txn.snapshot
    conformed = conform_to_schema(data, snap.schema)
    adds = write_data_files(
        storage, conformed, snap.partition_columns, snap.properties, max_rows_per_file=max_rows_per_file
    )
    try:
        removed = txn.read_files() if mode == "overwrite" else []
        for f in removed:
            txn.remove(f)
        for a in adds:
            txn.add(a)
        metrics = {
            "numFiles": len(adds),
            "numOutputRows": conformed.num_rows,
            "numOutputBytes": sum(a.size for a in adds),
        }
        if mode == "overwrite":
            metrics["numRemovedFiles"] = len(removed)
        return txn.commit(metrics=metrics)
    except BaseException as exc:
        # Only when the commit certainly did not happen: an I/O error during the put may hide a
        # commit that landed, and deleting its files would corrupt that version.
        if txn.attempts == 0 or isinstance(exc, CommitConflictError | CommitRetriesExceededError):
            delete_files(storage, adds)
        raise


def write_parameters(mode: WriteMode, partition_columns: list[str]) -> dict[str, Any]:
    return {"mode": mode.capitalize(), "partitionBy": orjson.dumps(partition_columns).decode()}
