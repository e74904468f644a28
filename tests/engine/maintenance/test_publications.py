"""Publication channels (write-audit-publish): a forward-only pointer that vacuum and log cleanup keep."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from airflow_txnlog.engine import (
    InvalidArgumentError,
    NotPublishedError,
    PublicationError,
    Table,
    VacuumInProgressError,
)
from airflow_txnlog.engine.maintenance import publications as pubs
from airflow_txnlog.engine.maintenance.fence import VacuumFence
from airflow_txnlog.engine.write.provenance import provenance
from tests.conftest import SCHEMA, rows


def _table(uri: str, versions: int = 2) -> Table:
    t = Table.create(uri, schema=SCHEMA)
    for i in range(1, versions + 1):
        t.write(rows([i]))
    return t


def _records(t: Table, channel: str = "published") -> list[str]:
    try:
        return [f.name for f in t.storage.list_dir(f"_published/{channel}")]
    except FileNotFoundError:
        return []


def test_publish_records_the_version_and_who_published(table_uri: str) -> None:
    t = _table(table_uri)
    assert t.publication() is None
    with provenance(dag_id="etl", run_id="r1", task_id="publish"):
        pub = t.publish(1)
    assert (pub.version, pub.previous_version, pub.channel) == (1, None, "published")
    assert pub.published_by is not None and pub.published_by["jobId"] == "etl"
    assert pub.table_id == t.snapshot().metadata.id
    assert _records(t) == [f"{1:020d}.json"]
    stored = orjson.loads(t.storage.read(f"_published/published/{1:020d}.json"))
    assert stored["version"] == 1 and stored["publishedBy"]["jobName"] == "publish"
    assert t.publication() == pub
    snap = t.published_snapshot()
    assert snap.version == 1 and sorted(snap.to_arrow()["id"].to_pylist()) == [1]
    assert t.snapshot().version == 2  # the latest version is untouched by publishing


def test_channel_moves_forward_only_and_republishing_is_a_no_op(table_uri: str) -> None:
    t = _table(table_uri, versions=3)
    first = t.publish(1)
    assert t.publish(1) == first  # a retried publish task returns the same record
    second = t.publish(3)
    assert second.previous_version == 1
    with pytest.raises(PublicationError, match=r"version 3 is\s+already published.*restore"):
        t.publish(2)
    assert _records(t) == [f"{1:020d}.json", f"{3:020d}.json"]
    assert t.publication() == second


def test_publish_defaults_to_the_latest_version(table_uri: str) -> None:
    t = _table(table_uri, versions=2)
    assert t.publish().version == 2


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"version": 9}, InvalidArgumentError, "latest version is 2"),
        ({"version": -1}, InvalidArgumentError, "non-negative integer"),
        ({"version": True}, InvalidArgumentError, "non-negative integer"),
        ({"version": 1, "channel": "../x"}, InvalidArgumentError, "invalid publication channel"),
        ({"version": 1, "channel": ""}, InvalidArgumentError, "invalid publication channel"),
    ],
)
def test_bad_publish_arguments_write_nothing(
    table_uri: str, kwargs: dict[str, object], error: type[Exception], message: str
) -> None:
    t = _table(table_uri)
    with pytest.raises(error, match=message):
        t.publish(**kwargs)  # type: ignore[arg-type]
    assert not t.storage.fs.exists(t.storage.full_path("_published"))


def test_reading_an_empty_channel_says_what_to_do(table_uri: str) -> None:
    t = _table(table_uri)
    with pytest.raises(NotPublishedError, match=r"nothing is published on channel 'audited'.*publish"):
        t.published_snapshot("audited")


def test_channels_are_independent(table_uri: str) -> None:
    t = _table(table_uri, versions=3)
    t.publish(3, channel="published")
    t.publish(1, channel="nightly")
    assert pubs.published_versions(t.storage) == {"published": 3, "nightly": 1}
    assert t.published_snapshot("nightly").version == 1


def test_old_records_are_pruned_but_the_current_one_stays(table_uri: str) -> None:
    t = _table(table_uri, versions=pubs.KEEP_RECORDS + 5)
    for v in range(1, pubs.KEEP_RECORDS + 6):
        t.publish(v)
    names = _records(t)
    assert len(names) == pubs.KEEP_RECORDS + 1
    assert names[-1] == f"{pubs.KEEP_RECORDS + 5:020d}.json"
    assert pubs.published_version_list(t.storage, "published", after=pubs.KEEP_RECORDS + 3) == [
        pubs.KEEP_RECORDS + 4,
        pubs.KEEP_RECORDS + 5,
    ]


def test_racing_publishers_end_at_the_highest_version(table_uri: str) -> None:
    t = _table(table_uri, versions=8)
    errors: list[BaseException] = []

    def publish(v: int) -> None:
        try:
            Table.open(table_uri).publish(v)
        except PublicationError as exc:  # a lower version that lost to a higher one: refused
            errors.append(exc)

    threads = [threading.Thread(target=publish, args=(v,)) for v in range(1, 9)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert t.publication() is not None and t.publication().version == 8  # type: ignore[union-attr]
    assert all("already published" in str(e) for e in errors)


def test_vacuum_keeps_the_files_of_the_published_version(table_uri: str) -> None:
    t = _table(table_uri, versions=1)
    t.publish(1)
    t.write(rows([7]), mode="overwrite")  # version 2 removes version 1's file
    plan = t.vacuum(retention_hours=0, enforce_retention=False, dry_run=True)
    assert plan.files == []  # the published version still needs it
    t.vacuum(retention_hours=0, enforce_retention=False, dry_run=False)
    assert Table.open(table_uri).published_snapshot().to_arrow()["id"].to_pylist() == [1]
    # Control: once the channel moves on, the file is garbage and goes.
    t.publish(2)
    done = t.vacuum(retention_hours=0, enforce_retention=False, dry_run=False)
    assert len(done.files) == 1 and done.deleted == 1


def test_publishing_a_version_whose_files_are_gone_publishes_nothing(table_uri: str) -> None:
    t = _table(table_uri, versions=1)
    t.write(rows([7]), mode="overwrite")
    t.vacuum(retention_hours=0, enforce_retention=False, dry_run=False)
    with pytest.raises(PublicationError, match=r"version 1: 1 of its files are missing"):
        t.publish(1)
    assert t.publication() is None


def test_log_cleanup_keeps_what_the_published_version_needs(table_uri: str) -> None:
    t = _table(table_uri, versions=1)
    t.publish(1)
    for i in range(2, 25):  # checkpoints at 10 and 20
        t.write(rows([i]))
    time.sleep(0.01)
    result = t.cleanup_log(retention_hours=0, dry_run=False)
    assert result.files == []  # no checkpoint at or below version 1
    assert Table.open(table_uri).published_snapshot().version == 1
    t.publish(15)
    result = t.cleanup_log(retention_hours=0, dry_run=False)
    assert result.checkpoint_version == 10  # not 20: version 15 loads from checkpoint 10
    assert Table.open(table_uri).published_snapshot().to_arrow().num_rows == 15


# ------------------------------------------------------------------ publishing while a vacuum runs


def _old_version(tmp_path: Path) -> Table:
    """v1 has one file; v2 overwrites it (so v1's file is only a tombstone, vacuumable at retention 0)."""
    t = _table(str(tmp_path / "t"), versions=1)
    t.write(rows([7]), mode="overwrite")
    return t


def test_publish_of_an_old_version_waits_out_a_running_vacuum_and_fails_cleanly(tmp_path: Path) -> None:
    t = _old_version(tmp_path)
    other = Table.open(t.uri)
    held = threading.Event()
    outcome: dict[str, Any] = {}
    real_write, real_delete = other.storage.write, t.storage.delete

    def write(key: str, data: bytes) -> None:
        real_write(key, data)
        if key.startswith(pubs.PENDING_DIR):
            held.set()  # the publish holds version 1 now

    def publish_old_version() -> None:
        try:
            outcome["pub"] = other.publish(1)
        except Exception as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=publish_old_version)

    def delete(key: str) -> None:
        if not worker.is_alive() and not held.is_set():  # the vacuum's first delete
            worker.start()
            assert held.wait(30), "the publish never got to its hold"
        real_delete(key)

    other.storage.write = write  # type: ignore[method-assign]
    t.storage.delete = delete  # type: ignore[method-assign]
    result = t.vacuum(retention_hours=0, enforce_retention=False, dry_run=False)
    worker.join(60)
    assert result.deleted == 1  # the vacuum had planned it before the publish began
    assert isinstance(outcome.get("error"), PublicationError), outcome
    # Whether its first check or the one after the vacuum's fence came down saw the file gone:
    assert "Nothing was published" in str(outcome["error"])
    assert Table.open(t.uri).publication() is None  # no record ever named a version with a file gone
    assert _records(t) == [] and pubs.pending_versions(t.storage) == set()


def test_publish_gives_up_when_a_vacuum_keeps_running_and_leaves_nothing(tmp_path: Path) -> None:
    t = _old_version(tmp_path)
    VacuumFence(t.storage).__enter__()  # a vacuum that is still deleting
    with pytest.raises(VacuumInProgressError):
        pubs.publish(t, 1, channel="published", fence_wait_s=0)
    assert t.publication() is None and _records(t) == []
    assert pubs.pending_versions(t.storage) == set()  # the hold went with the failed publish


def test_a_publish_in_progress_holds_its_version_against_vacuum(tmp_path: Path) -> None:
    t = _old_version(tmp_path)
    marker = pubs._hold(t.storage, "published", 1)  # what a publish holds while it checks
    assert pubs.protected_versions(t.storage) == {1}
    assert t.vacuum(retention_hours=0, enforce_retention=False, dry_run=True).files == []
    # A marker a dead publisher left behind holds nothing once it is old.
    future = int(time.time() * 1000) + pubs.PENDING_TTL_MS + 1
    assert pubs.pending_versions(t.storage, now_ms=future) == set()
    t.storage.delete(marker)
    assert len(t.vacuum(retention_hours=0, enforce_retention=False, dry_run=True).files) == 1
