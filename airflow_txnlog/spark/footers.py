"""Delta `add.stats` of a file Spark wrote, from its parquet footer (no data is read).

Parquet keeps per row group and per leaf column the min, max and null count. Folding them over the
row groups gives the file's numRecords / minValues / maxValues / nullCount. Which leaves get stats,
how each bound is written (strings truncated with a successor, timestamps in milliseconds with a
four-digit year, decimals exact in plain notation, no bounds past a NaN) and the JSON itself come
from the engine (`indexed_leaves`, `json_bounds`, `stats_json`), so a file gets exactly the stats
the engine's `compute_stats` gives for the same rows; only the folding is this module's.

A bound is written only when every row group that holds values has one; otherwise it is left out
(unknown = "the file may match"), which keeps data skipping sound. Floating-point columns: parquet
writers order NaN above every number, so a file holding a NaN has a NaN bound; such bounds are left
out, as the engine does (a predicate such as `x > 1` is true for NaN in Spark SQL). Timestamps need
`spark.sql.parquet.outputTimestampType=TIMESTAMP_MICROS` when written: INT96 has no statistics.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_txnlog.engine import LeafPath, LeafStats, indexed_leaves, json_bounds, stats_json


@dataclass
class _Leaf:
    """A leaf column folded over the row groups."""

    lo: Any = None
    hi: Any = None
    bounded: bool = True  # every row group with values had min/max
    nulls: int | None = 0
    seen: bool = field(default=False)


def _fold(md: pq.FileMetaData) -> dict[str, _Leaf]:
    leaves: dict[str, _Leaf] = {}
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        for i in range(rg.num_columns):
            chunk = rg.column(i)
            leaf = leaves.setdefault(chunk.path_in_schema, _Leaf())
            s = chunk.statistics
            if s is None or not s.has_null_count:
                leaf.nulls = None
            elif leaf.nulls is not None:
                leaf.nulls += s.null_count
            if s is not None and s.has_null_count and s.null_count >= rg.num_rows:
                continue  # only nulls in this row group: it bounds nothing
            if s is None or not s.has_min_max:
                leaf.bounded = False
                continue
            lo, hi = s.min, s.max
            if _is_nan(lo) or _is_nan(hi):
                leaf.bounded = False  # NaN orders above every number: no usable bound
                continue
            leaf.lo = lo if not leaf.seen or lo < leaf.lo else leaf.lo
            leaf.hi = hi if not leaf.seen or hi > leaf.hi else leaf.hi
            leaf.seen = True
    return leaves


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


def footer_stats(
    md: pq.FileMetaData,
    file_schema: pa.Schema,
    *,
    num_indexed_cols: int = 32,
    stats_columns: Sequence[LeafPath] | None = None,
) -> str:
    """The stats JSON of a data file from its footer; `file_schema` is the table schema minus the
    partition columns (its leaf names are the footer's column paths). `num_indexed_cols` and
    `stats_columns` choose the leaves as for the engine's `compute_stats`."""
    folded = _fold(md)
    entries: list[LeafStats] = []
    chosen = indexed_leaves(file_schema, num_indexed_cols=num_indexed_cols, stats_columns=stats_columns)
    for path, f in chosen:
        leaf = folded.get(".".join(path))
        if leaf is None:
            continue
        bounds = json_bounds(f.type, leaf.lo, leaf.hi) if leaf.bounded and leaf.seen else None
        entries.append((path, leaf.nulls, bounds))
    return stats_json(md.num_rows, entries)
