"""The lazily read checkpoint state equals a full JSON replay of the same log, however another writer
laid the checkpoint out: parts whose rows are shuffled (adds and removes interleaved, so valid rows
are not contiguous), split into small row groups, with optional fields (stats_parsed,
partitionValues_parsed, size) left out of some parts and a whole action column out of another."""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from airflow_txnlog.engine import Table

SCHEMA = pa.schema([("id", pa.int64()), ("x", pa.float64()), ("p", pa.string())])
OPTIONAL = ("stats_parsed", "partitionValues_parsed", "size")


def _build(root: Path, rng: random.Random) -> int:
    t = Table.create(str(root), schema=SCHEMA, partition_by=["p"], checkpoint_part_size=4)
    for i in range(12):
        ids = [i * 10 + k for k in range(rng.randint(1, 4))]
        data = pa.table({"id": ids, "x": [v / 3 for v in ids], "p": [f"p{i % 3}"] * len(ids)}, schema=SCHEMA)
        t.write(data, mode="overwrite" if i == 4 else "append")  # tombstones in the checkpoint
    t.checkpoint()
    cp = t.latest_version()
    for i in range(12, 15):  # a tail after the checkpoint: appends and an overwrite
        data = pa.table({"id": [i * 10], "x": [1.5], "p": [f"p{i % 3}"]}, schema=SCHEMA)
        t.write(data, mode="overwrite" if i == 13 else "append")
    return cp


def _drop_fields(column: pa.ChunkedArray, drop: set[str]) -> pa.Array:
    arr = column.combine_chunks()
    keep = [f for f in arr.type if f.name not in drop]
    return pa.StructArray.from_arrays(
        [arr.field(f.name) for f in keep], fields=keep, mask=pc.invert(arr.is_valid())
    )


def _relayout(root: Path, cp: int, rng: random.Random) -> tuple[set[str], set[str]]:
    """Rewrite the checkpoint parts; returns (the tombstone paths dropped with part 1's remove
    column, the add paths whose `size` was dropped)."""
    parts = sorted((root / "_delta_log").glob(f"{cp:020d}.checkpoint.*.parquet"))
    assert len(parts) >= 3
    dropped: set[str] = set()
    sizeless: set[str] = set()
    for n, part in enumerate(parts):
        table = pq.read_table(part)
        order = rng.sample(range(table.num_rows), table.num_rows)
        table = table.take(pa.array(order, pa.int64()))
        for name in ("add", "remove"):
            drop = {f for f in OPTIONAL if rng.random() < 0.5}
            if name in table.column_names and drop:
                if name == "add" and "size" in drop:
                    adds = table.column("add").combine_chunks()
                    sizeless.update(p for p in adds.field("path").to_pylist() if p)
                i = table.schema.get_field_index(name)
                table = table.set_column(i, name, _drop_fields(table.column(name), drop))
        if n == 1 and "remove" in table.column_names:  # a part without the remove column at all
            removes = table.column("remove").combine_chunks()
            dropped.update(p for p in removes.field("path").to_pylist() if p)
            table = table.filter(pc.invert(removes.is_valid())).drop_columns(["remove"])
        pq.write_table(table, part, row_group_size=rng.randint(1, 3))
    return dropped, sizeless


def _view(t: Table) -> dict[str, Any]:
    snap = t.snapshot()
    meta = snap.add_actions()
    rows = sorted(meta.to_pylist(), key=lambda r: r["path"])
    for r in rows:
        r.pop("modification_time")  # (not asserted: equal in both, but kept out of the diff noise)
    tomb = snap.tombstone_table()
    return {
        "paths": sorted(snap.file_paths()),
        "keys": sorted(snap.file_keys().to_pylist()),
        "sizes": dict(zip(snap.file_keys().to_pylist(), snap.file_sizes().to_pylist(), strict=True)),
        "meta": rows,
        "tombstones": sorted(tomb.column("key").to_pylist()),
        "files": sorted((f.path, f.size, f.partition_values["p"], f.parsed_stats()) for f in snap.files()),
        "pruned": sorted(f.path for f in snap.files(filter="id >= 60 AND id < 95")),
        "rows": sorted(snap.to_arrow().column("id").to_pylist()),
    }


@pytest.mark.parametrize("seed", range(6))
def test_lazy_checkpoint_state_equals_json_replay(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    root = tmp_path / "t"
    cp = _build(root, rng)
    replay = tmp_path / "replay"
    shutil.copytree(root, replay)
    for f in (replay / "_delta_log").glob("*checkpoint*"):  # the parts and _last_checkpoint
        f.unlink()
    dropped, sizeless = _relayout(root, cp, rng)

    lazy, full = Table.open(str(root)), Table.open(str(replay))
    assert lazy.snapshot().checkpoint_version == cp and full.snapshot().checkpoint_version is None
    ours, reference = _view(lazy), _view(full)
    # A part that lost `size` makes those files' sizes unknown (0): everything else must agree.
    lost = {k for k in ours["keys"] if k in sizeless}
    assert all(ours["sizes"][k] == 0 for k in lost)
    for view in (ours, reference):
        view["sizes"] = {k: v for k, v in view["sizes"].items() if k not in lost}
        view["files"] = [f for f in view["files"] if f[0] not in lost]
        for r in view["meta"]:
            if r["path"] in lost:
                r.pop("size_bytes")
    reference["tombstones"] = [k for k in reference["tombstones"] if k not in dropped]
    assert ours == reference
