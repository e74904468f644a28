"""`Table.create(defer=True)`: nothing is written until the first commit, which is version 0 with the
protocol and metaData, as Delta writes a first write to a new path (one commit, no empty version)."""

from __future__ import annotations

import dataclasses
import json
import threading
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from airflow_txnlog.engine import (
    InvalidArgumentError,
    ProtocolChangedError,
    Table,
    TableCreatedConcurrentlyError,
    TableExistsError,
    UnsupportedFeatureError,
)
from tests.conftest import SCHEMA, rows
from tests.engine.lost_responses import lose_create_responses


def _actions(root: Path, version: int) -> list[dict[str, Any]]:
    text = (root / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines()]


def test_the_first_write_is_version_zero_with_protocol_and_metadata(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = Table.create(str(root), schema=SCHEMA, partition_by=["part"], defer=True)
    assert not root.exists() and t.snapshot().version == -1
    assert t.write(rows([1, 2], "a")) == 0
    kinds = [next(iter(a)) for a in _actions(root, 0)]
    assert kinds[:3] == ["commitInfo", "protocol", "metaData"] and kinds[3:] == ["add"]
    info = _actions(root, 0)[0]["commitInfo"]
    assert info["operation"] == "WRITE" and "readVersion" not in info and info["isBlindAppend"] is True
    assert Table.open(str(root)).snapshot().partition_columns == ["part"]
    theirs = DeltaTable(str(root))
    assert theirs.version() == 0 and sorted(theirs.to_pyarrow_table().column("id").to_pylist()) == [1, 2]
    assert t.write(rows([3], "b")) == 1  # then an ordinary table
    assert sorted(Table.open(str(root)).snapshot().to_arrow().column("id").to_pylist()) == [1, 2, 3]


def test_a_transaction_may_name_its_operation(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = Table.create(str(root), schema=SCHEMA, properties={"delta.checkpointInterval": "1"}, defer=True)
    with t.transaction("CREATE TABLE AS SELECT", {"mode": "ErrorIfExists"}) as txn:
        assert txn.snapshot.version == -1
        version = txn.commit()
    assert version == 0 and _actions(root, 0)[0]["commitInfo"]["operation"] == "CREATE TABLE AS SELECT"
    assert not list((root / "_delta_log").glob("*.checkpoint.parquet"))  # none at version 0
    t.write(rows([1]))
    assert (root / "_delta_log" / f"{1:020d}.checkpoint.parquet").exists()  # the interval counts on


def test_bad_arguments_and_an_existing_table_are_refused_before_anything(tmp_path: Path) -> None:
    root = tmp_path / "t"
    with pytest.raises(InvalidArgumentError, match="defer"):
        Table.create(str(root), schema=SCHEMA, defer="yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        Table.create(str(root), schema=SCHEMA, partition_by=["nope"], defer=True)
    assert not root.exists()
    Table.create(str(root), schema=SCHEMA)
    with pytest.raises(TableExistsError):
        Table.create(str(root), schema=SCHEMA, defer=True)


def test_two_first_writes_to_an_empty_location_one_wins(tmp_path: Path) -> None:
    """The loser gets Delta's answer (a protocol change: "multiple writers writing to an empty
    directory"), says what to do, and none of its rows are in the table."""
    uri = str(tmp_path / "t")
    tables = [Table.create(uri, schema=SCHEMA, defer=True) for _ in range(2)]
    assert tables[0].write(rows([1, 2])) == 0
    with pytest.raises(TableCreatedConcurrentlyError, match="create the table ahead of time") as err:
        tables[1].write(rows([9]))
    assert isinstance(err.value, ProtocolChangedError) and err.value.winning_version == 0
    assert Table.open(uri).snapshot().to_arrow().column("id").to_pylist() == [1, 2]
    assert Table.open(uri).latest_version() == 0


def test_racing_first_writes_land_exactly_one_version_zero(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    outcomes: list[object] = []
    barrier = threading.Barrier(6)

    def first_write(i: int) -> None:
        t = Table.create(uri, schema=SCHEMA, defer=True)
        barrier.wait()
        try:
            outcomes.append(t.write(rows([i])))
        except TableCreatedConcurrentlyError as exc:
            outcomes.append(exc)

    threads = [threading.Thread(target=first_write, args=(i,)) for i in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert outcomes.count(0) == 1 and len(outcomes) == 6
    assert all(isinstance(o, TableCreatedConcurrentlyError) for o in outcomes if o != 0)
    assert len(Table.open(uri).snapshot().to_arrow()) == 1


def test_column_mapping_and_in_commit_timestamps_on_a_deferred_create(tmp_path: Path) -> None:
    root = tmp_path / "t"
    props = {"delta.columnMapping.mode": "name", "delta.enableInCommitTimestamps": "true"}
    Table.create(str(root), schema=SCHEMA, properties=props, defer=True).write(rows([1, 2]))
    info = _actions(root, 0)[0]["commitInfo"]
    assert isinstance(info["inCommitTimestamp"], int)
    written = pq.read_schema(next(root.glob("*.parquet")))  # physical names in the file
    assert all(name.startswith("col-") for name in written.names)
    assert sorted(Table.open(str(root)).snapshot().to_arrow().column("id").to_pylist()) == [1, 2]


def test_maintenance_before_the_first_commit_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    """A deferred table has no version: checkpoint, vacuum, savepoints, restore... refuse (vacuum's
    own commit would otherwise become an empty version 0, a checkpoint a "version -1" file)."""
    root = tmp_path / "t"
    t = Table.create(str(root), schema=SCHEMA, defer=True)
    calls = {
        "checkpoint": t.checkpoint,
        "vacuum": lambda: t.vacuum(dry_run=False),
        "cleanup log": t.cleanup_log,
        "create savepoint": lambda: t.create_savepoint("before"),
        "restore": lambda: t.restore(version=0),
        "publish": t.publish,
        "health": t.health,
        "set properties": lambda: t.set_properties({"delta.appendOnly": "true"}),
        "rename column": lambda: t.rename_column("id", "key"),
        "drop columns": lambda: t.drop_columns(["value"]),
    }
    for what, call in calls.items():
        with pytest.raises(InvalidArgumentError, match=f"cannot {what}: the table has no version yet"):
            call()
    assert not root.exists()
    assert t.write(rows([1])) == 0 and t.health().version == 0  # then they work


def test_a_first_transaction_cannot_turn_on_features_its_protocol_lacks(tmp_path: Path) -> None:
    """Properties that need table features belong in `create` (which sets the protocol), as for any
    table whose metadata a transaction changes."""
    root = tmp_path / "t"
    t = Table.create(str(root), schema=SCHEMA, defer=True)
    meta = t.snapshot().metadata
    dvs = dataclasses.replace(meta, configuration={"delta.enableDeletionVectors": "true"})
    with t.transaction("CREATE TABLE") as txn, pytest.raises(UnsupportedFeatureError, match=r"Table\.create"):
        txn.update_metadata(dvs)
        txn.commit()
    assert not root.exists()


def test_latest_version_sees_another_writers_version_zero(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    deferred = Table.create(uri, schema=SCHEMA, defer=True)
    assert deferred.latest_version() == -1
    Table.create(uri, schema=SCHEMA)
    assert deferred.latest_version() == 0
    with pytest.raises(TableCreatedConcurrentlyError):
        deferred.snapshot()


def test_a_first_write_that_landed_despite_a_refused_retry_is_not_another_table(tmp_path: Path) -> None:
    """The client's retry of version 0 is refused on our own object and the read-back (here) sees
    other bytes: the conflict check finds our txnId in version 0, so it is our table, not a rival's."""
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, defer=True)
    created = lose_create_responses(t.storage, read_back_differs=0)
    assert t.write(rows([1, 2])) == 0 and len(created) == 1
    assert Table.open(t.uri).latest_version() == 0
    assert sorted(Table.open(t.uri).snapshot().to_arrow().column("id").to_pylist()) == [1, 2]
