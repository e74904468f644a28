"""Savepoints, publications, vacuum, log cleanup and restore on every storage backend (local, S3
via moto, Azure via Azurite, GCS via fake-gcs-server)."""

from __future__ import annotations

import pytest

from airflow_txnlog.engine import RestoreFilesMissingError, Table
from tests.conftest import SCHEMA, rows
from tests.reliability.conftest import Backend


def _ids(t: Table) -> list[int]:
    return sorted(t.snapshot().to_arrow().column("id").to_pylist())


def test_savepoint_survives_vacuum_and_log_cleanup(backend: Backend) -> None:
    t = Table.create(
        backend.new_uri("maint"), schema=SCHEMA, partition_by=["part"], storage_options=backend.options
    )
    for i in range(3):
        t.write(rows([i, i + 10], "a" if i % 2 else "b"))
    before = _ids(t)
    t.create_savepoint("before")
    t.write(rows([100]), mode="overwrite")
    t.write(rows([101]), mode="overwrite")  # the first overwrite's file is now unprotected garbage
    for i in range(6):
        t.write(rows([200 + i], "c"))
    vac = t.vacuum(retention_hours=0, enforce_retention=False, dry_run=False)
    assert vac.deleted == 1  # the first overwrite's file; the savepoint's files stay
    assert t.cleanup_log(retention_hours=0, dry_run=False).checkpoint_version == 10
    result = t.restore(savepoint="before")
    assert result.committed and _ids(t) == before
    assert t.restore(savepoint="before").committed is False
    fresh = Table.open(t.uri, storage_options=backend.options)
    assert _ids(fresh) == before and [s.name for s in fresh.savepoints()] == ["before"]


def test_restore_refuses_when_a_file_is_gone(backend: Backend) -> None:
    t = Table.create(backend.new_uri("gone"), schema=SCHEMA, storage_options=backend.options)
    t.write(rows([1, 2]))
    t.create_savepoint("sp")
    victim = t.snapshot().files()[0].path
    t.write(rows([3]), mode="overwrite")
    t.storage.delete(victim)
    version = t.latest_version()
    with pytest.raises(RestoreFilesMissingError) as err:
        t.restore(savepoint="sp")
    assert err.value.missing == [victim] and t.latest_version() == version


def test_a_publication_survives_vacuum_and_log_cleanup(backend: Backend) -> None:
    t = Table.create(backend.new_uri("pub"), schema=SCHEMA, storage_options=backend.options)
    t.write(rows([1]))
    t.publish(1)
    t.write(rows([7]), mode="overwrite")  # version 2 removes version 1's file
    for i in range(3, 13):  # checkpoints at 10
        t.write(rows([i]))
    assert t.vacuum(retention_hours=0, enforce_retention=False, dry_run=False).deleted == 0
    assert t.cleanup_log(retention_hours=0, dry_run=False).files == []  # version 1 needs commit 0, 1
    fresh = Table.open(t.uri, storage_options=backend.options)
    assert fresh.published_snapshot().to_arrow()["id"].to_pylist() == [1]
    t.publish(12)  # the channel moves on: version 1's file is garbage now
    assert t.vacuum(retention_hours=0, enforce_retention=False, dry_run=False).deleted == 1
    assert _ids(Table.open(t.uri, storage_options=backend.options)) == sorted([*range(3, 13), 7])
