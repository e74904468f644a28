"""Checkpoint columns read on demand (engine.log.checkpoint_columns): what opening reads, what a later
read costs, parts that disagree on schema, and a checkpoint file cleaned up under a loaded snapshot."""

from __future__ import annotations

import glob
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from airflow_txnlog.engine import AddFile, LogCorruptedError, Table
from airflow_txnlog.engine.log import checkpoint_columns


def _table(root: Path, *, part_size: int = 1_000_000) -> Table:
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    t = Table.create(str(root), schema=schema, partition_by=["p"], checkpoint_part_size=part_size)
    for i in range(6):
        t.write(pa.table({"id": [i * 10, i * 10 + 9], "p": [f"v{i % 2}"] * 2}, schema=schema))
    t.checkpoint()
    t.write(pa.table({"id": [100], "p": ["v9"]}, schema=schema))
    return t


def _spy_on_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The parquet columns every checkpoint read asks for, in order."""
    read: list[str] = []
    real = checkpoint_columns.CheckpointColumns._decode

    def spy(self: Any, f: Any, columns: list[str]) -> pa.Table:
        read.extend(columns)
        return real(self, f, columns)

    monkeypatch.setattr(checkpoint_columns.CheckpointColumns, "_decode", spy)
    return read


def test_opening_reads_only_the_file_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _table(tmp_path / "t")
    read = _spy_on_reads(monkeypatch)
    snap = Table.open(str(tmp_path / "t")).snapshot()
    assert len(snap.file_paths()) == 7
    # (no deletion vector in any row, by the file's statistics: only the paths are decoded)
    assert {c for c in read if c.startswith("add.")} == {"add.path"}
    assert sorted(snap.add_actions(filter="id >= 45").column("min.id").to_pylist()) == [40, 50, 100]
    assert snap.add_actions().num_rows == 7
    assert "add.stats_parsed" in read
    assert "add.stats" not in read  # our checkpoints carry the struct: the JSON text is never read
    (f,) = snap.files(filter="id = 100")  # a tail file
    (g,) = snap.files(filter="id = 55")  # a checkpoint file: its JSON rendered from the struct
    assert f.stats and g.stats and "add.stats" not in read
    assert g.deletion_vector is None and "add.deletionVector" not in read  # (known null, never decoded)
    assert g.tags is None and not {"add.baseRowId", "add.clusteringProvider"} & set(read)
    assert '"minValues":{"id":50}' in g.stats


def test_an_optional_field_some_row_has_is_decoded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tags (a map) are always read: one tagged file among untagged ones gives each its own; the
    row ids, null in every row by the part's statistics, are not decoded."""
    t = Table.create(str(tmp_path / "t"), schema=pa.schema([("id", pa.int64())]))
    with t.transaction() as txn:
        for i in range(3):
            tags = {"k": "v"} if i == 1 else None
            txn.add(
                AddFile(path=f"f{i}.parquet", partition_values={}, size=1, modification_time=1, tags=tags)
            )
        txn.commit()
    t.checkpoint()
    read = _spy_on_reads(monkeypatch)
    files = {f.path: f.tags for f in Table.open(t.uri).snapshot().files()}
    assert files == {"f0.parquet": None, "f1.parquet": {"k": "v"}, "f2.parquet": None}
    assert "add.tags" in read and "add.baseRowId" not in read


def test_pruning_reads_only_the_predicates_stats_leaves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _table(tmp_path / "t")
    read = _spy_on_reads(monkeypatch)
    snap = Table.open(str(tmp_path / "t")).snapshot()
    read.clear()
    (f,) = snap.files(filter="id = 55")
    leaves = {
        f"add.stats_parsed.{leaf}" for leaf in ("numRecords", "nullCount.id", "minValues.id", "maxValues.id")
    }
    assert set(read[:4]) == leaves  # the pruning: the predicate column's stats leaves only
    # then the one matching AddFile: its other fields, whole (a parquet read cannot pick rows)
    assert '"minValues":{"id":50}' in (f.stats or "") and f.partition_values == {"p": "v1"}
    assert "add.stats_parsed" in read[4:] and "add.stats" not in read
    assert "add.partitionValues_parsed" not in read  # an AddFile does not need it


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
    fresh = Table.open(str(root)).snapshot()  # pruning reads leaves: the slim part has none
    assert sorted(f.path for f in fresh.files(filter="id >= 45 AND id < 52")) == sorted(
        f.path for f in snap.files() if f.parsed_stats()["minValues"]["id"] in (40, 50)
    )


