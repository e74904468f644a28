"""The file actions of the JSON commits after a checkpoint (dicts, as replay keeps them) as Arrow
struct arrays of the checkpoint's `add` / `remove` types, for the checkpoint writer to append to the
old checkpoint's rows.

Columns are built from Python lists once per field; an add's string maps (partition values, tags)
from offsets, which is much faster than from Python pairs (a remove's few are built from pairs). A
field a writer left out is null; an add's dataChange is written false, as Delta writes checkpointed
adds.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from airflow_txnlog.engine.log.replay import ADD_TYPE, DV_TYPE, REMOVE_TYPE, STR_MAP


def _map_array(maps: list[dict[str, Any] | None]) -> pa.Array:
    """A map<string,string> column built from offsets (much faster than from Python pairs)."""
    if all(m is None for m in maps):
        return pa.nulls(len(maps), STR_MAP)
    offsets: list[int] = [0]
    keys: list[str] = []
    values: list[Any] = []
    mask: list[bool] = []
    for m in maps:
        mask.append(m is None)
        if m:
            keys.extend(m.keys())
            values.extend(m.values())
        offsets.append(len(keys))
    return pa.MapArray.from_arrays(
        pa.array(offsets, pa.int32()),
        pa.array(keys, pa.string()),
        pa.array(values, pa.string()),
        mask=pa.array(mask, pa.bool_()) if any(mask) else None,
    )


def _pairs(m: dict[str, Any] | None) -> list[tuple[str, Any]] | None:
    return list(m.items()) if m is not None else None


def tail_adds_array(adds: list[dict[str, Any]]) -> pa.StructArray:
    """Adds of the JSON commits as checkpoint `add` rows (`ADD_TYPE`; dataChange false)."""
    cols = [
        pa.array([d["path"] for d in adds], pa.string()),
        _map_array([d.get("partitionValues") or {} for d in adds]),
        pa.array([d.get("size") for d in adds], pa.int64()),
        pa.array([d.get("modificationTime") for d in adds], pa.int64()),
        pa.array([False] * len(adds), pa.bool_()),
        pa.array([d.get("stats") for d in adds], pa.string()),
        _map_array([d.get("tags") for d in adds]),
        pa.array([d.get("deletionVector") for d in adds], DV_TYPE),
        pa.array([d.get("baseRowId") for d in adds], pa.int64()),
        pa.array([d.get("defaultRowCommitVersion") for d in adds], pa.int64()),
        pa.array([d.get("clusteringProvider") for d in adds], pa.string()),
    ]
    return pa.StructArray.from_arrays(cols, fields=list(ADD_TYPE))


def tail_removes_array(removes: list[dict[str, Any]]) -> pa.StructArray:
    """Removes of the JSON commits as checkpoint `remove` rows (`REMOVE_TYPE`)."""
    cols = [
        pa.array([d["path"] for d in removes], pa.string()),
        pa.array([d.get("deletionTimestamp") for d in removes], pa.int64()),
        pa.array([bool(d.get("dataChange", True)) for d in removes], pa.bool_()),
        pa.array([d.get("extendedFileMetadata") for d in removes], pa.bool_()),
        pa.array([_pairs(d.get("partitionValues")) for d in removes], STR_MAP),
        pa.array([d.get("size") for d in removes], pa.int64()),
        pa.array([d.get("deletionVector") for d in removes], DV_TYPE),
        pa.array([d.get("baseRowId") for d in removes], pa.int64()),
        pa.array([d.get("defaultRowCommitVersion") for d in removes], pa.int64()),
    ]
    return pa.StructArray.from_arrays(cols, fields=list(REMOVE_TYPE))
