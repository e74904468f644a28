"""Multi-table releases (issue 42): publish several tables as one cut, read them at it, keep their files,
roll them back together; bad input writes nothing. Concurrency and crashes:
tests/reliability/test_release_concurrency.py."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_txnlog.engine import (
    ForeignCommitsError,
    InvalidArgumentError,
    ReleaseError,
    ReleaseNotFoundError,
    Releases,
    Table,
)
from airflow_txnlog.engine import releases as releases_mod

SCHEMA = pa.schema([("k", pa.int64()), ("batch", pa.int64())])


def _tables(root: Path, names: tuple[str, ...] = ("orders", "customers")) -> list[Table]:
    out = []
    for name in names:
        t = Table.create(str(root / name), schema=SCHEMA)
        t.write(_rows(0))
        out.append(t)
    return out


def _rows(batch: int, n: int = 3) -> pa.Table:
    return pa.table({"k": list(range(n)), "batch": [batch] * n}, schema=SCHEMA)


def _batches(snapshot: Any) -> set[int]:
    return set(snapshot.to_arrow().column("batch").to_pylist())


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_a_release_names_every_table_at_one_version_and_readers_follow_it(tmp_path: Path) -> None:
    orders, customers = _tables(tmp_path)
    log = Releases.create(str(tmp_path / "log"))
    assert log.current() is None and log.history() == []
    first = log.publish({orders.uri: 1, customers.uri: 1}, note="night 1")
    orders.write(_rows(1), mode="overwrite")  # (version 2: unreleased, readers do not see it)
    assert first.sequence == 0 and first.versions == {orders.uri: 1, customers.uri: 1}
    ids = {t.uri: t.snapshot().metadata.id for t in (orders, customers)}
    assert first.table_ids == ids
    assert _batches(log.current().snapshot(orders.uri)) == {0}
    assert _batches(Table.open(orders.uri).snapshot(release=first)) == {0}
    second = log.publish({orders.uri: 2})  # (customers keeps its version: the record is the whole cut)
    assert second.sequence == 1 and second.versions == {orders.uri: 2, customers.uri: 1}
    assert [r.sequence for r in log.history()] == [1, 0] and log.get(0) == first
    assert _batches(Releases.open(str(tmp_path / "log")).current().snapshot(orders.uri)) == {1}
    assert log.publish({orders.uri: 2}, publish_id="retry-me").sequence == 2
    assert log.publish({orders.uri: 2}, publish_id="retry-me").sequence == 2  # (a retry: the first record)
    assert len(log.history()) == 3


def test_a_release_never_moves_a_table_back_and_names_what_is_wrong(tmp_path: Path) -> None:
    orders, customers = _tables(tmp_path)
    orders.write(_rows(1))
    log = Releases.create(str(tmp_path / "log"))
    log.publish({orders.uri: 2, customers.uri: 1})
    with pytest.raises(ReleaseError, match=r"never moves a table back.*Releases.rollback"):
        log.publish({orders.uri: 1})
    with pytest.raises(ReleaseError, match=r"at version 9.*Nothing was published"):
        log.publish({orders.uri: 9})
    with pytest.raises(ReleaseError, match="cannot release"):
        log.publish({str(tmp_path / "nope"): 0})
    shutil.rmtree(orders.uri)
    Table.create(orders.uri, schema=SCHEMA).write(_rows(5))  # replaced under the same path
    with pytest.raises(ReleaseError, match="replaced under the same path"):
        log.publish({orders.uri: 1})
    with pytest.raises(ReleaseError, match="replaced under the same path"):
        log.current().snapshot(orders.uri)
    assert len(log.history()) == 1


@pytest.mark.parametrize(
    ("versions", "kwargs", "message"),
    [
        ({}, {}, "versions must be a non-empty mapping"),
        ([("a", 1)], {}, "versions must be a non-empty mapping"),
        ({"": 1}, {}, "a table URI must be a non-empty string"),
        ({"T": -1}, {}, "must be a non-negative integer"),
        ({"T": True}, {}, "must be a non-negative integer"),
        ({"T": "3"}, {}, "must be a non-negative integer"),
        ({"T": 1}, {"publish_id": "../x"}, "publish_id must be letters"),
        ({"T": 1}, {"note": 5}, "note must be a string"),
    ],
)
def test_bad_input_is_refused_and_nothing_is_written(
    tmp_path: Path, versions: Any, kwargs: dict[str, Any], message: str
) -> None:
    (orders,) = _tables(tmp_path, ("orders",))
    log = Releases.create(str(tmp_path / "log"))
    before_log, before_table = _files(tmp_path / "log"), _files(tmp_path / "orders")
    if isinstance(versions, dict) and "T" in versions:
        versions = {orders.uri: versions["T"]}
    with pytest.raises(InvalidArgumentError, match=message):
        log.publish(versions, **kwargs)
    assert _files(tmp_path / "log") == before_log and _files(tmp_path / "orders") == before_table


def test_the_log_itself_is_created_once_and_opened_by_name(tmp_path: Path) -> None:
    Releases.create(str(tmp_path / "log"))
    with pytest.raises(ReleaseError, match=r"exists at .* already. Help: Releases.open"):
        Releases.create(str(tmp_path / "log"))
    with pytest.raises(ReleaseNotFoundError, match="no release log at"):
        Releases.open(str(tmp_path / "none"))
    with pytest.raises(ReleaseNotFoundError, match="release 3 does not exist"):
        Releases.open(str(tmp_path / "log")).get(3)
    with pytest.raises(InvalidArgumentError, match="rollback_window must be an integer >= 0"):
        Releases.create(str(tmp_path / "log2"), rollback_window=-1)
    (orders,) = _tables(tmp_path, ("orders",))
    release = Releases.open(str(tmp_path / "log")).publish({orders.uri: 1})
    other = Table.create(str(tmp_path / "other"), schema=SCHEMA)
    other.write(_rows(0))
    with pytest.raises(ReleaseError, match="is not in release 0"):
        other.snapshot(release=release)
    with pytest.raises(InvalidArgumentError, match="one of version, timestamp or release"):
        orders.snapshot(1, release=release)


def test_vacuum_keeps_what_the_rollback_window_needs_and_no_more(tmp_path: Path) -> None:
    orders, customers = _tables(tmp_path)
    log = Releases.create(str(tmp_path / "log"), rollback_window=1)
    log.publish({orders.uri: 1, customers.uri: 1})  # release 0: orders' first file
    first_files = set(orders.snapshot().file_paths())
    for batch in (1, 2):
        orders.write(_rows(batch), mode="overwrite")
        log.publish({orders.uri: orders.latest_version()})  # releases 1 and 2
    orders.vacuum(dry_run=False, retention_hours=0, enforce_retention=False)
    # release 1 is in the window (its version's files stay), release 0 is not (its files may go)
    assert _batches(log.get(1).snapshot(orders.uri)) == {1}
    assert not first_files & set(_files(tmp_path / "orders"))
    with pytest.raises(Exception, match=r"(?i)missing|not found|no such"):
        _batches(log.get(0).snapshot(orders.uri))


def test_a_rollback_restores_every_table_that_moved_and_publishes_what_it_restored(tmp_path: Path) -> None:
    orders, customers = _tables(tmp_path)
    log = Releases.create(str(tmp_path / "log"))
    good = log.publish({orders.uri: 1, customers.uri: 1})
    orders.write(_rows(1), mode="overwrite")
    log.publish({orders.uri: 2})  # a bad release: orders moved, customers did not
    back = log.rollback(to=good.sequence, note="audit failed")
    assert back.kind == "rollback" and back.rollback_to == 0 and back.note == "audit failed"
    assert back.versions == {orders.uri: 3, customers.uri: 1}  # (orders: the restore's commit)
    assert _batches(back.snapshot(orders.uri)) == {0} and customers.latest_version() == 1
    assert log.rollback(to=good.sequence) == back  # (run again: the same record)
    assert [r.kind for r in log.history()] == ["rollback", "publish", "publish"]


def test_a_rollback_refuses_to_discard_another_writers_commit_and_restores_nothing(tmp_path: Path) -> None:
    orders, customers = _tables(tmp_path)
    log = Releases.create(str(tmp_path / "log"))
    log.publish({orders.uri: 1, customers.uri: 1})
    for t in (orders, customers):
        t.write(_rows(1))
    log.publish({orders.uri: 2, customers.uri: 2})
    customers.write(_rows(7))  # another writer, after the current release
    with pytest.raises(ForeignCommitsError, match="versions \\[3\\]"):
        log.rollback(to=0)
    assert orders.latest_version() == 2 and customers.latest_version() == 3  # (nothing restored)
    assert len(log.history()) == 2
    customers.write(_rows(8), tags={"owner": "nightly"})
    with pytest.raises(ForeignCommitsError):
        log.rollback(to=0, owner="nightly")  # (version 3 is still another writer's)
    back = log.rollback(to=0, on_foreign_commits="force")
    assert _batches(back.snapshot(customers.uri)) == {0}


def test_a_rollback_killed_after_its_restores_converges_when_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    orders, customers = _tables(tmp_path)
    log = Releases.create(str(tmp_path / "log"))
    log.publish({orders.uri: 1, customers.uri: 1})
    for t in (orders, customers):
        t.write(_rows(1), mode="overwrite")
    log.publish({orders.uri: 2, customers.uri: 2})
    real = releases_mod.Releases._publish

    def killed(self: Releases, *args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt  # (the process dies between the restores and the record)

    monkeypatch.setattr(releases_mod.Releases, "_publish", killed)
    with pytest.raises(KeyboardInterrupt):
        log.rollback(to=0)
    assert log.current().sequence == 1  # readers stay on the current release
    assert orders.latest_version() == 3 and customers.latest_version() == 3  # (restored, unpublished)
    monkeypatch.setattr(releases_mod.Releases, "_publish", real)
    back = log.rollback(to=0)
    assert back.versions == {orders.uri: 3, customers.uri: 3}  # (no second restore commit)
    assert orders.latest_version() == 3 and customers.latest_version() == 3


def test_one_table_has_one_name_however_it_is_spelled_and_names_stay_safe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (orders,) = _tables(tmp_path, ("orders",))
    log = Releases.create("log")
    log.publish({"orders": 1})
    orders.write(_rows(1))
    second = log.publish({"./orders/": 2})
    assert second.versions == {orders.uri: 2}  # (one key: the table's own URI)
    assert log.current().snapshot("orders").version == 2
    with pytest.raises(ReleaseError, match="never moves a table back"):
        log.publish({f"file://{orders.uri}": 1})
    with pytest.raises(InvalidArgumentError, match="publish_id must be letters"):
        log.publish({orders.uri: 2}, publish_id="nightly\n")
    with pytest.raises(InvalidArgumentError, match="limit must be a non-negative integer"):
        log.history(limit=-1)


def test_a_rollback_refusal_names_the_table_and_the_released_version(tmp_path: Path) -> None:
    orders, customers = _tables(tmp_path)
    log = Releases.create(str(tmp_path / "log"))
    log.publish({orders.uri: 1, customers.uri: 1})
    orders.write(_rows(1))
    orders.write(_rows(2))
    customers.write(_rows(1))
    log.publish({orders.uri: 3, customers.uri: 2})
    customers.write(_rows(9))  # another writer's version 3, after the released version 2
    with pytest.raises(
        ForeignCommitsError, match=r"customers' to version 1: versions \[3\].*after its version 2"
    ):
        log.rollback(to=0)


def test_a_rollback_racing_a_writer_never_loses_the_writers_commits(tmp_path: Path) -> None:
    """A writer appends to `customers` while a rollback runs: whichever the rollback meets (a commit
    before its checks, or one landing between its checks and its restore commit), it refuses rather
    than discard it, and every row the writer committed is in the table afterwards."""
    import threading  # noqa: PLC0415

    orders, customers = _tables(tmp_path)
    log = Releases.create(str(tmp_path / "log"))
    log.publish({orders.uri: 1, customers.uri: 1})
    for t in (orders, customers):
        t.write(_rows(1), mode="overwrite")
    log.publish({orders.uri: 2, customers.uri: 2})
    written: list[int] = []
    stop, started = threading.Event(), threading.Event()

    def writer() -> None:
        other = Table.open(customers.uri)
        batch = 100
        while not stop.is_set() and batch < 160:
            other.write(_rows(batch, n=1))
            written.append(batch)
            started.set()
            batch += 1

    thread = threading.Thread(target=writer)
    thread.start()
    assert started.wait(30)
    outcomes = []
    try:
        for _ in range(5):
            try:
                outcomes.append(log.rollback(to=0).kind)
            except ForeignCommitsError as exc:
                outcomes.append(type(exc).__name__)
    finally:
        stop.set()
        thread.join()
    assert outcomes == ["ForeignCommitsError"] * 5  # (the writer's commits follow the release)
    assert set(written) <= _batches(Table.open(customers.uri).snapshot())  # not one commit lost
    assert orders.latest_version() == 2 and len(log.history()) == 2  # nothing restored, nothing released
