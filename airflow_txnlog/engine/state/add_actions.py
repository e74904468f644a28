"""The live files of a snapshot as one Arrow table, in delta-rs's `get_add_actions(flatten=True)` layout.

`file_table(base, tail, metadata)` builds it in bulk from the replayed state: the checkpoint's live add
rows (an Arrow struct array) and the JSON commits' adds (dicts, converted to Arrow once by pyarrow's
C++ converter). Columns, one row per live file, base rows first then tail adds (the order of
`Snapshot.files()`):

    path (decoded) | size_bytes | modification_time | data_change | num_records
    | null_count.<col> | min.<col> | max.<col>     (nested leaves dotted: min.s.x)
    | partitionValues (the raw string map; `typed_partitions` turns it into partition.<col>)

The stats columns follow `stats_struct.stats_parsed_type(metadata)` (each column's own type; the
columns the table's stats settings index). A row's stats come from the checkpoint's `stats_parsed`
where the writer left it (read as its JSON rendering says: non-finite floats dropped, timestamps
floored to ms), else from its JSON `stats`, parsed in bulk (`stats_struct.parse_stats_exact`). A
checkpoint without `stats_parsed` has its JSON stats read and parsed batch by batch on worker threads
(`LogState.live_base_add_derived`), started before the other fields are read, so the parse, the bulk
of the work, runs beside everything else. The text itself is not kept where the parse shows the struct
holds all of it (`parse_stats_complete`: no key outside the stats schema, every value of its type): the
`AddFile`s a later `files()` makes render it from the struct, as for a checkpoint's `stats_parsed`;
elsewhere it is kept compressed (`KeepField`). The parsed struct is handed back too
(`FileTable.parsed_base_stats`), so a checkpoint of the same snapshot need not parse it again.
The table is two parts, the checkpoint's rows then the tail's adds, each column's chunks used as
read or parsed (the parsed stats a chunk per batch), never copied to append the tail or to join the
batches.
Partition values are typed per distinct value with `schema.parse_partition_value` (hive null,
dates, timestamps, binary as UTF-8 as everywhere else), then spread to the rows with `take`: a table
has few distinct partition values, so this is the only Python work per value, never per file.
The one per-file Python step is decoding the rare percent-encoded path (`urllib.parse.unquote`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_txnlog.engine.features.column_mapping import (
    Names,
    logical_view,
    physical_metadata,
    rename_map_keys,
)
from airflow_txnlog.engine.log.actions import (
    ADD,
    STATS_PARSED,
    Metadata,
)
from airflow_txnlog.engine.log.kept_fields import KeepField
from airflow_txnlog.engine.log.replay import STR_MAP, LogState
from airflow_txnlog.engine.log.stats_struct import (
    conform_struct,
    field_names,
    may_contain,
    parse_stats_complete,
    parse_stats_exact,
    reads_exactly,
    stats_parsed_type,
    struct_json,
)
from airflow_txnlog.engine.log.thread_pools import early_parse
from airflow_txnlog.engine.schema import parse_partition_value

PARTITION_VALUES = "partitionValues"  # internal column: the raw partition value strings
_CORE = pa.struct(
    [
        ("path", pa.string()),
        (PARTITION_VALUES, STR_MAP),
        ("size", pa.int64()),
        ("modificationTime", pa.int64()),
        ("dataChange", pa.bool_()),
        ("stats", pa.string()),
    ]
)
BaseRows = Callable[[Sequence[str]], pa.StructArray | None]
# LogState.live_base_add_derived:
Derived = Callable[[str, Callable[[pa.Array], pa.Array]], pa.Array | pa.ChunkedArray | None]
_STATS_PARTS = (("null_count", "nullCount"), ("min", "minValues"), ("max", "maxValues"))


def _core(base: pa.StructArray | None, tail: list[dict[str, Any]]) -> tuple[pa.StructArray, pa.StructArray]:
    """(the checkpoint's rows, the tail's adds) in `_CORE`: kept apart, so the checkpoint's columns
    are used as read (no copy); the file table is the two parts' tables, chunk after chunk."""
    # (missing keys become nulls, extra keys are ignored: pyarrow converts the dicts in C++)
    return conform_struct(base, _CORE), pa.array(tail, type=_CORE)


