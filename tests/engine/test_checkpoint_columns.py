"""Checkpoint columns read on demand (engine.checkpoint_columns): what opening reads, what a later
read costs, parts that disagree on schema, and a checkpoint file cleaned up under a loaded snapshot."""

from __future__ import annotations

import glob
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from airflow_txnlog.engine import LogCorruptedError, Table


def _table(root: Path, *, part_size: int = 1_000_000) -> Table:
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    t = Table.create(str(root), schema=schema, partition_by=["p"], checkpoint_part_size=part_size)
    for i in range(6):
        t.write(pa.table({"id": [i * 10, i * 10 + 9], "p": [f"v{i % 2}"] * 2}, schema=schema))
    t.checkpoint()
    t.write(pa.table({"id": [100], "p": ["v9"]}, schema=schema))
    return t


def test_opening_reads_only_the_file_keys(tmp_path: Path) -> None:
    _table(tmp_path / "t")
    snap = Table.open(str(tmp_path / "t")).snapshot()
    source = snap.state.source
    assert source is not None
    assert len(snap.file_paths()) == 7
    read = {name for column, name in source._cache if column == "add"}
    assert read == {"path", "deletionVector"}
    assert snap.add_actions().num_rows == 7
    read = {name for column, name in source._cache if column == "add"}
    assert "stats_parsed" in read and "stats" not in read  # our checkpoints carry the struct: no JSON read
    assert sorted(snap.add_actions(filter="id >= 45").column("min.id").to_pylist()) == [40, 50, 100]


def test_parts_that_disagree_on_schema(tmp_path: Path) -> None:
    """One part rewritten as an older writer would (no stats_parsed, no partitionValues_parsed): its
    rows take their stats from the JSON, the other part's from the struct."""
    root = tmp_path / "t"
    _table(root, part_size=4)
    parts = sorted(glob.glob(str(root / "_delta_log" / "*.checkpoint.*.parquet")))
    assert len(parts) >= 2
    old = pq.read_table(parts[0])
    add = old.column("add").combine_chunks()
    keep = [
        add.type.field(i)
        for i in range(add.type.num_fields)
        if not add.type.field(i).name.endswith("_parsed")
    ]
    slim = pa.StructArray.from_arrays(
        [add.field(f.name) for f in keep], fields=keep, mask=pc.invert(add.is_valid())
    )
    pq.write_table(old.set_column(old.schema.get_field_index("add"), "add", slim), parts[0])
    snap = Table.open(str(root)).snapshot()
    meta = snap.add_actions()
    assert meta.num_rows == 7 and meta.column("min.id").null_count == 0
    assert sorted(meta.column("max.id").to_pylist()) == [9, 19, 29, 39, 49, 59, 100]
    assert sorted(snap.add_actions(filter="p = 'v1'").column("min.id").to_pylist()) == [10, 30, 50]


def test_checkpoint_removed_after_load_is_a_clear_error(tmp_path: Path) -> None:
    _table(tmp_path / "t")
    snap = Table.open(str(tmp_path / "t")).snapshot()
    for f in glob.glob(str(tmp_path / "t" / "_delta_log" / "*.checkpoint.parquet")):
        Path(f).unlink()
    with pytest.raises(
        LogCorruptedError, match=r"removed after this snapshot was loaded.*open the table again"
    ):
        snap.add_actions()
