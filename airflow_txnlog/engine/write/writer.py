"""The embedded pyarrow writer: append / overwrite a `pyarrow.Table` as parquet files plus one commit.

1. conform the data to the table schema (same columns and types; missing nullable columns become
   null; anything else is a `SchemaMismatchError` before a byte is written). Types are compared
   without their nullability; then:
   - timestamps finer than the table's microseconds (`timestamp[ns]`, at any depth) are cast to
     microseconds by dropping the sub-microsecond digits: the value is floored to its whole
     microsecond (so 1969-12-31 23:59:59.999999999 stays in 1969), as Spark's microsecond clock
     reads it. Coarser units (s, ms) convert exactly. Every other cast is safe: a value that would
     change (an overflow, say) is a `SchemaMismatchError`, never a raw Arrow error;
   - a NOT NULL field, top-level or nested (`s.x`, `a.element`, `m.value`), must hold a value
     wherever its enclosing structs do (Delta's rule: a null struct does not violate its fields'
     NOT NULL); the error names every such field. Nulls left under null structs get a placeholder
     value (pyarrow refuses them in a NOT NULL field; no reader ever sees them);
   - CHAR(n) / VARCHAR(n) columns (`__CHAR_VARCHAR_TYPE_STRING`) keep Spark's length rule: trailing
     spaces past n trimmed, CHAR padded to n, a longer value refused (engine.features.char_varchar);
     then identity values are generated and generated columns computed (`prepare_rows`);
2. split rows by partition values and serialize every partition value first (a binary value that is
   not UTF-8 has no partition form: `InvalidArgumentError` before anything is written), then write
   one parquet file per partition (split every `max_rows_per_file` rows) under `col=value/` folders
   escaped as Spark does, partition columns left out of the files; collect size and stats for each
   file from the data in memory (leaves chosen by `delta.dataSkippingStatsColumns`, else
   `delta.dataSkippingNumIndexedCols`, both parsed before anything is written). On a column-mapped
   table the files, folders, partition values and stats use the physical names, and the parquet
   schema carries every field's id (`column_mapping.Names.to_files`);
3. commit adds (and, for overwrite, removes of every live file) in one transaction. If the commit
   fails, the files written are deleted again (best effort: vacuum reclaims leftovers).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import decimal
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from airflow_txnlog.engine import properties as props
from airflow_txnlog.engine.errors import (
    CommitConflictError,
    CommitRetriesExceededError,
    InvalidArgumentError,
    MetadataChangedError,
    SchemaMismatchError,
    StorageError,
)
from airflow_txnlog.engine.features import (
    char_varchar,
    column_defaults,
    column_mapping,
    constraints,
    generated,
    iceberg_compat,
    identity,
    variant,
)
from airflow_txnlog.engine.log.actions import AddFile, Metadata
from airflow_txnlog.engine.log.stats import LeafPath, compute_stats, stats_columns
from airflow_txnlog.engine.schema import hive_escape, normalize_schema, serialize_partition_value
from airflow_txnlog.engine.storage import Storage
from airflow_txnlog.engine.store_errors import as_os_error
from airflow_txnlog.engine.validate import WriteMode, one_of
from airflow_txnlog.engine.write.transaction import Transaction

DEFAULT_MAX_ROWS_PER_FILE = 1_000_000
IDENTITY_ATTEMPTS = 50  # writes lost to other identity writers before giving up


def conform_to_schema(data: pa.Table, schema: pa.Schema) -> pa.Table:
    """`data` with exactly the table's columns and types, or SchemaMismatchError saying why."""
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if not isinstance(data, pa.Table):
        raise InvalidArgumentError(f"data must be a pyarrow.Table or RecordBatch, got {type(data).__name__}")
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
            cols.append(_strict(pa.chunked_array([pa.nulls(data.num_rows, _all_nullable(f.type))]), f.type))
            continue
        got = variant.like(have.field(f.name).type, f.type)  # (Spark's Arrow variant is one too)
        col, col_problems = _conform_column(data.column(f.name), got, f)
        problems += col_problems
        cols.append(col)
    if problems:
        raise SchemaMismatchError("data does not match the table schema: " + "; ".join(problems))
    return pa.Table.from_arrays(cols, schema=schema)