def _decoded(paths: pa.Array) -> pa.Array:
    if not may_contain(paths, b"%"):  # the common case, decided by one buffer scan
        return paths
    encoded = pc.fill_null(pc.match_substring(paths, "%"), False)
    if not pc.any(encoded).as_py():
        return paths
    fixed = [unquote(p) for p in paths.filter(encoded).to_pylist()]
    return pc.replace_with_mask(paths, encoded, pa.array(fixed, pa.string()))


def as_json_says(arr: pa.Array) -> pa.Array:
    """A `stats_parsed` leaf as its JSON rendering (`stats_struct.struct_json`) says it: infinite or
    NaN floats dropped, timestamps floored to milliseconds, so both forms of stats bound alike."""
    t = arr.type
    if pa.types.is_struct(t):
        children = [as_json_says(c) for c in arr.flatten()]
        return pa.StructArray.from_arrays(children, fields=list(t), mask=pc.invert(arr.is_valid()))
    if pa.types.is_floating(t):
        return pc.if_else(pc.is_finite(arr), arr, pa.nulls(1, t)[0])
    if pa.types.is_timestamp(t):
        return pc.floor_temporal(arr, unit="millisecond")
    return arr


def parsed_base(
    base: pa.StructArray | None, target: pa.StructType, *, complete: bool = False
) -> pa.StructArray | None:
    """The checkpoint's `stats_parsed` in `target`, None where absent or of a type we cannot cast
    (and, with `complete`, where it lacks a leaf of `target`: a writer that collected fewer stats)."""
    if base is None or STATS_PARSED not in field_names(base.type):
        return None
    if complete and not _covers(base.type.field(STATS_PARSED).type, target):
        return None
    try:
        return as_json_says(conform_struct(base.field(STATS_PARSED), target))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None  # a writer's struct we cannot cast: its JSON stats are used instead


def _covers(t: pa.DataType, target: pa.DataType) -> bool:
    """Does `t` have every (nested) field of the struct type `target`?"""
    if not pa.types.is_struct(target):
        return True
    if not pa.types.is_struct(t):
        return False
    names = field_names(t)
    return all(f.name in names and _covers(t.field(f.name).type, f.type) for f in target)


NUM_RECORDS_ONLY = pa.struct([pa.field("numRecords", pa.int64())])
# Every writer we know (Delta on Spark, delta-rs, Kernel, this engine) writes numRecords first: a
# string starting so has it at the top level, and no JSON parse is needed to read it.
_LEADING_NUM_RECORDS = r'^\{"numRecords":(?P<numRecords>[0-9]{1,18})[,}]'


def _parse(text: pa.Array, target: pa.StructType) -> pa.StructArray:
    """`parse_stats_exact`, with a fast path for numRecords alone: read by a regex where the string
    starts with it, parsed exactly (as JSON) wherever it does not (other key order, whitespace)."""
    if target != NUM_RECORDS_ONLY or len(text) == 0:
        return parse_stats_exact(text, target)
    found = pc.extract_regex(text, _LEADING_NUM_RECORDS)
    fast = pc.struct_field(found, "numRecords").cast(pa.int64())
    slow = pc.and_(text.is_valid(), found.is_null())
    if pc.any(slow).as_py():
        exact = parse_stats_exact(text.filter(slow), target).field("numRecords")
        fast = pc.replace_with_mask(fast, slow, exact)
    return pa.StructArray.from_arrays([fast], fields=list(NUM_RECORDS_ONLY))


