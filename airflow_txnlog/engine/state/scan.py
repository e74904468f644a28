"""Reading the rows of a set of data files: parquet through pyarrow, partition columns re-attached.

Each file is read with only the requested data columns, filtered with the row predicate, extended
with its partition values as constant columns (typed from the table schema, never parsed from the
path) and conformed to the table schema: columns a file lacks (added later by schema evolution) are
null; INT96 and nanosecond timestamps are converted to microseconds. A file with a deletion vector
is read whole (row positions are the file's) and loses the rows the vector deletes before anything
else is done to it.

The row filter (a compiled `Predicate`, engine.sql.predicates) is evaluated on the conformed columns,
i.e. in the table schema's types, which is what it was typed against: Spark's semantics, ANSI errors
as InvalidArgumentError; a file whose columns Arrow still cannot evaluate is a `PredicateError`,
never a raw Arrow error.

`FileScan` carries what reading needs without the log (schema, partition columns, column mapping,
the storage's URI and options), so files chosen on one machine can be read on another.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_txnlog.engine.errors import LogCorruptedError, PredicateError, SchemaMismatchError
from airflow_txnlog.engine.features import deletion_vectors, row_tracking
from airflow_txnlog.engine.features.column_mapping import Names, to_logical
from airflow_txnlog.engine.log.actions import AddFile
from airflow_txnlog.engine.schema import parse_partition_value
from airflow_txnlog.engine.sql.predicates import Predicate
from airflow_txnlog.engine.storage import Storage, storage_for

_ROW_ID, _ROW_VERSION = "__txnlog_row_id", "__txnlog_row_commit_version"  # (never a table's column)


def _conform_column(arr: pa.ChunkedArray, target: pa.DataType, name: str) -> pa.ChunkedArray:
    if arr.type == target:
        return arr
    try:
        if pa.types.is_timestamp(arr.type) and pa.types.is_timestamp(target):
            # Spark writes INT96 / tz-less values that mean UTC instants; only the unit and zone differ.
            arr = arr.cast(pa.timestamp(arr.type.unit, tz=target.tz))
        return arr.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise SchemaMismatchError(
            f"column {name!r}: file type {arr.type} cannot be read as {target}"
        ) from exc


def _open(storage: Storage, add: AddFile) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(
            storage.fs.open(storage.resolve(add.path), "rb"), coerce_int96_timestamp_unit="us"
        )
    except FileNotFoundError as exc:
        raise LogCorruptedError(f"data file {add.path!r} of a live version is missing") from exc
    except (OSError, pa.ArrowException) as exc:
        raise LogCorruptedError(f"data file {add.path!r} is unreadable: {exc}") from exc


def file_schema(storage: Storage, add: AddFile) -> pa.Schema:
    """The Arrow schema of a data file's parquet footer (only the footer is read)."""
    return _open(storage, add).schema_arrow


def read_file(
    storage: Storage,
    add: AddFile,
    schema: pa.Schema,
    partition_columns: Sequence[str],
    *,
    columns: Sequence[str],
    row_filter: Predicate | None,
    names: Names | None = None,
    row_ids: Mapping[str, str] | None = None,
) -> pa.Table:
    """Rows of one data file as a table with exactly `columns` (in schema types). With `names`
    (column mapping) the file and `add.partitionValues` use physical names; the result is logical.
    With `row_ids` (the table's configuration, row tracking enabled) two more columns follow:
    each row's stable row id and row commit version (engine.features.row_tracking)."""
    data_cols = [c for c in columns if c not in partition_columns]
    filter_cols = [] if row_filter is None else [c for c in schema.names if c not in partition_columns]
    physical = names.physical if names is not None else schema
    phys = {f.name: p.name for f, p in zip(schema, physical, strict=True)}
    pf = _open(storage, add)
    file_schema = pf.schema_arrow
    own = names.file_columns(file_schema) if names is not None else {n: n for n in file_schema.names}
    wanted = [phys[c] for c in dict.fromkeys(data_cols + filter_cols) if phys[c] in own]
    hidden = (
        [] if row_ids is None else [h for h in row_tracking.hidden_columns(row_ids) if h in file_schema.names]
    )
    try:
        table = pf.read(columns=[own[p] for p in wanted])
        extra = pf.read(columns=hidden) if row_ids is not None else None
    except (OSError, pa.ArrowException) as exc:
        raise LogCorruptedError(f"data file {add.path!r} is unreadable: {exc}") from exc
    if names is not None:
        table = names.as_physical(table, file_schema)
    if extra is not None:  # (before the DV: a row's default id is its physical position)
        ids, versions = row_tracking.row_columns(extra, add, row_ids or {}, rows=pf.metadata.num_rows)
        table = table.append_column(_ROW_ID, ids).append_column(_ROW_VERSION, versions)
    if add.deletion_vector:
        table = _without_deleted_rows(storage, add, table)
    n = table.num_rows
    cols: dict[str, pa.ChunkedArray] = {}
    for name in dict.fromkeys(list(columns) + ([] if row_filter is None else list(schema.names))):
        f, p = schema.field(name), physical.field(phys[name])
        if name in partition_columns:
            value = parse_partition_value(add.partition_values.get(p.name), f.type)
            arr = pa.nulls(n, f.type) if value is None else pa.repeat(pa.scalar(value, f.type), n)
            cols[name] = pa.chunked_array([arr], f.type)
        elif p.name in table.column_names:
            cols[name] = to_logical(_conform_column(table.column(p.name), p.type, name), f.type)
        else:
            cols[name] = pa.chunked_array([pa.nulls(n, f.type)], f.type)
    out = pa.Table.from_arrays(list(cols.values()), schema=pa.schema([schema.field(c) for c in cols]))
    tracked = [row_tracking.ROW_ID, row_tracking.ROW_COMMIT_VERSION] if extra is not None else []
    if tracked:
        out = out.append_column(tracked[0], table.column(_ROW_ID)).append_column(
            tracked[1], table.column(_ROW_VERSION)
        )
    if row_filter is not None:
        out = _filter(out, row_filter, schema, add.path)
    return out.select([*columns, *tracked])