def test_checkpoint_removed_after_load_is_a_clear_error(tmp_path: Path) -> None:
    _table(tmp_path / "t")
    snap = Table.open(str(tmp_path / "t")).snapshot()
    for f in glob.glob(str(tmp_path / "t" / "_delta_log" / "*.checkpoint.parquet")):
        Path(f).unlink()
    with pytest.raises(
        LogCorruptedError, match=r"removed after this snapshot was loaded.*open the table again"
    ):
        snap.add_actions()


def test_files_at_any_order_and_repeats(tmp_path: Path) -> None:
    _table(tmp_path / "t")
    snap = Table.open(str(tmp_path / "t")).snapshot()
    keys = snap.file_keys().to_pylist()
    n = len(keys)  # 6 checkpoint files, then 1 tail file
    for positions in ([1, 0, 2, 3], [0, 0, 1, 2], [n - 1, 0], list(range(n))[::-1], [3]):
        assert [f.path for f in snap.files_at(positions)] == [keys[i] for i in positions]
    with pytest.raises(IndexError):
        snap.files_at([n])


def test_a_handle_survives_log_cleanup_of_its_checkpoint(tmp_path: Path) -> None:
    """A long-lived Table (an Airflow worker's, a trigger's) whose snapshot was loaded from a
    checkpoint that log cleanup later removes: its next snapshot rebases on the newer checkpoint."""
    root = str(tmp_path / "t")
    schema = pa.schema([("id", pa.int64())])
    t = Table.create(root, schema=schema)
    for i in range(3):
        t.write(pa.table({"id": [i]}, schema=schema))
    t.checkpoint()
    reader = Table.open(root)
    assert reader.snapshot().checkpoint_version == 3
    for i in range(3):
        t.write(pa.table({"id": [10 + i]}, schema=schema))
    t.checkpoint()
    t.write(pa.table({"id": [99]}, schema=schema))
    t.cleanup_log(retention_hours=0, dry_run=False)
    assert not Path(root, "_delta_log", f"{3:020d}.checkpoint.parquet").exists()
    assert reader.snapshot().checkpoint_version == 6  # rebased (the writer's state is all in memory)
    for handle in (reader, t):
        snap = handle.snapshot()
        assert snap.version == 7
        assert sorted(f.path for f in snap.files(filter="id > 5")) == sorted(
            f.path for f in snap.files() if (f.parsed_stats() or {}).get("minValues", {}).get("id", 0) > 5
        )
        assert snap.size_bytes == sum(f.size for f in snap.files())


def test_a_partition_value_of_another_type_does_not_block_checkpoints(tmp_path: Path) -> None:
    root = tmp_path / "t"
    schema = pa.schema([("id", pa.int64()), ("p", pa.int32())])
    t = Table.create(str(root), schema=schema, partition_by=["p"])
    t.write(pa.table({"id": [1], "p": [1]}, schema=schema))
    add = {
        "add": {
            "path": "p=abc/x.parquet",
            "partitionValues": {"p": "abc"},
            "size": 1,
            "modificationTime": 0,
            "dataChange": True,
        }
    }
    (root / "_delta_log" / f"{2:020d}.json").write_text(json.dumps(add) + "\n")
    Table.open(str(root)).checkpoint()
    ck = pq.read_table(root / "_delta_log" / f"{2:020d}.checkpoint.parquet")
    add_type = ck.schema.field("add").type
    assert add_type.get_field_index("stats_parsed") >= 0
    assert add_type.get_field_index("partitionValues_parsed") < 0  # left out, the strings carry them
    assert len(Table.open(str(root)).snapshot().file_paths()) == 2