def _text_parsed(derived: Derived, target: pa.StructType) -> pa.Array | None:
    """The live checkpoint rows' JSON stats parsed into `target`, batch by batch (`derived`: read
    while earlier batches are parsed on worker threads). The text is kept as a read of it would
    keep it (`AddFile`s need it), except for numRecords alone (the planner's summary: never kept)."""

    def parse(text: pa.Array) -> pa.Array:
        return _parse(text.cast(pa.string()), target)

    if target == NUM_RECORDS_ONLY:
        return derived("stats", parse)
    strict = [True]  # (off after a batch with keys the struct lacks: the rest would be parsed twice)

    def exact(text: pa.Array) -> tuple[pa.Array, bool]:
        parsed = parse_stats_complete(text, target) if strict[0] else None
        if parsed is None:
            strict[0] = False
            return parse(text), False
        return parsed, True

    return derived("stats", KeepField(parse, exact=exact, render=struct_json))


def _stats(
    base: pa.StructArray | None,
    tail_text: pa.Array,
    base_rows: BaseRows,
    target: pa.StructType,
    derived: Derived | None = None,
    *,
    early: Future[pa.Array | None] | None = None,
) -> tuple[pa.StructArray, pa.StructArray]:
    """Typed stats of (the checkpoint's rows, the tail's adds): the checkpoint's `stats_parsed` where
    present, else the JSON parsed in bulk. The checkpoint's JSON `stats` column is read only when
    some row has no `stats_parsed`; through `derived` (`_text_parsed`, or its result `early` when
    the caller started it) when the checkpoint has no `stats_parsed` at all."""
    n_base = 0 if base is None else len(base)
    tail = _parse(tail_text, target)
    parsed = parsed_base(base, target)
    if parsed is not None and parsed.null_count == 0:
        return parsed, tail
    if parsed is None and n_base and derived is not None:
        from_text = early.result() if early is not None else _text_parsed(derived, target)
        if from_text is not None and len(from_text) == n_base:
            return from_text, tail
    base_text = pa.nulls(n_base, pa.string())
    if n_base:
        rows = base_rows(["stats"])
        if rows is not None and rows.type.get_field_index("stats") >= 0:
            base_text = rows.field("stats").cast(pa.string())
    if parsed is not None:
        base_text = pc.if_else(parsed.is_valid(), pa.nulls(1, pa.string())[0], base_text)
    from_json = _parse(base_text, target)
    return (from_json if parsed is None else pc.if_else(parsed.is_valid(), parsed, from_json)), tail


def _flatten(arr: pa.StructArray, prefix: str) -> list[tuple[str, pa.Array]]:
    out: list[tuple[str, pa.Array]] = []
    for i, child in enumerate(arr.flatten()):  # flatten: a null parent makes its children null
        name = f"{prefix}.{arr.type.field(i).name}"
        out.extend(_flatten(child, name) if pa.types.is_struct(child.type) else [(name, child)])
    return out


def _leaf_paths(t: pa.StructType) -> list[str]:
    """The dotted paths of `t`'s fields, one level into each struct (`minValues.id`, `numRecords`)."""
    return [f"{f.name}.{c.name}" for f in t if pa.types.is_struct(f.type) for c in f.type] + [
        f.name for f in t if not pa.types.is_struct(f.type)
    ]


def _only(target: pa.StructType, columns: frozenset[str]) -> pa.StructType:
    """`target` (a stats_parsed type) keeping only the top-level columns in `columns`."""
    fields = []
    for f in target:
        if pa.types.is_struct(f.type):
            kept = [c for c in f.type if c.name in columns]
            if kept:
                fields.append(pa.field(f.name, pa.struct(kept)))
        else:
            fields.append(f)
    return pa.struct(fields)


def _fields(
    metadata: Metadata, target: pa.StructType, columns: frozenset[str] | None, with_files: bool
) -> list[str]:
    """The checkpoint add fields a `file_table` reads (dotted: only those stats leaves)."""
    if columns is None:
        return [*_CORE.names[:-1], STATS_PARSED]
    # (no paths unless `with_files`: a pruning mask needs only the stats leaves)
    fields = [f"{STATS_PARSED}.{leaf}" for leaf in _leaf_paths(target)]
    if with_files:
        fields += [n for n in _CORE.names if n != "stats"]
    elif columns & set(metadata.partition_columns):
        fields.append(PARTITION_VALUES)
    return fields


