"""Change data feed on read (`Table.changes`, engine.state.change_data) against delta-rs's `load_cdf` on the
same table: delta-rs writes it (an append, a delete and an update with `cdc` files under
`_change_data/`, a merge), both read the changes, and the rows must be equal."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_txnlog.engine import InvalidArgumentError, RemoveFile, Table
from airflow_txnlog.engine.spi import write_deletion_vectors

deltalake = pytest.importorskip("deltalake")

CDF = {"delta.enableChangeDataFeed": "true"}


def _deltars_table(root: Path) -> None:
    DeltaTable, write_deltalake = deltalake.DeltaTable, deltalake.write_deltalake
    data = pa.table({"id": [1, 2, 3, 4], "p": ["a", "b", "a", "b"], "v": [1.0, 2.0, 3.0, 4.0]})
    write_deltalake(str(root), data, partition_by=["p"], configuration=CDF)
    write_deltalake(str(root), pa.table({"id": [5], "p": ["a"], "v": [5.0]}), mode="append")
    dt_ = DeltaTable(str(root))
    dt_.delete("id = 2")
    dt_.update(updates={"v": "v * 10"}, predicate="id >= 4")
    source = pa.table({"id": [1, 9], "p": ["a", "b"], "v": [-1.0, 9.0]})
    (
        DeltaTable(str(root))
        .merge(source, "t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )


def _rows(t: pa.Table) -> list[tuple[Any, ...]]:
    return sorted((r["_commit_version"], r["_change_type"], r["id"], r["p"], r["v"]) for r in t.to_pylist())


def _stamps(t: pa.Table) -> dict[int, int]:
    """Commit timestamp (ms) per version (delta-rs gives naive UTC datetimes)."""
    return {
        r["_commit_version"]: int(r["_commit_timestamp"].replace(tzinfo=dt.UTC).timestamp() * 1000)
        for r in t.to_pylist()
    }


def test_changes_equal_deltalake_load_cdf(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _deltars_table(root)
    theirs = pa.table(deltalake.DeltaTable(str(root)).load_cdf(starting_version=0))
    ours = Table.open(str(root)).changes(0)
    assert ours.column_names == ["id", "p", "v", "_change_type", "_commit_version", "_commit_timestamp"]
    assert _rows(ours) == _rows(theirs)
    # ours are the protocol's commit timestamps (file times made monotonic); delta-rs takes the
    # commitInfo's `timestamp`, written a moment earlier or later: the same commits, within a second
    mine, raw = _stamps(ours), _stamps(theirs)
    assert set(mine) == set(raw) and all(abs(mine[v] - raw[v]) < 1000 for v in raw)
    kinds = {r["_change_type"] for r in ours.to_pylist()}
    assert kinds == {"insert", "delete", "update_preimage", "update_postimage"}


def test_a_range_and_columns(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _deltars_table(root)
    t = Table.open(str(root))
    two = t.changes(2, 2, columns=["id"])
    assert two.column_names == ["id", "_change_type", "_commit_version", "_commit_timestamp"]
    assert [(r["id"], r["_change_type"]) for r in two.to_pylist()] == [(2, "delete")]
    theirs = pa.table(deltalake.DeltaTable(str(root)).load_cdf(starting_version=3, ending_version=4))
    assert _rows(t.changes(3, 4)) == _rows(theirs)


def test_changes_need_the_feed_enabled(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = Table.create(str(root), schema=pa.schema([("id", pa.int64())]))
    t.write(pa.table({"id": [1]}))
    with pytest.raises(InvalidArgumentError, match="not enabled at version 0"):
        t.changes(0)
    with pytest.raises(InvalidArgumentError, match="latest is 1"):
        t.changes(0, 5)
    with pytest.raises(InvalidArgumentError, match="non-negative"):
        t.changes(-1)


def test_a_deletion_vector_commit_without_change_files(tmp_path: Path) -> None:
    """Another writer deletes with a DV and writes no cdc files: only the newly deleted rows change.
    A remove without partitionValues takes them from the table; a percent-encoded path is decoded."""
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    props = {**CDF, "delta.enableDeletionVectors": "true"}
    t = Table.create(str(tmp_path / "t"), schema=schema, partition_by=["p"], properties=props)
    t.write(pa.table({"id": [1, 2, 3, 4], "p": ["a b"] * 4}, schema=schema))  # a space: %20 in paths
    (f,) = t.snapshot().files()
    assert "%20" in f.wire_path
    dv = write_deletion_vectors(t.storage, {f.path: [1, 3]})[f.path]
    txn = t.transaction("DELETE")
    txn.remove(RemoveFile(path=f.path, deletion_timestamp=1, size=f.size))  # no partitionValues
    txn.add(dataclasses.replace(f, deletion_vector=dv))
    v = txn.commit()
    feed = t.changes(v)
    assert sorted((r["_change_type"], r["id"], r["p"]) for r in feed.to_pylist()) == [
        ("delete", 2, "a b"),
        ("delete", 4, "a b"),
    ]
    txn = t.transaction("DELETE")  # the whole file now: its remaining rows, with partition values
    txn.remove(RemoveFile(path=f.path, deletion_timestamp=2, size=f.size, deletion_vector=dv))
    v = txn.commit()
    assert sorted((r["id"], r["p"]) for r in t.changes(v).to_pylist()) == [(1, "a b"), (3, "a b")]