def _without_deleted_rows(storage: Storage, add: AddFile, table: pa.Table) -> pa.Table:
    """`table` (every row of the file, in file order) without the rows its deletion vector deletes."""
    assert add.deletion_vector is not None
    deleted = deletion_vectors.deleted_rows(storage, add.deletion_vector, data_file=add.path)
    keep = deletion_vectors.keep_mask(table.num_rows, deleted, data_file=add.path)
    if table.num_columns == 0:  # (only partition columns asked for: the row count is what matters)
        return table.slice(0, int(keep.sum()))
    return table.filter(pa.array(keep))


def _filter(table: pa.Table, row_filter: Predicate, schema: pa.Schema, path: str) -> pa.Table:
    try:
        return row_filter.filter(table)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise PredicateError(f"the row filter cannot be evaluated on data file {path!r}: {exc}") from exc


def read_files(
    storage: Storage,
    files: Sequence[AddFile],
    schema: pa.Schema,
    partition_columns: Sequence[str],
    *,
    columns: Sequence[str] | None = None,
    row_filter: Predicate | None = None,
    names: Names | None = None,
    row_ids: Mapping[str, str] | None = None,
) -> pa.Table:
    """Concatenated rows of `files` (read in parallel threads; pyarrow releases the GIL); with
    `row_ids`, each row's stable row id and commit version too (`read_file`)."""
    cols = list(columns) if columns is not None else list(schema.names)
    unknown = [c for c in cols if c not in schema.names]
    if unknown:
        raise SchemaMismatchError(f"unknown columns {unknown}; the table has {schema.names}")
    out_schema = pa.schema([schema.field(c) for c in cols])
    if row_ids is not None:
        out_schema = out_schema.append(pa.field(row_tracking.ROW_ID, pa.int64())).append(
            pa.field(row_tracking.ROW_COMMIT_VERSION, pa.int64())
        )
    if not files:
        return out_schema.empty_table()
    with ThreadPoolExecutor(max_workers=8) as pool:
        parts = list(
            pool.map(
                lambda a: read_file(
                    storage,
                    a,
                    schema,
                    partition_columns,
                    columns=cols,
                    row_filter=row_filter,
                    names=names,
                    row_ids=row_ids,
                ),
                files,
            )
        )
    return pa.concat_tables(parts).cast(out_schema)


@dataclass(frozen=True)
class FileScan:
    """What reading some of a version's data files needs, without its log: picklable, so a planner
    (a Spark data source on the driver) chooses the files and workers (executors) read them.

    :param uri: the table URI; :param storage_options: its fsspec options (never logged).
    """

    uri: str
    storage_options: Mapping[str, Any] | None = field(repr=False)
    schema: pa.Schema
    partition_columns: tuple[str, ...]
    names: Names | None = None
    row_ids: Mapping[str, str] | None = None  # the table's configuration: row ids too (`read_file`)

    def read(self, files: Sequence[AddFile], columns: Sequence[str] | None = None) -> Iterator[pa.Table]:
        """The rows of each file in turn (deletion vectors applied, partition columns attached,
        logical names, table types), one table per file."""
        storage = storage_for(self.uri, self.storage_options)
        cols = list(columns) if columns is not None else list(self.schema.names)
        for add in files:
            yield read_file(
                storage,
                add,
                self.schema,
                self.partition_columns,
                columns=cols,
                row_filter=None,
                names=self.names,
                row_ids=self.row_ids,
            )
