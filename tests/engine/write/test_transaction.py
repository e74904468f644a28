from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest

from airflow_txnlog import engine
from airflow_txnlog.engine import (
    AddFile,
    AppendOnlyViolationError,
    CommitOutcomeUnknownError,
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    ConcurrentTransactionError,
    InvalidArgumentError,
    MetadataChangedError,
    Protocol,
    ProtocolChangedError,
    SchemaMismatchError,
    StorageError,
    Table,
)
from tests.conftest import SCHEMA, rows
from tests.engine.lost_responses import lose_create_responses


def _table(uri: str, **props: str) -> Table:
    t = Table.create(uri, schema=SCHEMA, partition_by=["part"], properties=props or None)
    t.write(rows([1, 2], "a"))
    t.write(rows([3], "b"))
    return t


def _log_names(t: Table) -> list[str]:
    return [f.name for f in t.storage.list_log()]


def test_two_blind_appends_never_conflict(table_uri: str) -> None:
    t1 = _table(table_uri)
    t2 = Table.open(table_uri)
    txn = t1.transaction()
    txn.add(AddFile("part=a/x.parquet", {"part": "a"}, 1, 1))
    t2.write(rows([10], "a"))  # wins version 3
    assert txn.commit() == 4
    assert txn.attempts == 2
    info = t1.history(1)[0]
    assert info["isBlindAppend"] is True and info["readVersion"] == 2


def test_protocol_changed(table_uri: str) -> None:
    t1 = _table(table_uri)
    t2 = Table.open(table_uri)
    txn = t1.transaction("UPGRADE PROTOCOL")
    txn.update_protocol(Protocol(1, 3))
    other = t2.transaction("UPGRADE PROTOCOL")
    other.update_protocol(Protocol(1, 3))
    other.commit()
    with pytest.raises(ProtocolChangedError, match="Help:"):
        txn.commit()


def test_metadata_changed_even_for_blind_append(table_uri: str) -> None:
    t1 = _table(table_uri)
    t2 = Table.open(table_uri)
    txn = t1.transaction()
    txn.add(AddFile("part=a/x.parquet", {"part": "a"}, 1, 1))
    change = t2.transaction("SET TBLPROPERTIES")
    change.update_metadata(dataclasses.replace(t2.snapshot().metadata, configuration={"k": "v"}))
    change.commit()
    with pytest.raises(MetadataChangedError):
        txn.commit()


def test_concurrent_transaction_same_app_id(table_uri: str) -> None:
    t1 = _table(table_uri)
    t2 = Table.open(table_uri)
    txn = t1.transaction()
    txn.set_app_transaction("ingest", 1)
    other = t2.transaction()
    other.set_app_transaction("ingest", 2)
    other.commit()
    with pytest.raises(ConcurrentTransactionError, match="ingest"):
        txn.commit()


def test_concurrent_append_into_read_partition(table_uri: str) -> None:
    t1 = _table(table_uri)
    t2 = Table.open(table_uri)
    txn = t1.transaction("DELETE", {"predicate": "part = 'a'"})
    for f in txn.read_files("part = 'a'"):
        txn.remove(f)
    t2.write(rows([7], "a"))
    with pytest.raises(ConcurrentAppendError, match="part=a"):
        txn.commit()


def test_append_to_other_partition_does_not_conflict(table_uri: str) -> None:
    t1 = _table(table_uri)
    t2 = Table.open(table_uri)
    txn = t1.transaction("DELETE", {"predicate": "part = 'a'"})
    for f in txn.read_files("part = 'a'"):
        txn.remove(f)
    t2.write(rows([7], "b"))
    assert txn.commit() == 4
    assert sorted(t1.snapshot().to_arrow().column("id").to_pylist()) == [3, 7]


def test_whole_table_read_conflicts_with_any_append(table_uri: str) -> None:
    t1 = _table(table_uri)
    t2 = Table.open(table_uri)
    txn = t1.transaction("OVERWRITE")
    for f in txn.read_files():
        txn.remove(f)
    t2.write(rows([7], "zzz"))
    with pytest.raises(ConcurrentAppendError):
        txn.commit()


