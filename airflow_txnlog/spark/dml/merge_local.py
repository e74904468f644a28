"""MERGE's in-process lever: the source's keys on the driver, the touched files found without Spark.

A MERGE of a modest source into a few target files (M1 in docs/benchmarks.md) spends most of its
time in the fixed cost of three Spark jobs: probe the source, find the touched files, rewrite them.
When the merge's shape makes the middle step a plain key lookup, the first two become one small job
and some driver work:

    source keys   one Spark job collects the source's key columns (at most `MAX_SOURCE_ROWS` rows,
                  else the Spark path runs) -> row count and min / max for pruning, as the probe did
    touched files each candidate file's key columns are read through the engine and joined (Arrow)
                  with the source keys' counts: files holding a matched row are touched; a target row
                  with more than one source row is reported for Delta's ambiguity rule; the rows the
                  matched clause updates or deletes are counted
    rewrite       on Spark, unchanged (`merge._rewrite`)

The shape required, so the answer is exactly Spark's (otherwise nothing changes: Spark runs):
- ON is a conjunction of `t.x = s.y` equalities only, each between columns of the same type, and
  the type compares exactly in Arrow (integers, strings, dates, decimals, booleans, timestamps);
- the WHEN MATCHED clauses are one unconditional clause or none (a condition is Spark SQL);
- the candidates are at most `MAX_FILES` files and `MAX_BYTES` bytes.
NULL keys match nothing, in SQL and in Arrow's join alike.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from airflow_txnlog.engine import AddFile, FileScan, Table
from airflow_txnlog.spark.context import TableContext
from airflow_txnlog.spark.read.planning import exact_in_arrow

MAX_SOURCE_ROWS = 1_000_000
MAX_FILES = 64
MAX_BYTES = 256 * 1024 * 1024
_COUNT = "count_all"


def eligible(
    ctx: TableContext, on: str, keys: Sequence[tuple[str, str]], matched_conditions: Sequence[str | None]
) -> bool:
    """Whether the merge has the shape the module docstring requires (the candidates aside)."""
    conjuncts = re.split(r"\s+and\s+", on.strip(), flags=re.IGNORECASE)
    if not keys or len(conjuncts) != len(keys):
        return False
    if len(matched_conditions) > 1 or any(c is not None for c in matched_conditions):
        return False
    return all(exact_in_arrow(ctx.schema.field(t).type, timestamps=True) for t, _ in keys)


def source_keys(source: DataFrame, keys: Sequence[tuple[str, str]]) -> pa.Table | None:
    """The source's key columns (`k0`, `k1`, ...) as Arrow, or None when there are too many rows."""
    cols = [F.col(f"`{s}`").alias(f"k{i}") for i, (_, s) in enumerate(keys)]
    table = source.select(*cols).limit(MAX_SOURCE_ROWS + 1).toArrow()
    return None if table.num_rows > MAX_SOURCE_ROWS else table


def bounds(src: pa.Table, index: int) -> tuple[object, object]:
    """(min, max) of source key `index` as Python values (None when every key is NULL)."""
    mm = pc.min_max(src.column(f"k{index}"))
    return mm["min"].as_py(), mm["max"].as_py()


def small(candidates: Sequence[AddFile]) -> bool:
    return len(candidates) <= MAX_FILES and sum(f.size for f in candidates) <= MAX_BYTES


@dataclass(frozen=True)
class Found:
    files: list[AddFile]  # the candidates holding a matched target row
    matched: int  # matched target rows
    ambiguous: int  # target rows with more than one source row


def touched(
    ctx: TableContext,
    table: Table,
    candidates: Sequence[AddFile],
    keys: Sequence[tuple[str, str]],
    src: pa.Table,
) -> Found:
    """The files the merge touches (see the module docstring)."""
    names = [f"k{i}" for i in range(len(keys))]
    types = [ctx.schema.field(t).type for t, _ in keys]
    src = pa.table([src.column(n).cast(t) for n, t in zip(names, types, strict=True)], names=names)
    counts = src.group_by(names).aggregate([([], "count_all")])
    scan = FileScan(table.uri, table.storage.options or None, ctx.schema, ctx.partition_columns, ctx.names)

    def one(add: AddFile) -> tuple[AddFile, int, int]:
        rows = next(iter(scan.read([add], columns=[t for t, _ in keys])))
        joined = rows.rename_columns(names).join(counts, names, join_type="inner")
        multi = pc.sum(pc.greater(joined.column(_COUNT), 1)).as_py() or 0
        return add, joined.num_rows, int(multi)

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(one, candidates))
    return Found(
        [a for a, n, _ in results if n],
        sum(n for _, n, _ in results),
        sum(m for _, _, m in results),
    )
