"""A checkpoint written after `add_actions()` takes `stats_parsed` from the stats that call parsed
(`Snapshot.parsed_base_stats`) instead of parsing the JSON again: the checkpoint is the same,
row for row, as one written from a fresh open (also under column mapping, and in parts); and where
the two parses could differ (float32 bounds) or the snapshot parsed nothing, the JSON is parsed as
before."""

from __future__ import annotations

import glob
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_txnlog.engine import Table
from airflow_txnlog.engine.log import checkpoint_columns
from airflow_txnlog.engine.log.stats_struct import parse_stats
from airflow_txnlog.engine.state import checkpoint

SCHEMA = pa.schema([("id", pa.int64()), ("x", pa.float64()), ("s", pa.string()), ("p", pa.string())])
NO_STRUCT = {"delta.checkpoint.writeStatsAsStruct": "false"}


def _table(root: Path, schema: pa.Schema, props: dict[str, str], part_size: int | None) -> Table:
    """A table whose checkpoint (version 20, in parts of `part_size` actions) has JSON stats only,
    whose metadata then asks for `stats_parsed`, and whose later commits remove some of the
    checkpoint's files."""
    conf = {**NO_STRUCT, **props}
    t = Table.create(
        str(root), schema=schema, partition_by=["p"], properties=conf, checkpoint_part_size=part_size
    )
    for i in range(20):
        row = {"id": [i, i + 100], "x": [i / 3, None], "s": [f"s{i}", "z"], "p": [f"p{i % 3}"] * 2}
        t.write(pa.table(row, schema=schema))
    t.checkpoint()
    t.set_properties({"delta.checkpoint.writeStatsAsStruct": "true"})
    with t.transaction(operation="DELETE") as txn:  # live checkpoint rows hidden by the tail
        for f in t.snapshot().files(filter="p = 'p1'"):
            txn.remove(f)
        txn.commit()
    t.write(pa.table({"id": [7], "x": [0.5], "s": ["t"], "p": ["p0"]}, schema=schema))
    return t


def _rows_parsed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of stats strings each call of the checkpoint writer's parse gets."""
    seen: list[int] = []

    def counted(stats: pa.Array, target: pa.StructType) -> pa.StructArray:
        seen.append(len(stats))
        return parse_stats(stats, target)

    monkeypatch.setattr(checkpoint, "parse_stats", counted)
    return seen


def _checkpoint_rows(root: Path, version: int) -> list[str]:
    parts = glob.glob(str(root / "_delta_log" / f"{version:020d}.checkpoint.*parquet"))
    table = pa.concat_tables(pq.read_table(part) for part in parts)
    assert "stats_parsed" in table.schema.field("add").type.names  # (the metadata asks for it)
    return sorted(map(repr, table.to_pylist()))


CASES = {
    "double": (pa.float64(), {}, None, True),
    "column-mapping": (pa.float64(), {"delta.columnMapping.mode": "name"}, None, True),
    "in-parts": (pa.float64(), {}, 5, True),
    "float32": (pa.float32(), {}, None, False),
}


@pytest.mark.parametrize(("x_type", "props", "part_size", "reused"), CASES.values(), ids=CASES.keys())
def test_a_checkpoint_after_add_actions_writes_the_stats_that_call_parsed(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    x_type: pa.DataType,
    props: dict[str, str],
    part_size: int | None,
    reused: bool,
) -> None:
    """Two copies of one table checkpointed, one from a fresh open, one after `add_actions()` on
    the table's own snapshot: the same rows. The snapshot parses the old checkpoint 4 rows at a time
    and the writer converts 3 at a time, so the writer's batches cut across the parsed ones. After
    `add_actions()` the writer parses only the tail's stats, unless a float32 bound could be
    rounded otherwise by the two parses (then it parses everything, as before)."""
    monkeypatch.setattr(checkpoint, "BATCH_ROWS", 3)
    monkeypatch.setattr(checkpoint_columns, "_MIN_BATCH_ROWS", 4)
    monkeypatch.setattr(checkpoint_columns, "_BATCH_ROWS", 4)
    schema = SCHEMA.set(1, pa.field("x", x_type))
    version = _table(tmp_path / "fresh", schema, props, part_size).latest_version()
    shutil.copytree(tmp_path / "fresh", tmp_path / "loaded")
    fresh_seen = _rows_parsed(monkeypatch)
    Table.open(str(tmp_path / "fresh"), checkpoint_part_size=part_size).checkpoint()
    t = Table.open(str(tmp_path / "loaded"), checkpoint_part_size=part_size)
    snap = t.snapshot()
    assert snap.parsed_base_stats() is None  # (nothing parsed yet: nothing to give)
    assert len(snap.add_actions()) == snap.num_files == 14  # (20 - 7 removed + 1)
    parsed = snap.parsed_base_stats()
    assert (parsed is not None) == reused
    if reused:  # (parsed 4 rows at a time: some of the writer's 3-row slices span two chunks)
        assert isinstance(parsed, pa.ChunkedArray) and parsed.num_chunks > 1
    loaded_seen = _rows_parsed(monkeypatch)
    t.checkpoint()
    assert _checkpoint_rows(tmp_path / "loaded", version) == _checkpoint_rows(tmp_path / "fresh", version)
    assert sum(fresh_seen) == snap.num_files
    assert sum(loaded_seen) == (1 if reused else snap.num_files)  # (1: the tail's one add)