def test_concurrent_delete_read(table_uri: str) -> None:
    t1 = _table(table_uri)
    t2 = Table.open(table_uri)
    txn = t1.transaction("UPDATE")
    read = txn.read_files("part = 'a'")
    txn.add(AddFile("part=a/new.parquet", {"part": "a"}, 1, 1))
    deleter = t2.transaction("DELETE")
    deleter.remove(t2.snapshot().files("part = 'a'")[0])
    deleter.commit()
    with pytest.raises(ConcurrentDeleteReadError, match=read[0].path):
        txn.commit()


def test_concurrent_delete_delete_between_compactions(table_uri: str) -> None:
    t1 = _table(table_uri)
    t2 = Table.open(table_uri)
    target = t1.snapshot().files("part = 'a'")[0]
    txn = t1.transaction("OPTIMIZE")
    txn.remove(target, data_change=False)
    txn.add(AddFile("part=a/c1.parquet", {"part": "a"}, 1, 1, data_change=False))
    other = t2.transaction("OPTIMIZE")
    other.remove(target, data_change=False)
    other.add(AddFile("part=a/c2.parquet", {"part": "a"}, 1, 1, data_change=False))
    other.commit()
    with pytest.raises(ConcurrentDeleteDeleteError):
        txn.commit()


def test_compaction_does_not_conflict_with_appends(table_uri: str) -> None:
    t1 = _table(table_uri)
    t2 = Table.open(table_uri)
    txn = t1.transaction("OPTIMIZE")
    for f in txn.read_files("part = 'a'"):
        txn.remove(f, data_change=False)
    txn.add(AddFile("part=a/c.parquet", {"part": "a"}, 1, 1, data_change=False))
    t2.write(rows([9], "a"))
    assert txn.commit() == 4
    assert t1.history(1)[0]["isolationLevel"] == "SnapshotIsolation"


def test_idempotent_write_commits_once_even_from_a_stale_handle(table_uri: str) -> None:
    t1 = _table(table_uri)
    stale = Table.open(table_uri)
    v = t1.write(rows([100]), txn=("dag.task", 5))
    assert t1.write(rows([100]), txn=("dag.task", 5)) == v
    assert stale.write(rows([100]), txn=("dag.task", 5)) == v
    assert t1.write(rows([100]), txn=("dag.task", 4)) == v  # older run id: already covered
    assert t1.latest_version() == v
    assert t1.snapshot().to_arrow().column("id").to_pylist().count(100) == 1
    assert t1.write(rows([101]), txn=("dag.task", 6)) == v + 1


def test_append_only_refuses_removes_and_writes_nothing(table_uri: str) -> None:
    t = _table(table_uri, **{"delta.appendOnly": "true"})
    before = _log_names(t)
    with pytest.raises(AppendOnlyViolationError):
        t.write(rows([5]), mode="overwrite")
    assert _log_names(t) == before
    assert len(t.snapshot().files()) == 2


@pytest.mark.parametrize(
    "path", ["../escape.parquet", "a/../../x.parquet", "/etc/passwd", "s3://other/x.parquet"]
)
def test_add_paths_outside_the_root_are_refused(table_uri: str, path: str) -> None:
    t = _table(table_uri)
    before = _log_names(t)
    txn = t.transaction()
    txn.add(AddFile(path, {"part": "a"}, 1, 1))
    with pytest.raises(InvalidArgumentError, match="root"):
        txn.commit()
    assert _log_names(t) == before


def test_schema_mismatch_writes_nothing(table_uri: str) -> None:
    t = _table(table_uri)
    before = _log_names(t)
    files_before = set(t.storage.fs.find(t.storage.fs_root))
    bad = pa.table({"id": ["not-a-number"], "value": [1.0], "part": ["a"]})
    with pytest.raises(SchemaMismatchError, match="'id' has type string"):
        t.write(bad)
    extra = rows([1]).append_column("surprise", pa.array([1]))
    with pytest.raises(SchemaMismatchError, match="surprise"):
        t.write(extra)
    assert _log_names(t) == before
    assert set(t.storage.fs.find(t.storage.fs_root)) == files_before


def test_duplicate_actions_in_one_commit_are_refused(table_uri: str) -> None:
    t = _table(table_uri)
    txn = t.transaction()
    f = AddFile("part=a/x.parquet", {"part": "a"}, 1, 1)
    txn.add(f)
    with pytest.raises(InvalidArgumentError, match="twice"):
        txn.add(f)


