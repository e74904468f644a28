"""A checkpoint streamed in several row groups (and parts, or a V2 checkpoint's sidecars) is read alike
by our engine, delta-rs and Polars: with the commits before it removed, all three find the same live
files and rows in it."""

from __future__ import annotations

import glob
import shutil
from pathlib import Path
from typing import Any

import polars_deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from airflow_txnlog.engine import Table
from airflow_txnlog.engine.state import checkpoint, checkpoint_parts

pytestmark = pytest.mark.compat

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string()), ("p", pa.string())])


def _rows(table: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r.values()) for r in pa.table(table).select(SCHEMA.names).to_pylist()), key=repr)


@pytest.mark.parametrize("part_size", [1_000_000, 12], ids=["one-file", "multi-part"])
def test_a_checkpoint_of_many_row_groups_reads_the_same_everywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, part_size: int
) -> None:
    monkeypatch.setattr(checkpoint, "BATCH_ROWS", 3)
    monkeypatch.setattr(checkpoint_parts, "ROW_GROUP_ROWS", 4)
    root = tmp_path / "t"
    t = Table.create(str(root), schema=SCHEMA, partition_by=["p"], checkpoint_part_size=part_size)
    for i in range(30):
        t.write(pa.table({"id": [i, -i], "s": [f"s {i}", None], "p": [f"p={i % 4}"] * 2}, schema=SCHEMA))
    t.checkpoint(14)  # streamed from an in-memory state; the next one from this checkpoint
    Table.open(str(root), checkpoint_part_size=part_size).checkpoint()
    version = t.latest_version()
    files = sorted(glob.glob(str(root / "_delta_log" / f"{version:020d}.checkpoint*.parquet")))
    assert len(files) == (1 if part_size > 100 else 3)
    assert sum(pq.ParquetFile(f).num_row_groups for f in files) >= 8

    alone = tmp_path / "alone"  # the checkpoint and nothing before it
    shutil.copytree(root, alone)
    for f in (alone / "_delta_log").glob("*.json"):
        f.unlink()
    for f in (alone / "_delta_log").glob(f"{14:020d}.checkpoint*.parquet"):
        f.unlink()

    expected = _rows(Table.open(str(root)).snapshot().to_arrow())
    assert len(expected) == 60
    ours = Table.open(str(alone)).snapshot()
    assert ours.checkpoint_version == version and ours.num_files == 30
    assert _rows(ours.to_arrow()) == expected
    dl = DeltaTable(str(alone))
    assert dl.version() == version
    assert sorted(dl.file_uris()) == sorted(str(alone / p) for p in ours.file_paths())  # (p=0 as p%3D0)
    assert _rows(dl.to_pyarrow_table()) == expected
    assert sorted(dl.get_add_actions(flatten=True).column("min.id").to_pylist()) == sorted(
        ours.add_actions().column("min.id").to_pylist()
    )
    pl = pytest.importorskip("polars")
    assert _rows(pl.read_delta(str(alone)).to_arrow()) == expected


def test_a_v2_checkpoint_in_several_sidecars_reads_the_same_everywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A V2 checkpoint whose file actions are streamed into 4 sidecars (the commits before it
    removed): delta-rs's loader finds the same live files and stats, and a delta-kernel-rs reader
    (polars-deltalake; Polars' own reader refuses the `v2Checkpoint` reader feature) the same rows."""
    monkeypatch.setattr(checkpoint, "BATCH_ROWS", 3)
    monkeypatch.setattr(checkpoint_parts, "SIDECAR_ROWS", 8)
    monkeypatch.setattr(checkpoint_parts, "DEAL_ROWS", 3)
    root = tmp_path / "t"
    props = {"delta.checkpointPolicy": "v2", "delta.checkpointInterval": "1000"}
    t = Table.create(str(root), schema=SCHEMA, partition_by=["p"], properties=props)
    for i in range(30):
        t.write(pa.table({"id": [i, -i], "s": [f"s {i}", None], "p": [f"p={i % 4}"] * 2}, schema=SCHEMA))
    t.checkpoint(14)
    Table.open(str(root)).checkpoint()  # base rows from the sidecars at 14, 3 at a time
    version = t.latest_version()
    log = root / "_delta_log"
    (main,) = log.glob(f"{version:020d}.checkpoint.*.parquet")
    assert len(pq.read_table(main).column("sidecar").drop_null()) == 4  # ceil(30 / 8)
    for f in [*log.glob("*.json"), *log.glob(f"{14:020d}.checkpoint.*.parquet")]:
        f.unlink()

    expected = [(i, f"s {i}", f"p={i % 4}") for i in range(30)] + [
        (-i, None, f"p={i % 4}") for i in range(30)
    ]
    ours = Table.open(str(root)).snapshot()
    assert ours.checkpoint_version == version and ours.num_files == 30
    assert _rows(ours.to_arrow()) == sorted(expected, key=repr)
    dl = DeltaTable(str(root))
    assert dl.version() == version
    assert sorted(dl.file_uris()) == sorted(str(root / p) for p in ours.file_paths())
    assert sorted(dl.get_add_actions(flatten=True).column("min.id").to_pylist()) == sorted(
        ours.add_actions().column("min.id").to_pylist()
    )
    assert _rows(polars_deltalake.read_delta(str(root)).to_arrow()) == sorted(expected, key=repr)
