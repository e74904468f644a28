"""DELETE without Spark, when the files to look at are few and small: the in-process lever.

A selective DELETE (D1 in docs/benchmarks.md: a 20k-row id range of a 5M-row table, one file
touched) spends its time in Spark's fixed cost per job, not in data. When the engine's pruning
leaves candidate files of at most `MAX_BYTES` in total and the predicate has an exact Arrow form,
the driver does the work itself:

    each candidate file -> read through the engine (deletion vectors applied, column mapping,
                           partition values) -> rows where the predicate is TRUE counted
    files with matches  -> rewritten with the rows where it is not TRUE (NULL keeps a row, as in
                           Spark's DELETE) by the engine's writer (stats, physical names), in the
                           file's partition
    then the same commit as the Spark path (removes + adds, Delta's metrics).

"Exact" means the engine's row filter gives Spark SQL's answer for this predicate, so the lever is
taken only when (otherwise Spark runs, as before -- never a different answer):
- the engine parses the predicate (comparisons, IN, BETWEEN, IS NULL, AND / OR / NOT, literals);
- every column it names is an integer, float, decimal, string, boolean or date column, or a
  timestamp column while the session time zone is UTC (a zone-less timestamp literal means the
  session zone to Spark and UTC to the engine); what the engine cannot compute as Spark does (a
  number against a string column, say) it refuses when parsing, and Spark runs;
- the table writes neither deletion vectors nor change data (those paths stay on Spark).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.compute as pc

from airflow_txnlog.engine import AddFile, FileScan, Predicate, Table
from airflow_txnlog.engine.spi import write_data_files
from airflow_txnlog.spark.context import TableContext
from airflow_txnlog.spark.features import deletion_vectors
from airflow_txnlog.spark.read.planning import exact_in_arrow
from airflow_txnlog.spark.read.row_ids import row_id_columns
from airflow_txnlog.spark.write import change_data

MAX_BYTES = 256 * 1024 * 1024
MAX_FILES = 64
_UTC = frozenset({"UTC", "ETC/UTC", "Z", "GMT", "+00:00", "UTC+0", "ETC/GMT"})


def applies(ctx: TableContext, parsed: Predicate | None, candidates: Sequence[AddFile]) -> bool:
    """Whether this DELETE may run in-process (see the module docstring)."""
    if parsed is None or not candidates:
        return False
    if deletion_vectors.enabled(ctx) or change_data.enabled(ctx) or row_id_columns(ctx):
        return False  # (row tracking: the Spark path carries the row ids)
    if len(candidates) > MAX_FILES or sum(f.size for f in candidates) > MAX_BYTES:
        return False
    zone = str(ctx.spark.conf.get("spark.sql.session.timeZone", "UTC") or "UTC").strip().upper()
    utc = zone in _UTC
    return all(exact_in_arrow(ctx.schema.field(c).type, timestamps=utc, floats=True) for c in parsed.columns)


def delete_in_process(
    ctx: TableContext, table: Table, candidates: Sequence[AddFile], parsed: Predicate
) -> tuple[dict[str, int], list[AddFile], list[AddFile]]:
    """({path: deleted rows} of the files with matches, those files, the files replacing them)."""
    scan = FileScan(table.uri, table.storage.options or None, ctx.schema, ctx.partition_columns, ctx.names)

    def one(add: AddFile) -> tuple[AddFile, int, pa.Table]:
        rows = next(iter(scan.read([add])))
        hit = parsed.matches(rows)  # (TRUE only: a NULL result keeps the row, as Spark's DELETE)
        matched = int(pc.sum(hit).as_py() or 0)
        kept = rows.filter(pc.invert(hit)) if matched else rows
        return add, matched, kept

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(one, candidates))
    touched = [(add, n, kept) for add, n, kept in results if n]
    adds: list[AddFile] = []
    try:
        for _, _, kept in touched:
            if kept.num_rows:
                adds += write_data_files(
                    table.storage,
                    kept,
                    list(ctx.partition_columns),
                    dict(ctx.properties),
                    max_rows_per_file=max(kept.num_rows, 1),
                    names=ctx.names,
                )
    except BaseException:
        for a in adds:
            with contextlib.suppress(OSError):
                table.storage.delete(a.path)
        raise
    return {a.path: n for a, n, _ in touched}, [a for a, _, _ in touched], adds