def test_overwrite_reports_metrics_and_replaces_rows(table_uri: str) -> None:
    t = _table(table_uri)
    v = t.write(rows([42], "c"), mode="overwrite")
    info = t.history(1)[0]
    assert info["operation"] == "WRITE" and info["operationParameters"]["mode"] == "Overwrite"
    assert info["operationMetrics"]["numRemovedFiles"] == "2" and info["readVersion"] == v - 1
    assert t.snapshot().to_arrow().column("id").to_pylist() == [42]
    assert {r.path for r in t.snapshot().tombstones()} == {f.path for f in t.snapshot(version=2).files()}


def test_a_storage_failure_during_the_put_is_an_unknown_outcome(table_uri: str) -> None:
    """An I/O error from `put_if_absent` may hide a commit that landed: the error says so, and what to do."""
    t = _table(table_uri)

    def landed_then_failed(key: str, data: bytes) -> None:
        real_put(key, data)
        raise TimeoutError("connection reset after the body was sent")

    real_put = t.storage.put_if_absent
    t.storage.put_if_absent = landed_then_failed  # type: ignore[method-assign]
    with pytest.raises(CommitOutcomeUnknownError, match=r"may or may not be in the log\. Help:") as err:
        t.write(rows([9], "c"))
    assert isinstance(err.value, StorageError) and err.value.version == 3
    assert Table.open(table_uri).latest_version() == 3  # it did land: the data files were kept
    assert sorted(Table.open(table_uri).snapshot().to_arrow().column("id").to_pylist()) == [1, 2, 3, 9]


def test_losing_the_race_is_retried_inside_the_commit_loop(table_uri: str) -> None:
    """`VersionAlreadyExistsError` never escapes: a lost race is checked and retried at the next version."""
    t = _table(table_uri)
    txn = t.transaction()
    txn.add(AddFile("part=a/y.parquet", {"part": "a"}, 1, 1))
    for i in range(3):
        Table.open(table_uri).write(rows([20 + i], "b"))  # versions 3, 4, 5 won
    assert txn.commit() == 6 and txn.attempts == 2
    assert "VersionAlreadyExistsError" not in engine.__all__


def test_a_client_retry_that_finds_our_own_commit_is_not_a_lost_race(tmp_path) -> None:
    """gcsfs and botocore retry a create whose response was lost; the retry then fails its
    precondition on our own object. That is our commit, landed once: never a second commit."""
    t = engine.Table.create(str(tmp_path / "t"), schema=SCHEMA)
    original = t.storage.put_if_absent, t.storage.read
    created = lose_create_responses(t.storage)
    assert t.write(rows([1, 2])) == 1
    assert len(created) == 1 and t.latest_version() == 1
    assert sorted(t.snapshot().to_arrow().column("id").to_pylist()) == [1, 2]  # once, not twice
    t.storage.put_if_absent, t.storage.read = original  # type: ignore[method-assign]
    assert t.write(rows([4])) == 2  # and the handle goes on as usual


def test_a_failed_read_back_after_a_precondition_failure_is_an_unknown_outcome(tmp_path) -> None:
    """The read-back that tells our landed commit from a rival's fails: the outcome is unknown, never
    "another writer won" (checking our own commit as a rival's would pass a blind append twice)."""
    t = engine.Table.create(str(tmp_path / "t"), schema=SCHEMA)
    lose_create_responses(t.storage, read_fails=1)
    with pytest.raises(CommitOutcomeUnknownError) as err:
        t.write(rows([1, 2]))
    assert err.value.version == 1
    again = engine.Table.open(t.uri)
    assert again.latest_version() == 1  # landed once
    assert sorted(again.snapshot().to_arrow().column("id").to_pylist()) == [1, 2]


def test_a_winner_holding_our_txn_id_is_our_own_commit(tmp_path) -> None:
    """Second line of defense: should our landed commit reach the conflict check as a "winner" (here
    the read-back sees other bytes), its commitInfo.txnId, fresh per payload, shows it is ours."""
    t = engine.Table.create(str(tmp_path / "t"), schema=SCHEMA)
    created = lose_create_responses(t.storage, read_back_differs=1)
    txn = t.transaction()
    txn.add(AddFile("part=a/y.parquet", {"part": "a"}, 1, 1))
    assert txn.commit() == 1 and txn.attempts == 1 and len(created) == 1
    assert engine.Table.open(t.uri).latest_version() == 1  # not also committed as version 2