def _stats_types(
    metadata: Metadata, columns: frozenset[str] | None, names: Names | None, with_files: bool
) -> tuple[pa.StructType, pa.StructType]:
    """(the stats struct as the log names its columns, the same in logical names) for a file table."""
    meta = physical_metadata(metadata) if names is not None else None
    logical = stats_parsed_type(metadata)
    target = stats_parsed_type(meta) if meta is not None else logical
    if columns is not None:
        physical_cols = frozenset(names.physical_of(c) for c in columns) if names is not None else columns
        target, logical = _only(target, physical_cols), _only(logical, columns)
        if with_files and not columns:  # the files alone: only numRecords of their stats
            target = logical = NUM_RECORDS_ONLY
    return target, logical


@dataclass(frozen=True)
class FileTable:
    """A `file_table`, and the live checkpoint rows' stats as parsed from their JSON text for it
    (`parsed_base_stats`, the log's own struct: physical names) where that is exactly what a
    checkpoint of the same state writes as `stats_parsed` (`parse_stats`), so a checkpoint written
    after it need not parse them again; None otherwise (a checkpoint with `stats_parsed`, float32
    bounds, a narrow table)."""

    table: pa.Table
    parsed_base_stats: pa.Array | pa.ChunkedArray | None = None


def file_table(
    base_rows: BaseRows,
    tail: list[dict[str, Any]],
    metadata: Metadata,
    *,
    columns: frozenset[str] | None = None,
    names: Names | None = None,
    with_files: bool = False,
    derived: Derived | None = None,
    json_only: bool = False,
) -> FileTable:
    """The live files as one table (see the module doc); `partitionValues` still raw strings.

    :param base_rows: the checkpoint's live add rows with the given fields (`LogState.live_base_adds`).
    :param columns: only the stats of these columns (and the partition values if one of them is a
        partition column): the narrow table data skipping needs; the other columns are null.
    :param names: column mapping: the log's stats and partition values use physical names; they are
        read as such and the table comes out in logical names.
    :param derived: a field of the checkpoint rows turned into something smaller batch by batch
        (`LogState.live_base_add_derived`): the JSON stats parsed without keeping their text.
    :param json_only: the checkpoint has no `stats_parsed`: its JSON stats are parsed (`derived`, on
        other threads) while the other fields are read and assembled here.
    """
    target, logical = _stats_types(metadata, columns, names, with_files)
    early = None
    if json_only and derived is not None:
        early = early_parse().submit(_text_parsed, derived, target)  # (a kept thread)
    try:
        base = base_rows(_fields(metadata, target, columns, with_files))
        parts = _core(base, tail)
        files = [_file_columns(core) for core in parts]
        stats = _stats(base, parts[1].field("stats"), base_rows, target, derived, early=early)
    finally:
        if early is not None and not early.cancel():
            early.exception()  # (a failure here leaves no parse running behind the caller's back)
    renames = {names.physical_of(c): c for c in metadata.partition_columns} if names is not None else None
    tables = [
        _part_table(cols, logical_view(st, logical), core.field(PARTITION_VALUES), renames)
        for cols, st, core in zip(files, stats, parts, strict=True)
    ]
    # (json_only: no row has `stats_parsed`, so each one's stats are its JSON parsed, all in one type)
    reused = json_only and columns is None and target != NUM_RECORDS_ONLY and reads_exactly(target)
    # (zero-copy: each column two chunks)
    return FileTable(pa.concat_tables(tables), stats[0] if reused else None)


def _file_columns(core: pa.StructArray) -> list[tuple[str, pa.Array]]:
    """The file columns of a file table part (see the module doc), before its stats."""
    return [
        ("path", _decoded(core.field("path"))),
        ("size_bytes", pc.fill_null(core.field("size"), 0)),
        ("modification_time", pc.fill_null(core.field("modificationTime"), 0)),
        ("data_change", pc.fill_null(core.field("dataChange"), True)),
    ]


