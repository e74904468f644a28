"""Checkpoints written as streams of row groups (engine.state.checkpoint_parts): the same rows as the
whole-table form, in several row groups and parts, in bounded pieces; nothing half-written left
behind by a failure; object stores (one put per part) alike; a `stats_parsed` carried over from the
previous checkpoint equal to parsing the JSON stats it sits beside."""

from __future__ import annotations

import contextlib
import glob
import json
import os
import sys
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from airflow_txnlog.engine import Table, writeback
from airflow_txnlog.engine.log.spark_hash import part_of
from airflow_txnlog.engine.log.stats_struct import parse_stats
from airflow_txnlog.engine.state import checkpoint, checkpoint_parts

SCHEMA = pa.schema([("id", pa.int64()), ("x", pa.float64()), ("s", pa.string()), ("p", pa.string())])


def _small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches of 3 add rows and row groups of 4 rows, so a few dozen files make many of each."""
    monkeypatch.setattr(checkpoint, "BATCH_ROWS", 3)
    monkeypatch.setattr(checkpoint_parts, "ROW_GROUP_ROWS", 4)


def _table(root: Path, files: int = 23, **kw: object) -> Table:
    t = Table.create(str(root), schema=SCHEMA, partition_by=["p"], **kw)  # type: ignore[arg-type]
    for i in range(files):
        t.write(
            pa.table({"id": [i, i + 100], "x": [i / 2, None], "s": [f"s{i}", "z"], "p": [f"p{i % 3}"] * 2})
        )
    return t


def _parts(root: Path, version: int) -> list[str]:
    return sorted(glob.glob(str(root / "_delta_log" / f"{version:020d}.checkpoint*.parquet")))


def _row_groups(files: list[str]) -> list[int]:
    return [
        pq.ParquetFile(f).metadata.row_group(i).num_rows
        for f in files
        for i in range(pq.ParquetFile(f).num_row_groups)
    ]


@pytest.mark.parametrize("part_size", [1_000_000, 10], ids=["one-file", "multi-part"])
def test_a_streamed_checkpoint_holds_the_whole_tables_rows_in_many_row_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, part_size: int
) -> None:
    _small_pieces(monkeypatch)
    root = tmp_path / "t"
    _table(root, checkpoint_part_size=part_size).checkpoint(5)  # the next one streams from this one
    t = Table.open(str(root), checkpoint_part_size=part_size)
    with t.transaction(operation="DELETE") as txn:  # tombstones, and live checkpoint rows replaced
        for f in t.snapshot().files(filter="p = 'p1'"):
            txn.remove(f)
        txn.commit()
    snap = Table.open(str(root)).snapshot()
    whole, adds = checkpoint.checkpoint_table(snap.state, min_tombstone_ts=0)
    before = snap.add_actions().sort_by("path").drop_columns(["data_change"])  # (false once checkpointed)
    t.checkpoint()
    files = _parts(root, snap.version)
    streamed = pa.concat_tables(pq.read_table(f) for f in files)
    assert streamed.schema == whole.schema and adds == snap.num_files
    assert sorted(map(repr, streamed.to_pylist())) == sorted(map(repr, whole.to_pylist()))
    assert len(_row_groups(files)) >= whole.num_rows // 4 and max(_row_groups(files)) <= 4
    if len(files) > 1:  # every action of a path in the part Spark's hash partitioning gives it
        for number, f in enumerate(files, start=1):
            for row in pq.read_table(f).to_pylist():
                path = (row["add"] or row["remove"] or {}).get("path")
                assert path is None or part_of(path, len(files)) == number
    after = Table.open(str(root)).snapshot()
    assert after.checkpoint_version == snap.version
    assert after.add_actions().sort_by("path").drop_columns(["data_change"]).equals(before)


def test_a_failure_while_streaming_leaves_no_checkpoint_and_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _small_pieces(monkeypatch)
    root = tmp_path / "t"
    _table(root, checkpoint_part_size=20).checkpoint(10)
    t = Table.open(str(root))  # (its state streams from the checkpoint of version 10)
    real, calls = checkpoint._base_add_rows, []

    def fails_later(*a: object) -> pa.StructArray:
        calls.append(1)
        if len(calls) == 3:
            raise OSError("disk gone")
        return real(*a)  # type: ignore[arg-type]

    monkeypatch.setattr(checkpoint, "_base_add_rows", fails_later)
    hint = (root / "_delta_log" / "_last_checkpoint").read_text()
    with pytest.raises(OSError, match="disk gone"):
        t.checkpoint()
    assert _parts(root, t.latest_version()) == []
    assert os.listdir(root / "_delta_log" / ".tmp") == []
    assert (root / "_delta_log" / "_last_checkpoint").read_text() == hint
    assert Table.open(str(root)).snapshot().num_files == 23


def test_object_stores_get_each_part_in_one_put(monkeypatch: pytest.MonkeyPatch) -> None:
    _small_pieces(monkeypatch)
    t = _table(Path("memory://stream-cp"), files=9, checkpoint_part_size=8)  # type: ignore[arg-type]
    puts: list[str] = []
    real = t.storage.write
    together = threading.Barrier(2, timeout=10)  # (the two parts are put side by side)

    def counting(key: str, data: bytes) -> None:
        if ".checkpoint." in key:
            together.wait()
        puts.append(key)
        real(key, data)

    monkeypatch.setattr(t.storage, "write", counting)
    t.checkpoint()
    names = [k.rsplit("/", 1)[1] for k in puts]
    assert sorted(names[:2]) == [  # (put side by side, in either order)
        "00000000000000000009.checkpoint.0000000001.0000000002.parquet",  # (9 adds, protocol, metaData)
        "00000000000000000009.checkpoint.0000000002.0000000002.parquet",
    ]
    assert names[2:] == ["_last_checkpoint"]
    snap = Table.open("memory://stream-cp").snapshot()
    assert snap.checkpoint_version == 9 and snap.num_files == 9


@pytest.mark.parametrize("writer", ["ours", "delta-rs"])
def test_stats_parsed_carried_over_equals_the_json_it_sits_beside(tmp_path: Path, writer: str) -> None:
    """A checkpoint written from one that has both stats forms keeps that `stats_parsed` (no second
    parse): it must be what parsing the JSON stats next to it gives."""
    root = str(tmp_path / "t")
    data = pa.table({"id": [1, 2], "x": [1.5, float("nan")], "s": ["a", None], "p": ["u", "v"]})
    if writer == "ours":
        t = _table(Path(root), files=4)
        t.checkpoint()
    else:
        write_deltalake(
            root, data, partition_by=["p"], configuration={"delta.checkpoint.writeStatsAsStruct": "true"}
        )
        write_deltalake(root, data, partition_by=["p"], mode="append")
        DeltaTable(root).create_checkpoint()
    t = Table.open(root)
    t.write(data)
    state = t.snapshot().state
    assert state.source is not None and "stats_parsed" in state.source.field_names("add")
    t.checkpoint()
    adds = pa.concat_arrays(
        [pq.read_table(f).column("add").combine_chunks() for f in _parts(Path(root), state.version)]
    )
    adds = adds.filter(adds.is_valid())
    struct = adds.field("stats_parsed")
    assert struct.equals(parse_stats(adds.field("stats"), struct.type))


def test_checkpoints_are_one_classic_file_unless_parts_are_asked_for(tmp_path: Path) -> None:
    """PROTOCOL.md deprecates multi-part checkpoints and Delta on Spark leaves `checkpoint.partSize`
    unset: by default a checkpoint is one file however many actions it holds (here 23 adds, a
    protocol, a metadata: well over the part size of 10 asked for on the other handle)."""
    root = tmp_path / "t"
    _table(root).checkpoint(23)
    assert Table.open(str(root)).checkpoint_part_size is None
    assert [os.path.basename(f) for f in _parts(root, 23)] == [f"{23:020d}.checkpoint.parquet"]
    Table.open(str(root), checkpoint_part_size=10).checkpoint(23)  # (asked: three parts beside it)
    assert len(_parts(root, 23)) == 4
    Table.open(str(root), checkpoint_part_size=None).checkpoint(23)
    hint = json.loads((root / "_delta_log" / "_last_checkpoint").read_text())
    assert hint["version"] == 23 and "parts" not in hint


@pytest.mark.parametrize("part_size", [None, 4], ids=["one-file", "multi-part"])
def test_a_partition_value_not_of_its_type_drops_the_typed_values_from_every_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, part_size: int | None
) -> None:
    """`partitionValues_parsed` is typed batch by batch while rows are written; another writer's
    value that is not of its column's type, met after rows went to the writer, restarts the
    checkpoint without the column: no typed values in any row of any part, nothing left behind. So
    it goes when the value is among the commits (first checkpoint) and among the rows of the
    previous checkpoint (second)."""
    _small_pieces(monkeypatch)
    root = tmp_path / "t"
    schema = pa.schema([("id", pa.int64()), ("n", pa.int32())])
    t = Table.create(str(root), schema=schema, partition_by=["n"], checkpoint_part_size=part_size)
    for i in range(7):
        t.write(pa.table({"id": [i], "n": [i]}, schema=schema))
    bad = {"path": "n=abc/bad.parquet", "partitionValues": {"n": "abc"}, "size": 10}
    bad |= {"modificationTime": 1, "dataChange": True, "stats": json.dumps({"numRecords": 1})}
    log = root / "_delta_log"
    (log / f"{t.latest_version() + 1:020d}.json").write_text(json.dumps({"add": bad}) + "\n")
    events: list[object] = []
    real_plan, real_add = checkpoint._plan, checkpoint_parts.PartWriters.add

    def plan(*a: object, **kw: object) -> object:
        events.append(kw.get("typed_values", True))
        return real_plan(*a, **kw)  # type: ignore[arg-type]

    def add(self: checkpoint_parts.PartWriters, pieces: list[pa.Table]) -> None:
        events.append("rows")
        real_add(self, pieces)

    monkeypatch.setattr(checkpoint, "_plan", plan)
    monkeypatch.setattr(checkpoint_parts.PartWriters, "add", add)
    for more in range(2):
        t = Table.open(str(root), checkpoint_part_size=part_size)
        if more:
            t.write(pa.table({"id": [99], "n": [99]}, schema=schema))
        events.clear()
        t.checkpoint()
        version = t.latest_version()
        assert events[0] is True and "rows" in events[: events.index(False)]  # rows written, then again
        parts = _parts(root, version)
        assert len(parts) == (1 if part_size is None else 3)  # (2 small actions + 8 or 9 adds, 4 a part)
        paths = []
        for part in parts:
            add_type = pq.read_schema(part).field("add").type
            assert add_type.get_field_index("partitionValues_parsed") < 0
            assert add_type.get_field_index("stats_parsed") >= 0  # (the stats are still typed)
            paths += [r["path"] for r in pq.read_table(part).column("add").to_pylist() if r]
        assert sorted(paths) == sorted(f.path for f in Table.open(str(root)).snapshot().files())
        assert "n=abc/bad.parquet" in paths and len(paths) == 8 + more
        assert os.listdir(log / ".tmp") == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sync_file_range is Linux's")
def test_a_local_part_is_written_back_as_its_row_groups_are_written_and_left_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _small_pieces(monkeypatch)
    root = tmp_path / "t"
    _table(root).checkpoint(20)
    t = Table.open(str(root))  # (its adds stream from that checkpoint, 3 at a time)
    real, started = writeback._sync_file_range(), []
    assert real is not None

    def record(fd: int, offset: int, length: int, flags: int) -> int:
        started.append((os.readlink(f"/proc/self/fd/{fd}"), offset, length))
        return real(fd, offset, length, flags)

    monkeypatch.setattr(writeback, "_sync_file_range", lambda: record)
    t.checkpoint()
    (part,) = _parts(root, t.latest_version())
    assert len(_row_groups([part])) >= 5
    assert len(started) >= len(_row_groups([part])) // 2  # (a flush writes a row group or two)
    (temp,) = {name for name, _, _ in started}  # the part's temporary file, before its rename
    assert os.path.dirname(temp) == str(root / "_delta_log" / ".tmp") and not os.path.exists(temp)
    ends = [0] + [offset + length for _, offset, length in started]
    assert [offset for _, offset, _ in started] == ends[:-1]  # each stretch once, in order
    assert ends[-1] < os.path.getsize(part)  # (the footer, written at close, is left to the fsync)
    assert not {f for f in _open_files() if "checkpoint" in f}  # the part's handle is closed


def _open_files() -> set[str]:
    names = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(FileNotFoundError):  # (the listing's own descriptor, closed)
            names.add(os.readlink(f"/proc/self/fd/{fd}"))
    return names
