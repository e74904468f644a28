"""Interoperability with delta-rs (`deltalake`): each side reads what the other wrote.

Rows are compared as sorted sets of tuples over all columns (partition columns included), with
timestamps compared as instants. Versions, checkpoint files and file lists are compared too.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from airflow_txnlog.engine import Table
from airflow_txnlog.engine.log.spark_hash import part_of

pytestmark = pytest.mark.compat

SCHEMA = pa.schema(
    [
        ("s", pa.string()),
        ("i", pa.int64()),
        ("d", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("v", pa.float64()),
        ("n", pa.int32()),
    ]
)
SPECIAL = ["a b", "%", "=", "/", "é", "日本", "a%20b", None, "plain"]
BASE_TS = dt.datetime(2021, 3, 4, 5, 6, 7, 123456, tzinfo=dt.UTC)


# ----------------------------------------------------------------------------- helpers
def _data(n: int, start: int = 0) -> pa.Table:
    """`n` rows whose values cycle through special strings, nulls and distinct dates / instants."""
    k = range(start, start + n)
    return pa.table(
        {
            "s": [SPECIAL[j % len(SPECIAL)] for j in k],
            "i": [None if j % 4 == 3 else j % 4 for j in k],
            "d": [None if j % 5 == 4 else dt.date(2020, 1, 1) + dt.timedelta(days=j % 5) for j in k],
            "ts": [None if j % 6 == 5 else BASE_TS + dt.timedelta(hours=j % 6) for j in k],
            "v": [j * 1.5 for j in k],
            "n": [j for j in k],
        },
        schema=SCHEMA,
    )


def _norm(value: Any) -> Any:
    if isinstance(value, dt.datetime):  # an instant: naive values are UTC
        value = value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
        return ("instant", value.astimezone(dt.UTC).isoformat())
    return value


def _rows(table: Any) -> tuple[list[str], list[tuple[Any, ...]]]:
    """(sorted column names, sorted row tuples) of an Arrow-compatible table."""
    table = pa.table(table)
    cols = sorted(table.column_names)
    rows = [tuple(_norm(r[c]) for c in cols) for r in table.to_pylist()]
    return cols, sorted(rows, key=repr)


def _ours(path: Path, version: int | None = None) -> tuple[list[str], list[tuple[Any, ...]]]:
    return _rows(Table.open(str(path)).snapshot(version).to_arrow())


def _theirs(path: Path, version: int | None = None) -> tuple[list[str], list[tuple[Any, ...]]]:
    return _rows(DeltaTable(str(path), version=version).to_pyarrow_table())


def _deltars_paths(path: Path, version: int | None = None) -> list[str]:
    """delta-rs's live files as decoded paths relative to the table root."""
    root = str(path).rstrip("/") + "/"
    uris = [u.removeprefix("file://") for u in DeltaTable(str(path), version=version).file_uris()]
    assert all(u.startswith(root) for u in uris), uris
    return sorted(u[len(root) :] for u in uris)


def _last_checkpoint(path: Path) -> dict[str, Any]:
    return json.loads((path / "_delta_log" / "_last_checkpoint").read_text())


def _assert_same(path: Path, version: int | None = None) -> None:
    assert _ours(path, version) == _theirs(path, version)


def _make(path: Path, partition_by: tuple[str, ...] = (), **kw: Any) -> Table:
    return Table.create(str(path), schema=SCHEMA, partition_by=partition_by, **kw)


def _log_names(path: Path) -> set[str]:
    return {p.name for p in (path / "_delta_log").iterdir()}


# ----------------------------------------------------------------------------- written by us
PARTITIONINGS = [(), ("s",), ("i",), ("d",), ("ts",), ("s", "i", "d", "ts")]


@pytest.mark.parametrize("partition_by", PARTITIONINGS, ids=lambda p: "-".join(p) or "none")
def test_our_writes_read_by_deltars(tmp_path: Path, partition_by: tuple[str, ...]) -> None:
    path = tmp_path / "t"
    t = _make(path, partition_by)
    assert DeltaTable(str(path)).version() == 0
    assert _theirs(path) == _rows(SCHEMA.empty_table())
    t.write(_data(18))
    t.write(_data(9, start=18))
    expected = _rows(pa.concat_tables([_data(18), _data(9, start=18)]))
    assert _theirs(path) == expected
    assert DeltaTable(str(path)).version() == t.latest_version() == 2
    t.write(_data(7, start=100), mode="overwrite")
    assert DeltaTable(str(path)).version() == 3
    assert _theirs(path) == _rows(_data(7, start=100))
    assert _theirs(path, 2) == expected
    assert sorted(Table.open(str(path)).snapshot().file_paths()) == _deltars_paths(path)


