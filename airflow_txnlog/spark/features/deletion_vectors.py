"""DML with deletion vectors (`delta.enableDeletionVectors=true`): mark rows deleted instead of
rewriting the rest of their file.

    positions   one Spark job: the touched files' rows where the condition holds, as
                (`_metadata.file_path`, `_metadata.row_index`) - physical positions in the file, which
                is what a deletion vector holds (rows an existing DV deletes are already dropped by
                the scan, so they are never counted twice)
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
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from airflow_txnlog.engine import AddFile, Table
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
    return collect_positions(ctx, files, scan(ctx, files, with_file=True, with_row=True).filter(condition))


def collect_positions(ctx: TableContext, files: Sequence[AddFile], rows: DataFrame) -> dict[str, list[int]]:
    """{file path: row positions} of `rows` (rows of `files` with `FILE_COL` and `ROW_COL`; a row
    listed twice counts once)."""
    by_uri = {ctx.uri(f): f.path for f in files}
    grouped = (
        rows.select(FILE_COL, ROW_COL)
        .distinct()
        .groupBy(FILE_COL)
        .agg(F.collect_list(ROW_COL).alias("rows"))
        .collect()
    )
    return {by_uri[ctx.file_key(r[FILE_COL])]: list(r["rows"]) for r in grouped}


def _loose(stats: str | None) -> str | None:
    if stats is None:
        return None
    doc = json.loads(stats)
    doc["tightBounds"] = False
    return json.dumps(doc, separators=(",", ":"))


def marked(
    ctx: TableContext, table: Table, files: Sequence[AddFile], found: dict[str, list[int]]
) -> list[AddFile]:
    """The adds of `files` with their new deletion vectors (existing DV rows kept)."""
    if ctx.deleted_rows is None:
        raise RuntimeError("a table context without deletion vector access")
    deleted = {}
    for f in files:
        old = ctx.deleted_rows(f).tolist() if f.deletion_vector else []
        deleted[f.path] = sorted(set(old) | set(found.get(f.path, ())))
    descriptors = write_deletion_vectors(table.storage, deleted)
    return [
        dataclasses.replace(f, deletion_vector=descriptors[f.path], stats=_loose(f.stats), data_change=True)
        for f in files
    ]
