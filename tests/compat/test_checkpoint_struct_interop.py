"""Checkpoints with `stats_parsed` and `partitionValues_parsed` (Delta's default, writeStatsAsStruct=true):
what we write is read by delta-rs and Polars, and what delta-rs writes that way is read by us, its
lazily read columns and typed stats included."""

from __future__ import annotations

import datetime as dt
import glob
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from airflow_txnlog.engine import Table

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("x", pa.float64()),
        ("s", pa.string()),
        ("day", pa.date32()),
        ("n", pa.int32()),
        ("region", pa.string()),
    ]
)
PARTS = ["day", "n", "region"]


def _batch(start: int, count: int, day: dt.date | None, n: int | None, region: str | None) -> pa.Table:
    ids = list(range(start, start + count))
    return pa.table(
        {
            "id": ids,
            "x": [i / 2 for i in ids],
            "s": [f"s{i:05d}" for i in ids],
            "day": [day] * count,
            "n": [n] * count,
            "region": [region] * count,
        },
        schema=SCHEMA,
    )


def _rows(table: Any) -> list[tuple[Any, ...]]:
    t = pa.table(table).select(SCHEMA.names)
    return sorted((tuple(r.values()) for r in t.to_pylist()), key=repr)


def _our_table(root: Path, *, part_size: int = 1_000_000) -> Table:
    t = Table.create(str(root), schema=SCHEMA, partition_by=PARTS, checkpoint_part_size=part_size)
    t.write(_batch(100, 3, dt.date(2023, 1, 1), 9, "old"))
    t.write(_batch(5, 5, dt.date(2024, 1, 1), 1, "eu"), mode="overwrite")  # a tombstone in the checkpoint
    t.write(_batch(10, 10, dt.date(2024, 1, 2), 2, "us"))
    t.write(_batch(20, 5, None, None, None))  # null partition values
    t.write(_batch(25, 5, dt.date(2024, 1, 2), 3, ""))  # an empty string is a null partition value too
    t.checkpoint()
    return t


def _checkpoint_adds(root: Path, version: int) -> list[dict[str, Any]]:
    files = sorted(glob.glob(str(root / "_delta_log" / f"{version:020d}.checkpoint*.parquet")))
    rows: list[dict[str, Any]] = []
    for f in files:
        rows += [r for r in pq.read_table(f).column("add").to_pylist() if r]
    return rows


@pytest.mark.parametrize("part_size", [1_000_000, 3], ids=["one-file", "multi-part"])
def test_our_struct_checkpoint_is_typed_and_read_by_deltars_and_polars(
    tmp_path: Path, part_size: int
) -> None:
    root = tmp_path / "t"
    t = _our_table(root, part_size=part_size)
    version = t.latest_version()
    adds = _checkpoint_adds(root, version)
    assert len(adds) == t.snapshot().num_files
    by_region = {a["partitionValues_parsed"]["region"]: a for a in adds}
    eu = by_region["eu"]
    assert eu["partitionValues_parsed"] == {"day": dt.date(2024, 1, 1), "n": 1, "region": "eu"}
    assert by_region[None]["partitionValues_parsed"]["day"] in (None, dt.date(2024, 1, 2))
    assert eu["stats_parsed"]["numRecords"] == 5 and eu["stats_parsed"]["minValues"]["id"] == 5
    assert eu["stats_parsed"]["maxValues"]["s"] == "s00009" and eu["stats"] is not None

    expected = _rows(t.snapshot().to_arrow())
    assert len(expected) == 25
    dl = DeltaTable(str(root))
    assert _rows(dl.to_pyarrow_table()) == expected
    assert _rows(dl.to_pyarrow_table(filters=[("id", ">=", 20)])) == [r for r in expected if r[0] >= 20]
    assert _rows(dl.to_pyarrow_table(filters=[("n", "=", 2)])) == [r for r in expected if r[4] == 2]
    pl = pytest.importorskip("polars")
    if hasattr(pl, "read_delta"):
        assert _rows(pl.read_delta(str(root)).to_arrow()) == expected

    # and we read it back from the struct columns (no JSON parse needed), pruning alike
    snap = Table.open(str(root)).snapshot()
    assert _rows(snap.to_arrow()) == expected
    assert {r[0] for r in _rows(snap.to_arrow(filter="id >= 27"))} == {27, 28, 29}
    assert snap.add_actions(filter="id >= 27").num_rows == 1


def test_deltars_struct_checkpoint_read_lazily(tmp_path: Path) -> None:
    """delta-rs writes stats only as a struct (writeStatsAsJson=false): every engine path that needs
    stats or partition values reads them from the lazily read checkpoint columns."""
    root = tmp_path / "t"
    conf = {"delta.checkpoint.writeStatsAsStruct": "true", "delta.checkpoint.writeStatsAsJson": "false"}
    write_deltalake(
        str(root), _batch(0, 10, dt.date(2024, 1, 1), 1, "eu"), partition_by=PARTS, configuration=conf
    )
    write_deltalake(str(root), _batch(10, 10, dt.date(2024, 1, 2), 2, "us"), mode="append")
    DeltaTable(str(root)).create_checkpoint()
    write_deltalake(str(root), _batch(20, 10, dt.date(2024, 1, 3), 3, "eu"), mode="append")
    adds = _checkpoint_adds(root, 1)
    assert all(a.get("stats") is None and a["stats_parsed"] for a in adds)

    snap = Table.open(str(root)).snapshot()
    assert snap.file_paths() and snap.num_files == 3
    meta = snap.add_actions()
    assert sorted(meta.column("min.id").to_pylist()) == [0, 10, 20]
    assert sorted(meta.column("partition.day").to_pylist()) == [
        dt.date(2024, 1, 1),
        dt.date(2024, 1, 2),
        dt.date(2024, 1, 3),
    ]
    assert [f.partition_values["region"] for f in snap.files(filter="id >= 12 AND id < 14")] == ["us"]
    assert all(f.stats for f in snap.files())  # JSON rendered from the struct for Python callers
    assert snap.size_bytes == sum(f.size for f in snap.files())
    assert _rows(snap.to_arrow()) == _rows(DeltaTable(str(root)).to_pyarrow_table())
