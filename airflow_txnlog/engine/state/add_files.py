"""The live files of a snapshot as `AddFile` objects, every field kept (tags, deletion vector, row
tracking, clustering provider): only the rows asked for become Python objects, column by column.

`select_adds(state, keep)` gives the files at positions `keep` of `LogState.live_add_keys` (the
checkpoint's live rows, then the tail's adds), in the order asked for. Checkpoint rows are read with
every field for the picked rows only: for up to half the rows of a checkpoint that has
`stats_parsed`, its JSON `stats` column (most of a checkpoint's bytes) is not read and each row's
JSON is rendered from its struct (`add_stats_json`); up to half of any checkpoint's rows are taken
from its files in its own order (`CheckpointColumns.take`). Tail adds are the commits' own dicts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from airflow_txnlog.engine.log.actions import ADD, PARTITION_VALUES_PARSED, STATS_PARSED, AddFile, decode_path
from airflow_txnlog.engine.log.replay import LogState
from airflow_txnlog.engine.log.stats_struct import add_stats_json


def _column(arr: pa.StructArray, name: str) -> list[Any]:
    """A field of checkpoint add rows as Python values (all None when the writer left it out)."""
    if arr.type.get_field_index(name) < 0 or arr.field(name).null_count == len(arr):
        return [None] * len(arr)
    return arr.field(name).to_pylist()  # type: ignore[no-any-return]


def adds_from_struct(arr: pa.StructArray) -> list[AddFile]:
    """AddFiles of checkpoint add rows, column by column; stats from `stats` or else `stats_parsed`."""
    cols = [
        _column(arr, n)
        for n in (
            "path",
            "partitionValues",
            "size",
            "modificationTime",
            "dataChange",
            "tags",
            "deletionVector",
            "baseRowId",
            "defaultRowCommitVersion",
            "clusteringProvider",
        )
    ]
    stats = add_stats_json(arr).to_pylist()
    return [
        AddFile(
            path=decode_path(p),
            partition_values=dict(pv or ()),
            size=s or 0,
            modification_time=mt or 0,
            data_change=True if dc is None else dc,
            stats=st,
            tags=dict(tg) if tg else None,
            deletion_vector=dict(dv) if dv else None,
            base_row_id=row_id,
            default_row_commit_version=row_version,
            clustering_provider=cp,
            encoded_path=p,
        )
        for p, pv, s, mt, dc, tg, dv, row_id, row_version, cp, st in zip(*cols, stats, strict=True)
    ]


def _base_rows_for(state: LogState, picked: list[int], n_base: int) -> pa.StructArray | None:
    """Every field of the live base rows at `picked` (ascending). For up to half the rows of a
    checkpoint that has `stats_parsed`, the JSON `stats` column (most of a checkpoint's bytes) is not
    read: those rows' JSON is rendered from their struct (`add_stats_json`), unless one lacks it."""
    if not picked:
        return None
    names = state.source.field_names(ADD) if state.source is not None else []
    if STATS_PARSED in names and "stats" in names and len(picked) * 2 <= n_base:
        rows = state.live_base_adds([n for n in names if n not in ("stats", PARTITION_VALUES_PARSED)])
        assert rows is not None
        rows = rows.take(pa.array(picked, pa.int64()))
        if rows.field(STATS_PARSED).null_count == 0:
            return rows
    if state.source is not None and len(picked) * 2 <= n_base:  # (rows of the checkpoint's own order)
        mask = state.live_base_add_mask()  # (None when no later commit replaced one)
        at = pa.array(picked, pa.int64())
        if mask is not None:
            at = pa.array(np.flatnonzero(mask.to_numpy(zero_copy_only=False))[picked], pa.int64())
        return state.source.take(ADD, names, at)
    rows = state.live_base_adds()
    assert rows is not None
    return rows if picked == list(range(n_base)) else rows.take(pa.array(picked, pa.int64()))


def select_adds(state: LogState, keep: Sequence[int] | None = None) -> list[AddFile]:
    """`AddFile`s of the live files at positions `keep` (all if None) of `LogState.live_add_keys`,
    in the order asked for: only those rows of the checkpoint become Python objects."""
    n_base = state.num_base_files()
    n_tail = state.num_files() - n_base
    wanted = list(range(n_base + n_tail)) if keep is None else list(keep)
    order = sorted(set(wanted))
    if order and (order[0] < 0 or order[-1] >= n_base + n_tail):
        raise IndexError(f"file positions must be in [0, {n_base + n_tail}), got {order[0]}..{order[-1]}")
    picked = [i for i in order if i < n_base]
    base = _base_rows_for(state, picked, n_base)
    found = dict(zip(picked, adds_from_struct(base), strict=True)) if base is not None else {}
    tail = state.tail_adds()
    found.update((i, AddFile.from_wire(tail[i - n_base])) for i in order[len(picked) :])
    return [found[i] for i in wanted]