def test_iter_read_gives_the_rows_of_read_in_batches_without_keeping_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Streamed rows (a checkpoint written from this one) are `read`'s rows, batch by batch, across
    parts and with fields one part lacks; kept fields come from memory, the others are not kept."""
    root = tmp_path / "t"
    _table(root, part_size=4)
    source = Table.open(str(root)).snapshot().state.source
    assert source is not None
    fields = ["path", "size", "stats", "partitionValues", "stats_parsed", "no_such_field"]
    whole = source.read("add", fields)
    source._cache.clear()  # (what load kept is used when present; here nothing is)
    batches = list(source.iter_read("add", fields, rows=2))
    assert len(batches) > len(source._paths) and max(len(b) for b in batches) <= 2
    assert pa.concat_arrays(batches).equals(whole)
    assert not source._cache  # nothing kept
    read = _spy_on_reads(monkeypatch)
    assert pa.concat_arrays(list(source.iter_read("add", ["size"], rows=3))).equals(
        source.read("add", ["size"])
    )
    # (a part holding no add row is not opened for its fields; which part a file lands in depends
    # on the hash of its random name, so all 6 can share one part)
    parts = glob.glob(str(root / "_delta_log" / "*.checkpoint.*.parquet"))
    with_adds = sum(
        pq.read_table(p, columns=["add"]).column("add").null_count < pq.read_metadata(p).num_rows
        for p in parts
    )
    assert len(parts) == len(source._paths) == 2 and with_adds >= 1
    assert read == ["add.size"] * with_adds  # (iter_read's own reads are not `_read`s)


def test_ordered_map_keeps_the_order_bounds_what_waits_and_raises_the_first_error() -> None:
    drawn: list[int] = []

    def items(n: int) -> Any:
        for i in range(n):
            drawn.append(i)
            yield i

    results = checkpoint_columns.ordered_map(lambda i: i * i, items(50), workers=2)
    first = next(results)
    assert first == 0 and len(drawn) <= 2 + checkpoint_columns.WAITING * 2
    assert [first, *results] == [i * i for i in range(50)]

    def fails_at_7(i: int) -> int:
        if i == 7:
            raise ValueError("seven")
        return i

    with pytest.raises(ValueError, match="seven"):
        list(checkpoint_columns.ordered_map(fails_at_7, range(20), workers=3))


def _json_stats_table(tmp_path: Path) -> Table:
    """A checkpoint of 9 files in parts of 4 (several batches), JSON stats beside no struct."""
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    conf = {"delta.checkpoint.writeStatsAsStruct": "false"}
    t = Table.create(
        str(tmp_path / "t"), schema=schema, partition_by=["p"], properties=conf, checkpoint_part_size=4
    )
    for i in range(9):
        t.write(pa.table({"id": [i, i * 7], "p": [f"v{i % 2}"] * 2}, schema=schema))
    t.checkpoint()
    return t


def test_a_kept_derived_field_is_kept_compressed_and_read_back_exactly(tmp_path: Path) -> None:
    """`derive` with a `KeepField` keeps the field (as `read` would: JSON stats beside no struct)
    compressed batch by batch: `take` restores only the batches it needs, `read` the whole field,
    both equal to a plain read."""
    t = _json_stats_table(tmp_path)

    def source() -> checkpoint_columns.CheckpointColumns:
        columns = Table.open(t.uri).snapshot().state.source
        assert columns is not None and "stats_parsed" not in columns.field_names("add")
        return columns

    expected = source().read("add", ["stats"]).field(0)
    kept = source()
    lengths = kept.derive("add", "stats", checkpoint_columns.KeepField(pc.utf8_length))
    assert lengths.equals(pa.chunked_array([pc.utf8_length(expected)]))  # (chunked: one per batch)
    assert ("add", "stats") in kept._packed and ("add", "stats") not in kept._cache
    rows = pa.array([0, 3, len(expected) - 1])
    assert kept.take("add", ["stats", "path"], rows).field("stats").equals(expected.take(rows))
    assert kept.read("add", ["stats"]).field(0).equals(expected)  # restored whole, then kept plain
    assert ("add", "stats") not in kept._packed and ("add", "stats") in kept._cache
    plain = source()
    plain.derive("add", "stats", pc.utf8_length)  # a plain function: nothing kept
    assert ("add", "stats") not in plain._packed and ("add", "stats") not in plain._cache


def test_a_derived_field_whose_result_gives_it_back_is_rendered_not_kept(tmp_path: Path) -> None:
    """With `exact` and `render`, `derive` keeps (compressed) only the batches whose result does
    not give the field back; `take` renders the others from the result, and a whole `read` reads
    the field from the files again."""
    t = _json_stats_table(tmp_path)
    columns = Table.open(t.uri).snapshot().state.source
    assert columns is not None
    expected = columns.read("add", ["stats"]).field(0)
    kept = Table.open(t.uri).snapshot().state.source
    assert kept is not None

    first = expected[0].as_py()

    def exact(text: pa.Array) -> tuple[pa.Array, bool]:  # (the first row's batch "cannot" render)
        return text, not pc.any(pc.equal(text, first)).as_py()

    field = checkpoint_columns.KeepField(lambda a: a, exact=exact, render=pc.utf8_upper)
    assert kept.derive("add", "stats", field).combine_chunks().equals(expected)
    packed = kept._packed[("add", "stats")]
    assert {b is None for b, _ in packed} == {True, False}  # (parts of 4 files: several batches)
    rows = pa.array(range(len(expected)))
    taken = kept.take("add", ["stats"], rows).field(0).to_pylist()
    assert [g in (e, e.upper()) for g, e in zip(taken, expected.to_pylist(), strict=True)] == [True] * len(
        rows
    )
    batch_of = np.repeat(np.arange(len(packed)), [n for _, n in packed])
    rendered = [packed[b][0] is None for b in batch_of]
    assert [g != e for g, e in zip(taken, expected.to_pylist(), strict=True)] == rendered
    assert kept.read("add", ["stats"]).field(0).equals(expected)  # (read from the files again)


@pytest.mark.parametrize("part_size", [1_000_000, 4])
def test_a_big_parts_small_actions_read_beside_its_keys_give_the_same_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, part_size: int
) -> None:
    """From `_LOCAL_SIDE_READ_ROWS` rows (`_SIDE_READ_ROWS` on an object store) a part's small
    actions are read on another thread through a second open of the file: the snapshot is the same
    as when they are read inline (one part, and several, where only some parts hold the small
    actions)."""
    t = _table(tmp_path / "t", part_size=part_size)
    inline = Table.open(t.storage.root).snapshot()
    monkeypatch.setattr(checkpoint_columns, "_LOCAL_SIDE_READ_ROWS", 0)
    submitted: list[str] = []
    pool = checkpoint_columns.part_reads()

    class Counting:
        def submit(self, fn: Any, path: str, *args: Any) -> Any:
            submitted.append(path)
            return pool.submit(fn, path, *args)

    monkeypatch.setattr(checkpoint_columns, "part_reads", Counting)
    side = Table.open(t.storage.root).snapshot()
    parts = sorted(glob.glob(str(tmp_path / "t" / "_delta_log" / "*.checkpoint*.parquet")))
    assert len(submitted) == len(parts) >= (1 if part_size > 4 else 2)  # (the side path ran, per part)
    assert side.protocol == inline.protocol and side.metadata == inline.metadata
    assert side.file_paths() == inline.file_paths()
    assert side.add_actions().equals(inline.add_actions())


@pytest.mark.parametrize(("uri", "buffer"), [("local", 1 << 20), ("memory", 8 << 20)])
def test_a_local_checkpoint_streams_through_small_buffers_an_object_stores_through_large(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, uri: str, buffer: int
) -> None:
    """A local refill is a page-cache copy; an object store's is a ranged request (see the module)."""
    root = str(tmp_path / "t") if uri == "local" else f"memory://{tmp_path.name}/t"
    schema = pa.schema([("id", pa.int64())])
    t = Table.create(root, schema=schema)
    t.write(pa.table({"id": [1, 2]}, schema=schema))
    t.checkpoint()
    sizes: list[int] = []
    real = checkpoint_columns.open_parquet

    def spy(source: Any, *, buffer_size: int, pre_buffer: bool) -> pq.ParquetFile:
        sizes.append(buffer_size)
        return real(source, buffer_size=buffer_size, pre_buffer=pre_buffer)

    monkeypatch.setattr(checkpoint_columns, "open_parquet", spy)
    snap = Table.open(root).snapshot()
    assert snap.add_actions().num_rows == 1 and sizes and set(sizes) == {buffer}


def test_a_column_with_no_row_in_a_part_is_not_decoded_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint without tombstones: the next checkpoint reads none of its `remove` fields (at a
    million rows they decode to ~1M nulls each); one with tombstones has them read and carried over."""
    _table(tmp_path / "t")  # (its checkpoint holds no tombstone)
    read = _spy_on_reads(monkeypatch)
    t = Table.open(str(tmp_path / "t"))
    t.checkpoint()
    assert read and not [c for c in read if c.startswith("remove.") and c != "remove.path"]
    (gone,) = t.snapshot().files(filter="id = 100")
    with t.transaction(operation="DELETE") as txn:
        txn.remove(gone)
        txn.commit()
    t.checkpoint()  # (this one holds the tombstone)
    read.clear()
    t = Table.open(str(tmp_path / "t"))
    t.checkpoint()
    assert {"remove.deletionTimestamp", "remove.size"} <= set(read)
    assert t.snapshot().state.live_removes().column("key").to_pylist() == [gone.path]