def _part_table(
    cols: list[tuple[str, pa.Array]], stats: pa.StructArray, values: pa.Array, renames: dict[str, str] | None
) -> pa.Table:
    """A file table part: its file columns, its stats flattened, its raw partition values."""
    by_name = dict(zip(stats.type.names, stats.flatten(), strict=True))
    cols = [*cols, ("num_records", by_name["numRecords"])]
    for prefix, key in _STATS_PARTS:
        if key in by_name:
            cols.extend(_flatten(by_name[key], prefix))
    if renames is not None:
        values = rename_map_keys(values, renames)
    cols.append((PARTITION_VALUES, values))
    return pa.table(dict(cols))


def json_stats_only(state: LogState) -> bool:
    """Is the state's checkpoint without `stats_parsed` (its stats JSON text only)? (`file_table`'s
    `json_only`.)"""
    return state.source is not None and STATS_PARSED not in state.source.field_names(ADD)


def raw_partition(table: pa.Table, column: str) -> pa.Array:
    """Per file the partition value string of `column` (null where absent)."""
    values = table.column(PARTITION_VALUES)
    return partition_lookup(values.chunk(0) if values.num_chunks == 1 else values.combine_chunks(), column)


def partition_lookup(values: pa.Array, column: str) -> pa.Array:
    """Per row of a `partitionValues` map column, the value string of `column` (null where absent).

    Fast path: when every row's map holds `column` exactly once (the normal case: the hits fall one
    in each row, in row order), the items at the hits are the answer; otherwise `map_lookup`,
    several times slower."""
    if len(values) == 0:
        return pa.array([], pa.string())
    if values.offset == 0 and values.null_count == 0 and len(values.keys) >= len(values):
        key = pa.array([column], pa.string())[0]  # (a scalar made so: pa.scalar would import pandas)
        hits = np.flatnonzero(pc.equal(values.keys, key).to_numpy(zero_copy_only=False))
        if len(hits) == len(values):
            offsets = values.offsets.to_numpy()
            # (as many ascending hits as rows: one in each row, in row order, iff the i-th lies in
            # row i's entries; two comparisons, where finding each hit's row was a binary search)
            if (hits >= offsets[:-1]).all() and (hits < offsets[1:]).all():
                return values.items.take(pa.array(hits)).cast(pa.string())
    return pc.map_lookup(values, column, "first")


def parsed_partition(raw: pa.Array, t: pa.DataType) -> tuple[list[Any], pa.Array]:
    """(distinct values parsed with `parse_partition_value`, per-file index into them)."""
    encoded = raw.dictionary_encode()
    return [parse_partition_value(v, t) for v in encoded.dictionary.to_pylist()], encoded.indices


def typed_partition(raw: pa.Array, t: pa.DataType) -> pa.Array:
    """The partition values of one column in its type (raises for a value that is not of the type)."""
    if pa.types.is_string(t):
        return pc.if_else(pc.equal(raw, ""), pa.nulls(1, pa.string())[0], raw)
    values, indices = parsed_partition(raw, t)
    if pa.types.is_floating(t):  # a double rounded to the column's type, as a C cast does
        return pa.array(values, pa.float64()).cast(t).take(indices)
    return pa.array(values, t).take(indices)


def add_actions_table(files: pa.Table, schema: pa.Schema, partition_columns: list[str]) -> pa.Table:
    """`files` (a `file_table`) with `partitionValues` replaced by typed `partition.<col>` columns."""
    out = files.drop_columns([PARTITION_VALUES])
    chunks = files.column(PARTITION_VALUES).chunks  # (typed chunk by chunk: the maps are not joined)
    for c in partition_columns:
        t = schema.field(c).type
        typed = [typed_partition(partition_lookup(chunk, c), t) for chunk in chunks]
        out = out.append_column(f"partition.{c}", pa.chunked_array(typed, t))
    return out
