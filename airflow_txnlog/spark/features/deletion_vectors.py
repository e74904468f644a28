"""DML with deletion vectors (`delta.enableDeletionVectors=true`): mark rows deleted instead of
rewriting the rest of their file.

    positions   one Spark job: the touched files' rows where the condition holds, as
                (`_metadata.file_path`, `_metadata.row_index`) - physical positions in the file, which
                is what a deletion vector holds (rows an existing DV deletes are already dropped by
                the scan, so they are never counted twice)
    in process  the same positions found on the driver with pyarrow, no Spark job
                (`positions_in_process`, DELETE's lever: `dml.delete_local`): each file is read
                through the engine with only the predicate's columns and without its DV, the
                predicate is evaluated on the rows the DV keeps (a deleted row is never evaluated,
                so it can neither count nor raise an ANSI error Spark would not), and the TRUE rows'
                positions are mapped back to the file's
    DV file     the driver unions each file's new positions with its current DV and writes one DV file
                for all of them (engine `write_deletion_vectors`; an orphan until the commit)
    commit      per file: remove (with its old DV) + add of the same path with the new DV, its stats
                kept but marked `tightBounds: false` (min / max may now cover deleted rows)

A file without `numRecords` in its stats cannot carry a DV (the protocol requires the count), so it is
rewritten as without DVs. DELETE, UPDATE and MERGE use this.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from airflow_txnlog.engine import AddFile, FileScan, Predicate, Table
from airflow_txnlog.engine.spi import write_deletion_vectors
from airflow_txnlog.spark.context import TableContext
from airflow_txnlog.spark.read.scan import FILE_COL, ROW_COL, scan

ENABLE = "delta.enableDeletionVectors"


def enabled(ctx: TableContext) -> bool:
    return str(ctx.properties.get(ENABLE, "false")).strip().lower() == "true"


def split(files: Sequence[AddFile]) -> tuple[list[AddFile], list[AddFile]]:
    """(files that can take a DV, files to rewrite: no numRecords in their stats)."""
    ok = [f for f in files if f.num_records is not None]
    return ok, [f for f in files if f.num_records is None]


def positions(ctx: TableContext, files: Sequence[AddFile], condition: Column) -> dict[str, list[int]]:
    """{file path: row positions where `condition` holds} (one Spark job)."""
    if not files:
        return {}
    rows = scan(ctx, files, with_file=True, with_row=True).filter(condition)
    return collect_positions(ctx, files, rows, unique=True)  # (a scan lists each row once)


def collect_positions(
    ctx: TableContext, files: Sequence[AddFile], rows: DataFrame, *, unique: bool = False
) -> dict[str, list[int]]:
    """{file path: row positions} of `rows` (rows of `files` with `FILE_COL` and `ROW_COL`; a row
    listed twice counts once). `unique`: the caller knows no row is listed twice (no shuffle to
    drop duplicates)."""
    by_uri = {ctx.uri(f): f.path for f in files}
    pairs = rows.select(FILE_COL, ROW_COL)
    if not unique:
        pairs = pairs.distinct()
    grouped = pairs.groupBy(FILE_COL).agg(F.collect_list(ROW_COL).alias("rows")).collect()
    return {by_uri[ctx.file_key(r[FILE_COL])]: list(r["rows"]) for r in grouped}


def positions_in_process(
    ctx: TableContext, table: Table, files: Sequence[AddFile], parsed: Predicate
) -> dict[str, pa.Array]:
    """{file path: positions (uint64) of its live rows where `parsed` is TRUE}, for the files that
    have any, found on the driver (see the module docstring). `parsed` must name a column (a
    constant predicate reads none, and an Arrow table without columns has no rows to evaluate)."""
    if not parsed.columns:
        raise ValueError("a predicate without columns has no rows to evaluate in process")
    scan_ = FileScan(table.uri, table.storage.options or None, ctx.schema, ctx.partition_columns, ctx.names)
    columns = sorted(parsed.columns)

    def one(add: AddFile) -> tuple[str, pa.Array]:
        rows = next(iter(scan_.read([dataclasses.replace(add, deletion_vector=None)], columns)))
        live = None
        if add.deletion_vector:  # (evaluated on the rows the DV keeps; `live` maps them back)
            every = pc.indices_nonzero(pa.repeat(pa.scalar(True), rows.num_rows))
            keep = pc.invert(pc.is_in(every, value_set=_deleted_positions(ctx, add)))
            live, rows = every.filter(keep), rows.filter(keep)
        hit = parsed.matches(rows)
        at = pc.indices_nonzero(hit.combine_chunks() if isinstance(hit, pa.ChunkedArray) else hit)
        return add.path, at if live is None else live.take(at)

    if len(files) == 1:  # (no pool for a single file: D1's selective DELETE)
        found = [one(files[0])]
    else:
        with ThreadPoolExecutor(max_workers=min(8, len(files))) as pool:
            found = list(pool.map(one, files))
    return {path: rows for path, rows in found if len(rows)}


def _loose(stats: str | None) -> str | None:
    if stats is None:
        return None
    doc = json.loads(stats)
    doc["tightBounds"] = False
    return json.dumps(doc, separators=(",", ":"))


def marked(
    ctx: TableContext, table: Table, files: Sequence[AddFile], found: Mapping[str, Sequence[int] | pa.Array]
) -> list[AddFile]:
    """The adds of `files` with their new deletion vectors (existing DV rows kept); `found`: each
    file's new row positions (a list, or an Arrow array from `positions_in_process`)."""
    if ctx.deleted_rows is None:
        raise RuntimeError("a table context without deletion vector access")
    deleted = {}
    for f in files:
        old = _deleted_positions(ctx, f) if f.deletion_vector else pa.array([], pa.uint64())
        new = found.get(f.path, [])
        new = new.cast(pa.uint64()) if isinstance(new, pa.Array) else pa.array(new, pa.uint64())
        # (a bitmap holds a position once; NumPy values, not a Python int per row)
        deleted[f.path] = pa.concat_arrays([old, new]).to_numpy()
    descriptors = write_deletion_vectors(table.storage, deleted)
    return [
        dataclasses.replace(f, deletion_vector=descriptors[f.path], stats=_loose(f.stats), data_change=True)
        for f in files
    ]


def _deleted_positions(ctx: TableContext, add: AddFile) -> pa.Array:
    """Positions (uint64) `add`'s current deletion vector deletes."""
    if ctx.deleted_rows is None:
        raise RuntimeError("a table context without deletion vector access")
    return pa.array(ctx.deleted_rows(add), pa.uint64())
