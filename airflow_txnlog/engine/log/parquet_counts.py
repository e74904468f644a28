"""What a checkpoint part's own parquet statistics say about its actions, before any column is read.

A parquet writer records, per row group and column chunk, how many of the chunk's values are null.
For a checkpoint that tells, without decoding a value:

- `all_null(meta, "add.deletionVector")`: no row has the field (every leaf below it null in every
  row of every row group). Loading a million-file checkpoint skips such key fields: decoding them
  would give a million nulls (~20 MB of offsets and bitmaps) to learn nothing.
- `action_rows(meta, columns)`: how many rows hold one of the small actions (protocol, metaData, txn,
  domainMetadata), counted by a field the protocol requires of each (a row without it is no action).
  `small_action_rows` reads those columns batch by batch, keeping only their non-null rows (read
  whole, a million-row part's small-action columns are ~80 MB of offsets for nulls), and stops once
  all of them were found: writers put them first, so that is usually the first batch.

Invariants: a count is given only when every row group's chunk has its null count; otherwise the
answer is "unknown" (None, False) and the caller reads the columns as if it had asked nothing.
A field with a list or map below it is never claimed null in every row (an empty list or map counts
as a null leaf value in the statistics, though the field is not null).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_txnlog.engine.log.actions import DOMAIN_METADATA, METADATA, PROTOCOL, TXN

# The field each small action must have (PROTOCOL.md): a non-null one marks a row of that action.
_REQUIRED_LEAF = {
    PROTOCOL: "minReaderVersion",
    METADATA: "id",
    TXN: "appId",
    DOMAIN_METADATA: "domain",
}


def _leaf_nulls(meta: pq.FileMetaData, prefix: str) -> dict[str, list[int | None]] | None:
    """Per non-repeated leaf path under `prefix` (dotted), its null count in each row group (None
    where the writer left none); None when a leaf under `prefix` is repeated."""
    out: dict[str, list[int | None]] = {}
    for rg in range(meta.num_row_groups):
        group = meta.row_group(rg)
        for j in range(group.num_columns):
            chunk = group.column(j)
            path = chunk.path_in_schema
            if path != prefix and not path.startswith(prefix + "."):
                continue
            # A leaf in a list or map: its values are no rows, and an empty list or map counts as a
            # null value there, though the row's field is not null.
            if meta.schema.column(j).max_repetition_level > 0:
                return None
            stats = chunk.statistics
            known = stats is not None and stats.has_null_count
            out.setdefault(path, []).append(stats.null_count if known else None)
    return out


def all_null(meta: pq.FileMetaData, prefix: str) -> bool:
    """Is the field at `prefix` (`add.deletionVector`) null in every row, by the statistics?"""
    leaves = _leaf_nulls(meta, prefix)
    if not leaves:
        return False
    rows = [meta.row_group(rg).num_rows for rg in range(meta.num_row_groups)]
    return all(counts == rows for counts in leaves.values())


def action_rows(meta: pq.FileMetaData, columns: Sequence[str]) -> int | None:
    """How many rows hold one of the small actions in `columns`, by their required fields' null
    counts; None when a column is not a small action or a row group has no null count for it."""
    total = 0
    for column in columns:
        leaf = _REQUIRED_LEAF.get(column)
        counts = _leaf_nulls(meta, f"{column}.{leaf}") if leaf is not None else None
        nulls = counts.get(f"{column}.{leaf}") if counts else None
        if nulls is None or any(n is None for n in nulls):
            return None
        total += sum(meta.row_group(rg).num_rows - (n or 0) for rg, n in enumerate(nulls))
    return total


_BATCH_ROWS = 16_384


def small_action_rows(f: pq.ParquetFile, columns: Sequence[str]) -> dict[str, pa.Array]:
    """The non-null rows of each of `columns` (small actions) of an open part, in file order."""
    expected = action_rows(f.metadata, columns)
    found: dict[str, list[pa.Array]] = {c: [] for c in columns}
    seen = 0
    for batch in f.iter_batches(batch_size=_BATCH_ROWS, columns=list(columns)):
        for column in columns:
            values = batch.column(column)
            if values.null_count < len(values):
                rows = values.filter(values.is_valid())  # (a copy: the batch's nulls are let go)
                found[column].append(rows)
                seen += len(rows)
        if expected is not None and seen >= expected:
            break
    schema = f.schema_arrow
    return {
        c: pa.concat_arrays(parts) if parts else pa.array([], type=schema.field(c).type)
        for c, parts in found.items()
    }