def test_special_partition_values_seen_by_deltars(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = _make(path, ("s", "i", "d", "ts"))
    t.write(_data(36))
    adds = pa.table(DeltaTable(str(path)).get_add_actions(flatten=True)).to_pylist()
    assert {a["partition.s"] for a in adds} == set(SPECIAL)
    assert {a["partition.i"] for a in adds} == {0, 1, 2, None}
    assert None in {a["partition.d"] for a in adds}
    instants = {a["partition.ts"] for a in adds}
    assert {BASE_TS + dt.timedelta(hours=h) for h in range(5)} | {None} == instants
    # each file's partition values are those of all its rows (and no row is lost)
    for a in adds:
        data = pq.read_table(path / unquote(a["path"]))
        assert data.num_rows == a["num_records"]
    assert sum(a["num_records"] for a in adds) == 36


def test_deltars_filters_on_special_partition_values(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _make(path, ("s",)).write(_data(18))
    dtab = DeltaTable(str(path))
    for value in ["a b", "%", "=", "/", "é", "日本", "a%20b"]:
        got = dtab.to_pyarrow_table(filters=[("s", "=", value)])
        assert got.num_rows == 2, value
        assert set(got.column("s").to_pylist()) == {value}


# ----------------------------------------------------------------------------- checkpoints
def _table_with_commits(path: Path, commits: int, partition_by: tuple[str, ...] = (), **kw: Any) -> Table:
    """Version 0 plus `commits - 1` appends of 3 rows each (versions 1 .. commits-1)."""
    t = _make(path, partition_by, **kw)
    for k in range(1, commits):
        t.write(_data(3, start=3 * k))
    return t


def test_checkpoints_at_10_and_20_read_by_deltars(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = _table_with_commits(path, 25)
    assert t.latest_version() == 24
    names = _log_names(path)
    assert {"00000000000000000010.checkpoint.parquet", "00000000000000000020.checkpoint.parquet"} <= names
    assert not any(
        ".checkpoint." in n
        for n in names
        - {"00000000000000000010.checkpoint.parquet", "00000000000000000020.checkpoint.parquet"}
    )
    hint = _last_checkpoint(path)
    cp = pq.read_table(path / "_delta_log" / "00000000000000000020.checkpoint.parquet")
    assert hint["version"] == 20
    assert hint["size"] == cp.num_rows == 22  # protocol + metaData + 20 adds
    assert hint["numOfAddFiles"] == 20 == len(cp.column("add").drop_null())
    assert DeltaTable(str(path)).version() == 24
    assert _theirs(path) == _rows(pa.concat_tables([_data(3, start=3 * k) for k in range(1, 25)]))
    for v in (10, 15, 20, 24):
        _assert_same(path, v)
    assert Table.open(str(path)).snapshot().checkpoint_version == 20
    assert Table.open(str(path)).snapshot(15).checkpoint_version == 10


def test_deltars_reads_our_checkpoint_without_older_commits(tmp_path: Path) -> None:
    """With commits 0..19 gone, delta-rs can only rebuild the table from our checkpoint."""
    path = tmp_path / "t"
    _table_with_commits(path, 25, ("s",))
    expected = _ours(path)
    for v in range(20):  # commit 20 stays, as log cleanup keeps it
        (path / "_delta_log" / f"{v:020d}.json").unlink()
    assert DeltaTable(str(path)).version() == 24
    assert _theirs(path) == expected
    assert _theirs(path, 20) == _rows(pa.concat_tables([_data(3, start=3 * k) for k in range(1, 21)]))


def _part_names(version: int, parts: int) -> set[str]:
    return {f"{version:020d}.checkpoint.{i:010d}.{parts:010d}.parquet" for i in range(1, parts + 1)}


def test_multi_part_checkpoint_read_by_deltars(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = _table_with_commits(path, 7, ("s",))  # versions 0..6
    t.write(_data(4, start=50), mode="overwrite")  # version 7: tombstones in the checkpoint
    t.write(_data(9, start=60))  # version 8
    rows = 2 + len(t.snapshot().files()) + len(t.snapshot().tombstones())
    parts = -(-rows // 3)
    assert parts >= 3
    Table.open(str(path), checkpoint_part_size=3).checkpoint()
    names = _log_names(path)
    assert _part_names(8, parts) <= names
    assert "00000000000000000008.checkpoint.parquet" not in names
    hint = _last_checkpoint(path)
    assert (hint["version"], hint["parts"], hint["size"]) == (8, parts, rows)
    assert hint["numOfAddFiles"] == len(t.snapshot().files())
    sizes = [pq.read_metadata(path / "_delta_log" / n).num_rows for n in sorted(_part_names(8, parts))]
    assert sum(sizes) == rows
    # Parts are clustered by a hash of the path (protocol), not cut every 3 rows: check the clustering.
    for number, name in enumerate(sorted(_part_names(8, parts)), 1):
        part = pq.read_table(path / "_delta_log" / name)
        for column in ("add", "remove"):
            assert all(part_of(r["path"], parts) == number for r in part.column(column).to_pylist() if r)
    assert DeltaTable(str(path)).version() == 8
    _assert_same(path)
    fresh = Table.open(str(path)).snapshot()
    assert fresh.checkpoint_version == 8
    assert _rows(fresh.to_arrow()) == _rows(pa.concat_tables([_data(4, start=50), _data(9, start=60)]))


def test_deltars_reads_multi_part_checkpoint_alone(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = _table_with_commits(path, 9, ("i",))
    Table.open(str(path), checkpoint_part_size=3).checkpoint()
    expected = _ours(path)
    for v in range(8):  # commit 8 stays, as log cleanup keeps it
        (path / "_delta_log" / f"{v:020d}.json").unlink()
    assert DeltaTable(str(path)).version() == 8
    assert _theirs(path) == expected
    assert Table.open(str(path)).snapshot().checkpoint_version == 8
    assert _ours(path) == expected
    assert t.snapshot().version == 8


# ----------------------------------------------------------------------------- delta-rs writes to ours
def test_deltars_append_overwrite_delete_on_our_table(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = _make(path, ("s", "d"))
    t.write(_data(10))
    write_deltalake(str(path), _data(5, start=10), mode="append")
    assert t.latest_version() == 2
    assert t.snapshot().version == 2
    assert _rows(t.snapshot().to_arrow()) == _rows(_data(15))
    assert _ours(path) == _theirs(path)

    write_deltalake(str(path), _data(6, start=40), mode="overwrite")
    assert Table.open(str(path)).snapshot().version == 3
    assert _ours(path) == _rows(_data(6, start=40))
    assert _ours(path, 2) == _rows(_data(15))

    DeltaTable(str(path)).delete("n >= 43")
    assert Table.open(str(path)).snapshot().version == 4
    assert _ours(path) == _rows(_data(3, start=40))
    DeltaTable(str(path)).delete("s = 'a%20b'")  # a partition predicate: whole files go
    assert _ours(path) == _rows(_data(3, start=40).filter(pc.field("s") != "a%20b"))

    # and we keep writing after delta-rs
    v = t.write(_data(2, start=90))
    assert v == 6
    assert DeltaTable(str(path)).version() == 6
    _assert_same(path)
    assert sorted(Table.open(str(path)).snapshot().file_paths()) == _deltars_paths(path)


def test_deltars_delete_removes_are_tombstones_for_us(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = _make(path)
    t.write(_data(10))
    before = set(t.snapshot().file_paths())
    DeltaTable(str(path)).delete("n < 5")
    snap = Table.open(str(path)).snapshot()
    assert before <= {r.path for r in snap.tombstones()}
    assert not before & set(snap.file_paths())
    assert _rows(snap.to_arrow()) == _rows(_data(5, start=5))


# ----------------------------------------------------------------------------- written by delta-rs
def _deltars_table(path: Path, commits: int, partition_by: list[str] | None = None, **kw: Any) -> None:
    """A delta-rs table with versions 0 .. commits-1 (3 rows each)."""
    for k in range(commits):
        write_deltalake(str(path), _data(3, start=3 * k), mode="append", partition_by=partition_by, **kw)


def _assert_files_match(path: Path, version: int | None = None) -> None:
    assert sorted(Table.open(str(path)).snapshot(version).file_paths()) == _deltars_paths(path, version)


@pytest.mark.parametrize(
    "partition_by", [None, ["s"], ["ts"], ["s", "i", "d"]], ids=["none", "s", "ts", "s-i-d"]
)
def test_deltars_tables_read_by_us(tmp_path: Path, partition_by: list[str] | None) -> None:
    path = tmp_path / "t"
    _deltars_table(path, 6, partition_by)
    snap = Table.open(str(path)).snapshot()
    assert snap.version == DeltaTable(str(path)).version() == 5
    assert snap.partition_columns == (partition_by or [])
    assert _ours(path) == _theirs(path) == _rows(pa.concat_tables([_data(3, start=3 * k) for k in range(6)]))
    _assert_files_match(path)
    write_deltalake(str(path), _data(4, start=70), mode="overwrite", partition_by=partition_by)
    assert _ours(path) == _rows(_data(4, start=70))
    _assert_files_match(path)
    for v in range(7):
        _assert_same(path, v)
        _assert_files_match(path, v)


def test_deltars_create_checkpoint_read_by_us(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _deltars_table(path, 5, ["s"])
    DeltaTable(str(path)).create_checkpoint()
    assert "00000000000000000004.checkpoint.parquet" in _log_names(path)
    write_deltalake(str(path), _data(3, start=90), mode="append")
    snap = Table.open(str(path)).snapshot()
    assert snap.checkpoint_version == 4
    assert snap.version == 5
    _assert_same(path)
    _assert_files_match(path)
    # the checkpoint alone must carry the state
    for v in range(4):
        (path / "_delta_log" / f"{v:020d}.json").unlink()
    assert _ours(path) == _theirs(path)
    assert Table.open(str(path)).snapshot().num_files == len(DeltaTable(str(path)).file_uris())


def test_deltars_checkpoint_interval_read_by_us(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _deltars_table(path, 8, ["i"], configuration={"delta.checkpointInterval": "3"})
    # delta-rs checkpoints after every 3 commits (versions 2 and 5), not at multiples of 3
    checkpoints = sorted(n for n in _log_names(path) if ".checkpoint." in n)
    assert checkpoints == [
        "00000000000000000002.checkpoint.parquet",
        "00000000000000000005.checkpoint.parquet",
    ]
    snap = Table.open(str(path)).snapshot()
    assert snap.properties["delta.checkpointInterval"] == "3"
    assert (snap.version, snap.checkpoint_version) == (7, 5)
    assert Table.open(str(path)).snapshot(4).checkpoint_version == 2
    for v in range(8):
        _assert_same(path, v)
    _assert_files_match(path)


def test_our_commits_on_deltars_table_keep_its_checkpoint_interval(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _deltars_table(path, 6, ["s"], configuration={"delta.checkpointInterval": "4"})  # delta-rs: cp at 3
    assert "00000000000000000003.checkpoint.parquet" in _log_names(path)
    t = Table.open(str(path))
    assert t.snapshot().checkpoint_version == 3
    t.write(_data(3, start=80))  # version 6
    t.write(_data(3, start=83), mode="overwrite")  # version 7
    t.write(_data(3, start=86))  # version 8: our checkpoint, built on delta-rs's one
    assert "00000000000000000008.checkpoint.parquet" in _log_names(path)
    assert _last_checkpoint(path)["version"] == 8
    assert DeltaTable(str(path)).version() == 8
    expected = _rows(pa.concat_tables([_data(3, start=83), _data(3, start=86)]))
    assert _theirs(path) == _ours(path) == expected
    for v in range(8):  # only our checkpoint and commit 8 are left
        (path / "_delta_log" / f"{v:020d}.json").unlink()
    assert _theirs(path) == expected
    _assert_files_match(path)


def test_deltars_optimize_and_vacuum_on_our_table(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = _make(path, ("i",))
    for k in range(4):
        t.write(_data(8, start=8 * k))
    t.write(_data(4, start=200), mode="overwrite")
    t.write(_data(8, start=300))
    expected = _ours(path)
    dtab = DeltaTable(str(path))
    metrics = dtab.optimize.compact()
    assert metrics["numFilesRemoved"] > metrics["numFilesAdded"] > 0
    snap = Table.open(str(path)).snapshot()
    assert snap.version == 7
    assert _rows(snap.to_arrow()) == expected
    assert len(snap.file_paths()) == 4  # one per partition value of i (0, 1, 2, null)
    deleted = DeltaTable(str(path)).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    assert deleted
    assert _ours(path) == expected == _theirs(path)
    _assert_files_match(path)
    v = t.write(_data(2, start=500))
    assert DeltaTable(str(path)).version() == v
    _assert_same(path)


# ----------------------------------------------------------------------------- time travel
def test_time_travel_every_version(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = _make(path, ("s",))
    for k in range(1, 12):
        if k == 6:
            t.write(_data(5, start=100), mode="overwrite")
        elif k == 9:
            DeltaTable(str(path)).delete("n % 2 = 0")
        else:
            t.write(_data(4, start=4 * k))
    assert t.latest_version() == 11
    assert Table.open(str(path)).snapshot().checkpoint_version == 10
    seen = set()
    for k in range(12):
        ours, theirs = _ours(path, k), _theirs(path, k)
        assert ours == theirs, k
        seen.add(repr(ours))
        assert Table.open(str(path)).snapshot(k).version == DeltaTable(str(path), version=k).version() == k
        _assert_files_match(path, k)
    assert len(seen) == 12  # every version is different, so a wrong version cannot match


# ----------------------------------------------------------------------------- stats
STATS_COLS = ["i", "v", "n", "s", "d", "ts"]


def _floor_ms(value: dt.datetime) -> dt.datetime:
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


def _expected_stats(data: pa.Table, col: str) -> tuple[Any, Any, int]:
    arr = data.column(col)
    if arr.null_count == len(arr):
        return None, None, arr.null_count
    mm = pc.min_max(arr).as_py()
    lo, hi = mm["min"], mm["max"]
    if isinstance(lo, dt.datetime):  # Delta stats hold milliseconds
        lo, hi = _floor_ms(lo), _floor_ms(hi)
    return lo, hi, arr.null_count


def test_deltars_sees_our_stats(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = _make(path, ("s",))
    for k in range(4):
        t.write(_data(9, start=9 * k))
    t.write(_data(9, start=900).set_column(5, "n", pa.nulls(9, pa.int32())))  # all-null column
    unpart = tmp_path / "u"
    u = _make(unpart)
    u.write(_data(12))
    u.write(_data(12, start=40))
    for table_path, data_cols in ((path, ["i", "v", "n", "d", "ts"]), (unpart, STATS_COLS)):
        adds = pa.table(DeltaTable(str(table_path)).get_add_actions(flatten=True)).to_pylist()
        assert adds
        for a in adds:
            data = pq.read_table(table_path / unquote(a["path"]))
            assert a["num_records"] == data.num_rows
            for c in data_cols:
                got = (_norm(a[f"min.{c}"]), _norm(a[f"max.{c}"]), a[f"null_count.{c}"])
                lo, hi, nulls = _expected_stats(data, c)
                assert got == (_norm(lo), _norm(hi), nulls), (a["path"], c)


def test_deltars_data_skipping_uses_our_stats(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = _make(path)
    for k in range(5):
        t.write(_data(10, start=10 * k))  # file k holds n in [10k, 10k + 9]
    ds = DeltaTable(str(path)).to_pyarrow_dataset()
    assert len(list(ds.get_fragments())) == 5
    assert len(list(ds.get_fragments(filter=pc.field("n") >= 40))) == 1
    assert len(list(ds.get_fragments(filter=pc.field("n") < 15))) == 2
    assert len(list(ds.get_fragments(filter=pc.field("n") > 1000))) == 0
    assert ds.to_table(filter=pc.field("n") >= 40).num_rows == 10
    assert isinstance(ds, pads.Dataset)


# ----------------------------------------------------------------------------- polars
def test_polars_reads_our_table(tmp_path: Path) -> None:
    pl = pytest.importorskip("polars")
    if not hasattr(pl, "read_delta"):
        pytest.skip(f"polars {pl.__version__} has no read_delta")
    path = tmp_path / "t"
    t = _make(path, ("s", "ts"))
    t.write(_data(20))
    t.write(_data(5, start=20))
    assert _rows(pl.read_delta(str(path)).to_arrow()) == _ours(path)
    assert _rows(pl.read_delta(str(path), version=1).to_arrow()) == _rows(_data(20))


def test_copy_of_our_table_is_readable_by_deltars(tmp_path: Path) -> None:
    """Relative paths only: a moved table still reads the same."""
    path = tmp_path / "t"
    _make(path, ("s",)).write(_data(9))
    moved = tmp_path / "moved"
    shutil.copytree(path, moved)
    assert _theirs(moved) == _ours(path)


# ----------------------------------------------------------------------------- more column types
WIDE = pa.schema(
    [
        ("b", pa.bool_()),
        ("i8", pa.int8()),
        ("i16", pa.int16()),
        ("i32", pa.int32()),
        ("i64", pa.int64(), False),
        ("f32", pa.float32()),
        ("f64", pa.float64()),
        ("dec", pa.decimal128(10, 2)),
        ("s", pa.string()),
        ("bin", pa.binary()),
        ("d", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("ntz", pa.timestamp("us")),
        ("arr", pa.list_(pa.int64())),
        ("st", pa.struct([("x", pa.int32()), ("y", pa.string())])),
        ("m", pa.map_(pa.string(), pa.int64())),
    ]
)


def _wide(n: int, start: int = 0) -> pa.Table:
    k = range(start, start + n)
    t0, n0 = dt.datetime(2000, 1, 1, tzinfo=dt.UTC), dt.datetime(2000, 1, 1)
    return pa.table(
        {
            "b": [j % 2 == 0 if j % 3 else None for j in k],
            "i8": [j % 5 for j in k],
            "i16": [j * 10 for j in k],
            "i32": [j * 100 for j in k],
            "i64": [j * 10**10 for j in k],
            "f32": [(j % 3) / 4 for j in k],
            "f64": [None if j % 5 == 0 else j / 3 for j in k],
            "dec": [decimal.Decimal(j % 4) / 4 for j in k],
            "s": [f"str{j}" for j in k],
            "bin": [bytes([j % 256, 0]) for j in k],
            "d": [dt.date(2000, 1, 1) + dt.timedelta(days=j) for j in k],
            "ts": [t0 + dt.timedelta(seconds=j, microseconds=j) for j in k],
            "ntz": [n0 + dt.timedelta(minutes=j % 3, microseconds=7) for j in k],
            "arr": [[j, j + 1] if j % 4 else None for j in k],
            "st": [{"x": j, "y": str(j)} if j % 3 else None for j in k],
            "m": [[("a", j)] for j in k],
        },
        schema=WIDE,
    )


def _wide_rows(table: Any) -> list[str]:
    table = pa.table(table)
    return sorted(repr(tuple(_norm(r[c]) for c in WIDE.names)) for r in table.to_pylist())


WIDE_PARTITIONINGS = [(), ("b",), ("dec",), ("i8", "f32"), ("ntz",)]


@pytest.mark.parametrize("partition_by", WIDE_PARTITIONINGS, ids=lambda p: "-".join(p) or "none")
def test_all_column_types_both_ways(tmp_path: Path, partition_by: tuple[str, ...]) -> None:
    ours_path, theirs_path = tmp_path / "ours", tmp_path / "theirs"
    t = Table.create(str(ours_path), schema=WIDE, partition_by=partition_by)
    t.write(_wide(12))
    write_deltalake(str(ours_path), _wide(6, start=40), mode="append")
    expected = _wide_rows(pa.concat_tables([_wide(12), _wide(6, start=40)]))
    assert _wide_rows(DeltaTable(str(ours_path)).to_pyarrow_table()) == expected
    assert _wide_rows(Table.open(str(ours_path)).snapshot().to_arrow()) == expected
    write_deltalake(str(theirs_path), _wide(12), partition_by=list(partition_by) or None)
    Table.open(str(theirs_path)).write(_wide(6, start=40))
    assert _wide_rows(Table.open(str(theirs_path)).snapshot().to_arrow()) == expected
    assert _wide_rows(DeltaTable(str(theirs_path)).to_pyarrow_table()) == expected
    assert Table.open(str(theirs_path)).snapshot().schema == Table.open(str(ours_path)).snapshot().schema


def test_decimal_stats_bound_the_data(tmp_path: Path) -> None:
    schema = pa.schema([("dec", pa.decimal128(38, 18)), ("big", pa.decimal128(38, 0)), ("k", pa.int64())])
    dec, big = decimal.Decimal("1.000000000000000001"), decimal.Decimal("12345678901234567891")
    path = tmp_path / "t"
    t = Table.create(str(path), schema=schema)
    t.write(pa.table({"dec": [dec], "big": [big], "k": [1]}, schema=schema))
    stats = json.loads(t.snapshot().files()[0].stats or "{}", parse_float=decimal.Decimal)
    assert decimal.Decimal(stats["maxValues"]["dec"]) >= dec
    assert decimal.Decimal(stats["maxValues"]["big"]) >= big
    assert decimal.Decimal(stats["minValues"]["big"]) <= big
    assert t.snapshot().to_arrow(filter="dec > 1.0").num_rows == 1
    assert t.snapshot().to_arrow(filter="big >= 12345678901234567891").num_rows == 1
