"""DELETE without Spark, when the files to look at are few and small: the in-process levers.

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

With deletion vectors (`delta.enableDeletionVectors=true`) nothing is rewritten: the driver reads
only the predicate's columns and marks the TRUE rows' positions in one DV file
(`spark.features.deletion_vectors.positions_in_process`). That lever is bounded by the candidates'
bytes alone (`DV_MAX_BYTES`), not by their number: D2, 0.1% of the rows spread over all 100 files of
the benchmark table, reads 100 files' `id` column (~0.2 s) where Spark needed two jobs (~1.3 s).

"Exact" means the engine's row filter gives Spark SQL's answer for this predicate, so a lever is
taken only when (otherwise Spark runs, as before -- never a different answer):
- the engine parses the predicate (comparisons, IN, BETWEEN, IS NULL, AND / OR / NOT, literals);
- every column it names is an integer, float, decimal, string, boolean or date column, or a
  timestamp column while the session time zone is UTC (a zone-less timestamp literal means the
  session zone to Spark and UTC to the engine); what the engine cannot compute as Spark does (a
  number against a string column, say) it refuses when parsing, and Spark runs;
- the table writes no change data; the rewrite lever also needs a table without deletion vectors
  and row tracking (the Spark path carries row ids), the deletion-vector lever a predicate naming
  a column and candidates whose stats count their rows (a DV needs the count; others are rewritten).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
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
# Only the predicate's columns are read and no data file is written, so the size of the candidates
# (what the driver may have to read) is the bound, whatever their number.
DV_MAX_BYTES = 256 * 1024 * 1024
_UTC = frozenset({"UTC", "ETC/UTC", "Z", "GMT", "+00:00", "UTC+0", "ETC/GMT"})


def _exact(ctx: TableContext, parsed: Predicate) -> bool:
    """Whether the engine evaluates `parsed` as this Spark session does (module docstring)."""
    types = [ctx.schema.field(c).type for c in parsed.columns]
    utc = True
    if any(pa.types.is_timestamp(t) for t in types):  # (the session's zone costs a gateway call)
        zone = str(ctx.spark.conf.get("spark.sql.session.timeZone", "UTC") or "UTC").strip().upper()
        utc = zone in _UTC
    return all(exact_in_arrow(t, timestamps=utc, floats=True) for t in types)


def applies(ctx: TableContext, parsed: Predicate | None, candidates: Sequence[AddFile]) -> bool:
    """Whether this DELETE may rewrite its files in-process (see the module docstring)."""
    if parsed is None or not candidates:
        return False
    if deletion_vectors.enabled(ctx) or change_data.enabled(ctx) or row_id_columns(ctx):
        return False  # (row tracking: the Spark path carries the row ids)
    if len(candidates) > MAX_FILES or sum(f.size for f in candidates) > MAX_BYTES:
        return False
    return _exact(ctx, parsed)


def marks_apply(ctx: TableContext, parsed: Predicate | None, candidates: Sequence[AddFile]) -> bool:
    """Whether this DELETE may mark its rows in deletion vectors in-process (module docstring)."""
    if parsed is None or not parsed.columns or not candidates:
        return False
    if not deletion_vectors.enabled(ctx) or change_data.enabled(ctx):
        return False
    if deletion_vectors.split(candidates)[1] or sum(f.size for f in candidates) > DV_MAX_BYTES:
        return False
    return _exact(ctx, parsed)


def delete_in_process(
    ctx: TableContext,
    table: Table,
    candidates: Sequence[AddFile],
    parsed: Predicate,
    *,
    before_writing: Callable[[], None] = lambda: None,
) -> tuple[dict[str, int], list[AddFile], list[AddFile]]:
    """({path: deleted rows} of the files with matches, those files, the files replacing them).
    `before_writing` runs once the matches are known, before any file is written (the caller's
    pending SQL check: nothing is written for a predicate Spark refuses)."""
    scan = FileScan(table.uri, table.storage.options or None, ctx.schema, ctx.partition_columns, ctx.names)

    def one(add: AddFile) -> tuple[AddFile, int, pa.Table]:
        rows = next(iter(scan.read([add])))
        hit = parsed.matches(rows)  # (TRUE only: a NULL result keeps the row, as Spark's DELETE)
        matched = int(pc.sum(hit).as_py() or 0)
        kept = rows.filter(pc.invert(hit)) if matched else rows
        return add, matched, kept

    if len(candidates) == 1:  # (no pool for one file: a selective DELETE's usual case)
        results = [one(candidates[0])]
    else:
        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(one, candidates))
    touched = [(add, n, kept) for add, n, kept in results if n]
    before_writing()
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