def _conform_column(col: pa.ChunkedArray, got: pa.DataType, f: pa.Field) -> tuple[Any, list[str]]:
    """`col` as the table's field `f` (its normalized type is `got`), or the problems found."""
    loose = _all_nullable(f.type)
    if _all_nullable(got) != loose:
        return None, [f"column {f.name!r} has type {got}, the table has {f.type}"]
    try:
        chunks = [_floor_nanos(c) for c in col.chunks]
        col = pc.cast(
            pa.chunked_array(chunks, col.type), options=pc.CastOptions(loose, allow_time_truncate=True)
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        return None, [f"column {f.name!r} cannot be stored as {f.type}: {exc}"]
    nulls: dict[str, int] = {}
    for chunk in col.chunks:
        _null_violations(chunk, f, f.name, 0, nulls)
    if nulls:
        return None, [f"non-nullable column {p!r} has {n} null values" for p, n in nulls.items()]
    return _strict(col, f.type), []


def _strict(col: pa.ChunkedArray, t: pa.DataType) -> pa.ChunkedArray:
    """`col` (of `_all_nullable(t)`, NOT NULL already checked) as type `t`: only nullability changes."""
    return pa.chunked_array([_fill_masked(c, t) for c in col.chunks], col.type).cast(t)


def _fill_masked(arr: pa.Array, t: pa.DataType) -> pa.Array:
    """Struct `arr` with the nulls of NOT NULL fields under null structs (the only ones left) given a
    placeholder value: pyarrow refuses them in a cast or a parquet write, and no reader sees them.
    Lists and maps: the same inside their values (a NULL element of an array of variants)."""
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        return _fill_masked_values(arr, t)
    if not pa.types.is_struct(t) or not any(_has_not_null(t.field(i)) for i in range(t.num_fields)):
        return arr
    children = []
    for i in range(t.num_fields):
        child = _fill_masked(arr.field(i), t.field(i).type)
        if not t.field(i).nullable and child.null_count:
            child = pc.fill_null(child, pa.scalar(_placeholder(child.type), child.type))
        children.append(child)
    fields = [arr.type.field(i) for i in range(t.num_fields)]
    return pa.StructArray.from_arrays(children, fields=fields, mask=arr.is_null() if arr.null_count else None)


def _fill_masked_values(arr: pa.Array, t: pa.DataType) -> pa.Array:
    inner = t.item_field if pa.types.is_map(t) else t.value_field
    if not _has_not_null(inner) or len(arr) == 0:
        return arr
    # (rebuilt from offsets re-based to 0 and the children sliced to match: an array that is a
    # slice of another has offsets into its parent's whole children)
    offsets = arr.offsets
    start, stop = offsets[0].as_py(), offsets[-1].as_py()
    rebased = pc.subtract(offsets, pa.scalar(start, offsets.type))
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_map(t):
        keys, items = arr.keys.slice(start, stop - start), arr.items.slice(start, stop - start)
        items = _fill_masked(items, t.item_type)
        return pa.MapArray.from_arrays(rebased, keys, items, type=arr.type, mask=mask)
    values = _fill_masked(arr.values.slice(start, stop - start), t.value_type)
    cls = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
    return cls.from_arrays(rebased, values, type=arr.type, mask=mask)


def _has_not_null(f: pa.Field) -> bool:
    """Whether `f` or a field inside it (struct field, list element, map value) is NOT NULL."""
    t = f.type
    if pa.types.is_struct(t):
        nested = any(_has_not_null(t.field(i)) for i in range(t.num_fields))
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        nested = _has_not_null(t.value_field)
    elif pa.types.is_map(t):
        nested = _has_not_null(t.item_field)
    else:
        nested = False
    return not f.nullable or nested


def _placeholder(t: pa.DataType) -> Any:
    """Some non-null Python value of type `t`."""
    if pa.types.is_struct(t):
        return {t.field(i).name: _placeholder(t.field(i).type) for i in range(t.num_fields)}
    if pa.types.is_timestamp(t):
        return dt.datetime(1970, 1, 1, tzinfo=dt.UTC if t.tz is not None else None)
    if pa.types.is_date(t):
        return dt.date(1970, 1, 1)
    if pa.types.is_decimal(t):
        return decimal.Decimal(0)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return ""
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return b"\0" * (t.byte_width if pa.types.is_fixed_size_binary(t) else 0)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        return []
    return False if pa.types.is_boolean(t) else 0


def _all_nullable(t: pa.DataType) -> pa.DataType:
    """`t` with every nested field nullable (types are compared without their nullability)."""
    if pa.types.is_struct(t):
        return pa.struct([_all_nullable_field(t.field(i)) for i in range(t.num_fields)])
    if pa.types.is_list(t):
        return pa.list_(_all_nullable_field(t.value_field))
    if pa.types.is_map(t):
        key = pa.field(t.key_field.name, _all_nullable(t.key_type), False)
        return pa.map_(key, _all_nullable_field(t.item_field))
    return t


def _all_nullable_field(f: pa.Field) -> pa.Field:
    return pa.field(f.name, _all_nullable(f.type), True, f.metadata)


def _has_nanos(t: pa.DataType) -> bool:
    if pa.types.is_timestamp(t):
        return bool(t.unit == "ns")
    if pa.types.is_struct(t):
        return any(_has_nanos(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has_nanos(t.value_type)
    if pa.types.is_map(t):
        return _has_nanos(t.key_type) or _has_nanos(t.item_type)
    return False


def _floor_nanos(arr: pa.Array) -> pa.Array:
    """Nanosecond timestamps at any depth floored to whole microseconds: the cast to microseconds
    then drops only zeros (Arrow's own truncating cast rounds toward zero, moving pre-1970 values
    up a microsecond)."""
    t = arr.type
    if not _has_nanos(t):
        return arr
    if pa.types.is_timestamp(t):  # floor as UTC wall time: no time zone rules on the way
        return pc.floor_temporal(arr.view(pa.timestamp("ns")), unit="microsecond").view(t)
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_struct(t):
        children = [_floor_nanos(arr.field(i)) for i in range(t.num_fields)]
        return pa.StructArray.from_arrays(
            children, fields=[t.field(i) for i in range(t.num_fields)], mask=mask
        )
    if pa.types.is_map(t):
        keys, items = _floor_nanos(arr.keys), _floor_nanos(arr.items)
        return pa.MapArray.from_arrays(arr.offsets, keys, items, type=t, mask=mask)
    return type(arr).from_arrays(arr.offsets, _floor_nanos(arr.values), type=t, mask=mask)


def _null_violations(arr: pa.Array, f: pa.Field, path: str, inherited: int, out: dict[str, int]) -> None:
    """Count into `out`, per NOT NULL field, its nulls where every enclosing struct has a value.

    `arr` carries the nulls of its enclosing structs too (`flatten` merges them in), `inherited` of
    them; only the rest are the field's own."""
    if not f.nullable and arr.null_count > inherited:
        out[path] = out.get(path, 0) + arr.null_count - inherited
    t = f.type
    if pa.types.is_struct(t):
        flat = arr.flatten()
        for i in range(t.num_fields):
            child = t.field(i)
            _null_violations(flat[i], child, f"{path}.{child.name}", arr.null_count, out)
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        _null_violations(arr.flatten(), t.value_field, f"{path}.element", 0, out)
    elif pa.types.is_map(t):
        mask = arr.is_null() if arr.null_count else None
        values = pa.ListArray.from_arrays(arr.offsets, arr.items, mask=mask).flatten()
        _null_violations(values, t.item_field, f"{path}.value", 0, out)


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
    storage: Storage,
    data: pa.Table,
    parts: list[str],
    conf: dict[str, str],
    *,
    max_rows_per_file: int,
    names: column_mapping.Names | None = None,
    prefix: str = "",
    hidden: Sequence[str] = (),
) -> list[AddFile]:
    """Write `data` (already conformed) as parquet files; return their add actions (not committed).

    `names`: the table's column mapping; files, partition values and stats then use physical names
    and the files carry parquet field ids. `prefix`: a folder of the table for the files (change
    data files go under `_change_data/`), ending with `/`. `hidden`: columns of `data` outside the
    table's schema (row tracking's materialized ids), written but given no stats."""
    n_cols = props.num_indexed_cols(conf)
    chosen = stats_columns(conf)
    if names is not None:
        data = names.to_files(data)
        parts = [names.physical_of(c) for c in parts]
        chosen = None if chosen is None else [names.physical_path(p) for p in chosen]
    schema = data.schema
    # Every partition value is serialized before the first file: a value without a log form must
    # leave the table folder untouched.
    planned = [
        (
            {
                c: serialize_partition_value(v, schema.field(c).type, c)
                for c, v in zip(parts, key, strict=True)
            },
            group,
        )
        for key, group in _partition_groups(data, parts)
    ]
    adds: list[AddFile] = []
    # icebergCompatV2: partition values stay in the files too (given no stats: Delta's are per file)
    iceberg = props.TableProperties(conf).iceberg_compat_v2 and not prefix
    tags, unseen = (iceberg_compat.TAGS, [*hidden, *parts]) if iceberg else (None, hidden)
    try:
        for pvals, group in planned:
            folder = prefix + "".join(f"{c}={hive_escape(pvals[c])}/" for c in parts)
            body = group if iceberg else group.drop_columns(parts)
            for offset in range(0, group.num_rows, max_rows_per_file):
                chunk = body.slice(offset, max_rows_per_file)
                rel = f"{folder}part-{len(adds):05d}-{uuid.uuid4()}-c000.snappy.parquet"
                add = _write_one(storage, rel, chunk, pvals, n_cols=n_cols, chosen=chosen, hidden=unseen)
                adds.append(dataclasses.replace(add, tags=tags) if tags else add)
    except BaseException:
        delete_files(storage, adds)
        raise
    return adds


def _write_one(
    storage: Storage,
    rel: str,
    chunk: pa.Table,
    pvals: dict[str, str | None],
    *,
    n_cols: int,
    chosen: list[LeafPath] | None,
    hidden: Sequence[str] = (),
) -> AddFile:
    path = storage.full_path(rel)
    parent = path.rsplit("/", 1)[0]
    try:
        storage.fs.makedirs(parent, exist_ok=True)
        with storage.fs.open(path, "wb") as f:
            pq.write_table(variant.to_files(chunk), f, compression="snappy")
        size = int(storage.fs.size(path))
    except Exception as exc:  # adlfs raises RuntimeError from an Azure error: a store error too
        cause = exc if isinstance(exc, OSError) else as_os_error(storage.root, rel, exc)
        if cause is None:
            raise
        raise StorageError(f"cannot write data file {rel!r} of {storage.root!r}: {cause}") from exc
    return AddFile(
        path=rel,
        partition_values=pvals,
        size=size,
        modification_time=int(time.time() * 1000),
        data_change=True,
        stats=compute_stats(
            chunk.drop_columns([h for h in hidden if h in chunk.column_names]),
            num_indexed_cols=n_cols,
            stats_columns=chosen,
        ),
    )


def conform_rows(
    data: pa.Table,
    schema: pa.Schema,
    generated_columns: Mapping[str, str],
    defaults: Mapping[str, str] | None = None,
) -> pa.Table:
    """`conform_to_schema`, with the generated columns (column -> expression, as
    `engine.features.generated.enforced` gives them) the data lacks computed from their expressions,
    and the defaulted ones (`engine.features.column_defaults.enforced`) it lacks filled."""
    return prepare_rows(data, schema, generated_columns, [], defaults)[0]


def prepare_rows(
    data: pa.Table,
    schema: pa.Schema,
    generated_columns: Mapping[str, str],
    identities: list[identity.Identity],
    defaults: Mapping[str, str] | None = None,
) -> tuple[pa.Table, dict[str, int]]:
    """(`data` conformed, the defaulted columns it lacks filled with their defaults, CHAR / VARCHAR
    values trimmed and padded, identity values generated, then generated columns computed; the
    identity columns' new high-water marks)."""
    if isinstance(data, pa.RecordBatch):  # (a batch is rows like a table's: numbered and filled too)
        data = pa.Table.from_batches([data])
    if not isinstance(data, pa.Table):
        return conform_to_schema(data, schema), {}  # (refused, saying what it takes)
    missing = generated.missing(generated_columns, data.column_names)
    absent = column_defaults.missing(defaults or {}, data.column_names)
    ids = [i.column for i in identities]
    identity.refuse_generated(identities, generated_columns)
    conformed = conform_to_schema(data, generated.relaxed(schema, missing + ids + absent))
    conformed = column_defaults.fill(conformed, schema, defaults or {}, absent)
    conformed = char_varchar.enforce(conformed, schema)
    conformed, marks = identity.fill(conformed, identities, schema)
    return generated.fill(conformed, schema, generated_columns, missing), marks


def write_retrying(
    begin: Callable[[], Transaction],
    latest: Callable[[], Metadata],
    storage: Storage,
    data: pa.Table,
    *,
    mode: WriteMode,
) -> int:
    """`write` on `begin()`'s transaction; when the commit lost only to other identity writers (the
    winners moved high-water marks, nothing else), its values would repeat theirs: write again on a
    fresh transaction, generating past the new marks (Delta on Spark fails such a writer instead)."""
    for _ in range(IDENTITY_ATTEMPTS):
        txn = begin()
        try:
            return write(txn, storage, data, mode=mode)
        except MetadataChangedError:
            if not identity.lost_race(txn.snapshot.metadata, latest()):
                raise
    raise CommitRetriesExceededError(
        f"other identity writers kept committing first ({IDENTITY_ATTEMPTS} attempts); nothing was "
        "committed. Help: retry later"
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
    # (compiled before a byte is written: one the engine cannot evaluate is refused, never skipped)
    rules = constraints.compile_rules(constraints.rules(snap.metadata, snap.protocol), snap.schema)
    identities = identity.of_metadata(snap.metadata)
    computed = generated.enforced(snap.metadata, snap.protocol)
    defaults = column_defaults.enforced(snap.metadata, snap.protocol)
    conformed, marks = prepare_rows(data, snap.schema, computed, identities, defaults)
    variant.check(conformed)  # (the caller's bytes; Spark's VariantType values skip this path)
    constraints.check_rows(rules, conformed)
    txn.record_identity_marks(marks)
    adds = write_data_files(
        storage,
        conformed,
        snap.partition_columns,
        snap.properties,
        max_rows_per_file=max_rows_per_file,
        names=snap.column_names,
    )
    try:
        removed = txn.read_files() if mode == "overwrite" else []
        for f in removed:
            txn.remove(f)
        for a in adds:
            txn.add(a)
        txn.rows_checked()
        txn.rows_preserved()  # (row tracking: whole files replaced, new rows inserted, none copied)
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
